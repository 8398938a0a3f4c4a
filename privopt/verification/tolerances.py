"""The tolerances privopt verifies an answer at (moved here from ``pipeline/common.py``, now ``blocks/common.py``, whose
names still import them): ``privopt.verification`` checks with these alone.

Every tolerance privopt verifies an answer at (docs/verification.md, docs/atr.md's Numerics).
Privacy budgets are checked with slack relative to the budget, in log space for e^eps
factors, never with an absolute slack larger than the budget itself:

* mechanisms (``blocks/table.py``): ``ldp``, ``dp`` and ``loglift`` budgets by the eps
  the table achieves, ``achieved <= eps + budget_slack(eps)`` = ``max(BUDGET_RTOL eps,
  BUDGET_ULPS 2^-52)``; cleaning leaves a shortfall alone only below ``ROUNDING`` (2 ulps) of
  its floor; rows sum to 1 within ``row_tol(width)`` (``ROW_ULPS`` ulps per cell), cells lie in
  [0, 1] exactly; linear
  constraints ``VERIFY_TOL`` relative to ``max(1, |terms|)``; the objective ``OBJ_TOL`` and
  ``OBJ_RTOL`` relative to ``max(|objective|, cost scale)``;
* transparency reports (``blocks/report.py``): rows and cells as above (``row_tol``); each constraint (the
  fidelity bounds) ``CONS_RTOL`` relative to its own terms, with no floor (the table is on its
  bounds first); the max confidence ``CONF_RTOL`` (relative), the LFP's bracket ``GAP_TOL``
  (relative);
* noise placement (``methods/conic.py``, ``blocks/noise.py``, ``measures/gaussian.py``): the delta achieved
  ``log delta_achieved <= log delta + log1p(DELTA_RTOL)`` (log space, relative); the
  calibration's bound proven from (eps, delta) (``sensitivity_ceiling``, to 2^-40); the loss
  ``1e-9`` and its certificate ``CONIC_RTOL``, both relative to the loss with no absolute
  floor; an eps whose condition moves delta by more than ``DELTA_RTOL`` per rounding is
  refused (``rounding_effect``);
* obfuscation (``blocks/channel.py``): the leakage ``I(Y; F) <= eps (1 + LEAK_RTOL)``
  (bits, relative, no absolute floor: the leakage is recomputed term by term with no
  cancellation), and Q within a few ulps (``q_allowance``) of the method's value.
"""

from __future__ import annotations

import math

import numpy as np

VERIFY_TOL = 1e-9
"""Relative to the magnitude of a constraint's terms (at least absolute): how far a
mechanism's linear constraint (a moment, a linear reduction) may be violated: its table is
not projected onto them, so this is the LP's accuracy. The accuracy a route's table is
measured at (``privopt check``). Rows and cells of a verified table: ``row_tol``."""

ROW_ULPS = 4


def row_tol(width: int) -> float:
    """How far a row of ``width`` probabilities may sum from 1 in a verified table: ``ROW_ULPS
    width`` ulps of 1, the rounding of the sum itself (every verified table is renormalized
    or moved onto its rows first; measured at most 2.2e-16 on every spec in specs/). Cells
    must lie in [0, 1] exactly (they are clipped first)."""
    return ROW_ULPS * max(int(width), 1) * float(np.finfo(float).eps)


CONS_RTOL = 16 * float(np.finfo(float).eps)
"""Relative to the magnitude of its terms (no floor): how far a transparency report's
constraint (a fidelity bound ``|Dt - D| <= 1 - delta``, ``Dt >= alpha D``) may be violated.
Every table is moved onto its cells' bounds before it is checked, so only the rounding of the
bounds' arithmetic remains: 16 ulps. (1e-9 with a floor of 1 let ``|Dt - D| <= 1e-12`` pass at
1e-9, and a cell bounded by 0 carry 1e-12.)"""

CONF_RTOL = 1e-8
"""Relative: how far the max confidence privopt recomputes from a transparency table may be
from the value the method reported (docs/atr.md, Numerics)."""

GAP_TOL = 1e-7
"""Relative: the largest bracket [proven lower bound, beta] the LFP method may leave open for a
group and still call it optimal: the optimality tolerance of every LP route (``OBJ_RTOL``).
1e-8 was finer than the LP's rows resolve (1e-10 on masses of ~0.03): random three-outcome
groups ended at 2e-8 and 3.1e-8."""

BUDGET_RTOL = 1e-9
"""Relative to the budget: how far the eps a mechanism achieves (the log of its largest ratio:
ldp, dp, log-lift) may exceed eps: ``achieved <= eps + budget_slack(eps)``."""

BUDGET_ULPS = 8
"""Ulps of 1: the rounding a log-ratio of two computed cells carries (each cell a short sum of
design cells, then renormalized), the whole slack at eps = 0 and below ~2e-6 (``budget_slack``)."""


def budget_slack(eps: float) -> float:
    """How far an achieved eps may exceed the budget eps, in log space (a ratio within
    ``e^(eps + slack)``): ``max(BUDGET_RTOL eps, BUDGET_ULPS 2^-52)``. Relative to the budget,
    so ``ldp <= 1e-12`` is checked to 1.8e-15 (the rounding of the ratio), not to an absolute
    1e-9, a thousand times the budget."""
    return max(BUDGET_RTOL * eps, BUDGET_ULPS * float(np.finfo(float).eps)) if eps == eps else math.nan


OBJ_TOL = 1e-8
"""Relative to max(|objective|, cost scale): how far a mechanism's objective recomputed from the
dense joint may be from the objective's own evaluation."""

OBJ_RTOL = 1e-7
"""Relative to max(|objective|, cost scale): how far a solver's reported objective, and the
proven bound, may be from the objective of the returned mechanism."""


# ------------------------------------------------------------------ noise placement

CONIC_RTOL = 1e-6
"""Relative to the loss: how far a noise placement's loss may be from its proven lower bound
(the accuracy of an interior-point solve), and the solver's tolerance is tightened until it is."""

# ------------------------------------------------------------------ obfuscation

ULP = float(np.finfo(float).eps)
LEAK_RTOL = 1e-12
"""The recomputed leakage may exceed eps by eps * LEAK_RTOL (relative: no absolute floor)."""

ROW_ATOL = 1e-15
"""A row of the 2 x 2 channel W sums to 1 within this (W is built from (p1, p2))."""

Q_ULPS = 64 * ULP
"""The two formulas for Q agree within this times 1/4, plus arcsin's conditioning (``q_allowance``)."""
