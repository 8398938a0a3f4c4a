"""Noise placement (Ramon & Basu Sec. 3.2): lower -> conic solve -> clean -> verify, as the
driver's class object ``CLASS`` (``pipeline/driver.py``).

After the solver, the variances are cleaned (negatives clipped, a correlated block projected
onto the PSD cone) and scaled by the least factor ``kappa >= 1`` that makes the largest
Mahalanobis sensitivity meet the calibration's bound: every constraint scales as 1/kappa, so
the scaled point is feasible to the last bit and costs a relative ``kappa - 1`` more.

Verification recomputes from the returned variances alone: Sigma, each input's sensitivity by a
linear solve (``measures.gaussian.sensitivities``; a singular Sigma by its range), the delta the
release achieves at eps by the exact formula (Balle & Wang Thm. 8) and, for the classic
calibration, its condition; the objective tr(Sigma) + |c|^2; and a proven lower bound. The
bound is a certificate of its own (``lower_bound``): a point of the program's Lagrange dual,
made feasible exactly by a rescaling, whose value no feasible choice can beat (weak duality).

The baselines (``baselines``) are the paper's two classic placements: local DP on each input
(closed form) and the best noise on the answers alone (the same conic program with ``G = I``),
verified the same way.
"""

from __future__ import annotations

import math
import time

import numpy as np

from .. import solverlog
from ..backends import get_backend
from ..blocks.common import EXACT, Accuracy, Answer, Measured, Route, RouteStopped
from ..core.certificate import Certificate
from ..errors import SolverError, VerificationError
from ..lower.noise import Block, ConicProgram, lower_noise
from ..measures.gaussian import DELTA_RTOL, max_sensitivity, sensitivities_of_factor
from ..model.noise import NoiseModel
from ..model.problem import Problem
from ..verification.problems import verify_noise
from ..verification.sets import factor as _factor
from ..verification.tolerances import CONIC_RTOL  # the objective vs its proven lower bound (relative)
from .driver import Outcome

CONIC_TOLS = (1e-9, 1e-10, 1e-11)  # the solver's tolerances, tightened while the certificate fails
CONIC_LOOSER = (1e-8, 1e-7)  # tried when the solver calls 1e-9 "inaccurate": the certificate still decides
PSD_MAX_ANSWERS = 60  # the psd lowering has one (m+1)^2 block per input: check skips it beyond


