"""The one solve pipeline: classify -> method -> backend -> verify -> Result.

``solve`` is the single entry. It classifies the problem (``privopt.classify``: which program
it is, which methods apply and why), picks the method and backend, and hands the rest to the
problem family's stages, one module each:

* ``atr``: transparency reports (Chen et al.): Theorem 1 or the LFP method;
* ``mechanism``: mechanism tables (Ding et al., Ramon & Basu Sec. 3.3): closed forms, LP, QP;
* ``noise``: Gaussian noise placement (Ramon & Basu Sec. 3.2): a conic program;
* ``obfuscation``: rank-preserving obfuscation (Shariatnasab et al.): Corollary 2 or the
  certified global method.

Every family's ``run(problem, analysis, method, backend, time_limit, solver, workers=None,
progress=None)`` returns a
``Result`` whose status is "optimal" only when privopt's own recomputation passed.
"""

from __future__ import annotations

import time
from dataclasses import replace

from ..classify import METHODS, analyse
from ..errors import UsageError, did_you_mean
from ..model.problem import Problem
from ..results import Result, versions
from . import atr, mechanism, noise, obfuscation

FAMILIES = {"atr": atr, "mechanism": mechanism, "noise": noise, "obfuscation": obfuscation}


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
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise UsageError(f"workers must be a whole number >= 1 (or None for the machine's cores), not {workers!r}")
    t0 = time.perf_counter()
    if method not in ("auto",) + METHODS:
        raise UsageError(f"unknown method '{method}'{did_you_mean(method, ('auto',) + METHODS)}; choose one of: auto, {', '.join(METHODS)}")
    analysis = analyse(problem)
    if backend == "auto":
        backend, solver = default_backend(problem, solver)
    if method == "auto":
        method = analysis.chosen
    elif method not in analysis.applicable:
        raise UsageError(f"method '{method}' does not apply: {analysis.not_applicable[method]}")
    result = FAMILIES[problem.family].run(
        problem, analysis, method, backend, time_limit, solver, workers=workers, progress=progress
    )
    result.timings["total_s"] = problem.parse_s + time.perf_counter() - t0
    return replace(result, spec=problem.provenance(), versions=versions())


def default_backend(problem: Problem, solver: str | None) -> tuple[str, str | None]:
    """highs for LPs; cvxpy with Clarabel for QPs (HiGHS 1.15's QP solver calls some bounded
    shaped-noise QPs unbounded, docs/backends.md) and for conic programs."""
    if problem.family == "obfuscation":
        return "none", None  # the global method and Corollary 2 need no solver
    if problem.family == "noise" or (problem.family == "mechanism" and problem.objective.is_quadratic):
        return "cvxpy", solver or "CLARABEL"
    return "highs", solver
