"""The block kind "atr": a transparency report's table (Chen et al.), ``KIND``.

A transparency report publishes D~(a | public, private), one row per record and an outcome
distribution per row. Its program separates by QID group (Lemma 3), so ``prepare`` lowers it
once into per-group blocks (``lower.reductions.QIDGroups``: an ``ATRInstance`` with the prior
p (G, m) and the bounds L <= D~ <= U of eq. 11 per cell). A route answers it (Theorem 1,
``closedform.atr.THEOREM_1.answer``; or the LFP method, ``methods.lfp.RUNNER``) with the point
``(table (G, m, A), beta per group, binding case per group or None)``; then

* ``clean`` moves the rows that lie off their bounds or off sum 1 onto both (``onto_bounds``);
* ``verify`` recomputes everything from the table and the spec (``verify``): rows, cells, every
  fidelity bound, the max confidence per group (Def. 3) against the method's, Lemma 5's floor;
* ``certificate`` is the route's (the theorem's, or the LFP's brackets per group);
* ``fields``: the objective at the largest beta, the groups frame (``objective``, ``beta``,
  ``beta_min``, ``c_star``, ``case``) and the released table in the design's axes.

For ``privopt check``: ``routes(problem, analysis, tol)`` lists every route
(``blocks/routes_report.py``) and ``measure`` is privopt's measure of a route's table
(``blocks/common.py`` documents the interface)."""

from __future__ import annotations

import numpy as np

from ..backends import all_backends
from ..classify import Analysis
from ..closedform.atr import CASES
from ..core.certificate import Certificate
from ..core.plan import Outcome
from ..errors import VerificationError
from ..lower.atr import ATRInstance, lower_atr
from ..lower.reductions import QIDGroups
from ..measures.confidence import beta_min, c_star, conditional_prior
from ..measures.reduce import gmax, gsum, osum, repair_rows, shift_onto_sum, worst
from ..model.problem import Problem
from ..results import Columns, Labels, LazyTables
from ..verification.problems import transparency_constraints, verify_transparency
from .common import (
    CONF_RTOL,
    CONS_RTOL,
    EXACT,
    ROW_ULPS,
    VERIFY_TOL,
    Accuracy,
    Measured,
    Route,
    label_column,
    row_tol,
)


class Report:
    """The transparency report's table as a block kind (``privopt.blocks``): lowered to
    per-group blocks once, moved onto its bounds, verified from the returned table."""

    name = "atr"

    def prepare(self, problem: Problem) -> ATRInstance:
        """The per-group blocks (Lemma 3); ``InfeasibleError`` when the bounds are empty."""
        inst, _ = QIDGroups().apply(problem)
        return inst

    def clean(self, problem: Problem, inst: ATRInstance, outcome: Outcome) -> Outcome:
        table, beta_g, case = outcome.point
        outcome.point = (onto_bounds(inst, table), beta_g, case)
        return outcome

    def verify(self, problem: Problem, inst: ATRInstance, outcome: Outcome) -> dict:
        table, beta_g, _ = outcome.point
        verification = verify(problem, inst, table, beta_g, outcome.optimality)
        if not verification["passed"]:
            raise VerificationError(
                "the returned table failed privopt's verification: " + "; ".join(verification["failures"])
            )
        return verification

    def certificate(self, problem: Problem, inst: ATRInstance, outcome: Outcome, verification: dict) -> Certificate:
        """The route's: Theorem 1's attained lower bound, or the LFP's brackets per group."""
        return outcome.certificate

    def fields(self, problem: Problem, inst: ATRInstance, outcome: Outcome, verification: dict) -> dict:
        table, beta_g, case = outcome.point
        objective = problem.objective
        beta = float(beta_g.max()) if beta_g.size else 0.0
        cstar = c_star(inst.p, inst.reference) if inst.reference is not None else None
        return {
            "objective": objective.value(beta),
            "beta": beta,
            "groups": _group_frame(inst, objective, beta_g, beta_min(inst.p), cstar, case),
            "tables": LazyTables({problem.design.name: lambda: released_table(problem, inst, table)}),
            "details": {"no_records": [nr.to_dict() for nr in problem.no_records]} if problem.no_records else {},
        }

    def routes(self, problem: Problem, analysis: Analysis, tol: float) -> list[Route]:
        return routes(problem, analysis, tol)


KIND = Report()


def onto_bounds(inst: ATRInstance, table: np.ndarray) -> np.ndarray:
    """The rows of ``table`` that lie outside their cells' bounds, or sum to 1 only within more
    than rounding (``row_tol``), moved onto both (``repair_rows``: clipped, then shifted within
    the bounds); the other rows as they are (bit for bit). Theorem 1's formula at
    alpha = 1 - 1e-12 left a cell 1e-12 above a bound of 0, and the LFP a row summing to
    1 - 1e-12: the verified table is the one reported."""
    off = np.any((table < inst.lower) | (table > inst.upper), axis=-1, keepdims=True)
    off |= ~(np.abs(osum(table)[..., None] - 1.0) <= row_tol(table.shape[-1]))
    if not off.any():
        return table
    return np.where(off, repair_rows(table, inst.lower, inst.upper), table)


