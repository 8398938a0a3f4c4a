"""Cross-checking: solve one problem by every applicable route and compare, each route within
its own accuracy and only on what it optimizes.

The routes come from the problem's block kind (``privopt.blocks.kind_of(problem)``): its
``routes(problem, analysis, tol)`` lists them, each with how to run it and how privopt
measures its answer (``blocks/common.py`` documents the interface). This module knows nothing
else about a kind: it selects the routes ``--backends`` names,
runs each within its time budget, measures each answer with the route's own ``measure`` (the
objective achieved and the largest violation of the spec, never a solver's own report), and
compares.

**Accuracy.** Each route carries an ``Accuracy``: its objective is within
``max(abs, rel |optimum|)`` of the optimum and its cells within ``cells`` of a feasible table.
Two answers agree when they differ by at most the larger of the two routes' allowances at the
reference's magnitude (the reference is the first answer, from an exact route, so that is the
compared route's own). Routes that optimize every group (``per_group``: for transparency
reports, Lemma 3's closed form and LFP) are compared group by group as well; the others only
on the objective.

**Statuses.** ``agrees``, ``disagrees`` (its value or its table's violation is outside its
accuracy), ``failed`` (an error or a non-optimal solver status), ``stopped`` (a time limit of
``--time-limit`` or the solver's own iteration limit ended it: no answer, and no evidence
against the others), ``skipped`` (with why: unavailable, too large for the route, or it would
take far longer than the main solve; see ``CAP_FACTOR``). Only ``disagrees`` and ``failed``
make the check disagree; when no route answers, the check is inconclusive.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from .backends import all_backends
from .backends.base import Backend
from .blocks.common import EXACT, Accuracy, Route, RouteSkipped, RouteStopped
from .classify import analyse
from .errors import InfeasibleError, UsageError, did_you_mean
from .model.problem import Problem

__all__ = ["CAP_FACTOR", "CAP_FLOOR_S", "EXACT", "Accuracy", "CheckReport", "PathResult", "Route", "run_check"]

CAP_FACTOR = 10.0  # a secondary route's time budget: CAP_FACTOR x the main solve ...
CAP_FLOOR_S = 10.0  # ... and never less than this


@dataclass
class PathResult:
    method: str
    backend: str | None
    status: str  # agrees | disagrees | failed | stopped | skipped
    objective: float | None = None  # privopt's measure of the returned table
    abs_diff: float | None = None
    max_violation: float | None = None
    build_s: float = 0.0
    solve_s: float = 0.0
    message: str = ""
    group_beta: np.ndarray | None = field(default=None, repr=False)
    accuracy: Accuracy | None = None
    allowed: float | None = None  # the objective difference allowed against the reference
    compares: str = "objective"  # or "each group"
    stopped_by: str | None = field(default=None, repr=False)  # "time", "iterations" or "accuracy" when stopped
    error: Exception | None = field(default=None, repr=False)  # why it failed
    slack_allowance: float = field(default=0.0, repr=False)  # Accuracy.slack / S, objective units

    @property
    def name(self) -> str:
        return f"{self.method} on {self.backend}" if self.backend else self.method

    @property
    def answered(self) -> bool:
        return self.status in ("agrees", "disagrees")


@dataclass
class CheckReport:
    agree: bool
    reference: dict | None
    paths: list[PathResult]
    problems: list[str]
    tol: float
    spec: dict | None = None  # what was checked: Problem.provenance(), as in every command's JSON

    @property
    def verdict(self) -> str:
        """agree | disagree | inconclusive (no route answered, none failed or disagreed)."""
        if self.agree:
            return "agree"
        return "disagree" if any(p.status in ("failed", "disagrees") for p in self.paths) else "inconclusive"

    def to_dict(self) -> dict:
        """Strict-JSON values (a non-finite number is None)."""
        from .results import plain

        keys = (
            "method",
            "backend",
            "status",
            "objective",
            "abs_diff",
            "allowed",
            "max_violation",
            "compares",
            "build_s",
            "solve_s",
            "message",
        )

        return plain(
            {
                "agree": self.agree,
                "verdict": self.verdict,
                "tolerance": self.tol,
                "reference": self.reference,
                "paths": [
                    {k: getattr(p, k) for k in keys} | {"accuracy": asdict(p.accuracy) if p.accuracy else None}
                    for p in self.paths
                ],
                "problems": self.problems,
                "spec": self.spec,
            }
        )


class _Watched:
    """A backend that remembers whether a solve ended at a limit (a route's solver layer turns
    that into an error; the check needs to know it was a limit, not a failure)."""

    LIMITS = ("time_limit", "iteration_limit", "user_limit", "inaccurate")

    def __init__(self, inner: Backend):
        self._inner = inner
        self.limit: str | None = None  # the limit termination of the last solve, if any

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def solve(self, lp, **kwargs):
        sol = self._inner.solve(lp, **kwargs)
        self.limit = sol.termination if sol.termination in self.LIMITS else None
        return sol


# ------------------------------------------------------------------ the check


def _selected(backends: list[str] | None) -> list[Backend]:
    out = all_backends()
    if backends is None:
        return out
    known = {b.name for b in out} | {b.label for b in out}
    unknown = [b for b in backends if b not in known]
    if unknown:
        raise UsageError(
            f"unknown backend '{unknown[0]}'{did_you_mean(unknown[0], sorted(known))}; choose from: {', '.join(sorted(known))}"
        )
    return [b for b in out if b.name in backends or b.label in backends]


def _block_kind(problem):
    """The block kind of ``problem`` (``privopt.blocks.kind_of``), whose ``routes`` list every way
    to solve it; None for a program that is no one block kind (a composite of specs)."""
    from . import blocks

    return blocks.kind(problem.kind) if problem.kind in blocks.MODULES else None


def run_check(
    problem: Problem,
    backends: list[str] | None = None,
    tol: float = 1e-7,
    time_limit: float | None = None,
    progress: bool = False,
) -> CheckReport:
    """Solve ``problem`` by every applicable route and compare (see the module doc).
    ``backends``: the backend names or labels to run (default: all); ``progress``: show one
    step per route on stderr (only when stderr is a terminal). Raises ``InfeasibleError`` when
    the problem is infeasible, ``UsageError`` for an unknown backend or a kind without
    routes."""
    listing = getattr(_block_kind(problem), "routes", None)
    if listing is None:
        raise UsageError(f"privopt check does not cover {problem.kind} problems yet")
    every = listing(problem, analyse(problem), tol)  # InfeasibleError propagates: the caller reports it
    _selected(backends)  # an unknown name is a usage error

    def chosen(r: Route) -> bool:
        return (
            r.backend is None
            or not r.selectable
            or backends is None
            or r.backend.name in backends
            or r.label in backends
        )

    named = [r for r in every if r.backend is not None and r.selectable and chosen(r)]
    if backends is not None and not named:
        on = sorted({r.label for r in every if r.backend is not None and r.selectable})
        where = f"its routes run on: {', '.join(on)}" if on else "its routes use no backend: leave the backend list out"
        raise UsageError(f"no route of this {problem.kind} problem runs on {', '.join(backends)}; {where}")
    skipped: list[PathResult] = []
    runs: list[Route] = []
    for r in filter(chosen, every):
        why = r.skip if r.skip is not None else (r.unnamed if backends is None else None)
        if why is None:
            runs.append(r)
        elif why:
            skipped.append(_path(r, message=why))
    paths = skipped + _run_routes(runs, time_limit, progress)
    group_name = next((r.group_name for r in every if r.per_group), str)
    return replace(_report(paths, _compare(paths, group_name), tol), spec=problem.provenance())


def _path(route: Route, **fields) -> PathResult:
    """A route's row, "skipped" until it runs."""
    return PathResult(
        route.method,
        route.label,
        fields.pop("status", "skipped"),
        accuracy=route.accuracy,
        compares="each group" if route.per_group else "objective",
        **fields,
    )


