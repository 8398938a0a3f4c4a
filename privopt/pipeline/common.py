"""What every family's stages share: labelled long tables, timings, the tolerances privopt
verifies answers at, and the route interface ``privopt check`` uses.

Routes (the interface a family implements for ``privopt check``)
-----------------------------------------------------------------

A family module (``pipeline/atr.py``, ``pipeline/mechanism.py``, ``pipeline/noise.py``) exposes

    routes(problem, analysis, tol) -> list[Route]

every way it can solve ``problem`` (``analysis`` is ``privopt.classify.analyse(problem)``):
one ``Route`` per method and backend, for every backend of ``privopt.backends.all_backends()``
the method runs on (the check keeps those ``--backends`` selects; see ``Route.selectable``).
The first route should be the family's most exact one: the first route that answers is the
reference the others are compared with. ``tol`` is ``--tol``: an exact route's accuracy is
never finer (``Accuracy.at_least``). ``routes`` may raise ``InfeasibleError`` (the check exits
3); anything else it raises is a usage error or a bug.

Each ``Route`` carries:

* ``run(backend, time_limit) -> Answer(point, build_s, solve_s, note)`` (a plain 4-tuple is
  accepted): the candidate table or point, in whatever form ``measure`` takes. ``backend`` is
  the route's backend (wrapped by the check, so that it can tell a limit from a failure), or
  None for a route without one. It raises ``RouteSkipped`` when the route does not apply at
  this size (reported as skipped), ``RouteStopped`` when a limit ended it without an answer,
  and anything else when it failed. It should honour ``time_limit`` (seconds, or None).
* ``measure(point, accuracy) -> Measured(objective, violation, per_group, slack_allowance)``:
  privopt's own measure of the candidate, never the solver's report: the objective the point
  achieves, its largest violation of the spec (compared with ``accuracy.cells``), the value
  per group when ``per_group`` (else None) and any extra objective allowance the route's
  accuracy implies (0.0 if none). The family's public ``measure`` function, bound to the
  problem, is the usual choice.
* ``accuracy``: within what the route's answer is exact (``Accuracy``, already ``at_least(tol)``).
* ``per_group`` and ``group_name``: whether the route optimizes every group separately (then
  each group's value is compared as well) and how group ``g`` is named in a message.
* ``skip``: a reason known before running (e.g. "solves LPs only"): the route is listed as
  skipped and not run. ``unnamed``: None, or the route runs only when ``--backends`` names
  its backend, and without ``--backends`` it is listed as skipped with this reason (left out
  when the reason is ""). ``selectable=False``: a fixed reference route on a fixed backend
  that runs whichever backends are selected.

The check (``privopt.crosscheck``) finds the family module in ``privopt.pipeline.FAMILIES``
by ``problem.family`` and knows nothing else about it.

Tolerances
----------

Every tolerance privopt verifies an answer at (docs/verification.md, docs/atr.md's Numerics).
Privacy budgets are checked with slack relative to the budget, in log space for e^eps
factors, never with an absolute slack larger than the budget itself:

* mechanisms (``pipeline/mechanism.py``): ``ldp``, ``dp`` and ``loglift`` budgets by the eps
  the table achieves, ``achieved <= eps + budget_slack(eps)`` = ``max(BUDGET_RTOL eps,
  BUDGET_ULPS 2^-52)``; cleaning leaves a shortfall alone only below ``ROUNDING`` (2 ulps) of
  its floor; rows sum to 1 within ``row_tol(width)`` (``ROW_ULPS`` ulps per cell), cells lie in
  [0, 1] exactly; linear
  constraints ``VERIFY_TOL`` relative to ``max(1, |terms|)``; the objective ``OBJ_TOL`` and
  ``OBJ_RTOL`` relative to ``max(|objective|, cost scale)``;
* transparency reports (``pipeline/atr.py``): rows and cells as above (``row_tol``); each constraint (the
  fidelity bounds) ``CONS_RTOL`` relative to its own terms, with no floor (the table is on its
  bounds first); the max confidence ``CONF_RTOL`` (relative), the LFP's bracket ``GAP_TOL``
  (relative);
* noise placement (``pipeline/noise.py``, ``measures/gaussian.py``): the delta achieved
  ``log delta_achieved <= log delta + log1p(DELTA_RTOL)`` (log space, relative); the
  calibration's bound proven from (eps, delta) (``sensitivity_ceiling``, to 2^-40); the loss
  ``1e-9`` and its certificate ``CONIC_RTOL``, both relative to the loss with no absolute
  floor; an eps whose condition moves delta by more than ``DELTA_RTOL`` per rounding is
  refused (``rounding_effect``);
* obfuscation (``pipeline/obfuscation.py``): the leakage ``I(Y; F) <= eps (1 + LEAK_RTOL)``
  (bits, relative, no absolute floor: the leakage is recomputed term by term with no
  cancellation), and Q within a few ulps (``q_allowance``) of the method's value.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

# ------------------------------------------------------------------ tolerances

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


# ------------------------------------------------------------------ routes


@dataclass(frozen=True)
class Accuracy:
    """A route's documented accuracy: its objective lies within ``max(abs, rel |optimum|)`` of
    the optimum, plus ``slack / S`` for a route that solves ratio rows ``q X - beta S <= 0``
    only to an absolute ``slack`` (S: the outcome mass of its table's largest ratio, so
    ``q X / S <= beta + slack / S``); its table's cells lie within ``cells`` of a feasible table
    (the allowed violation, and the value or mass below which a cell counts as zero when the
    table is settled)."""

    abs: float
    rel: float
    cells: float
    basis: str
    slack: float = 0.0

    def allowed(self, magnitude):
        return np.maximum(self.abs, self.rel * np.abs(magnitude))

    def at_least(self, tol: float) -> Accuracy:
        """Never finer than ``--tol`` (the tolerance the exact routes are compared at)."""
        return Accuracy(max(self.abs, tol), max(self.rel, tol), max(self.cells, tol), self.basis, self.slack)


EXACT = Accuracy(1e-9, 1e-9, 1e-9, "exact up to LP tolerances (1e-10 to 1e-9), compared at --tol")


class Answer(NamedTuple):
    """What a route's ``run`` returns: the candidate and what it cost."""

    point: Any
    build_s: float
    solve_s: float
    note: str = ""


