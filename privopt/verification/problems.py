"""A program's verification is a fold over its constraints (issue 20, item 5): for each
problem class's point (a transparency table, a mechanism table, noise (co)variances, a
channel), the checks of every constraint in its set (``sets``), then of the objective
(``atoms``), then of the certificate (``certificate``), in one ``Verdict``.

Every number is recomputed from the point and the problem's data alone, with the tolerances
of ``verification.tolerances``; nothing here imports a solver (a route that must solve for a
certificate, the noise placement's dual, passes the bound in: ``verify_noise``'s
``program_bound``).

* ``verify_transparency``: the prior's data, the fidelity bounds and the table's rows
  (``transparency_constraints``), the max confidence per group, Lemma 5's floor;
* ``verify_mechanism``: the linear constraints, every budget in its pairwise form, the rows
  (``mechanism_constraints``), the objective from the joint and against the solver's, the
  proven bound;
* ``verify_noise``: each noise in its set (nonnegative variances, a PSD covariance), the
  Gaussian DP requirement, the trace loss, the dual bound scaled by the calibration;
* ``verify_channel``: the channel's rows and restriction, the leakage, Q.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..core.sets import PSD, Budget, Fidelity, GaussianDP, Leakage, LogLift, Nonnegative, SimplexRows, Zero
from ..measures.reduce import osum, worst
from ..model.linear import marginal
from . import atoms, sets
from . import certificate as cert
from .checks import Verdict, condition, fold
from .tolerances import CONIC_RTOL, CONS_RTOL, OBJ_RTOL, ROW_ATOL

# ------------------------------------------------------------------ transparency reports


def transparency_constraints(
    problem, table: np.ndarray, dense: np.ndarray, floor: float = 0.0, tol: float = CONS_RTOL
) -> Verdict:
    """Every fidelity bound of ``problem.constraints`` on ``dense`` (the table over the
    design's axes; ``sets.fidelity`` with ``floor`` and ``tol``), then the table's rows (G, m,
    A: each record's outcomes). Values: ``max_row_sum_error``, ``max_range_violation``,
    ``max_constraint_violation``."""
    parts = [
        sets.verify_set(Fidelity(c.sense, c.text), c.coef, c.const, dense, floor, tol) for c in problem.constraints
    ]
    cons_err = 0.0
    for part in parts:
        cons_err = worst(cons_err, part.values.pop("error"))
    rows = sets.verify_set(SimplexRows(width=int(table.shape[-1]) if table.ndim else 1), table, rowsum=osum)
    out = fold(*parts, rows)
    out.values["max_constraint_violation"] = cons_err
    return out


def verify_transparency(
    problem, p: np.ndarray, table: np.ndarray, beta_g: np.ndarray, dense: np.ndarray, group_key: Callable[[int], object]
) -> Verdict:
    """A transparency table (G, m, A) under the prior ``p`` (G, m), with the method's max
    confidence ``beta_g`` per group: the prior's data (finite, >= 0, of positive finite mass,
    a group of positive mass), the point (finite), the constraints (fidelity bounds at
    ``CONS_RTOL`` relative to their own terms: the table is on its bounds; rows), the objective
    (``atoms.max_confidence``) and Lemma 5's floor. Every comparison fails on NaN."""
    total = float(p.sum()) if p.size else 0.0
    data = [
        condition(
            "prior",
            bool(np.all(np.isfinite(p)) and p.min(initial=0.0) >= 0.0 and 0.0 < total < np.inf),
            f"the prior P(public, private) is not a finite nonnegative table of positive mass (total {total:.6g})",
        ),
        condition(
            "live groups",
            not (p.size and not (p.sum(axis=1) > 0).any()),
            "no group has positive mass: there is nothing to report",
        ),
        condition(
            "finite point",
            bool(np.all(np.isfinite(table)) and np.all(np.isfinite(beta_g))),
            "the table or the method's confidences contain a value that is not a finite number",
        ),
    ]
    constraints = transparency_constraints(problem, table, dense)
    objective = atoms.max_confidence(p, table, beta_g, group_key)
    return fold(data, constraints, objective, cert.lemma5_floor(p, objective.values["achieved"]))


# ------------------------------------------------------------------ mechanisms


def budget_set(b) -> Budget | LogLift:
    """The set of a model ``Budget`` (kind ldp | dp | loglift)."""
    if b.kind == "loglift":
        return LogLift(b.eps, b.text)
    return Budget(b.kind, b.eps, b.delta, b.pairs is not None, b.text)


def budget_verdict(b, x: np.ndarray) -> Verdict:
    """A model budget ``b`` on the design table ``x``: its conditional evaluated and checked
    (``sets.budget``)."""
    cond, live = sets.conditional(b.cond, x)
    return sets.verify_set(budget_set(b), cond, live, b.weights, b.pairs)


def mechanism_constraints(problem, x: np.ndarray) -> Verdict:
    """How far the design table ``x`` is from the spec's feasible set: finite cells, every
    linear constraint (``sets.linear``, Zero or Nonnegative), every budget in its pairwise
    form as a ratio (``sets.budget``), the rows over the design's targets. Values (as a
    result's ``verification`` reports them): ``max_row_sum_error``,
    ``max_constraint_violation``, ``max_budget_violation``, ``max_budget_log_excess``
    (achieved eps - eps; inf: a positive cell beside a zero), ``max_range_violation``,
    ``budgets_achieved`` (by the budget's text)."""
    M = x.reshape(problem.shape(problem.design.axes))
    k = len(problem.design.targets)
    finite = condition("finite point", bool(np.all(np.isfinite(M))), "the table has a cell that is not a finite number")
    linear = [
        sets.linear(Zero(c.text) if c.sense == "==" else Nonnegative(c.text), c.expr, x) for c in problem.constraints
    ]
    cons_err = 0.0
    for part in linear:
        cons_err = worst(cons_err, part.values.pop("error"))
    budgets = [budget_verdict(b, x) for b in problem.budgets]
    budget_err, log_excess, achieved = 0.0, 0.0, {}
    for b, part in zip(problem.budgets, budgets):
        v = part.values
        achieved[b.text] = v.pop("achieved")
        log_excess = worst(log_excess, v.pop("log_excess"))
        budget_err = worst(budget_err, v.pop("violation"))
    width = int(np.prod(M.shape[M.ndim - k :], dtype=np.int64))
    rows = sets.verify_set(SimplexRows(width=width), M, k)
    out = fold([finite], *linear, *budgets, rows)
    out.values = {
        "max_row_sum_error": out.values["max_row_sum_error"],
        "max_constraint_violation": cons_err,
        "max_budget_violation": budget_err,
        "max_budget_log_excess": log_excess,
        "max_range_violation": out.values["max_range_violation"],
        "budgets_achieved": achieved,
    }
    return out


def verify_mechanism(problem, x: np.ndarray, claimed: float | None, evidence: dict) -> Verdict:
    """A mechanism table ``x``: its constraints (``mechanism_constraints``), the objective twice
    (from the dense joint for tv and expected distortion, ``atoms.joint_objective``; against
    the solver's ``claimed`` value, ``atoms.reported``), both relative to ``max(|objective|,
    cost scale)`` (``evidence["scale"]``, default 1), and the evidence's proven bound
    (``certificate.dual_bound``, which records its gap in ``evidence``). Value: ``objective``."""
    constraints = mechanism_constraints(problem, x)
    obj = problem.objective
    value = obj.evaluate(x)
    scale = max(abs(value), evidence.get("scale", 1.0))  # the objective's magnitude, or its cost scale
    objective = []
    if obj.kind in ("tv", "expected_distortion") and problem.model is not None:
        pxy = marginal(problem.model.axes, problem.model.value(x), obj.pair)
        objective.append(atoms.joint_objective(obj.kind, pxy, obj.distance, value, scale))
    if claimed is not None:
        objective.append(atoms.reported(obj.kind, claimed, value, scale))
    certificate = [cert.dual_bound(value, evidence, OBJ_RTOL * scale)] if "bound" in evidence else []
    out = fold(constraints, *objective, *certificate)
    out.values = constraints.values | {"objective": value}
    return out


# ------------------------------------------------------------------ noise placement


def verify_noise(
    model, cov: dict[str, np.ndarray], program, program_bound: Callable[[float], float] | None = None
) -> Verdict:
    """Noise (co)variances ``cov`` of ``program.blocks`` (each with ``name``, ``G``,
    ``weights``) for the noise model: each noise in its set (``Nonnegative`` variances or a
    ``PSD`` covariance), the ``GaussianDP`` requirement from the factor ``H H' = Sigma``, the
    trace loss (``atoms.trace_loss``), and, when ``program_bound`` is given, the certificate.

    The certificate: ``program_bound(enough)`` is a proven lower bound on the lowered program
    (whose budgets use ``program.sensitivity_bound``), asked for only when the point passed,
    and good ``enough`` at that value. Every constraint is homogeneous (Sigma -> c Sigma scales
    f' Sigma^+ f by 1/c), so the spec's optimum, with sensitivities below the ``ceiling``
    proven here from (eps, delta), is at least the program's times ``shrink = (bound /
    ceiling)^2``: a lowering with too small a bound is not certified. The bound must be within
    ``CONIC_RTOL`` of the loss (``certificate.relative_bound``). Values: ``loss``,
    ``max_sensitivity``, ``log_delta_achieved``, ``delta_achieved``, ``sensitivity_ceiling``,
    ``shrink``, ``lower_bound``, ``relative_gap``."""
    req = model.requirement
    noises = [
        sets.variance(Nonnegative(name) if S.ndim == 1 else PSD(S.shape[0], name), S)
        for name, S in cov.items()
        if S.ndim in (1, 2)
    ]
    ok = all(v.passed for v in noises)
    H = sets.factor({b.name: b.G for b in program.blocks}, cov, model.answers) if ok else None
    privacy = sets.verify_set(GaussianDP(req.eps, req.delta, req.calibration, req.text), H, model.F, model.input.widths)
    H = H if H is not None else np.full((model.answers, 1), np.nan)
    objective = atoms.trace_loss(program.blocks, cov, H, program.offset)
    loss = objective.values["loss"]
    ceiling, shrink = noise_shrink(model, program)
    out = fold(*noises, privacy, objective)
    scale = abs(loss)  # every comparison is relative to the loss itself, at any scale
    lb = -math.inf
    if program_bound is not None and out.passed and shrink > 0:
        enough = loss - CONIC_RTOL * scale
        lb = noise_bound(program, shrink, program_bound(program.offset + (enough - program.offset) / shrink))
    if program_bound is not None:
        out = fold(out, cert.relative_bound(loss, lb, scale))
    out.values["relative_gap"] = cert.relative_gap(loss, lb, scale)
    out.values |= {"sensitivity_ceiling": ceiling, "shrink": shrink, "lower_bound": lb}
    return out


def noise_shrink(model, program) -> tuple[float, float]:
    """``(ceiling, shrink)``: the largest sensitivity proven from the model's (eps, delta) and
    ``shrink = (program.sensitivity_bound / ceiling)^2`` (0 when nothing is proven), the factor
    by which a bound of the lowered program carries over to the spec (``verify_noise``)."""
    from ..measures.gaussian import sensitivity_ceiling  # a noise placement's check only (issue 23, goal 1)

    req = model.requirement
    bound = program.sensitivity_bound
    ceiling = sensitivity_ceiling(req.eps, req.delta, req.calibration, bound)
    return ceiling, (bound / ceiling) ** 2 if ceiling > 0 and math.isfinite(ceiling) else 0.0


def noise_bound(program, shrink: float, lb_program: float) -> float:
    """The spec's proven lower bound from the lowered program's ``lb_program``: its noise part
    (above the offset) times ``shrink`` (every constraint homogeneous: ``verify_noise``)."""
    return program.offset + (lb_program - program.offset) * shrink if lb_program > program.offset else lb_program


# ------------------------------------------------------------------ obfuscation


def verify_channel(model, W, claimed: float | None = None) -> Verdict:
    """A 2 x 2 channel ``W`` (Y | X) for the obfuscation model: a table of finite numbers, its
    rows (``SimplexRows`` within ``ROW_ATOL``: W is built from (p1, p2)), the symmetric
    restriction where the spec asks for it, the leakage bound (``Leakage``), and Q by
    Sheppard's formula against the method's ``claimed`` Q. Values: ``max_row_sum_error``,
    ``leakage_bits``, ``objective``."""
    W = np.asarray(W, dtype=float)
    shaped = W.shape == (2, 2) and bool(np.all(np.isfinite(W)))
    data = condition("finite 2 x 2 channel", shaped, "the channel is not a 2 x 2 table of finite numbers")
    if not shaped:
        W = np.full((2, 2), 0.5)
    channel = SimplexRows(width=2, atol=ROW_ATOL, table=model.design)
    rows = sets.verify_set(channel, W)
    restriction = [sets.symmetric(channel, W)] if model.symmetric else []
    if model.leakage is not None:
        leak = sets.verify_set(Leakage(model.eps, model.leakage.text), model.px1, W, model.F_given_X)
    else:
        leak = Verdict([], {"leakage_bits": atoms.leakage_bits(model.px1, W, model.F_given_X)})
    q = atoms.krcc_q(model.px1, W, claimed, rows.values["max_row_sum_error"])
    return fold([data], rows, restriction, leak, q)