def _run_routes(routes: list[Route], time_limit, progress: bool) -> list[PathResult]:
    """Run every route and measure its answer with its own ``measure``. Without
    ``time_limit``, the first route that answers is the main solve
    and each later route gets the budget max(CAP_FLOOR_S, CAP_FACTOR x its time), as a time
    limit; one that reaches it is skipped (it would take far longer). ``time_limit`` replaces
    the budget, and a route it ends is stopped. A route that fails, stops or is skipped is
    recorded, and the others still run."""
    paths: list[PathResult] = []
    budget: float | None = None
    main_s = 0.0
    with _progress(progress, len(routes)) as step:
        for route in routes:
            step(route.method + (f" on {route.label}" if route.label else ""))
            t0 = time.perf_counter()
            path = _run_route(route, time_limit if budget is None else budget)
            if path.stopped_by == "time" and budget is not None:
                path.status = "skipped"
                path.message = (
                    f"would take more than {budget:.3g} s ({CAP_FACTOR:g}x the main solve's {main_s:.3g} s, "
                    f"at least {CAP_FLOOR_S:g} s); a --time-limit replaces this budget"
                )
            if budget is None and time_limit is None and path.answered:
                main_s = time.perf_counter() - t0
                budget = max(CAP_FLOOR_S, CAP_FACTOR * main_s)
            paths.append(path)
    return paths


