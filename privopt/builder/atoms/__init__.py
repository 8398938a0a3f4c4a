"""The atoms of the spec language, one module each: every function of builder/functions.py's
table, plus ``@`` and ``|.|`` (``abs``), with its curvature and sign (atoms/base.py).

``ATOMS`` maps a name as written to its atom; the one evaluator (builder/evaluate.py)
dispatches every call, ``P(...)``, ``E[...]``, ``|e|`` and ``@`` through it, and ``classify``
may read an atom's curvature.
"""

from __future__ import annotations

from . import (
    abs,
    bsc,
    dp,
    exp,
    expect,
    gaussian,
    krcc,
    ldp,
    log,
    loglift,
    matmul,
    max_confidence,
    min_uncertainty,
    mutual_info,
    prob,
    sqrt,
    sum,
    tv,
    uniform,
)
from .base import CURVATURES, SIGNS, Atom

ATOMS: dict[str, Atom] = {
    m.ATOM.name: m.ATOM
    for m in (
        max_confidence,
        min_uncertainty,
        tv,
        ldp,
        loglift,
        dp,
        krcc,
        mutual_info,
        prob,
        expect,
        sum,
        abs,
        exp,
        log,
        sqrt,
        uniform,
        bsc,
        gaussian,
        matmul,
    )
}

__all__ = ["ATOMS", "CURVATURES", "SIGNS", "Atom"]
