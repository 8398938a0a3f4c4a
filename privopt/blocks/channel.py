"""The ``channel`` block kind: a rank-preserving obfuscation channel (Shariatnasab, Shirani &
Iyengar 2023), kind name "obfuscation".

The program (model/obfuscation.py): minimize Q(P_X, W) subject to I(Y; F) <= eps, W a 2 x 2
channel (optionally symmetric). It is nonconvex: Q is quasiconcave, not convex, on the channels
that matter. Its routes are the certified global method (``methods/obfuscation.py``, running
``lower/obfuscation.py``: bisection along the symmetric channels, a certified 1-D search along the
feasible set's boundary otherwise), which returns a proven lower bound with the answer, the outer
approximation with tangent cuts (a second certified method, for ``privopt check``), and Corollary 2
(``closedform/obfuscation.py``), which answers the symmetric problem under uniform P_X and BSC
query noise in closed form, checked against the symmetric bisection.

Verification recomputes from the returned table alone, by formulas of its own: the rows of W,
the symmetric restriction, the leakage from the joint P(F, Y) = sum_x P(x) P(F | x) W(Y | x)
(entropies, not the method's divergences) and Q by Sheppard's formula from eq. 2's covariance
(arcsin, not the method's atan2 form).
"""

from __future__ import annotations

import math
import time

import numpy as np

from ..closedform.obfuscation import bsc_parameter, bsc_symmetric_channel, corollary2_applies
from ..core.certificate import Certificate
from ..core.plan import Outcome
from ..errors import SolverError, VerificationError
from ..lower.obfuscation import DEFAULT_TOL, ChannelSolution, grid_channel, optimal_channel
from ..model.obfuscation import ObfuscationModel
from ..model.problem import Problem
from ..results import Columns, LazyTables
from ..verification.atoms import leakage_bits as _leakage
from ..verification.atoms import sheppard as _sheppard
from ..verification.problems import verify_channel
from ..verification.tolerances import LEAK_RTOL, ROW_ATOL
from .common import Accuracy, Answer, Measured, Route, RouteStopped, label_column

FLOOR_TOL = 1e-7  # absolute, in Q: the certified gap accepted where the method stops at float64's floor
GRID_POINTS = 20001
GRID_ACCURACY = 2e-3  # Q varies like sqrt(p) near p = 0: a 5e-5 grid step can cost ~2e-3 there