def _run_route(route: Route, limit: float | None) -> PathResult:
    """One route, run and measured; its status is "agrees" until compared."""
    path = _path(route)
    backend = None
    if route.backend is not None:
        ok, why = route.backend.available()
        if not ok:
            path.message = f"unavailable: {why}"
            return path
        backend = _Watched(route.backend)
    t0 = time.perf_counter()
    try:
        table, path.build_s, path.solve_s, note = route.run(backend, limit)
    except RouteSkipped as e:
        path.message = str(e)
        return path
    except RouteStopped as e:
        return _stop(path, e.kind, limit, str(e))
    except Exception as e:  # noqa: BLE001 - one route failing never loses the others
        hit = backend.limit if backend is not None else None
        if hit == "inaccurate":  # a first-order solver (SCS, OSQP) stopped short of 1e-9: no answer, no error
            return _stop(path, "accuracy", limit, str(e))
        if hit is not None:
            timed = hit == "time_limit" or (
                hit == "user_limit" and limit is not None and time.perf_counter() - t0 >= 0.9 * limit
            )
            return _stop(path, "time" if timed else "iterations", limit, str(e))
        else:
            path.status, path.message, path.error = "failed", f"{type(e).__name__}: {e}", e
        return path
    path.objective, path.max_violation, path.group_beta, path.slack_allowance = route.measure(table, route.accuracy)
    path.status, path.message = "agrees", note
    return path


def _stop(path: PathResult, kind: str, limit: float | None, detail: str) -> PathResult:
    path.status, path.stopped_by = "stopped", kind
    if kind == "time":
        path.message = f"the time limit ({limit:.3g} s) ended it before an answer"
    elif kind == "accuracy":
        path.message = f"the solver stopped short of the accuracy asked for, with no answer ({detail})"
    else:
        path.message = f"the solver's iteration limit ended it before an answer ({detail})"
    return path


def _compare(paths: list[PathResult], group_name) -> PathResult | None:
    """Compare every answer with the reference (the first answer, an exact route): its
    objective within the larger of the two accuracies at the reference's magnitude; per group
    when both optimize every group; and its table's violation within its cell accuracy. Sets
    each path's status, abs_diff, allowed and message; returns the reference."""
    ref = next((p for p in paths if p.answered), None)
    if ref is None:
        return None
    for p in paths:
        if not p.answered:
            continue
        p.abs_diff = abs(p.objective - ref.objective)
        p.allowed = float(
            max(p.accuracy.allowed(ref.objective), ref.accuracy.allowed(ref.objective)) + p.slack_allowance
        )
        wrong = []
        if not p.abs_diff <= p.allowed:  # a NaN never agrees
            wrong.append(
                f"its objective {p.objective:.12g} differs from the reference's {ref.objective:.12g} "
                f"by {p.abs_diff:.3g} (allowed {p.allowed:.1e})"
            )
        if p.compares == "each group" and ref.compares == "each group" and p.group_beta is not None:
            diff = np.abs(p.group_beta - ref.group_beta)
            room = np.maximum(p.accuracy.allowed(ref.group_beta), ref.accuracy.allowed(ref.group_beta))
            if not np.all(diff <= room):
                g = int(np.argmax(np.where(diff <= room, -np.inf, diff)))
                wrong.append(
                    f"group {group_name(g)}: {p.group_beta[g]:.12g} vs {ref.group_beta[g]:.12g} (allowed {room[g]:.1e})"
                )
        if not p.max_violation <= p.accuracy.cells:
            wrong.append(f"its table violates the spec by {p.max_violation:.3g} (allowed {p.accuracy.cells:.1e})")
        if wrong:
            p.status = "disagrees"
            p.message = "; ".join(wrong) + (f" [{p.message}]" if p.message else "")
    return ref


def _report(paths: list[PathResult], ref: PathResult | None, tol: float) -> CheckReport:
    """The report; when no route answered and every route that ran found the problem
    infeasible, that InfeasibleError is raised instead (the caller's exit 3)."""
    failed = [p for p in paths if p.status == "failed"]
    if ref is None and failed and all(isinstance(p.error, InfeasibleError) for p in failed):
        raise failed[0].error
    problems = [f"{p.name} {p.status}: {p.message}" for p in paths if p.status in ("failed", "disagrees")]
    if ref is None:
        problems.append("no route gave an answer: " + "; ".join(f"{p.name} {p.status}" for p in paths))
    reference = {"method": ref.method, "backend": ref.backend} if ref else None
    return CheckReport(ref is not None and not problems, reference, paths, problems, tol)


@contextmanager
def _progress(enabled: bool, total: int):
    """A transient progress display on stderr, one step per route; a no-op when disabled or
    when stderr is not a terminal (stdout may carry --json)."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    console = Console(stderr=True)
    if not (enabled and console.is_terminal):
        yield lambda _label: None
        return
    columns = (
        SpinnerColumn(),
        TextColumn("check: {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("", total=total)
        started = False

        def step(label: str) -> None:
            nonlocal started
            if started:
                bar.advance(task)
            started = True
            bar.update(task, description=label)

        yield step
