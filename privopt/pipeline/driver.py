"""The one driver: a plan's route -> an ``Outcome`` -> clean -> verify -> certificate -> ``Result``.

Nothing here knows a problem class. What the problem designs takes part through its block
kind (``privopt.blocks.kind_of(problem)``: ``prepare``, ``clean``, ``verify``, ``certificate``,
``fields``; the ``privopt.blocks`` docstring states them); how it is solved, through the
plan's recognizer (``answer``, ``privopt.closedform``) or the method's runner
(``privopt.methods.runner(route.method).run``, a ``core.plan.Method``). Each returns a
``core.plan.Outcome``.

``result`` is the one place a ``Result`` is built (the dask engine calls it too).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from .. import blocks, methods
from ..blocks.common import timings
from ..core.certificate import Certificate
from ..core.plan import Outcome  # noqa: F401 (importable from here, as before)
from ..errors import InfeasibleError
from ..results import Columns, LazyTables, Result

if TYPE_CHECKING:
    import pandas as pd


def run(problem, analysis, route, time_limit, workers=None, progress=None) -> Result:
    """Solve ``problem`` along ``route`` (``pipeline.planner.Route``): its block kind's
    (``blocks.kind_of``) ``prepare`` -> the recognizer's ``answer`` or the method's runner
    (``methods.runner``) -> ``kind.clean`` -> ``kind.verify`` -> certificate -> ``result``.

    An ``InfeasibleError`` from ``prepare`` (no table satisfies the spec before any method runs)
    names no backend; one from the route names the route's backend (``"none"`` without one)."""
    kind = blocks.kind_of(problem)
    t_start = time.perf_counter()
    t0 = None
    try:
        prepared = kind.prepare(problem)
        t0 = time.perf_counter()
        if route.recognizer is not None:
            outcome = route.recognizer.answer(problem, route.match, prepared, route.backend, time_limit)
        else:
            outcome = methods.runner(route.method).run(problem, prepared, route, time_limit, workers, progress)
        outcome.solve_s = time.perf_counter() - t0
    except InfeasibleError as e:
        spent = timings(problem.parse_s, 0.0 if t0 is None else time.perf_counter() - t0, t_start)
        return result(
            status="infeasible",
            method=route.method,
            backend=None if t0 is None else (route.label or "none"),
            problem_class=analysis.problem_class,
            objective_kind=problem.objective.kind,
            timings=spent,
            reasons=list(e.reasons),
        )
    return _finish(kind, problem, prepared, analysis, route, outcome, t_start)


def _finish(kind, problem, prepared, analysis, route, outcome: Outcome, t_start: float) -> Result:
    """clean -> verify -> certificate -> the verified ``Result``."""
    outcome = kind.clean(problem, prepared, outcome)
    verification = kind.verify(problem, prepared, outcome)
    certificate = kind.certificate(problem, prepared, outcome, verification)
    return result(
        status="optimal",
        method=route.method,
        backend=outcome.backend,
        problem_class=analysis.problem_class,
        objective_kind=problem.objective.kind,
        verification=verification,
        certificate=certificate,
        timings=timings(problem.parse_s, outcome.solve_s, t_start),
        stats=outcome.stats,
        **kind.fields(problem, prepared, outcome, verification),
    )


def result(
    *,
    status: str,
    method: str,
    backend: str | None,
    problem_class: str,
    objective_kind: str,
    timings: dict,
    objective: float | None = None,
    beta: float | None = None,
    groups: Columns | pd.DataFrame | None = None,
    tables=None,
    verification: dict | None = None,
    certificate: Certificate | dict | None = None,
    stats: dict | None = None,
    reasons: list[str] | None = None,
    measures: dict | None = None,
    details: dict | None = None,
    **extra,
) -> Result:
    """The one constructor of a ``Result``: "optimal" (verified) or "infeasible" (no table
    satisfies the spec; ``reasons`` says why, one sentence per cause). ``extra``: the fields a
    caller sets beyond these (``spec``, ``versions``, ``engine``)."""
    infeasible = status == "infeasible"
    if isinstance(certificate, Certificate):
        certificate = certificate.to_dict()
    return Result(
        status=status,
        termination=status,
        objective=None if infeasible else objective,
        beta=None if infeasible else beta,
        method=method,
        backend=backend,
        problem_class=problem_class,
        objective_kind=objective_kind,
        groups=Columns({}) if groups is None or infeasible else groups,
        tables={} if infeasible else (tables if tables is not None else LazyTables({})),
        verification={"passed": False} if infeasible else verification,
        timings=timings,
        stats=dict(stats or {}),
        reasons=list(reasons or []),
        measures=dict(measures or {}),
        details=dict(details or {}),
        certificate=None if infeasible else certificate,
        **extra,
    )
