"""The block kind "mechanism": a mechanism's table P(targets | given), ``KIND``.

Routes (``classify.py`` says which applies and why) answer it with the design as a flat vector
in the design's axis order:

* ``closed-form``: Ding et al. Lemma 1 (Markov, eq. 7) or Prop. 1 (non-Markov, tv, eq. 11),
  recognizers in ``closedform/sanitization.py`` (``answer``);
* ``reduced-lp``: Prop. 2 (non-Markov, expected distortion under a quasi-metric, eq. 12);
* ``lp`` / ``qp``: the whole program with its budgets as rows (``lower.reductions.BudgetRows``)
  on any LP backend (a QP on the QP-capable ones): ``methods.lp.RUNNER``.

Whatever the route, the returned table is cleaned of solver noise (``clean``: cells below a
budget's floor raised to it, rows renormalized), then verified by recomputing every
constraint, every privacy budget as a ratio in log space (in its pairwise form, not through
the LP's envelope rows: Ding et al. eqs. 4-5) and the objective, and an LP optimum must agree
with a proven lower bound (``methods/lp.lower_bound``); the certificate is the theorem's, or
that bound (``certificate``). docs/verification.md states every tolerance.

For ``privopt check``: ``routes(problem, analysis, tol)`` lists every route
(``blocks/routes_table.py``) and ``measure`` judges a route's table as a solve judges
its own (``blocks/common.py`` documents the interface).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import scipy.sparse as sp

from ..backends import all_backends
from ..closedform import sanitization as cf
from ..core.certificate import Certificate
from ..core.plan import Outcome
from ..errors import VerificationError
from ..lower.mechanism import check_budget_range, objective_scale
from ..measures import sanitization as ms
from ..measures.mixture import naive_mixture
from ..measures.reduce import worst
from ..model.linear import marginal
from ..model.problem import Problem, Role
from ..results import Columns, LazyTables
from ..verification.problems import budget_set, budget_verdict, mechanism_constraints, verify_mechanism
from ..verification.sets import achieved_eps, conditional, linear_error
from . import routes_table
from .common import (
    BUDGET_RTOL,
    BUDGET_ULPS,
    EXACT,
    OBJ_RTOL,
    ROW_ULPS,
    VERIFY_TOL,
    Accuracy,
    Measured,
    Route,
    label_column,
)

CLEAN_ROUNDS = 8  # raise-and-renormalize passes of ``clean``
ROUNDING = 2 * float(
    np.finfo(float).eps
)  # a shortfall below this fraction of its floor is rounding, inside budget_slack


class Table:
    """The mechanism's table as a block kind (``privopt.blocks``): nothing to prepare; the
    table cleaned (``clean``), verified (``verify``) and certified (``certificate``)."""

    name = "mechanism"

    def prepare(self, problem: Problem) -> None:
        return None

    def clean(self, problem: Problem, prepared, outcome: Outcome) -> Outcome:
        outcome.point, outcome.context = clean(problem, outcome.point)
        return outcome

    def verify(self, problem: Problem, prepared, outcome: Outcome) -> dict:
        x = outcome.point
        verification = verify(problem, x, outcome.claimed, outcome.optimality, outcome.evidence)
        verification["cleaning"] = outcome.context
        if not verification["passed"]:
            failing = [b for b in problem.budgets if not budget_verdict(b, x).passed]
            check_budget_range(failing)  # a failing budget beyond double precision's range: SpecError (exit 2)
            raise VerificationError(
                "the returned table failed privopt's verification: " + "; ".join(verification["failures"])
            )
        return verification

    def certificate(self, problem: Problem, prepared, outcome: Outcome, verification: dict) -> Certificate:
        """A theorem's, or the LP/QP's dual bound with its side and gap (the verified evidence)."""
        if outcome.certificate is not None:
            return outcome.certificate
        ev = verification["evidence"]
        scale = max(abs(verification["objective"]), ev.get("scale", 1.0))
        proof = {k: outcome.evidence[k] for k in PROOF if k in outcome.evidence}
        return Certificate(
            "dual-bound",
            f"a {ev['kind']} from the solver's multipliers (weak duality) within the tolerance of the objective",
            bound=ev["bound"],
            side=ev["side"],
            gap=abs(ev["gap"]) / scale if scale > 0 else abs(ev["gap"]),
            data={"kind": ev["kind"], "absolute_gap": ev["gap"], "tolerance": ev["tolerance"], "scale": ev["scale"]}
            | proof,
        )

    def fields(self, problem: Problem, prepared, outcome: Outcome, verification: dict) -> dict:
        x = outcome.point
        return {
            "objective": verification["objective"],
            "tables": LazyTables({problem.design.name: lambda: released_table(problem, x)}),
            "measures": report(problem, x),
        }

    def routes(self, problem: Problem, analysis, tol: float) -> list[Route]:
        return routes(problem, analysis, tol)


KIND = Table()

# what proves an LP/QP's bound (``methods.lp``): the lowered program's form and its row
# multipliers; the certificate records them, the verification's evidence does not repeat them
PROOF = ("program", "multipliers")


# ------------------------------------------------------------------ verification


def _design_array(problem: Problem, x: np.ndarray) -> np.ndarray:
    return x.reshape(problem.shape(problem.design.axes))


def verify(
    problem: Problem, x: np.ndarray, claimed: float | None, optimality: str, evidence: dict | None = None
) -> dict:
    """Recompute from the table: cells in [0, 1]; rows sum to 1; every linear constraint
    (relative to the magnitude of its terms); every budget as a ratio in log space, in its
    pairwise form (not through envelope rows): achieved eps <= eps + budget_slack(eps), so a
    positive cell beside a zero fails a pure budget whatever its size; the objective, twice;
    and the evidence of optimality: a proven bound within OBJ_RTOL of the objective."""
    evidence = {k: v for k, v in (evidence or {"kind": "none"}).items() if k not in PROOF}
    v = verify_mechanism(problem, x, claimed, evidence)
    return {
        "passed": v.passed,
        "objective": v.values["objective"],
        "optimality": optimality,
        **{k: v.values[k] for k in _FEASIBILITY},
        "tolerance": VERIFY_TOL,
        "tolerances": {
            "rows (ulps per cell; cells in [0, 1] exactly)": ROW_ULPS,
            "constraints (relative to the magnitude of their terms, at least absolute)": VERIFY_TOL,
            "budgets (achieved eps <= eps + max(rtol eps, ulps 2^-52)): rtol, ulps": [BUDGET_RTOL, BUDGET_ULPS],
            "objective vs solver and vs the bound (relative to max(|objective|, cost scale))": OBJ_RTOL,
        },
        "evidence": evidence,
        "failures": v.failures,
    }


_FEASIBILITY = (
    "max_row_sum_error",
    "max_constraint_violation",
    "max_budget_violation",
    "max_budget_log_excess",
    "max_range_violation",
    "budgets_achieved",
)


def _feasibility(problem: Problem, x: np.ndarray) -> dict:
    """How far the table is from the spec's feasible set: rows, cells, every linear constraint
    and every budget (in its pairwise form, as a ratio), with a message per failure beyond
    the tolerances (``failures``)."""
    v = mechanism_constraints(problem, x)
    return v.values | {"failures": v.failures}


# ------------------------------------------------------------------ cleaning


def clean(problem: Problem, x: np.ndarray) -> tuple[np.ndarray, dict]:
    """Solver noise removed from a returned table, so that it can be verified exactly.

    Cells are clipped to [0, 1] and each design row renormalized to sum 1. Then, for every
    budget whose conditional is a weighted sum of design cells (each cell in one conditional
    cell, weights >= 0 summing to s), each conditional cell below its floor
    ``e^-eps (cond[a, y] - delta / |A|)`` (ldp/dp, propagated along chains of pairs) or
    ``e^-eps P(y)`` (log-lift) is raised to it by adding ``gap / s`` to its design cells, and
    the rows are renormalized; this repeats until no cell is short (at most CLEAN_ROUNDS
    passes). Raising never breaks a budget's upper side by more than the renormalization
    (a relative 1e-16 once nothing is short), and makes the support consistent: no positive
    cell is left beside a zero. The objective is recomputed on the cleaned table and must
    still agree with the solver's and with the bound (``verify``).
    """
    x0 = np.asarray(x, dtype=float)
    x = _normalize(problem, np.clip(np.nan_to_num(x0, nan=0.0), 0.0, 1.0) + 0.0)  # + 0.0: no -0.0
    lifts = [(b, _lift(b)) for b in problem.budgets]
    lifts = [(b, lift) for b, lift in lifts if lift is not None]
    rounds = 0
    for _ in range(CLEAN_ROUNDS):
        dx = np.zeros_like(x)
        for b, (P, s) in lifts:
            cond, live = conditional(b.cond, x)
            gap = _shortfall(b, cond, live)
            gap = np.where(gap > ROUNDING * (cond + gap), gap, 0.0).ravel()  # not rounding dust
            if np.any(gap > 0):
                dx += P.T @ np.divide(gap, s, out=np.zeros_like(gap), where=s > 0)
        if not np.any(dx > 0):
            break
        x = _normalize(problem, x + dx)
        rounds += 1
    x, pooled = _pool_tiny_budgets(problem, x, lifts)
    x, theta = _mix_toward_constant(problem, x)
    return x, {
        "rounds": rounds,
        "pooled": pooled,
        "mixed_toward_constant": theta,
        "max_cell_change": float(np.abs(x - x0).max(initial=0.0)) if np.all(np.isfinite(x0)) else float("inf"),
        "rule": "clip to [0, 1]; raise each cell below its budget floor to it; renormalize rows; "
        "if a budget finer than the solver's tolerance still fails, pool its conditionals (proportional fitting); "
        "if a budget still fails, mix the least amount of the constant mechanism that restores it",
    }


POOL_SPREAD = 1e-8  # relative: conditionals this close to their pooled value may be made equal to it
POOL_ROUNDS = 60


def _pool_tiny_budgets(problem: Problem, x: np.ndarray, lifts) -> tuple[np.ndarray, bool]:
    """(table, whether it was pooled): for a budget the table fails only because the solver's
    tolerance (~1e-9) is coarser than the budget (eps = 1e-12: the ratios must hold to
    1e-12, the LP's rows only hold to 1e-9), the conditionals are made equal to their pooled
    value ``T[y]`` (the live rows' mean; ``P(y)`` for a log-lift budget), which meets every
    ldp, dp and log-lift budget with ratio 1, by iterative proportional fitting on the design:
    every design cell is scaled by ``T[y] / cond[a, y]`` of the one conditional cell it feeds
    (``_lift``), then the design rows are renormalized, until the budgets hold. Zeros stay zero
    and every row keeps summing to 1. Used only when every conditional already lies within
    ``POOL_SPREAD`` (relative) of its pooled value, so no cell moves by more than that and the
    objective, verified against the bound afterwards, moves by as little."""
    if not lifts or _budgets_hold(problem, x):
        return x, False
    targets = []
    for b, (P, _) in lifts:
        cond, live = conditional(b.cond, x)
        w = np.where(live, b.weights, 0.0) if b.kind == "loglift" else live.astype(float)
        if not w.sum() > 0:
            return x, False
        T = (w @ cond) / w.sum()
        ratio = np.divide(cond, T, out=np.ones_like(cond), where=T > 0)
        if not np.all(np.abs(ratio[live] - 1.0) <= POOL_SPREAD):
            return x, False
        targets.append((b, P, w, live))
    y = x.copy()
    for _ in range(POOL_ROUNDS):
        for b, P, w, live in targets:
            cond, _ = conditional(b.cond, y)
            T = (w @ cond) / w.sum()
            f = np.divide(
                np.broadcast_to(T, cond.shape), cond, out=np.ones_like(cond), where=(cond > 0) & live[:, None]
            )
            scale = P.T @ (f.ravel() - 1.0)  # each design cell by its conditional cell's factor
            y = _normalize(problem, y * (1.0 + scale))
        if _budgets_hold(problem, y):
            return y, True
    return x, False


def _budgets_hold(problem: Problem, x: np.ndarray) -> bool:
    """Every budget holds on ``x``: the eps the table achieves is at most ``eps +
    budget_slack(eps)`` (``verification.sets.budget``; NaN never holds)."""
    return all(budget_verdict(b, x).passed for b in problem.budgets)


def _mix_toward_constant(problem: Problem, x: np.ndarray) -> tuple[np.ndarray, float]:
    """(1 - theta) x + theta x0 for the least theta (to a factor of 2, from 1e-300) with which
    every budget holds, x0 the constant mechanism (every row the mean row of x); (x, 0) when
    the budgets already hold, or x0 breaks a linear constraint, or no theta helps.

    This repairs what raising floors cannot: a conditional that is not a weighted sum of
    separate design cells (a Markov design P(Y | X) under ldp(S -> Y), where every design cell
    feeds every P(y | s)). x0 induces the same conditional for every source value, so it meets
    every ldp/dp/log-lift budget with ratio 1; each budget is a set of linear inequalities in
    the table, so the set of theta that restores them is an interval [theta*, 1], found by
    bisection on log theta. The objective moves by at most theta |f(x0) - f(x)| and is
    verified against the bound afterwards, so a large theta shows up as an uncertified optimum.
    """
    if not problem.budgets or _budgets_hold(problem, x):
        return x, 0.0
    width = int(np.prod(problem.shape(problem.design.targets), dtype=np.int64))
    rows = x.reshape(-1, width)
    x0 = np.broadcast_to(rows.mean(axis=0), rows.shape).ravel()
    breaks = any(not linear_error(c.expr, c.sense, x0) <= VERIFY_TOL for c in problem.constraints)
    if breaks or not _budgets_hold(problem, x0):
        return x, 0.0
    lo, hi = -300.0, 0.0  # log10 theta: fails at lo (checked below), holds at hi (x0 itself)
    if _budgets_hold(problem, (1 - 1e-300) * x + 1e-300 * x0):
        hi = lo
    while hi - lo > math.log10(2.0):
        mid = 0.5 * (lo + hi)
        theta = 10.0**mid
        if _budgets_hold(problem, (1 - theta) * x + theta * x0):
            hi = mid
        else:
            lo = mid
    theta = 10.0**hi
    return _normalize(problem, (1 - theta) * x + theta * x0), theta


def _normalize(problem: Problem, x: np.ndarray) -> np.ndarray:
    """Each row of the design (given, then targets in C order) divided by its sum."""
    width = int(np.prod(problem.shape(problem.design.targets), dtype=np.int64))
    rows = x.reshape(-1, width)
    total = rows.sum(axis=1, keepdims=True)
    return np.divide(rows, total, out=rows.copy(), where=total > 0).ravel()


def _lift(b):
    """(P, s): P the 0/1 pattern of the conditional's cells over design cells and s its
    weights' row sums, when every design cell lies in at most one conditional cell with a
    nonnegative weight and there is no constant part; else None (no repair, verify only)."""
    A = sp.csr_array(b.cond.matrix())
    if np.any(b.cond.b) or (A.nnz and A.data.min() < 0):
        return None
    P = sp.csr_array((np.ones(A.nnz), A.indices, A.indptr), shape=A.shape)
    if A.nnz and np.bincount(A.indices, minlength=A.shape[1]).max() > 1:
        return None
    return P, np.asarray(A.sum(axis=1)).ravel()


def _shortfall(b, cond: np.ndarray, live: np.ndarray) -> np.ndarray:
    if b.kind == "loglift":
        return ms.loglift_shortfall(cond, np.where(live, b.weights, 0.0), b.eps)
    return ms.pairwise_shortfall(cond, live, b.eps, b.delta, b.pairs)


# ------------------------------------------------------------------ routes, for privopt check


def routes(problem: Problem, analysis, tol: float) -> list[Route]:
    """Every route for ``problem`` (``blocks/routes_table.py``): the closed form or
    Prop. 2 where they apply, the envelope LP/QP on every backend and the pairwise LP on
    HiGHS, all exact and compared on the objective, each measured by ``measure``. The absolute
    part of the accuracy is scaled with the costs when they are small (costs of 1e-9 make an
    absolute 1e-7 meaningless). A route's runner is looked up when it runs, so a test can
    replace it in ``routes_table``."""
    R = routes_table
    exact = EXACT.at_least(tol)
    scale = objective_scale(problem)
    if scale < 1.0:
        exact = replace(
            exact, abs=exact.abs * scale, basis=f"{exact.basis}; the absolute part times the cost scale {scale:.3g}"
        )

    def measured(x, accuracy):
        return measure(problem, x, accuracy)

    quadratic = problem.objective.is_quadratic
    kind = "qp" if quadratic else "lp"

    def unnamed(b, note: str) -> str | None:
        # measured: on the count-query and LDP specs OSQP stops at 200,000 iterations short of
        # 1e-9 (docs/backends.md); it runs when named with --backends, and on QPs
        return note if b.label == "cvxpy:OSQP" and not quadratic else None

    out: list[Route] = []
    if "closed-form" in analysis.applicable:
        out.append(Route("closed-form", None, lambda b, t: R.closed_form(problem, b, t), measured, exact))
    if "reduced-lp" in analysis.applicable:
        out += [
            Route("reduced-lp", b, lambda b, t: R.reduced(problem, b, t), measured, exact, unnamed=unnamed(b, ""))
            for b in all_backends()
        ]
    for b in all_backends():
        skip = "solves LPs only" if quadratic and not b.supports_qp else None
        out.append(
            Route(
                kind, b, lambda b, t: R.lp(problem, b, t), measured, exact, skip=skip, unnamed=unnamed(b, R.OSQP_NOTE)
            )
        )
    if R.pairwise_rows(problem):
        out.append(
            Route(
                "pairwise",
                R.backend("highs"),
                lambda b, t: R.pairwise(problem, b, t),
                measured,
                exact,
                selectable=False,
            )
        )
    return out


def measure(problem: Problem, x: np.ndarray, accuracy: Accuracy | None = None) -> Measured:
    """A candidate table judged as a solve judges its own: solver noise cleaned (``clean``),
    then the objective of the cleaned table, and its largest violation of every constraint,
    row and cell, and of every budget as a ratio (achieved eps - eps, infinite for a positive
    cell beside a zero). ``accuracy`` is not needed: nothing is settled within it."""
    x, _ = clean(problem, x)
    feas = _feasibility(problem, x)
    violation = feas["max_budget_log_excess"]
    for key in ("max_constraint_violation", "max_budget_violation", "max_row_sum_error", "max_range_violation"):
        violation = worst(violation, feas[key])
    return Measured(problem.objective.evaluate(x), violation)


# ------------------------------------------------------------------ measures


def report(problem: Problem, x: np.ndarray) -> dict:
    """Measures of the returned mechanism. Which appear follows the problem's math, never the
    role a variable is spelled with:

    * each budget as the table achieves it; how exactly each moment/equality constraint is met;
    * the squared error ``sum_x E[(y - x)^2 | x]`` only where it is (a positive multiple of)
      the objective's linear part (``_squared_error``), and the penalty part of a quadratic
      objective; the naive mixture, where one is defined;
    * for a release Y declared ``over`` its input X (whatever X's role): utility, I(X;Y), H(X),
      tv, E[d(X, Y)] when the objective is that distortion, max |P(Y) - P(X)|; and when X is
      protected (private, or the source of a budget), the privacy of X through Y: ldp and
      log-lift of Y about X, max P(X | Y) and max P(X);
    * for the first other protected variable S: I(S;Y) and I(S;X) in bits, LDP and log-lift of
      Y and of X, eq. 6's (1 - alpha) approximations where eq. 3 fixes alpha, max P(S | Y) and
      max P(S) (Ding et al.).
    """
    out = _budgets_achieved(problem, x)
    for c in problem.constraints:
        if c.sense == "==" and c.induced is None:  # a moment or other equality: how exactly it is met
            out[f"max |lhs - rhs| of '{c.text}'"] = float(
                np.abs(c.expr.value(x).ravel()[c.expr.defined_mask()]).max(initial=0.0)
            )
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
    release = [a for a in problem.design.targets if V[a].over in axes]
    protected = _protected(problem, axes)
    if release:
        y = release[0]
        xd = V[y].over
        pxy = marginal(axes, joint, (xd, y))
        out[f"I({xd};{y}) bits"] = ms.mutual_info(pxy)
        out[f"H({xd}) bits"] = ms.mutual_info(np.diag(pxy.sum(axis=1)))
        out[f"tv({xd}, {y})"] = ms.tv(pxy)
        if problem.objective.kind == "expected_distortion" and problem.objective.pair == (xd, y):
            out[f"E[d({xd}, {y})]"] = float((pxy * problem.objective.distance).sum())
        out[f"max |P({y}) - P({xd})|"] = float(np.abs(pxy.sum(axis=0) - pxy.sum(axis=1)).max())
        if xd in protected:  # the release's privacy about its own input
            cy, live = ms.conditional(pxy)
            px = pxy.sum(axis=1)
            out.setdefault(f"ldp({xd} -> {y})", ms.pairwise_eps(cy, live))  # a budget's own value stays
            out.setdefault(f"loglift({xd} -> {y})", ms.loglift(cy, px))
            out[f"max P({xd} | {y})"] = _max_posterior(pxy)
            out[f"max P({xd})"] = float(px.max())
        others = [s for s in protected if s != xd]
        if others:
            s = others[0]
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
            out[f"max P({s} | {y})"] = _max_posterior(psy)
            out[f"max P({s})"] = float(ps.max())
    return out


def _protected(problem: Problem, axes: tuple[str, ...]) -> list[str]:
    """The model's variables whose privacy the problem is about: the private ones and the
    source of every single-variable budget, in the model's order."""
    sources = {b.source[0] for b in problem.budgets if len(b.source) == 1}
    return [a for a in axes if problem.variables[a].role is Role.PRIVATE or a in sources]


def _max_posterior(pxy: np.ndarray) -> float:
    """max over (x, y) of P(x | y), from the joint P(x, y)."""
    py = pxy.sum(axis=0)
    return float(np.divide(pxy, py[None, :], out=np.zeros_like(pxy), where=py[None, :] > 0).max())


def _budgets_achieved(problem: Problem, x: np.ndarray) -> dict:
    """Each budget as the table achieves it: the smallest eps (at the budget's delta)."""
    out = {}
    for b in problem.budgets:
        key = f"{b.kind}({', '.join(b.source)} -> {b.target})"
        if b.kind != "loglift":
            key += (" over adjacent pairs" if b.pairs is not None else "") + (
                f" at delta={b.delta:g}" if b.delta else ""
            )
        out[key] = achieved_eps(budget_set(b), *conditional(b.cond, x), b.weights, b.pairs)
    return out


def _squared_error(problem: Problem, x: np.ndarray) -> dict:
    """sum_x E[(y - x)^2 | x] (Ramon & Basu's loss, unweighted by any prior), only where it
    means something: a design P(y | x) with numeric labels on both sides, and an objective
    whose linear part is a positive multiple of that sum (the objective itself, or its
    squared-error part beside a penalty). Elsewhere (an expected distortion under a prior, a
    tv) it would be a number the problem never asked about."""
    d = problem.design
    if len(d.targets) != 1 or len(d.given) != 1:
        return {}
    xv, yv = problem.variables[d.given[0]].values, problem.variables[d.targets[0]].values
    if xv is None or yv is None:
        return {}
    loss = (xv[:, None] - yv[None, :]) ** 2  # over the design's axes: given, then target
    if not _proportional(problem.objective.expr.matrix(), loss.ravel()):
        return {}
    f = _design_array(problem, x)
    err = (f * loss).sum(axis=1)
    return {f"sum_x E[({d.targets[0]} - {d.given[0]})^2 | {d.given[0]}]": float(err.sum())}


def _proportional(A, w: np.ndarray, rtol: float = 1e-9) -> bool:
    """Whether the one-row matrix ``A`` is k w for some k > 0 (to ``rtol`` of its largest entry)."""
    if A.shape != (1, w.size):
        return False
    c = np.asarray(A.todense()).ravel()
    ww = float(w @ w)
    if ww <= 0.0:
        return False
    k = float(c @ w) / ww
    return k > 0.0 and float(np.abs(c - k * w).max()) <= rtol * float(np.abs(c).max())


def released_table(problem: Problem, x: np.ndarray) -> Columns:
    arr = _design_array(problem, x)
    axes = problem.design.axes
    cols = {a: label_column(problem.variables[a].labels, arr.shape, k) for k, a in enumerate(axes)}
    cols["value"] = arr.ravel()
    return Columns(cols)
