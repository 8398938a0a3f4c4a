"""The one solve pipeline: classify -> plan -> route -> clean -> verify -> certificate -> Result.

``solve`` is the single entry. It classifies the problem (``privopt.classify``: which program
it is, which methods apply and why), plans the route (``planner``: one recognizer, or one
chain of reductions ending in a method and a backend; ``plan`` returns it as a
``core.plan.Plan``) and runs it with the one driver (``driver.run``), which reaches what the
problem designs through its block kind (``privopt.blocks.kind_of``) and solves through the
plan's recognizer or method (``privopt.methods.runner``).

Nothing here branches on the problem class: the methods come from the program's structure
(``classify``), and the default backend is ``backends.pick`` over what the program's canonical
form needs (``planner.needs``: a quadratic objective, second-order or PSD cones), or no
backend for a program only a closed form or the global method solves.

The driver builds a ``Result`` (``driver.result``, the one constructor) whose status is
"optimal" only when privopt's own recomputation passed, with the route's certificate.
"""

from __future__ import annotations

import functools
import os
import time
from dataclasses import field, fields
from typing import Any

from ..backends import BACKENDS, get_backend, pick
from ..classify import METHODS, Analysis, analyse
from ..core.plan import Plan
from ..errors import UsageError, did_you_mean
from ..lower.reductions import chain_needs
from ..model.problem import Problem
from ..results import Result, versions
from ..sections import spec_facts
from . import driver, planner


def solve(
    problem: Problem,
    method: str = "auto",
    backend: str = "auto",
    time_limit: float | None = None,
    solver: str | None = None,
    workers: int | None = None,
    progress=None,
) -> Result:
    """Solve ``problem``. Raises ``UsageError`` for a method that does not apply, ``SolverError``
    when a solver fails and ``VerificationError`` when the returned point fails privopt's check.

    ``workers``: processes the LFP method solves chunks of QID groups in (None: ``os.cpu_count()``,
    1: this process only; other methods ignore it). ``progress(done, total)``, if given, is
    called from this process as the LFP's groups finish (other methods do not call it)."""
    t0 = time.perf_counter()
    analysis, route = resolve(problem, method, backend, solver, workers)
    result = driver.run(problem, analysis, route, time_limit, workers=workers, progress=progress)
    result.timings["total_s"] = problem.parse_s + time.perf_counter() - t0
    result.spec, result.versions, result.facts = problem.provenance(), versions(), spec_facts(problem)
    return result  # set in place: ``dataclasses.replace`` would read (build) every table


def plan(
    problem: Problem,
    method: str = "auto",
    backend: str = "auto",
    solver: str | None = None,
    workers: int | None = None,
    census: bool = True,
) -> Plan:
    """The plan ``solve`` will run (``core.plan.Plan``): one recognizer, or one chain of
    reductions ending in a method and a backend, each step with why it is taken, and the
    census of the canonical program the chain ends in (``census=False``: not built). Every
    option is checked against ``problem`` first, as ``solve`` checks it (``resolve``):
    ``UsageError`` otherwise. ``sweep`` and ``apply`` call it before their solves, so a bad
    option fails at once."""
    analysis, route = resolve(problem, method, backend, solver, workers)
    return planner.make_plan(problem, analysis, route, _backend_why(problem, backend, route), census)


def resolve(
    problem: Problem, method: str = "auto", backend: str = "auto", solver: str | None = None, workers: int | None = None
) -> tuple[Analysis, planner.Route]:
    """(analysis, route) as ``solve`` will use them: every option checked against ``problem``
    before anything is solved (``check_options``, then whether the method applies and the
    backend and solver fit what the program needs). ``UsageError`` otherwise."""
    check_options(method, backend, solver, workers)
    asked = backend
    analysis = analyse(problem)
    needs = planner.needs(problem, analysis)
    if backend == "auto":
        if solver is not None and needs is None:
            raise UsageError(
                f"solver '{solver}' was given, but {problem.kind} problems are solved without a solver "
                "(Corollary 2 or privopt's own global method); leave the solver out"
            )
        backend, solver = default_backend(problem, solver, analysis)
    be = None
    chosen = analysis.chosen if method == "auto" else method
    barrier = asked == "auto" and chosen == "barrier"
    if backend != "none" and not barrier:  # the barrier method needs no solver: cvxpy is not imported
        # a closed form names the default backend but uses none: its package is not imported
        be = get_backend(backend, solver, check=not (asked == "auto" and chosen == "closed-form"))
        _check_backend_fits(needs or frozenset(), be)
    if method == "auto":
        method = analysis.chosen
    elif method not in analysis.applicable:
        raise UsageError(
            f"method '{method}' does not apply: {analysis.not_applicable[method]}; "
            f"methods that apply to this problem: {', '.join(analysis.applicable)}"
        )
    return analysis, planner.route(problem, method, be)


