"""Accuracy first over a ``dp(...)`` row of several mechanisms, and a target on a block whose budget
a split chooses (issue 21; docs/blocks.md, "Accuracy first over a row of mechanisms").

**The least t is the sum of the mechanisms' least eps.** The row ``dp(m_1, ..., m_k) <= (t,
delta)`` composes its mechanisms by basic composition (the eps add up; delta is split as the row
splits it, ``model._split_delta``), so a budget ``t`` is feasible exactly when some ``eps_i >= 0``
with ``sum_i eps_i <= t`` has every mechanism meet its own targets at ``eps_i``. Let ``S_i`` be
the budgets at which mechanism i meets its targets (for a mechanism without a target: at which
its program is feasible) and ``e_i = inf S_i``. Each ``S_i`` is an up-set: a larger eps only
relaxes the mechanism's privacy constraints (its other constraints do not involve eps), so its
optimal value does not get worse and a design feasible at eps stays feasible. Then
``t* = sum_i e_i``:

* (>=) a feasible ``(t, eps)`` has ``eps_i`` in ``S_i``, so ``eps_i >= e_i`` and ``t >= sum_i
  eps_i >= sum_i e_i``;
* (<=) for any ``h_i`` in ``S_i``, ``t = sum_i h_i`` is feasible (``eps_i = h_i``), so ``t* <=
  sum_i h_i``, and the infimum over the ``h_i`` is ``sum_i e_i``.

**Certified.** Each mechanism is bracketed, ``lo_i <= e_i <= hi_i``: ``hi_i`` is achieved (the
mechanism solved and verified at ``hi_i``, its targets met by its verified values), and ``lo_i``
is the range's end 0 or a budget where a target is proven to fail (the block's certified bound
beyond the target, or its closed form's theorem; a joint Gaussian group's ``lo_i`` is proven
by the dual point of its minimax program, ``gaussian.least_point``); by the up-set property every
eps at or below ``lo_i`` fails too. So ``sum_i lo_i <= t* <= sum_i hi_i``, each end re-checked
by ``privopt verify`` from the certificates the bracket records (``bracket``). With t's range
``[lo, hi]``, the answer is ``max(lo, sum_i hi_i)`` and its proven bound ``max(lo, sum_i lo_i)``.

**A target on a block whose budget the split chooses** (``solve._value_term``): the block's term
in the row's split is its value where its targets hold and ``+inf`` elsewhere; that constrained
value is still nonincreasing in the budget (once met, a target stays met), so the split's
monotone cells stay proven. Below the block's proven ``lo`` (``Least``, found once) the term is
``+inf`` without a solve; a point whose verified value misses a target but whose proven bound
does not is ``(inf, bound)``: not achieved, not excluded.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from .split import RTOL

HOLDS, FAILS, UNKNOWN = "holds", "fails", "unknown"
INVERSE_SLACK = 1e-9  # a closed form's inverse is probed this much (relative) on either side


@dataclass(frozen=True)
class Least:
    """One mechanism's least budget meeting its targets, bracketed: ``lo`` (``lo_fails``: the
    targets are proven to fail there, so at every eps at or below it; else ``lo`` is 0, the
    range's end), ``hi`` achieved (inf: none found in the range), ``answers`` its blocks at
    ``hi``, ``at_lo`` its blocks at ``lo`` (what ``verify`` re-proves the failure from), a joint
    group's ``record`` (``gaussian.dual_record`` of its minimax), its ``checks`` and why it has no
    ``hi``."""

    blocks: tuple[str, ...]
    lo: float
    hi: float
    lo_fails: bool
    answers: dict = field(default_factory=dict)
    at_lo: dict = field(default_factory=dict)
    record: dict | None = None
    checks: list = field(default_factory=list)
    why: str | None = None


Probe = Callable[[float], tuple[str, object]]  # eps -> (HOLDS | FAILS | UNKNOWN, the block's answer there)


def bracket(name: str, probe: Probe, top: float, guess: float | None = None) -> Least:
    """Block ``name``'s least eps in ``[0, top]`` meeting its targets, by bisection on the up-set
    (module docstring): ``probe(eps)`` says whether the targets hold by the verified value, fail by
    the proven bound (or the block is infeasible), or neither. A closed form's inverse ``guess``
    is probed first, just above and just below, so a curve costs two solves. The bracket's width
    is at most ``RTOL / 2`` relative, unless an undecided point stops the lower end (then it is
    as proven)."""
    lo, lo_fails, search, hi = 0.0, False, 0.0, math.inf
    at_lo: dict = {}
    answers: dict = {}

    def tried(eps: float) -> None:
        nonlocal lo, lo_fails, search, hi, at_lo, answers
        state, a = probe(eps)
        if state == HOLDS and eps < hi:
            hi, answers = eps, {name: a}
        elif state == FAILS and eps >= lo:
            lo, lo_fails, at_lo = eps, True, {name: a}
        elif state == UNKNOWN:
            search = max(search, eps)

    tried(0.0)
    if hi == 0.0:
        return Least((name,), 0.0, 0.0, False, answers)
    if guess is not None and 0.0 < guess < top:
        tried(min(top, guess * (1 + INVERSE_SLACK)))
        tried(guess * (1 - INVERSE_SLACK))
    if not math.isfinite(hi):
        tried(top)
    if not math.isfinite(hi):
        why = f"block {name}: its targets are not met at the top of the range (eps = {top:g})"
        return Least((name,), lo, math.inf, lo_fails, {}, at_lo, why=why)
    while hi - max(lo, search) > RTOL * max(hi, 1e-12) / 2:
        tried(0.5 * (max(lo, search) + hi))
    return Least((name,), lo, hi, lo_fails, answers, at_lo)


def meets(op: str, bound: float, value: float) -> bool:
    """``value OP bound``: a target ``a.objective <= bound`` or ``>= bound`` holds at ``value``."""
    return value <= bound if op == "<=" else value >= bound


def record(key: str | None, lo: float, hi: float, parts: list[Least], failing: Callable[[Least], dict]) -> dict:
    """``optimality.bracket`` of accuracy first over a row of mechanisms: the composite's variable
    ``key``, the sums ``lo <= t* <= hi`` and, per mechanism, its blocks, bracket and proof of its
    lower end: a joint group's minimax dual record (``joint_dual``), or per block whose target
    fails at ``lo`` its certificate there (``failing``: ``result.bracket_record``'s ``blocks``).
    A split records its targeted blocks' least budgets alike (``key`` None, no sums): below each
    ``lo`` the block's term is +inf."""

    def finite(x: float) -> float | None:
        return x if math.isfinite(x) else None  # strict JSON: inf (no budget meets it) is null

    out = []
    for p in parts:
        entry = {"blocks": list(p.blocks), "lo": finite(p.lo), "hi": finite(p.hi)}
        if p.record is not None:
            entry["joint_dual"] = p.record
        elif p.lo_fails:
            entry["failing"] = failing(p)
        out.append(entry)
    return {"var": key, "lo": finite(lo), "hi": finite(hi), "parts": out}
