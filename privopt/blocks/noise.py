"""The ``noise`` block kind: Gaussian noise variances (Ramon & Basu Sec. 3.2), solved by the
conic method (``methods.conic``) or, for diagonal noise at large sizes, the barrier method
(``methods.barrier``).

Cleaning and verification are part of every attempt of the conic method (only the certificate
says whether an attempt is good enough, ``methods.conic.solve_verified``): the (co)variances
reach the block kind cleaned (negatives clipped, correlated blocks projected onto the PSD cone,
scaled by the least ``kappa >= 1`` that makes the largest Mahalanobis sensitivity meet the
calibration's bound: ``lower.noise.ConicProgram.clean``) and verified from the returned
variances alone (``methods.conic.verify``: Sigma, each input's sensitivity by a linear solve, a
singular Sigma by its range; the delta the release achieves at eps by the exact formula, Balle
& Wang Thm. 8, and, for the classic calibration, its condition; the loss tr(Sigma) + |c|^2; and
the certificate, a point of the program's Lagrange dual made feasible exactly by a rescaling,
whose value no feasible choice can beat: weak duality).

The block kind adds the paper's two classic placements (``baselines``): local DP on each input
(closed form) and the best noise on the answers alone (the same program with ``G = I``, by the
barrier method where ``classify.barrier_chosen`` says its size calls for it), verified the same way, and for correlated noise what correlation gains over the best diagonal
noise (``diagonal_gain``).
"""

from __future__ import annotations

import math
import time

import numpy as np
from threadpoolctl import threadpool_limits

from ..backends import get_backend
from ..classify import barrier_chosen, barrier_refusal
from ..core.certificate import Certificate
from ..core.plan import Outcome
from ..errors import SolverError, VerificationError
from ..lower.noise import Block, lower_noise
from ..measures.gaussian import DELTA_RTOL, max_sensitivity
from ..methods import barrier
from ..methods.conic import CONIC_TOLS, solve_canonical, solve_verified, verify
from ..model.noise import NoiseModel
from ..model.problem import Problem
from ..verification.tolerances import CONIC_RTOL
from .common import EXACT, Accuracy, Answer, Measured, Route, RouteStopped

PSD_MAX_ANSWERS = 60  # the psd lowering has one (m+1)^2 block per input: check skips it beyond


class NoiseKind:
    """The ``noise`` block kind (``privopt.blocks``)."""

    name = "noise"

    def prepare(self, problem: Problem) -> None:
        """Nothing: the conic method's chain lowers the placement itself."""
        return None

    def clean(self, problem: Problem, prepared, outcome: Outcome) -> Outcome:
        """The outcome as it is: the conic method cleans every attempt before it verifies it
        (``lower.noise.ConicProgram.clean``), so its point is already exactly feasible."""
        return outcome

    def verify(self, problem: Problem, prepared, outcome: Outcome) -> dict:
        """The solve's own verification, then the baselines' (the local-DP and answer-noise
        placements): cleaning makes a baseline feasible, so only its optimality may stay unproven."""
        c = outcome.context
        model, be, verification, sol = problem.noise, c["backend"], c["verification"], c["solution"]
        if not verification["passed"]:
            raise VerificationError(
                "the returned noise failed privopt's verification: " + "; ".join(verification["failures"])
            )
        t1 = time.perf_counter()
        with threadpool_limits(limits=barrier.blas_threads(), user_api="blas"):  # as the barrier method runs
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
                "form": c.get("form", "soc"),
            }
            | dict(c["program"].size)
        )
        return verification

    def certificate(self, problem: Problem, prepared, outcome: Outcome, verification: dict) -> Certificate:
        """The dual point's lower bound, scaled by the calibration's proven bound, with the point
        (Y, mu) itself (``privopt verify`` recomputes its bound); the point moves here from the
        verification's evidence, which keeps the numbers only."""
        ev = verification["evidence"]
        point = {"dual_point": ev.pop("dual_point")} if "dual_point" in ev else {}
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
            }
            | point,
        )

    def fields(self, problem: Problem, prepared, outcome: Outcome, verification: dict) -> dict:
        """The loss, the noise, the baselines' losses and, for correlated noise, what
        correlation gains over the best diagonal noise."""
        model, cov, c = problem.noise, outcome.point, outcome.context
        details = {"noise": {n.name: cov[n.name].tolist() for n in model.noises}, "baselines": c["baselines"]}
        if any(n.correlated for n in model.noises):
            details["correlation_gain"] = diagonal_gain(model, c["backend"], c["time_limit"], verification["objective"])
        return {"objective": verification["objective"], "measures": measures(model, verification), "details": details}

    def routes(self, problem: Problem, analysis, tol: float) -> list[Route]:
        return routes(problem, analysis, tol)


KIND = NoiseKind()


