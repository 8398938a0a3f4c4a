"""The ATR problem as a generalized linear-fractional program (Chen et al. Sec. 6, (OPT) eq. 16),
for any number of outcomes, solved group by group (Lemma 3) with all groups in one LP per step.

Per group g, with q_i = P(x_i) / P(T_g), the ratios are

    r_{i,a}(X) = q_i X_{i,a} / S_a,     S_a = sum_i q_i X_{i,a},

and beta*_g = min over feasible X of max_{i,a} r_{i,a}(X).

Method: a Dinkelbach-type iteration for generalized fractional programs (Crouzeix, Ferland &
Schaible 1985, the variant that scales rows by the previous denominators) inside a bracket
[lower bound, best value] per group; ``solve_lfp`` states the step and why the bracket shrinks.
Each step is one LP over every open group:

    minimize    sum_g t_g
    subject to  q_i X_{i,a} - beta'_g S_a <= w_{g,a} t_g      (w = S_a of the best table, floored)
                S_a = sum_i q_i X_{i,a},   sum_a X_{i,a} = 1,   L <= X <= U.

Values are always recomputed exactly from returned tables. The S_a are auxiliary columns, so
each ratio row has three nonzeros whatever the group size. The number of LP solves is the
number of steps (a handful; about 30 at worst), independent of the number of groups.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..backends.base import Backend, LinearProgram
from ..closedform.atr import lower_bound
from ..errors import SolverError
from ..measures.confidence import conditional_prior, group_max_confidence
from ..measures.reduce import shift_onto_sum

LP_TOL = 1e-10  # HiGHS's tightest primal and dual feasibility tolerances
T_TOL = 1e-9  # LP values of t beyond this (10x the solver's tolerance) count as nonzero
W_FLOOR = 1e-4  # weights only set the pace; tiny ones give HiGHS duals of 1/w (ratio-test failures)
SNAP = 1e-8  # LP values below this are also tried at exactly 0 (see _best_rounding)
SNAP_MASS = 1e-9  # ... and so are cells whose mass q X is below this (10x the row tolerance)
CHECK_EPS = 1e-6  # a group's first step tests beta (1 - CHECK_EPS); see solve_lfp
RTOL = 1e-9  # a group is done when its bracket [lb, beta] is this narrow (relative)


@dataclass(frozen=True)
class LFPSolution:
    beta: np.ndarray  # (G,)
    table: np.ndarray  # (G, m, A)
    steps: int
    lp_solves: int
    lp_build_s: float
    lp_solve_s: float
    lp_shape: tuple[int, int]  # rows, cols of the largest LP solved
    solver: str
    version: str
    gap: np.ndarray  # (G,) beta - proven lower bound (0 where the bracket closed exactly)


def repair_rows(X: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Clip to the bounds, then move each row onto sum 1 within its bounds (proportionally)."""
    return shift_onto_sum(X, lower, upper, np.ones(X.shape[:-1]), axis=-1)


def _best_rounding(q: np.ndarray, raw: np.ndarray, lower: np.ndarray, upper: np.ndarray):
    """The best of a few roundings of the LP's table, by exactly recomputed confidence per group.

    Zero mass is special because confidence is discontinuous there: an outcome left with 1e-12
    of stray mass on one record (invisible to the LP's tolerance) has confidence 1, where with
    no mass it is never observed (confidence 0); and when the optimum drops an outcome
    altogether, Dinkelbach steps only approach it, halving the gap each step. So besides the
    table itself we try: near-zero cells at 0 (value below SNAP or mass q X below SNAP_MASS),
    and for each outcome, that outcome removed from the group (where its lower bounds are 0).
    Zeroed cells stay at 0 while the rows are moved back onto sum 1; a candidate whose rows
    cannot reach 1 is discarded.
    """
    A = raw.shape[-1]
    zeroable = lower <= 0.0
    masks = [((raw < SNAP) | (q[:, :, None] * raw < SNAP_MASS)) & zeroable]
    for a in range(A):
        m = np.zeros_like(zeroable)
        m[..., a] = zeroable[..., a].all(axis=1, keepdims=True)
        masks.append(m)
    best = repair_rows(raw, lower, upper)
    best_beta = group_max_confidence(q, best)
    for zero in masks:
        cand = repair_rows(np.where(zero, 0.0, raw), lower, np.where(zero, 0.0, upper))
        ok = (np.abs(cand.sum(axis=-1) - 1.0) <= 1e-12).all(axis=1)
        b = np.where(ok, group_max_confidence(q, cand), np.inf)
        take = b < best_beta
        best = np.where(take[:, None, None], cand, best)
        best_beta = np.minimum(best_beta, b)
    return best, best_beta


