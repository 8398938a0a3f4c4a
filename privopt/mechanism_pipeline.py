"""The solve pipeline for mechanism problems: analyse -> closed form or LP -> verify -> Result.

Routes (compile/analysis.py says which applies and why):

* ``closed-form``: Ding et al. Lemma 1 (Markov, eq. 7) or Prop. 1 (non-Markov, tv, eq. 11);
* ``reduced-lp``: Prop. 2 (non-Markov, expected distortion under a quasi-metric, eq. 12);
* ``lp`` / ``qp``: the whole program lowered by compile/mechanism.py, on any LP backend (a QP
  on the QP-capable ones).

Whatever the route, the returned table is verified by recomputing every constraint, every
privacy budget (in its pairwise form, not through the LP's envelope rows) and the objective.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from .backends import get_backend
from .closedform import sanitization as cf
from .compile.mechanism import lower_mechanism
from .errors import InfeasibleError, UsageError, VerificationError
from .ir.linear import marginal
from .ir.model import Problem, Role
from .measures import sanitization as ms
from .measures.mixture import naive_mixture
from .methods.lp import solve_lp
from .results import LazyTables, Result

VERIFY_TOL = 1e-9  # rows, ranges, constraints, budgets in linear form (absolute)
OBJ_TOL = 1e-8  # recomputed objective vs the solver's


def solve_mechanism(problem: Problem, analysis, method: str, backend: str, time_limit, solver) -> Result:
    t_start = time.perf_counter()
    stats: dict = {}
    t0 = time.perf_counter()
    try:
        x, claimed, optimality, used_backend = _route(problem, analysis, method, backend, solver, time_limit, stats)
    except InfeasibleError as e:
        timings = _timings(problem, time.perf_counter() - t0, t_start)
        label = get_backend(backend, solver).label
        return Result.of_infeasible(method, label, analysis, problem.objective.kind, timings, e.reasons)
    solve_s = time.perf_counter() - t0
    verification = verify(problem, x, claimed, optimality)
    if not verification["passed"]:
        raise VerificationError("the returned table failed privopt's verification: " + "; ".join(verification["failures"]))
    return Result(
        status="optimal",
        termination="optimal",
        objective=verification["objective"],
        beta=None,
        method=method,
        backend=used_backend,
        problem_class=analysis.problem_class,
        objective_kind=problem.objective.kind,
        groups=pd.DataFrame(),
        tables=LazyTables({problem.design.name: lambda: released_table(problem, x)}),
        verification=verification,
        timings=_timings(problem, solve_s, t_start),
        stats=stats,
        measures=report(problem, x),
    )


PAIRWISE_MAX_ROWS = 2_000_000  # the pairwise form has |A|^2 |Y| rows per budget


def use_pairwise(problem: Problem, backend) -> bool:
    """The pairwise form for a backend that stalls on envelopes, when it is not too large."""
    if not backend.stalls_on_envelopes:
        return False
    rows = sum(b.source_cells**2 * b.cond.shape[-1] for b in problem.budgets if b.pairs is None)
    return rows <= PAIRWISE_MAX_ROWS


def _timings(problem, solve_s, t_start):
    return {"parse_s": problem.parse_s, "solve_s": solve_s, "total_s": problem.parse_s + time.perf_counter() - t_start}


def _route(problem, analysis, method, backend, solver, time_limit, stats):
    """(x, the method's claimed objective or None, optimality statement, backend label)."""
    if method in ("closed-form", "reduced-lp"):
        san, _ = cf.match(problem)
        if method == "closed-form":
            if san.markov:
                M = cf.lemma1(san.px, san.alpha)
                why = "closed form: Lemma 1 (eq. 7), the unique Markov channel (P(X|S) has full column rank)"
            else:
                M = cf.prop1(san.p, san.q)
                why = "closed form: Prop. 1 (eq. 11), the diagonal at its bound min(1, q/p)"
            return cf.to_design(problem, san, M).ravel(), None, why, None
        be = get_backend(backend, solver)
        M, sol = cf.prop2(san.p, san.q, san.ps, problem.objective.distance, be, time_limit)
        if sol is not None:
            stats.update(lp_solve_s=round(sol.solve_s, 6), lp_build_s=round(sol.build_s, 6), solver=f"{sol.solver} {sol.version}")
        why = "Prop. 2 (eq. 12): full diagonal, transport LP over X-(s) x X+(s); d is a quasi-metric"
        return cf.to_design(problem, san, M).ravel(), None, why, be.label
    if method not in ("lp", "qp"):
        raise UsageError(f"method '{method}' does not apply to this problem")
    be = get_backend(backend, solver)
    t0 = time.perf_counter()
    mlp = lower_mechanism(problem, pairwise=use_pairwise(problem, be))
    lower_s = time.perf_counter() - t0
    sol = solve_lp(mlp, be, time_limit)
    x = np.clip(sol.x[: mlp.n_design], 0.0, 1.0) + 0.0  # + 0.0 turns -0.0 into 0.0
    stats.update(
        lower_s=round(lower_s, 6),
        lp_build_s=round(sol.build_s, 6),
        lp_solve_s=round(sol.solve_s, 6),
        lp_rows=mlp.lp.shape[0],
        lp_cols=mlp.lp.shape[1],
        lp_nonzeros=int(mlp.lp.A.nnz),
        solver=f"{sol.solver} {sol.version}",
    )
    claimed = mlp.objective_value(sol.x)
    kind = "QP" if mlp.lp.is_qp else "LP"
    return x, float(claimed), f"{kind} optimum reported by {sol.solver} (termination '{sol.termination}')", be.label


# ------------------------------------------------------------------ verification


def _design_array(problem: Problem, x: np.ndarray) -> np.ndarray:
    return x.reshape(problem.shape(problem.design.axes))


def verify(problem: Problem, x: np.ndarray, claimed: float | None, optimality: str) -> dict:
    """Recompute from the table: cells in [0, 1]; rows sum to 1; every linear constraint;
    every budget in its pairwise linear form (not through envelope rows); the objective."""
    failures: list[str] = []
    M = _design_array(problem, x)
    k = len(problem.design.targets)
    row_err = float(np.abs(M.sum(axis=tuple(range(M.ndim - k, M.ndim))) - 1.0).max()) if M.size else 0.0
    range_err = float(max(0.0, -M.min(), M.max() - 1.0)) if M.size else 0.0
    cons_err = 0.0
    for c in problem.constraints:
        val = c.expr.value(x).ravel()[c.expr.defined_mask()]
        err = float(np.abs(val).max(initial=0.0) if c.sense == "==" else max(0.0, val.max(initial=0.0)))
        if err > VERIFY_TOL:
            failures.append(f"'{c.text}' is violated by {err:.3g}")
        cons_err = max(cons_err, err)
    budget_err = 0.0
    achieved = {}
    for b in problem.budgets:
        cond, live = _budget_cond(b, x)
        err = _violation(b, cond, live)
        achieved[b.text] = _achieved(b, cond, live)
        if err > VERIFY_TOL:
            failures.append(f"'{b.text}' is violated by {err:.3g} (achieved {achieved[b.text]:.6g})")
        budget_err = max(budget_err, err)
    if row_err > VERIFY_TOL:
        failures.append(f"a row sums to 1 +- {row_err:.3g}")
    if range_err > VERIFY_TOL:
        failures.append(f"a cell lies outside [0, 1] by {range_err:.3g}")
    value = problem.objective.evaluate(x)
    direct = _objective_direct(problem, x)
    if direct is not None and abs(direct - value) > OBJ_TOL:
        failures.append(f"the objective recomputed from the joint, {direct:.12g}, differs from {value:.12g}")
    if claimed is not None and abs(claimed - value) > 1e-7 * max(1.0, abs(value)):
        failures.append(f"the solver's objective {claimed:.12g} differs from the table's {value:.12g}")
    return {
        "passed": not failures,
        "objective": value,
        "optimality": optimality,
        "max_row_sum_error": row_err,
        "max_constraint_violation": cons_err,
        "max_budget_violation": budget_err,
        "max_range_violation": range_err,
        "budgets_achieved": achieved,
        "tolerance": VERIFY_TOL,
        "failures": failures,
    }


def _budget_cond(b, x):
    cond = b.cond.value(x)
    ny = cond.shape[-1]
    cond = cond.reshape(-1, ny)
    live = b.cond.defined_mask().reshape(-1, ny).all(axis=1)
    return cond, live


def _violation(b, cond: np.ndarray, live: np.ndarray) -> float:
    """How far the budget's linear form is exceeded (0 when it holds)."""
    if b.kind == "loglift":
        return ms.loglift_violation(cond, np.where(live, b.weights, 0.0), b.eps)
    return ms.pairwise_violation(cond, live, b.eps, b.delta, b.pairs)


def _achieved(b, cond: np.ndarray, live: np.ndarray) -> float:
    """The smallest eps the table satisfies for this budget (at its delta)."""
    if b.kind == "loglift":
        return ms.loglift(cond, np.where(live, b.weights, 0.0))
    return ms.pairwise_eps(cond, live, b.delta, b.pairs)


def _objective_direct(problem: Problem, x: np.ndarray) -> float | None:
    """tv and expected distortion computed from the dense joint with numpy (not the LP row)."""
    obj = problem.objective
    if obj.kind not in ("tv", "expected_distortion") or problem.model is None:
        return None
    pxy = marginal(problem.model.axes, problem.model.value(x), obj.pair)
    return ms.tv(pxy) if obj.kind == "tv" else float((pxy * obj.distance).sum())


# ------------------------------------------------------------------ measures


def report(problem: Problem, x: np.ndarray) -> dict:
    """Measures of the returned mechanism (Ding et al.): each budget achieved, and for a
    private S, data X and release Y: LDP and log-lift of Y and of X with eq. 6's (1 - alpha)
    approximations, I(X;Y) and I(S;Y) in bits, tv, max posterior, P(Y) vs P(X)."""
    out = _budgets_achieved(problem, x)
    for c in problem.constraints:
        if c.sense == "==" and c.induced is None:  # a moment or other equality: how exactly it is met
            out[f"max |lhs - rhs| of '{c.text}'"] = float(np.abs(c.expr.value(x).ravel()[c.expr.defined_mask()]).max(initial=0.0))
    out |= _squared_error(problem, x)
    if problem.objective.squares is not None:
        out["weighted squares (penalty part of the objective)"] = problem.objective.squares.value(x)
    mix = naive_mixture(problem)
    if mix is not None:
        alpha, fx = mix
        out["naive mixture alpha"] = alpha
        out["naive mixture objective"] = problem.objective.evaluate(fx)
        for key, value in _budgets_achieved(problem, fx).items():
            out[f"naive mixture {key}"] = value
    if problem.model is None:
        return out
    V = problem.variables
    axes = problem.model.axes
    joint = problem.model.value(x)  # dense P(known, release), evaluated once for every measure
    release = [a for a in problem.design.targets if V[a].over in axes and V[V[a].over].role is Role.DATA]
    private = [a for a in axes if V[a].role is Role.PRIVATE]
    if release:
        y = release[0]
        xd = V[y].over
        pxy = marginal(axes, joint, (xd, y))
        out[f"I({xd};{y}) bits"] = ms.mutual_info(pxy)
        out[f"H({xd}) bits"] = ms.mutual_info(np.diag(pxy.sum(axis=1)))
        out[f"tv({xd}, {y})"] = ms.tv(pxy)
        if problem.objective.kind == "expected_distortion":
            out[f"E[d({xd}, {y})]"] = float((pxy * problem.objective.distance).sum())
        out[f"max |P({y}) - P({xd})|"] = float(np.abs(pxy.sum(axis=0) - pxy.sum(axis=1)).max())
        if private:
            s = private[0]
            psy = marginal(axes, joint, (s, y))
            psx = marginal(axes, joint, (s, xd))
            cy, live = ms.conditional(psy)
            cx, _ = ms.conditional(psx)
            ps = psy.sum(axis=1)
            out[f"I({s};{y}) bits"] = ms.mutual_info(psy)
            out[f"I({s};{xd}) bits"] = ms.mutual_info(psx)
            ldp_y, ldp_x = ms.pairwise_eps(cy, live), ms.pairwise_eps(cx, live)
            ll_y, ll_x = ms.loglift(cy, ps), ms.loglift(cx, ps)
            out[f"ldp({s} -> {y})"] = ldp_y
            out[f"ldp({s} -> {xd})"] = ldp_x
            out[f"loglift({s} -> {y})"] = ll_y
            out[f"loglift({s} -> {xd})"] = ll_x
            san, _ = cf.match(problem)
            if san is not None and san.alpha is not None:
                out["alpha (eq. 3)"] = san.alpha
                out[f"(1 - alpha) ldp({s} -> {xd}) (eq. 6a)"] = (1 - san.alpha) * ldp_x
                out[f"(1 - alpha) loglift({s} -> {xd}) (eq. 6b)"] = (1 - san.alpha) * ll_x
            py = psy.sum(axis=0)
            post = np.divide(psy, py[None, :], out=np.zeros_like(psy), where=py[None, :] > 0)
            out[f"max P({s} | {y})"] = float(post.max())
            out[f"max P({s})"] = float(ps.max())
    return out


def _budgets_achieved(problem: Problem, x: np.ndarray) -> dict:
    """Each budget as the table achieves it: the smallest eps (at the budget's delta)."""
    out = {}
    for b in problem.budgets:
        key = f"{b.kind}({', '.join(b.source)} -> {b.target})"
        if b.kind != "loglift":
            key += (" over adjacent pairs" if b.pairs is not None else "") + (f" at delta={b.delta:g}" if b.delta else "")
        out[key] = _achieved(b, *_budget_cond(b, x))
    return out


def _squared_error(problem: Problem, x: np.ndarray) -> dict:
    """sum_x E[(y - x)^2 | x] for a design P(y | x) on numeric labels (Ramon & Basu's loss)."""
    d = problem.design
    if len(d.targets) != 1 or len(d.given) != 1:
        return {}
    xv, yv = problem.variables[d.given[0]].values, problem.variables[d.targets[0]].values
    if xv is None or yv is None:
        return {}
    f = _design_array(problem, x)  # (x, y): the design's axes are given, then target
    err = (f * (xv[:, None] - yv[None, :]) ** 2).sum(axis=1)
    return {f"sum_x E[({d.targets[0]} - {d.given[0]})^2 | {d.given[0]}]": float(err.sum())}


def released_table(problem: Problem, x: np.ndarray) -> pd.DataFrame:
    from .pipeline import _label_column

    arr = _design_array(problem, x)
    axes = problem.design.axes
    cols = {a: _label_column(problem.variables[a].labels, arr.shape, k) for k, a in enumerate(axes)}
    cols["value"] = arr.ravel()
    return pd.DataFrame(cols)
