"""The ATR problem as a generalized linear-fractional program (Chen et al. Sec. 6, (OPT) eq. 16),
for any number of outcomes, solved group by group (Lemma 3) with all groups in one LP per step.

Per group g, with q_i = P(x_i) / P(T_g), the ratios are

    r_{i,a}(X) = q_i X_{i,a} / S_a,     S_a = sum_i q_i X_{i,a},

and beta*_g = min over feasible X of max_{i,a} r_{i,a}(X).

Method (Dinkelbach-type for generalized fractional programs, Crouzeix, Ferland & Schaible 1985,
the variant that scales by the previous denominators): start from a feasible X^0 and
beta^0 = max r(X^0); at step k solve, for every group at once,

    minimize    sum_g t_g
    subject to  q_i X_{i,a} - beta^k_g S_a <= w_{g,a} t_g      (w = previous S_a, floored)
                S_a = sum_i q_i X_{i,a},   sum_a X_{i,a} = 1,   L <= X <= U,

then beta^{k+1}_g = max r(X^{k+1}), recomputed exactly from the returned table. A group whose
optimal t_g is >= -tol cannot improve: its beta is optimal (F(beta) = 0). The S_a are auxiliary
columns, so each ratio row has three nonzeros whatever the group size. The number of LP
solves is the number of steps (typically 3-6), independent of the number of groups; groups that
have converged leave the LP.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..backends.base import Backend, LinearProgram
from ..errors import SolverError
from ..measures.confidence import group_max_confidence

T_TOL = 1e-10  # a group is optimal when no step can lower its scaled ratio gap by more than this
W_FLOOR = 1e-9


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


def repair_rows(X: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Clip to the bounds, then move each row onto sum 1 within its bounds (proportionally)."""
    X = np.clip(X, lower, upper)
    gap = 1.0 - X.sum(axis=-1)
    room = np.where(gap[..., None] >= 0, upper - X, X - lower)
    total = room.sum(axis=-1)
    frac = np.where(total > 0, np.abs(gap) / np.where(total > 0, total, 1.0), 0.0)
    return X + np.sign(gap)[..., None] * room * np.minimum(frac, 1.0)[..., None]


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
    max_steps: int = 60,
    time_limit: float | None = None,
) -> LFPSolution:
    """Minimize the maximum confidence of every group. Raises ``SolverError`` if a step fails."""
    P = p.sum(axis=1)
    live = P > 0
    q = np.where(live[:, None], p / np.where(live, P, 1.0)[:, None], 0.0)
    X = feasible_start(lower, upper, reference)
    beta = group_max_confidence(q, X)
    active = np.flatnonzero(live)
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
        t0 = time.perf_counter()
        lp = _block_lp(qa, beta[active], w, La, Ua)
        build_s += time.perf_counter() - t0
        shape = max(shape, lp.shape)
        remaining = None if time_limit is None else max(0.0, time_limit - (time.perf_counter() - started))
        sol = backend.solve_lp(lp, time_limit=remaining)
        solves += 1
        build_s += sol.build_s
        solve_s += sol.solve_s
        solver, version = sol.solver, sol.version
        if not sol.ok:
            raise SolverError(
                f"{sol.solver} stopped at step {steps} of the linear-fractional method: "
                f"{sol.termination} ({sol.message}); no answer is reported"
            )
        nX = La.size
        Xa = repair_rows(sol.x[:nX].reshape(La.shape), La, Ua)
        t = sol.x[lp.shape[1] - active.size :]
        new_beta = group_max_confidence(qa, Xa)
        gain = beta[active] - new_beta
        better = gain > 0
        upd = active[better]
        X[upd] = Xa[better]
        beta[upd] = new_beta[better]
        done = (t >= -T_TOL) | (gain <= 1e-15 * np.maximum(new_beta, 1e-300))
        active = active[~done]
    beta = np.where(live, beta, 0.0)
    return LFPSolution(beta, X, steps, solves, build_s, solve_s, shape, solver, version)