class Channel:
    """The block kind of an obfuscation channel (``privopt.blocks``): nothing to prepare, nothing
    to clean (W is built from (p1, p2)), the channel verified from its table (``verify``), the
    route's certificate, and the fields of a Result; ``routes`` for ``privopt check``."""

    name = "obfuscation"

    def prepare(self, problem: Problem) -> None:
        return None

    def clean(self, problem: Problem, prepared, outcome: Outcome) -> Outcome:
        return outcome  # W is built from (p1, p2): nothing to clean

    def verify(self, problem: Problem, prepared, outcome: Outcome) -> dict:
        """The channel recomputed (``verify``), the method's certificate, and float64's floor:
        a gap at the rounding floor is certified to ``FLOOR_TOL``; any other open gap fails."""
        model, sol = problem.obfuscation, outcome.point
        _, disagreement = outcome.context
        verification = verify(model, sol.W, claimed=sol.q_value)
        verification.update(optimality=outcome.optimality, evidence=outcome.evidence)
        verification["failures"] += disagreement
        verification["passed"] = not verification["failures"]
        at_floor = (
            sol.status == "gap_not_closed" and any("rounding floor" in n for n in sol.notes) and sol.gap <= FLOOR_TOL
        )
        if at_floor:
            verification["optimality"] += (
                f"; the gap {sol.gap:.1e} is float64's rounding floor here (an optimum at p ~ 1e-16, where Q ~ sqrt(p)): "
                f"certified to {FLOOR_TOL:g}, not to {DEFAULT_TOL:g}"
            )
        elif sol.status != "optimal":
            raise SolverError(
                f"the global method could not close the gap: Q = {sol.q_value:.12g}, proven lower bound "
                f"{sol.lower_bound!r} (gap {sol.gap!r} > {DEFAULT_TOL:g}); {'; '.join(sol.notes)}"
            )
        if not verification["passed"]:
            raise VerificationError(
                "the returned channel failed privopt's verification: " + "; ".join(verification["failures"])
            )
        return verification

    def certificate(self, problem: Problem, prepared, outcome: Outcome, verification: dict) -> Certificate:
        return outcome.certificate

    def fields(self, problem: Problem, prepared, outcome: Outcome, verification: dict) -> dict:
        """Q (the atan2 form, exact at the degenerate channels; verified by arcsin), the channel,
        its certificate and the optimum under the other restriction (Fig. 5)."""
        model, sol = problem.obfuscation, outcome.point
        certified, _ = outcome.context
        details = {
            "channel": {"p1": sol.p1, "p2": sol.p2, "symmetric": model.symmetric},
            "optimality": {
                "global": True,
                "method": sol.method,
                "lower_bound": sol.lower_bound,
                "gap": sol.gap,
                "tolerance": DEFAULT_TOL,
            },
            "comparison": _other_restriction(model, certified),
        }
        outcome.stats.update(
            {"iterations": sol.iterations, "leakage evaluations": sol.evaluations, "route": sol.method}
        )
        return {
            "objective": sol.q_value,
            "tables": LazyTables({model.design: lambda: channel_table(problem, sol.W)}),
            "measures": measures(model, sol.W),
            "details": details,
        }

    def routes(self, problem: Problem, analysis, tol: float) -> list[Route]:
        return routes(problem, analysis, tol)


KIND = Channel()


def _other_restriction(model: ObfuscationModel, solved: ChannelSolution) -> dict:
    """The optimum with the other restriction (Fig. 5: how much asymmetry buys), beside the one
    already ``solved`` under the spec's own restriction."""
    other = optimal_channel(model.px1, model.F_given_X, model.eps, symmetric=not solved.symmetric, tol=DEFAULT_TOL)
    sym, free = (solved, other) if solved.symmetric else (other, solved)
    return {
        "symmetric": sym.q_value,
        "unrestricted": free.q_value,
        "asymmetry_gain": sym.q_value - free.q_value,
        "certified": sym.status == "optimal" and free.status == "optimal",
    }


# ------------------------------------------------------------------ verification


def verify(model: ObfuscationModel, W: np.ndarray, claimed: float | None = None) -> dict:
    """Recompute the channel's rows, the symmetric restriction, the leakage and Q from ``W``
    (and compare Q with the method's ``claimed`` value, when given)."""
    v = verify_channel(model, W, claimed)
    return {
        "passed": v.passed,
        "objective": v.values["objective"],
        "leakage_bits": v.values["leakage_bits"],
        "leakage_bound": None if model.leakage is None else model.eps,
        "max_row_sum_error": v.values["max_row_sum_error"],
        "tolerances": {
            "leakage (bits): eps * (1 + rtol)": LEAK_RTOL,
            "rows (absolute)": ROW_ATOL,
            "optimality gap in Q (absolute)": DEFAULT_TOL,
        },
        "failures": v.failures,
    }


def measures(model: ObfuscationModel, W: np.ndarray) -> dict[str, float]:
    """Q, the leakage and the channel's two crossover probabilities, named as in the spec."""
    x, y, o = model.data, model.release, (model.leakage.other if model.leakage is not None else model.data)
    lab = model.labels
    return {
        f"krcc({x}, {y})": _sheppard(model.px1, W),
        f"mutual_info({y}; {o}) bits": _leakage(model.px1, W, model.F_given_X),
        f"mutual_info({x}; {o}) bits": _leakage(model.px1, np.eye(2), model.F_given_X),
        f"P({y} = {lab[1]} | {x} = {lab[0]})": float(W[0, 1]),
        f"P({y} = {lab[0]} | {x} = {lab[1]})": float(W[1, 0]),
    }