class NoiseClass:
    """The noise-placement class for the driver (``pipeline/driver.py``): the route's chain
    (the Gaussian calibration as cones) to a conic program, solved and verified at tightening
    tolerances until its certificate holds (``solve_verified``: cleaning and verification are
    part of each attempt); then the paper's two baselines, verified the same way."""

    def prepare(self, problem: Problem) -> None:
        return None

    def method(self, problem: Problem, ctx, route, time_limit, workers, progress) -> Outcome:
        be = route.backend
        t0 = time.perf_counter()
        program, _ = route.chain.apply(problem)
        lower_s = time.perf_counter() - t0
        cov, sol, verification = solve_verified(problem.noise, program, be, time_limit)
        stats = {
            "lower_s": round(lower_s, 6),
            "conic_build_s": round(sol.build_s, 6),
            "conic_solve_s": round(sol.solve_s, 6),
        }
        return Outcome(
            cov,
            verification["optimality"],
            be.label,
            stats=stats,
            context={
                "program": program,
                "solution": sol,
                "verification": verification,
                "backend": be,
                "time_limit": time_limit,
            },
        )

    def clean(self, problem: Problem, ctx, outcome: Outcome) -> Outcome:
        return outcome  # ``solve`` cleans every attempt before it is verified

    def verify(self, problem: Problem, ctx, outcome: Outcome) -> dict:
        """The solve's own verification, then the baselines' (the local-DP and answer-noise
        placements): cleaning makes a baseline feasible, so only its optimality may stay unproven."""
        c = outcome.context
        model, be, verification, sol = problem.noise, c["backend"], c["verification"], c["solution"]
        if not verification["passed"]:
            raise VerificationError(
                "the returned noise failed privopt's verification: " + "; ".join(verification["failures"])
            )
        t1 = time.perf_counter()
        base = baselines(model, be, c["time_limit"])
        baseline_s = time.perf_counter() - t1
        for name, b in base.items():
            if not b["verification"]["passed"] and not all("not certified" in f for f in b["verification"]["failures"]):
                raise VerificationError(
                    f"the {name} baseline failed verification: " + "; ".join(b["verification"]["failures"])
                )
        c["baselines"] = {name: b["loss"] for name, b in base.items()}
        verification["baselines"] = {name: b["verification"] for name, b in base.items()}
        outcome.stats.update(
            {
                "baselines_s": round(baseline_s, 6),
                "iterations": sol.iterations,
                "solver": f"{sol.solver} {sol.version}",
                "form": "soc",
            }
            | dict(c["program"].size)
        )
        return verification

    def certificate(self, problem: Problem, ctx, outcome: Outcome, verification: dict) -> Certificate:
        ev = verification["evidence"]
        return Certificate(
            "dual-bound",
            "a feasible point of the Lagrange dual bounds the loss from below (weak duality), scaled by the "
            "calibration's proven bound",
            bound=ev["bound"],
            side="lower",
            gap=ev["relative_gap"],
            data={
                "kind": ev["kind"],
                "absolute_gap": ev["gap"],
                "tolerance": ev["tolerance"],
                "calibration_factor": ev["calibration_factor"],
            },
        )

    def fields(self, problem: Problem, ctx, outcome: Outcome, verification: dict) -> dict:
        """The loss, the noise, the baselines' losses and, for correlated noise, what
        correlation gains over the best diagonal noise."""
        model, cov, c = problem.noise, outcome.point, outcome.context
        details = {"noise": {n.name: cov[n.name].tolist() for n in model.noises}, "baselines": c["baselines"]}
        if any(n.correlated for n in model.noises):
            details["correlation_gain"] = _diagonal_gain(
                model, c["backend"], c["time_limit"], verification["objective"]
            )
        return {"objective": verification["objective"], "measures": _measures(model, verification), "details": details}

    def infeasible_backend(self, route) -> str | None:
        return route.label


CLASS = NoiseClass()


def solve_verified(model: NoiseModel, program: ConicProgram, backend, time_limit=None, form: str = "soc"):
    """(covariances, ConicSolution, verification): solved at the tolerances of ``CONIC_TOLS`` in
    turn until the answer verifies (a tighter solve after the first that is optimal but not
    certified); the last verification says why when none does. A first solve the solver calls
    inaccurate is repeated at ``CONIC_LOOSER``: a looser answer is still only "optimal" when its
    certificate holds at ``CONIC_RTOL``."""
    try:
        cov, sol = solve(model, program, backend, time_limit, form, CONIC_TOLS[0])
    except _Inaccurate as first:  # Clarabel stalls at 1e-9 on some small programs: ask for less
        for tol in CONIC_LOOSER:
            try:
                cov, sol = solve(model, program, backend, time_limit, form, tol)
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
            cov2, sol2 = solve(model, program, backend, time_limit, form, tol)
        except SolverError:  # "inaccurate" at this tolerance: keep the answer we have
            break
        cov, sol, check = cov2, sol2, verify(model, cov2, program, sol2.objective, backend=backend, duals=sol2.duals)
    return cov, sol, check


def solve(
    model: NoiseModel, program: ConicProgram, backend, time_limit=None, form: str = "soc", tol: float = CONIC_TOLS[0]
):
    """(cleaned and scaled covariances by noise name, the solver's ConicSolution). Raises
    ``SolverError`` when the solver returns no optimum."""
    sol = backend.solve_conic(program, form=form, time_limit=time_limit, tol=tol)
    if not sol.ok:
        raise (_Inaccurate if sol.termination == "inaccurate" else SolverError)(
            f"{sol.solver} returned no optimum for the noise-placement program "
            f"(termination '{sol.termination}': {sol.message})"
        )
    return _cleaned(model, program, sol), sol


class _Inaccurate(SolverError):
    """The solver stopped short of the tolerance asked ("optimal_inaccurate")."""