def baselines(model: NoiseModel, backend, time_limit=None) -> dict[str, dict]:
    """The two classic placements (Ramon & Basu Sec. 3.2), each verified:

    * ``input_only``: local DP, the paper's LDP baseline: each input released with its own
      noise, private by itself (``w_j / sqrt(s_j) <= Delta``), the answers computed from the
      noisy inputs. Its best variances are the least ones, s_j = (w_j / Delta)^2, and its loss
      is ``sum_j |f_j|^2 s_j`` (tr(A'A) c for equal ranges). The release is post-processing of
      private inputs, so it meets dp(x -> O) too, exactly, even where Sigma = F S F' is
      singular (more answers than inputs);
    * ``output_only``: the best noise on the answers alone (``G = I``): the conic program, or
      the barrier method from the size ``classify.barrier_chosen`` names, certified by its lower
      bound; in closed form for a single answer.
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
    elif backend is None or barrier_chosen(program.F.shape[1], m):  # no backend: the barrier route
        cov, _, check = barrier.solve_verified(model, program, time_limit)
    else:
        cov, _, check = solve_verified(model, program, backend, time_limit)
    out["output_only"] = {"loss": check["objective"], "variances": cov["output_only"], "verification": check}
    return out


def diagonal_gain(model: NoiseModel, backend, time_limit, correlated_loss: float) -> dict:
    """The same program with every noise diagonal: what correlation gains."""
    blocks = tuple(Block(n.name, n.G, False) for n in model.noises)
    program = lower_noise(model, blocks)
    _, _, check = solve_verified(model, program, backend, time_limit)
    if not check["passed"]:
        raise VerificationError("the diagonal-noise comparison failed verification: " + "; ".join(check["failures"]))
    diag = check["objective"]
    return {"diagonal": diag, "correlated": correlated_loss, "ratio": correlated_loss / diag if diag > 0 else None}


def measures(model: NoiseModel, verification: dict) -> dict[str, float]:
    """The verified loss and privacy, under names that say what they are."""
    req = model.requirement
    return {
        f"expected squared error of {model.release}": verification["objective"],
        f"largest sensitivity of {model.release} to one entry of {model.input.name}": verification["max_sensitivity"],
        f"delta at eps = {req.eps:g} (exact)": verification["delta_achieved"],
    }


# ------------------------------------------------------------------ routes for privopt check


def routes(problem: Problem, analysis, tol: float) -> list[Route]:
    """The program on each conic solver of cvxpy: modelled directly in cvxpy
    (``lower.noise.ConicProgram.to_cvxpy``), its soc form first, on Clarabel (the reference)
    then SCS; then its canonical program (``methods.conic.solve_canonical``, the generic cone
    solve of ``core.canonical``); then the psd form (the paper's matrix-fractional
    constraints, skipped beyond ``PSD_MAX_ANSWERS`` answers); and, for diagonal noise with
    noise on every answer, the barrier method (``methods.barrier``, no solver). Every answer is
    cleaned to exact feasibility and measured by its loss; accurate to ``CONIC_RTOL`` (relative)."""
    model = problem.noise
    program = lower_noise(model)
    accuracy = Accuracy(
        EXACT.abs, CONIC_RTOL, DELTA_RTOL, f"interior-point accuracy ({CONIC_RTOL:g} relative)"
    ).at_least(tol)

    def runner(form, canonical=False):
        def run(backend, time_limit):
            t0 = time.perf_counter()
            if canonical:
                sol = solve_canonical(program, backend, form, time_limit, CONIC_TOLS[0])
            else:
                sol = backend.solve_conic(program, form=form, time_limit=time_limit, tol=CONIC_TOLS[0])
            if sol.termination in ("time_limit", "user_limit", "inaccurate"):
                raise RouteStopped("time" if sol.termination != "inaccurate" else "accuracy", sol.message)
            if not sol.ok:
                raise SolverError(f"{sol.solver}: {sol.termination} ({sol.message})")
            cov = program.clean(model, program.real(sol.values))
            return Answer(cov, time.perf_counter() - t0 - sol.solve_s, sol.solve_s, form)

        return run

    def measured(cov, acc):
        check = verify(model, cov, program, None, certify=False)
        excess = math.expm1(check["log_delta_achieved"] - math.log(model.requirement.delta))
        return Measured(check["objective"], max(0.0, excess))

    solvers = ("CLARABEL", "SCS")
    out = [Route("conic (soc)", get_backend("cvxpy", s), runner("soc"), measured, accuracy) for s in solvers]
    out += [
        Route("conic (canonical)", get_backend("cvxpy", s), runner("soc", True), measured, accuracy) for s in solvers
    ]

    def run_barrier(backend, time_limit):
        sol = barrier.solve_barrier(program, time_limit=time_limit)
        cov = program.clean(model, program.real(sol.values))
        return Answer(cov, 0.0, sol.solve_s, "barrier")

    refusal = barrier_refusal(model)
    out.append(
        Route("barrier", None, run_barrier, measured, accuracy, skip=None if refusal is None else f"barrier: {refusal}")
    )
    skip = f"the psd form has one ({model.answers}+1)^2 block per input: skipped beyond {PSD_MAX_ANSWERS} answers"
    for solver in solvers:
        be = get_backend("cvxpy", solver)
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
