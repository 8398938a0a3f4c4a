"""The atoms of the spec language, one module each: every function of builder/functions.py's
table, plus ``@`` and ``|.|`` (``abs``), with its curvature and sign (atoms/base.py).

``ATOMS`` maps a name as written to its atom; the one evaluator (builder/evaluate.py)
dispatches every call, ``P(...)``, ``E[...]``, ``|e|`` and ``@`` through it, and ``classify``
may read an atom's curvature. An atom's module is imported the first time its name is looked
up (issue 23, goal 1: a spec imports the atoms it uses, not all nineteen).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping

from .base import CURVATURES, SIGNS, Atom

# each name as written -> the module of its atom (``ATOM``), in the order the table lists them
MODULES = {
    "max_confidence": "max_confidence",
    "min_uncertainty": "min_uncertainty",
    "tv": "tv",
    "ldp": "ldp",
    "loglift": "loglift",
    "dp": "dp",
    "krcc": "krcc",
    "mutual_info": "mutual_info",
    "P": "prob",
    "E": "expect",
    "sum": "sum",
    "abs": "abs",
    "exp": "exp",
    "log": "log",
    "sqrt": "sqrt",
    "uniform": "uniform",
    "bsc": "bsc",
    "gaussian": "gaussian",
    "@": "matmul",
}


class Atoms(Mapping):
    """Name -> atom, over ``MODULES``: an atom's module is imported when its name is first
    looked up (``in`` asks the table only)."""

    def __init__(self, modules: dict[str, str]):
        self.modules = modules
        self.loaded: dict[str, Atom] = {}

    def __getitem__(self, name: str) -> Atom:
        if name not in self.loaded:
            self.loaded[name] = importlib.import_module(f"{__name__}.{self.modules[name]}").ATOM
        return self.loaded[name]

    def __contains__(self, name: object) -> bool:
        return name in self.modules

    def __iter__(self) -> Iterator[str]:
        return iter(self.modules)

    def __len__(self) -> int:
        return len(self.modules)


ATOMS = Atoms(MODULES)

__all__ = ["ATOMS", "CURVATURES", "SIGNS", "Atom"]