class Measured(NamedTuple):
    """privopt's measure of a route's candidate (see the module doc)."""

    objective: float
    violation: float
    per_group: np.ndarray | None = None
    slack_allowance: float = 0.0


class RouteSkipped(Exception):
    """A route that does not apply at this size (reported as skipped, not failed)."""


class RouteStopped(Exception):
    """A route ended by a limit before it had an answer: ``kind`` is "time", "iterations" or
    "accuracy" (the solver's own verdict that it could not reach the tolerance)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def _no_group_name(g: int) -> str:
    return str(g)


@dataclass(frozen=True)
class Route:
    """One way to solve a problem, for ``privopt check`` (see the module doc)."""

    method: str
    backend: Any  # a privopt.backends Backend, or None
    run: Callable[[Any, float | None], Answer]
    measure: Callable[[Any, Accuracy], Measured]
    accuracy: Accuracy = EXACT
    per_group: bool = False
    group_name: Callable[[int], str] = _no_group_name
    skip: str | None = None
    unnamed: str | None = None
    selectable: bool = True

    @property
    def label(self) -> str | None:
        """The backend's label (``cvxpy:HIGHS``), or None."""
        return self.backend.label if self.backend is not None else None

    @property
    def name(self) -> str:
        return f"{self.method} on {self.label}" if self.label else self.method


# ------------------------------------------------------------------ tables and timings


def label_column(labels: tuple[str, ...], shape: tuple[int, ...], axis: int) -> pd.Categorical:
    """The labels of one axis for every cell of a C-ordered array of ``shape`` (no unravel)."""
    inner = int(np.prod(shape[axis + 1 :], dtype=np.int64))
    outer = int(np.prod(shape[:axis], dtype=np.int64))
    dtype = np.int8 if len(labels) < 128 else np.int32
    codes = np.tile(np.repeat(np.arange(len(labels), dtype=dtype), inner), outer)
    return pd.Categorical.from_codes(codes, dtype=pd.CategoricalDtype(list(labels)), validate=False)


def timings(parse_s: float, solve_s: float, t_start: float) -> dict[str, float]:
    """{"parse_s", "solve_s", "total_s"}: total counts parsing and everything since ``t_start``."""
    return {"parse_s": parse_s, "solve_s": solve_s, "total_s": parse_s + time.perf_counter() - t_start}