def _backend_why(problem: Problem, asked: str, route: planner.Route) -> str:
    """Why the route's backend: as asked, or ``default_backend``'s reason, from what the route's
    chain needs (``backends.pick``'s rule)."""
    if asked != "auto":
        return f"as asked (backend '{asked}')"
    needs = chain_needs(route.chain)
    if needs & {"soc", "psd"}:
        return "auto: a conic program (second-order and PSD cones) needs cvxpy with a conic solver (Clarabel)"
    if "quadratic" in needs:
        return (
            "auto: cvxpy with Clarabel for a QP (HiGHS's QP solver calls some bounded QPs unbounded, docs/backends.md)"
        )
    return "auto: HiGHS for LPs"


def explain(problem: Problem) -> Explanation:
    """The classification (``classify.analyse``) with the plan of an automatic solve as
    ``.plan``, made when first read (it may lower the program for its census)."""
    return Explanation.of(analyse(problem), problem)


class Explanation(Analysis):
    """An ``Analysis`` and, as ``plan``, what ``solve`` with the defaults would run."""

    problem: Any = field(default=None, repr=False, compare=False)

    @classmethod
    def of(cls, analysis: Analysis, problem: Problem) -> Explanation:
        return cls(**{f.name: getattr(analysis, f.name) for f in fields(Analysis)}, problem=problem)

    @functools.cached_property
    def plan(self) -> Plan:
        return plan(self.problem)


def check_options(method: str, backend: str, solver: str | None, workers: int | None) -> None:
    """The options of a solve, checked before anything is solved, whatever the problem class and
    whether or not the method uses a backend (a closed form uses none, but a misspelt backend is
    still a mistake): ``UsageError`` for a method privopt does not have, a backend that is
    unknown or unavailable here, a solver that backend does not have, or a bad ``workers``.
    Whether the method applies to the problem is ``solve``'s check (it needs the analysis)."""
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise UsageError(f"workers must be a whole number >= 1 (or None for the machine's cores), not {workers!r}")
    if workers is not None and workers > max_workers():
        raise UsageError(
            f"workers {workers:,} is more than this machine can use: at most {max_workers()} "
            f"(4 per core, {os.cpu_count() or 1} cores; more processes only compete for them)"
        )
    if method not in ("auto",) + METHODS:
        raise UsageError(
            f"unknown method '{method}'{did_you_mean(method, ('auto',) + METHODS)}; choose one of: auto, {', '.join(METHODS)}"
        )
    if not isinstance(backend, str):
        raise UsageError(f"backend must be a backend's name (auto, {', '.join(BACKENDS)}), not {backend!r}")
    if backend != "auto":
        get_backend(backend, solver)  # unknown, unavailable, or a solver it does not have: UsageError


def _check_backend_fits(needs: frozenset[str], be) -> None:
    """A program whose canonical form has cones (``planner.needs``: Gaussian noise placement's
    second-order and PSD cones) needs a backend, and an inner solver, that take them:
    ``UsageError`` before solving, not a solver's refusal after. (A quadratic objective a
    backend does not take is its own refusal at solve time, ``backends.base.unsupported``.)"""
    if not needs & {"soc", "psd"}:
        return
    if not needs <= be.capabilities:
        takes = [name for name, cls in BACKENDS.items() if needs <= cls.capabilities]
        raise UsageError(
            f"backend '{be.label}' does not solve conic programs; noise placement needs the {' or '.join(takes)} backend"
        )
    if be.solver is not None and not be.accepts(needs):
        takes = [s for s in be.solvers if type(be)(s).accepts(needs)]
        raise UsageError(
            f"solver '{be.solver}' takes no second-order or PSD cones; noise placement needs one of: {', '.join(takes)}"
        )


def max_workers() -> int:
    """The most processes (LFP pool, or a local Dask cluster) a solve may start on this machine."""
    return max(8, 4 * (os.cpu_count() or 1))


def default_backend(problem: Problem, solver: str | None, analysis: Analysis | None = None) -> tuple[str, str | None]:
    """``backends.pick`` over what the program's canonical form needs (``planner.needs``):
    highs for LPs; cvxpy with Clarabel for a quadratic objective (HiGHS 1.15's QP solver calls
    some bounded shaped-noise QPs unbounded, docs/backends.md) and for cones. ``("none",
    None)`` for a program only a closed form or the global method solves: it needs no solver."""
    needs = planner.needs(problem, analysis or analyse(problem))
    return ("none", None) if needs is None else pick(needs, solver)
