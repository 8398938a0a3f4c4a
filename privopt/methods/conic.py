"""The conic method: a noise placement's conic program (Ramon & Basu Sec. 3.2) solved at
tightening tolerances until its certificate holds.

``RUNNER`` applies the route's chain (``lower.reductions.GaussianCalibration``: the
calibration as cones, ``lower.noise.ConicProgram``), solves the program on the route's backend
and maps the solver's variances back to real units (``route.chain.invert``). Each attempt is
cleaned to exact feasibility (``lower.noise.ConicProgram.clean``) and verified
(``verify``: ``verification.problems.verify_noise`` with the certificate) before the next
tolerance is tried, because only the certificate says whether the attempt is good enough:

* the first solve is at ``CONIC_TOLS[0]`` (1e-9); one the solver calls "inaccurate" there is
  repeated at ``CONIC_LOOSER``: a looser answer is still "optimal" only when its certificate
  holds at ``CONIC_RTOL``;
* while the certificate fails, the program is solved again at the tighter ``CONIC_TOLS``.

The certificate (``lower_bound``) is a point (Y, mu) of the program's Lagrange dual
(``ConicProgram.dual_bound``: weak duality, made feasible exactly by a rescaling): first the
multipliers the primal solve returned (free), only when they do not reach the loss within
``CONIC_RTOL`` the dual program solved on its own (``ConicProgram.dual_cvxpy``).

``solve_canonical`` solves the same program as the canonical program (``core.canonical``, the
form of every LP and QP route) on the backend's generic cone solve, with the dual point read
off its row multipliers (``lower.noise.CanonicalLayout``); ``privopt check`` runs it. The
method solves the backend's direct model (``Backend.solve_conic``): the canonical form's cones
over columns double the interior-point system (docs/noise-placement.md).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np

from .. import solverlog
from ..backends.base import ConicSolution
from ..core.plan import Outcome
from ..errors import SolverError
from ..lower.noise import ConicProgram
from ..measures.gaussian import DELTA_RTOL
from ..model.noise import NoiseModel
from ..verification.problems import verify_noise
from ..verification.tolerances import CONIC_RTOL  # the objective vs its proven lower bound (relative)

CONIC_TOLS = (1e-9, 1e-10, 1e-11)  # the solver's tolerances, tightened while the certificate fails
CONIC_LOOSER = (1e-8, 1e-7)  # tried when the solver calls 1e-9 "inaccurate": the certificate still decides


class ConicRunner:
    """The ``core.plan.Method`` of ``--method conic``: the route's chain to a conic program,
    solved and verified at tightening tolerances until its certificate holds
    (``solve_verified``); the outcome's point is the cleaned (co)variances in real units, its
    context the program, the solution and the verification (the block kind reports them)."""

    name = "conic"

    def run(self, problem, prepared, route, time_limit, workers, progress) -> Outcome:
        be = route.backend
        t0 = time.perf_counter()
        program, inverse = route.chain.apply(problem)
        lower_s = time.perf_counter() - t0

        def real(values: dict) -> dict:
            return route.chain.invert(values, inverse)

        cov, sol, verification = solve_verified(problem.noise, program, be, time_limit, real=real)
        stats = {
            "lower_s": round(lower_s, 6),
            "conic_build_s": round(sol.build_s, 6),
            "conic_solve_s": round(sol.solve_s, 6),
        }
        context = {
            "program": program,
            "solution": sol,
            "verification": verification,
            "backend": be,
            "time_limit": time_limit,
        }
        return Outcome(cov, verification["optimality"], be.label, stats=stats, context=context)


RUNNER = ConicRunner()


def solve_verified(
    model: NoiseModel,
    program: ConicProgram,
    backend,
    time_limit=None,
    form: str = "soc",
    real: Callable[[dict], dict] | None = None,
):
    """(covariances, ConicSolution, verification): solved at the tolerances of ``CONIC_TOLS`` in
    turn until the answer verifies (a tighter solve after the first that is optimal but not
    certified); the last verification says why when none does. A first solve the solver calls
    inaccurate is repeated at ``CONIC_LOOSER``: a looser answer is still only "optimal" when its
    certificate holds at ``CONIC_RTOL``. ``real`` maps the solver's variances to real units
    (the route's ``chain.invert``; default ``ConicProgram.real``)."""
    try:
        cov, sol = solve(model, program, backend, time_limit, form, CONIC_TOLS[0], real)
    except _Inaccurate as first:  # Clarabel stalls at 1e-9 on some small programs: ask for less
        for tol in CONIC_LOOSER:
            try:
                cov, sol = solve(model, program, backend, time_limit, form, tol, real)
                break
            except _Inaccurate:
                continue
        else:
            raise first from None
    check = verify(model, cov, program, sol.objective, backend=backend, duals=sol.duals)
    for tol in CONIC_TOLS[1:]:
        if check["passed"]:
            break
        try:
            cov2, sol2 = solve(model, program, backend, time_limit, form, tol, real)
        except SolverError:  # "inaccurate" at this tolerance: keep the answer we have
            break
        cov, sol, check = cov2, sol2, verify(model, cov2, program, sol2.objective, backend=backend, duals=sol2.duals)
    return cov, sol, check


def solve(
    model: NoiseModel,
    program: ConicProgram,
    backend,
    time_limit=None,
    form: str = "soc",
    tol: float = CONIC_TOLS[0],
    real: Callable[[dict], dict] | None = None,
):
    """(cleaned and scaled covariances by noise name, the solver's ConicSolution). Raises
    ``SolverError`` when the solver returns no optimum."""
    sol = backend.solve_conic(program, form=form, time_limit=time_limit, tol=tol)
    if not sol.ok:
        raise (_Inaccurate if sol.termination == "inaccurate" else SolverError)(
            f"{sol.solver} returned no optimum for the noise-placement program "
            f"(termination '{sol.termination}': {sol.message})"
        )
    return program.clean(model, (real or program.real)(sol.values)), sol


def solve_canonical(
    program: ConicProgram, backend, form: str = "soc", time_limit=None, tol: float = CONIC_TOLS[0]
) -> ConicSolution:
    """The program's canonical form (``ConicProgram.lowered``: ``core.canonical``, the one
    form every LP, QP and conic route solves) on ``backend`` (``Backend.solve``: a backend
    without cones refuses it), its answer by the program's names: the noise's values in the
    program's scaled units (``CanonicalLayout.values``) and the soc form's multipliers
    (``CanonicalLayout.duals``: the budgets', and the reach rows' or the cones' on z, from the
    row multipliers), which ``lower_bound`` turns into a point of the Lagrange dual. The
    lowering's time counts as building."""
    t0 = time.perf_counter()
    canonical, layout = program.lowered(form)
    lower_s = time.perf_counter() - t0
    sol = backend.solve(canonical, time_limit=time_limit, tol=tol)
    values = layout.values(sol.x) if sol.ok else None
    return ConicSolution(
        sol.termination,
        sol.status,
        values,
        sol.objective,
        solve_s=sol.solve_s,
        build_s=lower_s + sol.build_s,
        iterations=sol.iterations,
        solver=sol.solver,
        version=sol.version,
        message=sol.message,
        duals=layout.duals(sol.row_dual) if sol.ok else {},
    )


class _Inaccurate(SolverError):
    """The solver stopped short of the tolerance asked ("optimal_inaccurate")."""


def verify(
    model: NoiseModel,
    cov: dict[str, np.ndarray],
    program: ConicProgram,
    claimed: float | None,
    certify: bool = True,
    backend=None,
    duals: dict | None = None,
    bound: Callable[[float], tuple[float, tuple | None]] | None = None,
) -> dict:
    """Recompute privacy and loss from the (co)variances ``cov`` of ``program.blocks``
    (``verification.problems.verify_noise``), and certify the loss against ``lower_bound``
    (from the solver's multipliers ``duals`` when they suffice), or against ``bound(enough)``, a
    method's own proven lower bound and the dual point (Y, mu) proving it (``methods.barrier``:
    nothing solved); the point is recorded for ``privopt verify``. Every
    comparison fails on NaN."""
    req = model.requirement

    proof: dict = {}

    def program_bound(enough: float) -> float:  # the route's certificate: a point of the dual
        value, point = bound(enough) if bound is not None else best_dual(program, backend, duals, enough)
        if point is not None:
            proof["dual_point"] = {"Y": np.asarray(point[0]).tolist(), "mu": np.asarray(point[1]).tolist()}
        return value

    v = verify_noise(model, cov, program, program_bound if certify else None)
    loss, lb, gap = v.values["loss"], v.values["lower_bound"], v.values["relative_gap"]
    scale = abs(loss)
    return {
        "passed": v.passed,
        "objective": loss,
        "optimality": f"certified: proven lower bound within {max(gap, 0.0):.1e} (relative)",
        # the solver's own loss, before cleaning scaled the noise to exact feasibility (information)
        "solver_objective": None if claimed is None else claimed * program.unit + program.offset,
        "max_sensitivity": v.values["max_sensitivity"],
        "sensitivity_bound": program.sensitivity_bound,
        "sensitivity_ceiling": v.values["sensitivity_ceiling"],
        "delta_achieved": v.values["delta_achieved"],
        "log_delta_achieved": v.values["log_delta_achieved"],
        "calibration": req.calibration,
        "eps": req.eps,
        "delta": req.delta,
        "evidence": {
            "kind": "lower bound (a feasible point of the Lagrange dual)",
            "bound": lb,
            "side": "lower",
            "gap": loss - lb,
            "relative_gap": gap,
            "tolerance": CONIC_RTOL * scale,
            "calibration_factor": v.values["shrink"],
        }
        | proof,
        "tolerances": {
            "delta achieved vs delta (relative)": DELTA_RTOL,
            "objective vs solver and vs the bound (relative)": CONIC_RTOL,
        },
        "failures": v.failures,
    }


def lower_bound(program: ConicProgram, backend=None, duals: dict | None = None, enough: float = math.inf) -> float:
    """A proven lower bound on the program's optimum (real units): ``best_dual``'s bound."""
    return best_dual(program, backend, duals, enough)[0]


def best_dual(
    program: ConicProgram, backend=None, duals: dict | None = None, enough: float = math.inf
) -> tuple[float, tuple[np.ndarray, np.ndarray] | None]:
    """(bound, (Y, mu)): the best of ``ConicProgram.dual_bound`` over points (Y, mu) of the
    Lagrange dual, and that point (None when the program has no inputs or no point bounds
    anything: then -inf, or the offset). The first candidates are the multipliers the primal
    solve returned (``duals``: free); only when they do not reach ``enough`` is the dual
    (``ConicProgram.dual_cvxpy``) solved on its own by the same conic solver. ``privopt
    verify`` recomputes ``dual_bound`` at the recorded point."""
    if program.F.shape[1] == 0:
        return program.offset, None
    scored = [(program.dual_bound(Y, mu), (Y, mu)) for Y, mu in program.dual_point(duals or {})]
    best = max(scored, key=lambda bp: bp[0], default=(-math.inf, None))
    if best[0] >= enough:
        return best
    import cvxpy as cp

    problem, Yv, muv = program.dual_cvxpy()
    solver = getattr(backend, "solver", None) or "CLARABEL"
    try:
        with solverlog.captured():
            problem.solve(solver=solver if solver in ("CLARABEL", "SCS") else "CLARABEL")
    except cp.error.SolverError:
        return best
    if Yv.value is None or muv.value is None:
        return best
    solved = (program.dual_bound(Yv.value, muv.value), (Yv.value, muv.value))
    return max(best, solved, key=lambda bp: bp[0])
