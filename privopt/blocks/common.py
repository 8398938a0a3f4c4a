"""What every block kind's stages share: labelled long tables, timings, the tolerances privopt
verifies answers at, and the route interface ``privopt check`` uses.

Routes (the interface a block kind implements for ``privopt check``)
---------------------------------------------------------------------

A block kind (``blocks/report.py``, ``table.py``, ``noise.py``, ``channel.py``) exposes

    routes(problem, analysis, tol) -> list[Route]

every way it can solve ``problem`` (``analysis`` is ``privopt.classify.analyse(problem)``):
one ``Route`` per method and backend, for every backend of ``privopt.backends.all_backends()``
the method runs on (the check keeps those ``--backends`` selects; see ``Route.selectable``).
The first route should be the kind's most exact one: the first route that answers is the
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
  accuracy implies (0.0 if none). The kind's public ``measure`` function, bound to the
  problem, is the usual choice.
* ``accuracy``: within what the route's answer is exact (``Accuracy``, already ``at_least(tol)``).
* ``per_group`` and ``group_name``: whether the route optimizes every group separately (then
  each group's value is compared as well) and how group ``g`` is named in a message.
* ``skip``: a reason known before running (e.g. "solves LPs only"): the route is listed as
  skipped and not run. ``unnamed``: None, or the route runs only when ``--backends`` names
  its backend, and without ``--backends`` it is listed as skipped with this reason (left out
  when the reason is ""). ``selectable=False``: a fixed reference route on a fixed backend
  that runs whichever backends are selected.

The check (``privopt.crosscheck``) finds the block kind (``privopt.blocks.kind_of``) and knows
nothing else about it.

Tolerances
----------

Every tolerance privopt verifies an answer at is stated in ``privopt/verification/tolerances.py``
(with why), which ``privopt.verification`` checks with; the names import from here too.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from ..records import Record
from ..results import Labels
from ..verification.tolerances import (  # noqa: F401 (importable from here, as before)
    BUDGET_RTOL,
    BUDGET_ULPS,
    CONF_RTOL,
    CONS_RTOL,
    GAP_TOL,
    OBJ_RTOL,
    OBJ_TOL,
    ROW_ULPS,
    VERIFY_TOL,
    budget_slack,
    row_tol,
)

# ------------------------------------------------------------------ routes


class Accuracy(Record):
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


class Route(Record):
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


def label_column(labels: tuple[str, ...], shape: tuple[int, ...], axis: int) -> Labels:
    """The labels of one axis for every cell of a C-ordered array of ``shape`` (no unravel)."""
    inner = int(np.prod(shape[axis + 1 :], dtype=np.int64))
    outer = int(np.prod(shape[:axis], dtype=np.int64))
    dtype = np.int8 if len(labels) < 128 else np.int32
    codes = np.tile(np.repeat(np.arange(len(labels), dtype=dtype), inner), outer)
    return Labels(codes, tuple(labels))


def timings(parse_s: float, solve_s: float, t_start: float) -> dict[str, float]:
    """{"parse_s", "solve_s", "total_s"}: total counts parsing and everything since ``t_start``."""
    return {"parse_s": parse_s, "solve_s": solve_s, "total_s": parse_s + time.perf_counter() - t_start}