def verify(problem: Problem, inst: ATRInstance, table: np.ndarray, beta_g: np.ndarray, optimality: str) -> dict:
    """Recompute everything from the returned table and the spec's own constraints.

    Checks: the prior is finite, >= 0, of positive finite mass (confidences do not depend on
    its scale), with a group of positive mass; cells finite and in [0, 1]; each row sums to 1;
    every constraint of the spec, evaluated cell by cell on the table (relative to the
    magnitude of its terms);
    the maximum confidence per group recomputed from the prior (Def. 3), equal to the method's
    value within CONF_RTOL relative (for the closed form, the theorem's lower bound is
    attained, which certifies optimality); and Lemma 5's floor beta_min <= beta, so a live
    group can never be certified at confidence 0. Every comparison fails on NaN.
    """
    v = verify_transparency(problem, inst.p, table, beta_g, _design_array(problem, inst, table), inst.group_key)
    return {
        "passed": v.passed,
        "max_confidence": v.values["max_confidence"],
        "max_confidence_error": v.values["max_confidence_error"],
        "max_confidence_relative_error": v.values["max_confidence_relative_error"],
        "optimality": optimality,
        "max_row_sum_error": v.values["max_row_sum_error"],
        "max_constraint_violation": v.values["max_constraint_violation"],
        "max_range_violation": v.values["max_range_violation"],
        "tolerance": VERIFY_TOL,
        "confidence_rtol": CONF_RTOL,
        "tolerances": {
            "rows (ulps per cell; cells in [0, 1] exactly)": ROW_ULPS,
            "constraints (relative to the magnitude of their terms)": CONS_RTOL,
            "confidence vs the method's (relative)": CONF_RTOL,
        },
        "evidence": {
            "kind": "closed-form lower bound" if optimality.startswith("certified: closed") else "bracket",
            "source": optimality,
        },
        "failures": v.failures,
    }


def _violations(
    problem: Problem, inst: ATRInstance, table: np.ndarray, floor: float = 1.0, tol: float = VERIFY_TOL
) -> tuple[float, float, float, list[str]]:
    """(row-sum error, range violation, constraint violation, the failures beyond ``tol``:
    constraints, then rows and cells) of the table as it is
    (``verification.problems.transparency_constraints``): rows and cells absolute, each constraint relative to
    ``max(floor, the magnitude of its terms)``. ``verify`` uses floor 0 and ``CONS_RTOL``
    (the table is on its bounds); a route's ``measure`` floor 1 (absolute accuracy). NaN
    propagates."""
    v = transparency_constraints(problem, table, _design_array(problem, inst, table), floor, tol)
    return (
        v.values["max_row_sum_error"],
        v.values["max_range_violation"],
        v.values["max_constraint_violation"],
        v.failures,
    )


def _design_array(problem: Problem, inst: ATRInstance, table: np.ndarray) -> np.ndarray:
    """The (G, m, A) table as an array over the design's axes, in the design's order."""
    order = inst.public + inst.private + (inst.outcome,)
    full = table.reshape(problem.shape(order))
    return np.transpose(full, [order.index(a) for a in problem.design.axes])


def released_table(problem: Problem, inst: ATRInstance, table: np.ndarray) -> Columns:
    """The design in long format: one column per axis (labels), then ``value``."""
    arr = _design_array(problem, inst, table)
    axes = problem.design.axes
    cols = {a: label_column(problem.variables[a].labels, arr.shape, k) for k, a in enumerate(axes)}
    cols["value"] = arr.ravel()
    return Columns(cols)


# ------------------------------------------------------------------ routes, for privopt check


def routes(problem: Problem, analysis: Analysis, tol: float) -> list[Route]:
    """Every route for ``problem`` (``blocks/routes_report.py``): the closed form where it
    applies, the LFP on every backend, DQCP (cvxpy:HIGHS) and the Pyomo bisection, each
    measured by ``measure``. Raises ``InfeasibleError`` when the bounds are empty. A route's
    runner is looked up when it runs, so a test can replace it in ``routes_report``."""
    from . import routes_report  # the LFP, cvxpy and Pyomo routes: not imported by a solve

    inst = lower_atr(problem)

    def measured(table, accuracy):
        return measure(problem, inst, table, accuracy)

    def name(g: int) -> str:
        return str(inst.group_key(g))

    exact = EXACT.at_least(tol)
    common = {"measure": measured, "group_name": name}
    out: list[Route] = []
    if "closed-form" in analysis.applicable:
        out.append(
            Route(
                "closed-form",
                None,
                lambda b, t: routes_report.closed_form(inst, b, t),
                accuracy=exact,
                per_group=True,
                **common,
            )
        )
    out += [
        Route("lfp", b, lambda b, t: routes_report.lfp(inst, b, t), accuracy=exact, per_group=True, **common)
        for b in all_backends()
    ]
    dqcp_accuracy = routes_report.DQCP_ACCURACY.at_least(tol)
    out.append(
        Route(
            "dqcp",
            routes_report.backend("cvxpy", "HIGHS"),
            lambda b, t: routes_report.dqcp(inst, b, t),
            accuracy=dqcp_accuracy,
            **common,
        )
    )
    out.append(
        Route(
            "bisection",
            routes_report.backend("pyomo"),
            lambda b, t: routes_report.bisection(inst, b, t),
            accuracy=exact,
            **common,
        )
    )
    return out