def _cleaned(model: NoiseModel, program: ConicProgram, sol) -> dict[str, np.ndarray]:
    """A solver's optimal point in real units (variances), cleaned to exact feasibility."""
    return clean(model, program, {b.name: sol.values[b.name] * program.unit for b in program.blocks})


def clean(model: NoiseModel, program: ConicProgram, cov: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Clip negative variances, project correlated blocks onto the PSD cone, then scale every
    (co)variance by ``kappa = max(1, max_j Delta_j^2 / Delta_max^2)``: exactly feasible."""
    out = {}
    for name, S in cov.items():
        S = np.nan_to_num(np.asarray(S, dtype=float), nan=0.0)
        if S.ndim == 1:
            out[name] = np.maximum(S, 0.0) + 0.0
        else:
            lam, V = np.linalg.eigh((S + S.T) / 2)
            out[name] = (V * np.maximum(lam, 0.0)) @ V.T
    blocks = {b.name: b.G for b in program.blocks}
    H = _factor(blocks, out, model.answers)
    worst = float(np.max(sensitivities_of_factor(H, model.F, model.input.widths), initial=0.0))
    bound = program.sensitivity_bound
    if worst > bound and math.isfinite(worst):
        kappa = (worst / bound) ** 2 * (1 + 1e-12)
        out = {name: S * kappa for name, S in out.items()}
    return out


def verify(
    model: NoiseModel,
    cov: dict[str, np.ndarray],
    program: ConicProgram,
    claimed: float | None,
    certify: bool = True,
    backend=None,
    duals: dict | None = None,
) -> dict:
    """Recompute privacy and loss from the (co)variances ``cov`` of ``program.blocks``, and
    certify the loss against ``lower_bound`` (from the solver's multipliers ``duals`` when they
    suffice). Every comparison fails on NaN."""
    req = model.requirement

    def program_bound(enough: float) -> float:  # the route's certificate: a point of the dual
        return lower_bound(program, backend, duals, enough)

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
        },
        "tolerances": {
            "delta achieved vs delta (relative)": DELTA_RTOL,
            "objective vs solver and vs the bound (relative)": CONIC_RTOL,
        },
        "failures": v.failures,
    }


def lower_bound(program: ConicProgram, backend=None, duals: dict | None = None, enough: float = math.inf) -> float:
    """A proven lower bound on the program's optimum (real units): the best of
    ``ConicProgram.dual_bound`` over points of the Lagrange dual. The first candidates are the
    multipliers the primal solve returned (``duals``: free); only when they do not reach
    ``enough`` is the dual (``ConicProgram.dual_cvxpy``) solved on its own by the same conic
    solver. -inf when no bound is found."""
    if program.F.shape[1] == 0:
        return program.offset
    best = max((program.dual_bound(Y, mu) for Y, mu in program.dual_point(duals or {})), default=-math.inf)
    if best >= enough:
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
    return max(best, program.dual_bound(Yv.value, muv.value))


def baselines(model: NoiseModel, backend, time_limit=None) -> dict[str, dict]:
    """The two classic placements (Ramon & Basu Sec. 3.2), each verified:

    * ``input_only``: local DP, the paper's LDP baseline: each input released with its own
      noise, private by itself (``w_j / sqrt(s_j) <= Delta``), the answers computed from the
      noisy inputs. Its best variances are the least ones, s_j = (w_j / Delta)^2, and its loss
      is ``sum_j |f_j|^2 s_j`` (tr(A'A) c for equal ranges). The release is post-processing of
      private inputs, so it meets dp(x -> O) too, exactly, even where Sigma = F S F' is
      singular (more answers than inputs);
    * ``output_only``: the best noise on the answers alone (``G = I``): the conic program,
      certified by its lower bound; in closed form for a single answer.
    """
    m = model.F.shape[0]
    bound = max_sensitivity(model.requirement.eps, model.requirement.delta, model.requirement.calibration)
    local = (model.input.widths / bound) ** 2
    program = lower_noise(model, (Block("input_only", model.F, False),))
    check = verify(model, {"input_only": local}, program, None, certify=False)
    local_sens = model.input.widths / np.sqrt(local)
    if not np.all(local_sens <= bound * (1 + DELTA_RTOL)):
        check["failures"].append("an input's own noise leaves it more sensitive than the calibration allows")
    check["evidence"] = {
        "kind": "closed form",
        "source": "each input's noise at its least variance (w_j / Delta)^2: the LDP optimum",
    }
    check["optimality"] = "certified: closed form (each variance at its lower bound)"
    check["passed"] = not check["failures"]
    out = {"input_only": {"loss": check["objective"], "variances": local, "verification": check}}
    program = lower_noise(model, (Block("output_only", np.eye(m), False),))
    if m == 1:
        cov = {"output_only": np.array([float(np.max((model.input.widths * model.F[0]) ** 2)) / bound**2])}
        check = verify(model, cov, program, None, backend=backend)
    else:
        cov, _, check = solve_verified(model, program, backend, time_limit)
    out["output_only"] = {"loss": check["objective"], "variances": cov["output_only"], "verification": check}
    return out


def _diagonal_gain(model: NoiseModel, backend, time_limit, correlated_loss: float) -> dict:
    """The same program with every noise diagonal: what correlation gains."""
    blocks = tuple(Block(n.name, n.G, False) for n in model.noises)
    program = lower_noise(model, blocks)
    _, _, check = solve_verified(model, program, backend, time_limit)
    if not check["passed"]:
        raise VerificationError("the diagonal-noise comparison failed verification: " + "; ".join(check["failures"]))
    diag = check["objective"]
    return {"diagonal": diag, "correlated": correlated_loss, "ratio": correlated_loss / diag if diag > 0 else None}


def _measures(model: NoiseModel, verification: dict) -> dict[str, float]:
    """The verified loss and privacy, under names that say what they are."""
    req = model.requirement
    return {
        f"expected squared error of {model.release}": verification["objective"],
        f"largest sensitivity of {model.release} to one entry of {model.input.name}": verification["max_sensitivity"],
        f"delta at eps = {req.eps:g} (exact)": verification["delta_achieved"],
    }


# ------------------------------------------------------------------ routes for privopt check


def routes(problem: Problem, analysis, tol: float) -> list[Route]:
    """Both lowerings on each conic solver of cvxpy: the SOC form on Clarabel first (the
    reference), then SCS, then the PSD form (the paper's matrix-fractional constraints, skipped
    beyond ``PSD_MAX_ANSWERS`` answers). Every answer is cleaned to exact feasibility and
    measured by its loss; accurate to ``CONIC_RTOL`` (relative)."""
    model = problem.noise
    program = lower_noise(model)
    accuracy = Accuracy(
        EXACT.abs, CONIC_RTOL, DELTA_RTOL, f"interior-point accuracy ({CONIC_RTOL:g} relative)"
    ).at_least(tol)

    def runner(form):
        def run(backend, time_limit):
            t0 = time.perf_counter()
            sol = backend.solve_conic(program, form=form, time_limit=time_limit, tol=CONIC_TOLS[0])
            if sol.termination in ("time_limit", "user_limit", "inaccurate"):
                raise RouteStopped("time" if sol.termination != "inaccurate" else "accuracy", sol.message)
            if not sol.ok:
                raise SolverError(f"{sol.solver}: {sol.termination} ({sol.message})")
            return Answer(_cleaned(model, program, sol), time.perf_counter() - t0 - sol.solve_s, sol.solve_s, form)

        return run

    def measured(cov, acc):
        check = verify(model, cov, program, None, certify=False)
        excess = math.expm1(check["log_delta_achieved"] - math.log(model.requirement.delta))
        return Measured(check["objective"], max(0.0, excess))

    out = []
    for solver in ("CLARABEL", "SCS"):
        be = get_backend("cvxpy", solver)
        out.append(Route("conic (soc)", be, runner("soc"), measured, accuracy))
    for solver in ("CLARABEL", "SCS"):
        be = get_backend("cvxpy", solver)
        skip = f"the psd form has one ({model.answers}+1)^2 block per input: skipped beyond {PSD_MAX_ANSWERS} answers"
        out.append(
            Route(
                "conic (psd)",
                be,
                runner("psd"),
                measured,
                accuracy,
                skip=skip if model.answers > PSD_MAX_ANSWERS else None,
            )
        )
    return out
