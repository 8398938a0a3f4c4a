"""The canonical program (``core.canonical``) a method solves for a problem, built without
solving it: what ``privopt explain`` reports in its census.

* ``lp`` / ``qp``: the lowered mechanism program (``lower.mechanism``: Ding et al.'s LP, or
  the shaped-noise QP), in its envelope form or ``pairwise`` (every pair its own row);
* ``reduced-lp``: Prop. 2's transport LP over X^-(s) x X^+(s) (Ding et al. eq. 12), None
  when no mass leaves the diagonal (the closed form's diagonal is then the answer);
* ``lfp``: the LP of the first Dinkelbach step of the linear-fractional method (Chen et al.
  Sec. 6, (OPT) eq. 16) over every group of positive mass, as ``methods.lfp`` builds each
  step (``_block_lp``), at the point its first step tests;
* ``conic``: the noise-placement program (Ramon & Basu Sec. 3.2) in its default soc form;
* ``closed-form`` / ``global`` / ``barrier``: None: a theorem, or privopt's own search or
  Newton method (noise placement's program in its variances, ``methods.barrier``), answers
  without a canonical program.

Whether a method's program exists for a problem is its reduction's ``accepts`` (the program's
structure: ``lower.reductions``), not the problem's kind.
"""

from __future__ import annotations

import numpy as np

from ..core.canonical import CanonicalProgram
from ..errors import UsageError
from ..lower.reductions import BudgetRows, GaussianCalibration, QIDGroups
from ..model.problem import Problem

# the reduction whose structure a method's program needs (its ``accepts`` decides), and the
# words a refusal names that program by
_NEEDS = {"lp": BudgetRows, "qp": BudgetRows, "reduced-lp": BudgetRows, "lfp": QIDGroups, "conic": GaussianCalibration}
_SOLVES = {"lp": "mechanism", "qp": "mechanism", "reduced-lp": "mechanism", "lfp": "atr", "conic": "noise"}
_NONE = ("closed-form", "global", "barrier")


def canonical_program(problem: Problem, method: str, pairwise: bool = False) -> CanonicalProgram | None:
    """The canonical program ``method`` solves for ``problem`` (the module's docstring), or None
    for a method that solves none. ``UsageError`` for a method privopt does not have, or one
    that solves another problem class; a lowering's own errors pass through (``lower_atr``'s
    ``InfeasibleError`` for bounds no table meets)."""
    if method in _NONE:
        return None
    if method not in _NEEDS:
        raise UsageError(f"unknown method '{method}'; methods: {', '.join(tuple(_NEEDS) + _NONE)}")
    if not _NEEDS[method]().accepts(problem):
        raise UsageError(f"method '{method}' solves {_SOLVES[method]} problems, not {problem.kind} ones")
    if method in ("lp", "qp"):
        from ..lower.mechanism import lower_mechanism

        return lower_mechanism(problem, pairwise=pairwise).lp
    if method == "reduced-lp":
        return _transport(problem)
    if method == "lfp":
        return _first_lfp_step(problem)
    from ..lower.noise import lower_noise

    return lower_noise(problem.noise).canonical()


def _transport(problem: Problem) -> CanonicalProgram | None:
    """Prop. 2's transport LP, or None when Prop. 2 does not match or moves no mass."""
    from ..closedform import sanitization as cf

    san, _ = cf.match(problem)
    if san is None:
        return None
    transport = cf.transport_lp(san.p, san.q, san.ps, problem.objective.distance)
    return None if transport is None else transport[0]


def _first_lfp_step(problem: Problem) -> CanonicalProgram:
    """The LP of ``solve_lfp``'s first step over all groups of positive mass: from the best
    rounding of the feasible start, at ``beta' = max((lb + beta) / 2, beta (1 - CHECK_EPS))``
    with weights ``w_a = max(S_a, W_FLOOR)`` of that table (``methods.lfp``)."""
    from ..closedform.atr import lower_bound
    from ..lower.atr import lower_atr
    from ..measures.confidence import conditional_prior
    from . import lfp

    inst = lower_atr(problem)
    live = inst.p.sum(axis=1) > 0
    q, lower, upper = conditional_prior(inst.p)[live], inst.lower[live], inst.upper[live]
    reference = inst.reference[live] if inst.reference is not None else None
    X, beta = lfp._best_rounding(q, lfp.feasible_start(lower, upper, reference), lower, upper)
    lb = np.minimum(lower_bound(q, lower, upper), beta)
    w = np.maximum((q[:, :, None] * X).sum(axis=1), lfp.W_FLOOR)
    return lfp._block_lp(q, np.maximum(0.5 * (lb + beta), beta * (1.0 - lfp.CHECK_EPS)), w, lower, upper)