def measure(problem: Problem, inst: ATRInstance, table: np.ndarray, accuracy: Accuracy) -> Measured:
    """privopt's measure of a candidate table: the largest violation of the spec's
    constraints, rows and ranges of the table as returned; the max confidence per group of the
    table settled within ``accuracy.cells`` (``settled_confidence``), the objective at the
    largest; and ``accuracy.slack / S`` at its largest ratio, in the objective's units."""
    row_err, range_err, cons_err, _ = _violations(problem, inst, table)
    violation = worst(worst(cons_err, row_err), range_err)
    achieved, mass = settled_confidence(inst, table, accuracy.cells)
    beta = float(achieved.max(initial=0.0))
    value = problem.objective.value(beta)
    extra = 0.0
    if accuracy.slack and achieved.size:
        slack = accuracy.slack / max(float(mass[int(np.argmax(achieved))]), accuracy.slack)
        extra = abs(problem.objective.value(max(beta - slack, 1e-300)) - value)
    return Measured(value, violation, achieved, extra)


def settled_confidence(inst: ATRInstance, table: np.ndarray, cells: float) -> tuple[np.ndarray, np.ndarray]:
    """Per group, the smaller max confidence of two tables within ``cells`` of ``table``, and
    the outcome mass S_a (conditional on the group) where that table's largest ratio is:
    ``table`` moved onto its bounds and rows, and the same with the cells whose value or mass
    q_i X_ia is at most ``cells`` (and whose lower bound is 0) set to 0 first. Both are
    feasible, so the value is achieved.

    Why: confidence is discontinuous at zero mass. An outcome left with 1e-12 of stray mass
    on one record has confidence 1 there (Def. 3), and a route whose solver works at 1e-7
    leaves such mass; so does moving a row onto sum 1 by spreading 1e-16 over its empty cells
    (never done here: empty cells stay empty). Groups are independent (Lemma 3), so the
    better table can be chosen group by group."""
    clipped = np.clip(table, inst.lower, inst.upper)
    q = conditional_prior(inst.p)
    small = (clipped <= cells) | (q[:, :, None] * clipped <= cells)
    snapped = np.where(small & (inst.lower <= 0.0), 0.0, clipped)
    plain = _onto_rows(clipped, inst.lower, inst.upper, repair_rows(table, inst.lower, inst.upper))
    cut = _onto_rows(snapped, inst.lower, inst.upper, plain)
    (c1, s1), (c2, s2) = _confidence_and_mass(q, plain), _confidence_and_mass(q, cut)
    return np.minimum(c1, c2), np.where(c2 < c1, s2, s1)


def _confidence_and_mass(q: np.ndarray, table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per group: the max confidence (Def. 3, as measures.confidence) and the mass S_a of the
    outcome where it is attained."""
    joint = q[:, :, None] * table
    S = gsum(joint)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(S > 0, gmax(joint) / np.where(S > 0, S, 1.0), 0.0)
    a = ratio.argmax(axis=1) if ratio.size else np.zeros(len(q), dtype=int)
    rows = np.arange(len(q))
    return ratio[rows, a], S[rows, a]


def _onto_rows(x: np.ndarray, lower: np.ndarray, upper: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    """``x`` moved onto row sums 1 within its bounds, its empty cells kept empty; rows that
    cannot reach 1 that way are taken from ``fallback``."""
    moved = shift_onto_sum(x, lower, np.where(x > 0.0, upper, lower), np.ones(x.shape[:-1]), axis=-1)
    reached = np.abs(moved.sum(axis=-1) - 1.0) <= 1e-12
    return np.where(reached[..., None], moved, fallback)


def _group_frame(inst: ATRInstance, objective, beta_g, bmin, cstar, case) -> Columns:
    sizes = tuple(len(labels) for labels in inst.public_labels)
    cols = {v: label_column(labs, sizes, k) for k, (v, labs) in enumerate(zip(inst.public, inst.public_labels))}
    if objective.kind == "min_uncertainty":
        with np.errstate(divide="ignore"):
            cols["objective"] = np.where(beta_g > 0, -np.log(np.where(beta_g > 0, beta_g, 1.0)), np.inf)
    else:
        cols["objective"] = beta_g
    cols["beta"] = beta_g
    cols["beta_min"] = bmin
    cols["c_star"] = cstar if cstar is not None else np.full(beta_g.shape, np.nan)
    if case is not None:
        cols["case"] = Labels(np.asarray(case), CASES)
    return Columns(cols)