def feasible_start(lower: np.ndarray, upper: np.ndarray, reference: np.ndarray | None) -> np.ndarray:
    start = 0.5 * (lower + upper) if reference is None else reference
    return repair_rows(start, lower, upper)


def _block_lp(q: np.ndarray, beta: np.ndarray, w: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> LinearProgram:
    G, m, A = lower.shape
    nX, nS = G * m * A, G * A
    gi = np.arange(G * m)  # record index g*m + i
    xi = np.arange(nX).reshape(G, m, A)
    s_col = nX + np.arange(nS).reshape(G, A)
    t_col = nX + nS + np.arange(G)
    qq = np.broadcast_to(q[:, :, None], (G, m, A))
    live = qq > 0

    rows, cols, vals = [], [], []
    # R1: sum_a X[g,i,a] = 1
    rows.append(np.repeat(gi, A))
    cols.append(xi.ravel())
    vals.append(np.ones(nX))
    r2 = G * m
    # R2: S[g,a] - sum_i q X[g,i,a] = 0
    rows.append(r2 + np.arange(nS))
    cols.append(s_col.ravel())
    vals.append(np.ones(nS))
    r2_of = np.broadcast_to((r2 + np.arange(nS).reshape(G, 1, A)), (G, m, A))
    rows.append(r2_of[live])
    cols.append(xi[live])
    vals.append(-qq[live])
    # R3: q X - beta S - w t <= 0, one row per live (g, i, a)
    r3 = r2 + nS
    n3 = int(live.sum())
    r3_idx = r3 + np.arange(n3)
    g_of = np.broadcast_to(np.arange(G)[:, None, None], (G, m, A))[live]
    a_of = np.broadcast_to(np.arange(A)[None, None, :], (G, m, A))[live]
    rows += [r3_idx, r3_idx, r3_idx]
    cols += [xi[live], s_col[g_of, a_of], t_col[g_of]]
    vals += [qq[live], -beta[g_of], -w[g_of, a_of]]
    n_rows = r3 + n3
    n_cols = nX + nS + G
    Amat = sp.csc_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n_rows, n_cols)
    )
    row_lower = np.concatenate([np.ones(G * m), np.zeros(nS), np.full(n3, -np.inf)])
    row_upper = np.concatenate([np.ones(G * m), np.zeros(nS), np.zeros(n3)])
    col_lower = np.concatenate([lower.ravel(), np.zeros(nS), np.full(G, -np.inf)])
    col_upper = np.concatenate([upper.ravel(), np.full(nS, np.inf), np.full(G, np.inf)])
    c = np.zeros(n_cols)
    c[t_col] = 1.0
    return LinearProgram(c, Amat, row_lower, row_upper, col_lower, col_upper)