def channel_table(problem: Problem, W: np.ndarray) -> Columns:
    """W in the layout of every designed table: one row per cell (X, Y, value)."""
    model = problem.obfuscation
    axes = (model.data, model.release)
    cols = {a: label_column(problem.variables[a].labels, (2, 2), k) for k, a in enumerate(axes)}
    cols["value"] = np.asarray(W, dtype=float).ravel()
    return Columns(cols)


# ------------------------------------------------------------------ routes for privopt check


def routes(problem: Problem, analysis, tol: float) -> list[Route]:
    """The certified global method first (the reference), for an unrestricted channel the outer
    approximation (the other certified method, a cross-check of the boundary search), Corollary 2
    where its conditions hold, and a dense grid search (a feasible point per grid value, no bound). Each answer is measured
    by ``verify``: Q by Sheppard's formula and the leakage's excess over eps (bits)."""
    model = problem.obfuscation
    exact = Accuracy(
        DEFAULT_TOL,
        0.0,
        LEAK_RTOL * max(model.eps, 1.0) if math.isfinite(model.eps) else LEAK_RTOL,
        f"certified global optimum (gap <= {DEFAULT_TOL:g} in Q)",
    ).at_least(tol)
    grid = Accuracy(
        GRID_ACCURACY,
        0.0,
        exact.cells,
        f"a {GRID_POINTS:,}-point grid: Q varies like sqrt(p) near p = 0, so one step can cost {GRID_ACCURACY:g}",
    )

    def timed(solve):
        def run(backend, time_limit):
            t0 = time.perf_counter()
            sol = solve()
            if sol.status not in ("optimal", "feasible"):
                raise RouteStopped("iterations", f"gap {sol.gap!r} not closed: {'; '.join(sol.notes)}")
            return Answer(sol.W, 0.0, time.perf_counter() - t0, sol.method)

        return run

    def measured(W, acc):
        return measure(problem, W)

    applies = model.leakage is not None and corollary2_applies(model.px1, model.F_given_X, model.symmetric)
    why_not = (
        None
        if applies
        else (
            "Corollary 2 needs uniform P_X, BSC query noise and the symmetric restriction"
            + ("" if model.leakage is not None else ", and a leakage bound")
        )
    )
    outer = Route(
        "outer-approximation",
        None,
        timed(lambda: optimal_channel(model.px1, model.F_given_X, model.eps, False, DEFAULT_TOL, search="outer")),
        measured,
        exact,
    )
    return [
        Route(
            "global",
            None,
            timed(lambda: optimal_channel(model.px1, model.F_given_X, model.eps, model.symmetric, DEFAULT_TOL)),
            measured,
            exact,
        ),
        *([] if model.symmetric else [outer]),
        Route(
            "closed-form",
            None,
            timed(
                lambda: ChannelSolution(
                    bsc_symmetric_channel(model.eps, bsc_parameter(model.F_given_X)),
                    0.0,
                    None,
                    None,
                    0.0,
                    "feasible",
                    0,
                    0,
                    "corollary-2",
                    True,
                    model.eps,
                    0.0,
                )
            ),
            measured,
            exact,
            skip=why_not,
        ),
        Route(
            "grid",
            None,
            timed(lambda: grid_channel(model.px1, model.F_given_X, model.eps, model.symmetric, GRID_POINTS)),
            measured,
            grid,
        ),
    ]


def measure(problem: Problem, W: np.ndarray) -> Measured:
    """privopt's measure of a channel for ``privopt check``: (Q, leakage excess in bits)."""
    model = problem.obfuscation
    v = verify(model, W)
    return Measured(v["objective"], 0.0 if model.leakage is None else max(0.0, v["leakage_bits"] - model.eps))