def solve_lfp(
    p: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    backend: Backend,
    reference: np.ndarray | None = None,
    max_steps: int = 100,
    time_limit: float | None = None,
    rtol: float = RTOL,
    check_eps: float = CHECK_EPS,
) -> LFPSolution:
    """Minimize the maximum confidence of every group. Raises ``SolverError`` if a step fails.

    Every group keeps a bracket [lb, beta]: beta is the confidence recomputed from the best
    table found (an upper bound), lb a proven lower bound (``closedform.atr.lower_bound`` to
    start; exact for two outcomes). Each step solves, for all open groups in one LP,

        tau = min t  s.t.  q_i X_{i,a} - beta' S_a <= w_a t,  at beta' = max((lb + beta)/2, beta (1 - reach)),

    with w = S of the best table (floored). Then:

    * the returned table, recomputed exactly, lowers beta when it is better (the min-t point is a
      Dinkelbach-type step, so beta usually drops far below beta'); reach (first CHECK_EPS)
      grows 16x after each such step, and returns to CHECK_EPS after a step that proves
      infeasibility without improving (beta is then likely optimal, so certify close by);
    * tau > 0 proves beta* >= beta' + tau min_a w_a (for the optimal X*, each row is at most
      (beta* - beta') S_a(X*) / w_a and S_a <= 1), so lb jumps, usually to within the tolerance.

    Either beta falls to at most beta' or lb rises to at least beta', so the bracket shrinks
    geometrically; a group is done when beta - lb <= rtol * beta. A step that is feasible at
    beta' (tau <= T_TOL) yet yields no better table means the LP's tolerance is reached: the
    group stops and its remaining bracket is reported in ``gap``. The number of LP solves is
    the number of steps, independent of the number of groups; closed groups leave the LP.
    ``check_eps=0.5`` makes every step test the bracket's midpoint: plain bisection (with
    Dinkelbach-improved upper ends), kept for comparison in benchmarks/bench_lfp.py.
    """
    P = p.sum(axis=1)
    live = P > 0
    q = conditional_prior(p)
    X = feasible_start(lower, upper, reference)
    X, beta = _best_rounding(q, X, lower, upper)
    lb = np.minimum(lower_bound(q, lower, upper), beta)
    reach = np.full(len(p), check_eps)
    active = np.flatnonzero(live & (beta - lb > rtol * beta))
    steps = solves = 0
    build_s = solve_s = 0.0
    shape = (0, 0)
    solver, version = backend.name, ""
    started = time.perf_counter()
    while active.size:
        if steps >= max_steps:
            raise SolverError(
                f"the linear-fractional method did not converge in {max_steps} steps ({active.size} group(s) left)"
            )
        steps += 1
        qa, La, Ua = q[active], lower[active], upper[active]
        w = np.maximum((qa[:, :, None] * X[active]).sum(axis=1), W_FLOOR)
        b_act = beta[active]
        b_try = np.maximum(0.5 * (lb[active] + b_act), b_act * (1.0 - reach[active]))
        t0 = time.perf_counter()
        lp = _block_lp(qa, b_try, w, La, Ua)
        build_s += time.perf_counter() - t0
        shape = max(shape, lp.shape)
        remaining = None if time_limit is None else max(0.0, time_limit - (time.perf_counter() - started))
        sol = backend.solve(lp, time_limit=remaining, tol=LP_TOL)
        solves += 1
        if not sol.ok and sol.termination == "error":  # numerical trouble: once more, unit weights
            build_s += sol.build_s
            solve_s += sol.solve_s
            w = np.ones_like(w)
            lp = _block_lp(qa, b_try, w, La, Ua)
            sol = backend.solve(lp, time_limit=remaining, tol=LP_TOL)
            solves += 1
        build_s += sol.build_s
        solve_s += sol.solve_s
        solver, version = sol.solver, sol.version
        if not sol.ok:
            raise SolverError(
                f"{sol.solver} stopped at step {steps} of the linear-fractional method: "
                f"{sol.termination} ({sol.message}); no answer is reported"
            )
        raw = sol.x[: La.size].reshape(La.shape)
        tau = sol.x[lp.shape[1] - active.size :]
        Xa, new_beta = _best_rounding(qa, raw, La, Ua)
        better = b_act - new_beta > 1e-15 * np.maximum(b_act, 1e-300)
        upd = active[better]
        X[upd] = Xa[better]
        beta[upd] = new_beta[better]
        reach[upd] = np.minimum(reach[upd] * 16.0, 0.5)
        infeasible = tau > T_TOL
        bound = b_try + (tau - T_TOL) * w.min(axis=1)
        lb[active[infeasible]] = np.maximum(lb[active[infeasible]], np.minimum(bound[infeasible], beta[active[infeasible]]))
        reach[active[infeasible & ~better]] = check_eps  # beta is likely optimal: certify close by
        stuck = ~infeasible & ~better
        open_ = ~stuck & (beta[active] - lb[active] > rtol * beta[active])
        active = active[open_]
    beta = np.where(live, beta, 0.0)
    gap = np.where(live, np.maximum(beta - lb, 0.0), 0.0)
    return LFPSolution(beta, X, steps, solves, build_s, solve_s, shape, solver, version, gap)
