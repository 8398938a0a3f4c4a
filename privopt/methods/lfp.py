"""The ATR problem as a generalized linear-fractional program (Chen et al. Sec. 6, (OPT) eq. 16),
for any number of outcomes, solved group by group (Lemma 3) in independent chunks of groups.

Per group g, with q_i = P(x_i) / P(T_g), the ratios are

    r_{i,a}(X) = q_i X_{i,a} / S_a,     S_a = sum_i q_i X_{i,a},

and beta*_g = min over feasible X of max_{i,a} r_{i,a}(X).

Method: a Dinkelbach-type iteration for generalized fractional programs (Crouzeix, Ferland &
Schaible 1985, the variant that scales rows by the previous denominators) inside a bracket
[lower bound, best value] per group; ``solve_lfp`` states the step and why the bracket shrinks.
Each step is one LP over every open group of a chunk:

    minimize    sum_g t_g
    subject to  q_i X_{i,a} - beta'_g S_a <= w_{g,a} t_g      (w = S_a of the best table, floored)
                S_a = sum_i q_i X_{i,a},   sum_a X_{i,a} = 1,   L <= X <= U.

Values are always recomputed exactly from returned tables. The S_a are auxiliary columns, so
each ratio row has three nonzeros whatever the group size.

Chunks. Groups are independent (Lemma 3), so the open groups are cut, in index order, into
chunks of at most ``CHUNK`` groups, and each chunk runs its own steps with its own brackets.
HiGHS's time per step grows faster than the LP (0.07 s at 10^3 groups in one LP, 1.4 s at
10^4, 25 s at 10^5), so bounded chunks make the total time linear in the number of groups.
Chunks run in this process (``workers=1``) or in a pool of processes (``workers > 1``), each
re-creating its backend from (name, inner solver); a chunk's answer depends only on its own
groups, so results are the same bit for bit whatever ``workers`` is.

Proofs. A step's bound ``beta' + tau min_a w_a`` reads tau off the solver's primal answer; it
sets the pace of the steps only. The lower end a group is certified with is proven without
trusting the solver: the closed-form bound it starts from (``closedform.atr.lower_bound``), or
the bound a step's Farkas ray proves (the multipliers of its ratio rows, ``_ray``; the proof is
``verification.brackets``), whichever is larger, and never above beta. Each group keeps the
best ray found and its level, so ``privopt verify`` can re-derive its lower end.

``RUNNER`` (``core.plan.Method``, method "lfp") runs it for the driver on a plan's backend:
every live group must end certified, its proven bracket no wider than ``GAP_TOL`` relative, and
the answer carries the brackets and their rays as its certificate (``lfp_certificate``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .. import solverlog
from ..backends.base import Backend, LinearProgram
from ..closedform.atr import lower_bound
from ..core.certificate import Certificate
from ..core.plan import Outcome
from ..errors import SolverError
from ..measures.confidence import conditional_prior, group_max_confidence
from ..measures.reduce import repair_rows, shift_onto_sum
from ..verification.brackets import proven_lower
from ..verification.tolerances import GAP_TOL

LP_TOL = 1e-10  # HiGHS's tightest primal and dual feasibility tolerances
T_TOL = 1e-9  # LP values of t beyond this (10x the solver's tolerance) count as nonzero
W_FLOOR = 1e-4  # weights only set the pace; tiny ones give HiGHS duals of 1/w (ratio-test failures)
SNAP = 1e-8  # LP values below this are also tried at exactly 0 (see _best_rounding)
SNAP_MASS = 1e-9  # ... and so are cells whose mass q X is below this (10x the row tolerance)
CHECK_EPS = 1e-6  # a group's first step tests beta (1 - CHECK_EPS); see solve_lfp
RTOL = 1e-9  # a group is done when its bracket [lb, beta] is this narrow (relative)
CAP_LEVELS = (0.0, 0.125, 0.5)  # capped roundings at beta' + f (beta - beta'); see _capped
CHUNK = 250  # groups per chunk: each chunk its own steps, so time is linear in the number of groups
PARALLEL_MIN_GROUPS = 2_000  # fewer open groups than this run in-process: a worker starts in ~1 s


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
    gap: np.ndarray  # (G,) beta - the proven lower end (``lower``); 0 where the bracket closed exactly
    lower: np.ndarray  # (G,) the proven lower ends: the closed-form bound or a ray's (0 for a group of no mass)
    level: np.ndarray  # (G,) the level of the LP whose Farkas ray proves the lower end (NaN: the closed-form bound)
    ray: np.ndarray  # (G, m, A) that ray: the multipliers of the ratio rows (zeros where level is NaN)
    chunks: int = 1  # independent chunks of open groups solved
    workers: int = 1  # processes that solved them (1: this one)


def _best_rounding(
    q: np.ndarray, raw: np.ndarray, lower: np.ndarray, upper: np.ndarray, targets: tuple[np.ndarray, ...] = ()
):
    """The best of a few roundings of the LP's table, by exactly recomputed confidence per group.

    Zero mass is special because confidence is discontinuous there: an outcome left with 1e-12
    of stray mass on one record (invisible to the LP's tolerance) has confidence 1, where with
    no mass it is never observed (confidence 0); and when the optimum drops an outcome
    altogether, Dinkelbach steps only approach it, halving the gap each step. So besides the
    table itself we try: near-zero cells at 0 (value below SNAP or mass q X below SNAP_MASS),
    and for each outcome, that outcome at its floor in the group: every record of positive mass
    at mass m_a = max_i q_i L_{i,a} (X = m_a / q_i within its bounds), the least mass the
    outcome can have with all its ratios equal. With lower bounds 0 this removes the outcome
    from the group; with tiny positive ones (5.6e-17 = 0.2 - 0.19999999999999996 from
    ``|Dt - D| <= 1 - 0.8``) it keeps the outcome at ratio 1 / (records), which no LP step can
    resolve. Records of zero mass carry no confidence and keep their cells. Fixed cells stay
    fixed while the rows are moved back onto sum 1; a candidate whose rows cannot reach 1 is
    discarded. With ``targets`` (levels per group: the step's beta' and a few between it and
    the best value held), the table and its near-zero rounding are also capped at each
    (``_capped``).
    """
    A = raw.shape[-1]
    qq = q[:, :, None]
    live = qq > 0
    zeroable = lower <= 0.0
    snap = ((raw < SNAP) | (qq * raw < SNAP_MASS)) & zeroable
    candidates = [(np.where(snap, 0.0, raw), lower, np.where(snap, 0.0, upper))]
    m_a = (qq * lower).max(axis=1, keepdims=True)  # records of zero mass have q L = 0
    with np.errstate(divide="ignore", invalid="ignore"):
        floor = np.where(live, np.clip(m_a / np.where(live, qq, 1.0), lower, upper), raw)
    for a in range(A):
        fix = np.zeros(raw.shape, dtype=bool)
        fix[..., a] = live[..., 0]
        candidates.append((np.where(fix, floor, raw), np.where(fix, floor, lower), np.where(fix, floor, upper)))
    best = repair_rows(raw, lower, upper)
    best_beta = group_max_confidence(q, best)
    for t in targets:
        candidates += [(_capped(qq, x, lo, hi, t), lo, hi) for x, lo, hi in (candidates[0], (raw, lower, upper))]
    for x, lo, hi in candidates:
        cand = repair_rows(x, lo, hi)
        ok = (np.abs(cand.sum(axis=-1) - 1.0) <= 1e-12).all(axis=1)
        b = np.where(ok, group_max_confidence(q, cand), np.inf)
        take = b < best_beta
        best = np.where(take[:, None, None], cand, best)
        best_beta = np.minimum(best_beta, b)
    return best, best_beta


def _capped(qq: np.ndarray, x: np.ndarray, lower: np.ndarray, upper: np.ndarray, target: np.ndarray, rounds: int = 4):
    """``x`` with every ratio pushed down to ``target`` (per group) where the bounds allow.

    The LP meets its rows q X - beta' S <= w t to an absolute 1e-10, so an outcome of tiny
    mass S (1e-7: an optimum that keeps a sliver of an outcome to balance a bound, measured on
    random rules with ``|Dt - D| <= 0.2``) can come back with ratios 1e-3 above beta', and its
    table is worse than the one already held although the LP proves the level feasible. Each
    round caps every cell where its ratio is the target given the rest of its outcome,
    t rest / ((1 - t) q_i) (not below its lower bound), and refills its row
    onto sum 1 only into the room under the caps, so the refill cannot raise a ratio above the
    target either; the exact confidence of the result decides whether it is kept. Where the
    level is below the optimum (the LP cannot tell within 1e-9: measured, beta* = 0.82034858347
    solved exactly, the LP "feasible" at 0.82034858278) the rows cannot be refilled and the
    candidate is discarded, which is why levels between beta' and the best value are tried too.
    """
    t = target[:, None, None]
    x = repair_rows(x, lower, upper)
    live = qq > 0
    for _ in range(rounds):
        mass = qq * x
        rest = (
            mass.sum(axis=1, keepdims=True) - mass
        )  # q_i X_ia <= t (q_i X_ia + rest) <=> X_ia <= t rest / ((1 - t) q_i)
        with np.errstate(divide="ignore", invalid="ignore"):
            cap = np.where(live & (t < 1.0), t * rest / ((1.0 - t) * np.where(live, qq, 1.0)), upper)
        cap = np.clip(cap, lower, upper)
        x = shift_onto_sum(
            np.minimum(x, cap), lower, np.maximum(cap, np.minimum(x, cap)), np.ones(x.shape[:-1]), axis=-1
        )
    return x


def feasible_start(lower: np.ndarray, upper: np.ndarray, reference: np.ndarray | None) -> np.ndarray:
    start = 0.5 * (lower + upper) if reference is None else reference
    return repair_rows(start, lower, upper)


def _block_lp(q: np.ndarray, beta: np.ndarray, w: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> LinearProgram:
    import scipy.sparse as sp

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
    Amat = sp.csc_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n_rows, n_cols))
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
    *,
    workers: int | None = 1,
    chunk_size: int = CHUNK,
    progress: Callable[[int, int], None] | None = None,
) -> LFPSolution:
    """Minimize the maximum confidence of every group. Raises ``SolverError`` if a step fails.

    Every group keeps a bracket [lb, beta]: beta is the confidence recomputed from the best
    table found (an upper bound), lb a proven lower bound (``closedform.atr.lower_bound`` to
    start; exact for two outcomes). Groups still open after the start are cut, in index order,
    into chunks of ``chunk_size``; each chunk solves, for all its open groups in one LP,

        tau = min t  s.t.  q_i X_{i,a} - beta' S_a <= w_a t,  at beta' = max((lb + beta)/2, beta (1 - reach)),

    with w = S of the best table (floored). Then:

    * the returned table, recomputed exactly, lowers beta when it is better (the min-t point is a
      Dinkelbach-type step, so beta usually drops far below beta'); reach (first CHECK_EPS)
      grows 16x after each such step, and returns to CHECK_EPS after a step that proves
      infeasibility without improving (beta is then likely optimal, so certify close by);
    * tau > 0 proves beta* >= beta' + tau min_a w_a (for the optimal X*, each row is at most
      (beta* - beta') S_a(X*) / w_a and S_a <= 1), so lb jumps, usually to within the tolerance.

    Either beta falls to at most beta' or lb rises to at least beta', so the bracket shrinks
    geometrically; a group is done when beta - lb <= rtol * beta. Beside lb (the pace), each step
    with row duals proves a lower end from its Farkas ray (``verification.brackets``); the
    solution's ``lower`` is the larger of the closed-form bound and the best ray's, capped at
    beta, and ``gap`` is measured from it. A step that is feasible at
    beta' (tau <= T_TOL) yet yields no better table means the LP's tolerance is reached: the
    group stops and its remaining bracket is reported in ``gap``. Closed groups leave their
    chunk's LP. ``check_eps=0.5`` makes every step test the bracket's midpoint: plain bisection
    (with Dinkelbach-improved upper ends), kept for comparison in benchmarks/bench_lfp.py.

    ``workers``: processes to solve chunks in (None: ``os.cpu_count()``; 1: this process, no
    pool). A pool is used only with more than one chunk and at least PARALLEL_MIN_GROUPS open
    groups (a worker takes about a second to start); each worker re-creates the backend from
    ``(backend.name, backend.solver)``. ``time_limit`` (seconds) bounds the whole solve.
    ``progress(done, total)``, if given, is called in this process with the number of groups
    finished so far (closed at the start, or their chunk done) and the number of groups.
    """
    G = len(p)
    P = p.sum(axis=1)
    live = P > 0
    q = conditional_prior(p)
    X = feasible_start(lower, upper, reference)
    X, beta = _best_rounding(q, X, lower, upper)
    closed_form = lower_bound(q, lower, upper)
    lb = np.minimum(closed_form, beta)
    open_ = np.flatnonzero(live & (beta - lb > rtol * beta))
    chunk_size = max(1, int(chunk_size))
    chunks = [open_[k : k + chunk_size] for k in range(0, open_.size, chunk_size)]
    n_workers = _workers(workers, len(chunks), open_.size)
    deadline = None if time_limit is None else time.monotonic() + max(0.0, float(time_limit))
    done = G - open_.size
    if progress is not None:
        progress(done, G)
    results: list[_ChunkResult | None] = [None] * len(chunks)

    def args(idx: np.ndarray) -> tuple:
        return (
            p[idx],
            q[idx],
            lower[idx],
            upper[idx],
            X[idx],
            beta[idx],
            lb[idx],
            max_steps,
            deadline,
            rtol,
            check_eps,
        )

    if n_workers == 1:
        for k, idx in enumerate(chunks):
            results[k] = _solve_chunk(backend, *args(idx))
            done += idx.size
            if progress is not None:
                progress(done, G)
    else:
        import multiprocessing  # a pool only for several workers: not at start-up (issue 23, goal 1)
        from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

        context = multiprocessing.get_context("spawn")
        spec = (backend.name, backend.solver)
        pool = ProcessPoolExecutor(n_workers, mp_context=context, initializer=_init_worker, initargs=(solverlog._sink,))
        try:
            futures = {pool.submit(_chunk_task, spec, *args(idx)): k for k, idx in enumerate(chunks)}
            pending = set(futures)
            while pending:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for f in finished:
                    k = futures[f]
                    results[k] = f.result()  # a chunk's SolverError is raised here
                    done += chunks[k].size
                    if progress is not None:
                        progress(done, G)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    steps = solves = 0
    build_s = solve_s = 0.0
    shape = (0, 0)
    solver, version = _solver_name(backend), ""
    ray_lb = np.full(G, -np.inf)
    level = np.full(G, np.nan)
    ray = np.zeros(lower.shape)
    for idx, r in zip(chunks, results):
        X[idx], beta[idx], lb[idx] = r.X, r.beta, r.lb
        ray_lb[idx], level[idx], ray[idx] = r.ray_lb, r.level, r.ray
        steps = max(steps, r.steps)
        solves += r.solves
        build_s += r.build_s
        solve_s += r.solve_s
        shape = max(shape, r.shape)
        solver, version = r.solver, r.version
    beta = np.where(live, beta, 0.0)
    by_ray = live & (ray_lb > closed_form)  # else the closed-form bound proves the lower end: no ray kept
    level = np.where(by_ray, level, np.nan)
    ray[~by_ray] = 0.0
    proven = np.where(live, np.minimum(np.where(by_ray, ray_lb, closed_form), beta), 0.0)
    gap = np.maximum(beta - proven, 0.0)
    return LFPSolution(
        beta,
        X,
        steps,
        solves,
        build_s,
        solve_s,
        shape,
        solver,
        version,
        gap,
        proven,
        level,
        ray,
        len(chunks),
        n_workers,
    )


def _solver_name(backend: Backend) -> str:
    """The backend and its inner solver (``cvxpy/HIGHS``, ``highs``), for a solve that needed no
    LP (every group proven optimal by its starting table)."""
    inner = getattr(backend, "solver", None)
    return f"{backend.name}/{inner}" if inner else backend.name


def _workers(workers: int | None, n_chunks: int, n_open: int) -> int:
    """The processes to use: 1 unless there are several chunks and enough open groups."""
    import os

    want = (os.cpu_count() or 1) if workers is None else int(workers)
    if want <= 1 or n_chunks <= 1 or n_open < PARALLEL_MIN_GROUPS:
        return 1
    return min(want, n_chunks)


@dataclass(frozen=True)
class _ChunkResult:
    X: np.ndarray
    beta: np.ndarray
    lb: np.ndarray
    ray_lb: np.ndarray  # the best lower end a Farkas ray proved per group (-inf: none)
    level: np.ndarray  # the level of that ray's LP (NaN: none)
    ray: np.ndarray  # the ray: the ratio rows' multipliers over (group, record, outcome)
    steps: int
    solves: int
    build_s: float
    solve_s: float
    shape: tuple[int, int]
    solver: str
    version: str


_BACKENDS: dict[tuple[str, str | None], Backend] = {}


def _init_worker(sink) -> None:
    """A pool process: solver output goes where this process's goes (``--verbose``, ``--log``);
    Ctrl-C is the parent's to handle (it cancels the chunks not started and waits for the
    running ones, each a few tenths of a second)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    solverlog.configure(sink)


def _chunk_task(spec: tuple[str, str | None], *args) -> _ChunkResult:
    """One chunk in a pool process: the backend is re-created there from (name, inner solver)."""
    backend = _BACKENDS.get(spec)
    if backend is None:
        from ..backends import get_backend

        backend = _BACKENDS[spec] = get_backend(*spec)
        if hasattr(backend, "interruptible"):
            backend.interruptible = False  # no Ctrl-C here (SIGINT ignored): skip the per-solve thread
    return _solve_chunk(backend, *args)


def _solve_chunk(
    backend: Backend,
    p: np.ndarray,
    q: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    X: np.ndarray,
    beta: np.ndarray,
    lb: np.ndarray,
    max_steps: int,
    deadline: float | None,
    rtol: float,
    check_eps: float,
) -> _ChunkResult:
    """The steps of ``solve_lfp`` for one chunk of open groups (of positive mass); returns the
    chunk's best tables, their confidences, the working lower ends and, per group, the best
    lower end a step's Farkas ray proves (``verification.brackets``) with its level and ray."""
    X, beta, lb = X.copy(), beta.copy(), lb.copy()
    ray_lb, level, ray = np.full(len(q), -np.inf), np.full(len(q), np.nan), np.zeros(lower.shape)
    reach = np.full(len(q), check_eps)
    active = np.arange(len(q))
    steps = solves = 0
    build_s = solve_s = 0.0
    shape = (0, 0)
    solver, version = _solver_name(backend), ""
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
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        sol = backend.solve(lp, time_limit=remaining, tol=LP_TOL)
        solves += 1
        # numerical trouble, or an iteration limit (not the clock): once more, with unit weights.
        # Weights near W_FLOOR (an outcome the best table leaves empty) make a first-order solver
        # (OSQP) crawl: Chen et al.'s Table 4 stalls OSQP at 200,000 iterations, and converges
        # in 12 LP solves with unit weights
        out_of_iterations = sol.termination == "user_limit" and (remaining is None or sol.solve_s < 0.9 * remaining)
        if not sol.ok and (sol.termination == "error" or out_of_iterations):
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
        levels = tuple(b_try + (b_act - b_try) * f for f in CAP_LEVELS)
        Xa, new_beta = _best_rounding(qa, raw, La, Ua, levels)
        better = b_act - new_beta > 1e-15 * np.maximum(b_act, 1e-300)
        upd = active[better]
        X[upd] = Xa[better]
        beta[upd] = new_beta[better]
        reach[upd] = np.minimum(reach[upd] * 16.0, 0.5)
        if sol.row_dual is not None:
            lam = _ray(qa, La.shape[2], sol.row_dual)
            proven = proven_lower(p[active], La, Ua, b_try, lam)
            gain = proven > ray_lb[active]
            won = active[gain]
            ray_lb[won], level[won], ray[won] = proven[gain], b_try[gain], lam[gain]
        infeasible = tau > T_TOL
        bound = b_try + (tau - T_TOL) * w.min(axis=1)
        lb[active[infeasible]] = np.maximum(
            lb[active[infeasible]], np.minimum(bound[infeasible], beta[active[infeasible]])
        )
        reach[active[infeasible & ~better]] = check_eps  # beta is likely optimal: certify close by
        stuck = ~infeasible & ~better
        still = ~stuck & (beta[active] - lb[active] > rtol * beta[active])
        active = active[still]
    return _ChunkResult(X, beta, lb, ray_lb, level, ray, steps, solves, build_s, solve_s, shape, solver, version)


def _ray(q: np.ndarray, A: int, row_dual: np.ndarray) -> np.ndarray:
    """The Farkas ray of a step's LP (``_block_lp``) over (group, record, outcome): the
    multipliers of its ratio rows ``q X - beta' S - w t <= 0``, one per cell of positive mass in
    C order after the G m record rows and the G A rows of S. A row's dual is d objective / d
    bound, <= 0 for a binding ``<=`` row; the ray is its negative, floored at 0 (lam >= 0)."""
    G, m = q.shape
    live = np.broadcast_to(q[:, :, None] > 0, (G, m, A))
    lam = np.zeros((G, m, A))
    start = G * m + G * A
    lam[live] = np.maximum(-row_dual[start : start + int(live.sum())], 0.0)
    return lam


# ------------------------------------------------------------------ the method, for the driver


class LFPMethod:
    """The LFP method (``solve_lfp``) on the route's backend, over the lowered instance a
    transparency report prepares (``lower.atr.ATRInstance``, one block per QID group by Lemma 3).
    The answer is a certified optimum only when every group's bracket ``[lb_g, beta_g]`` closes to
    ``beta_g - lb_g <= GAP_TOL beta_g``; otherwise ``SolverError`` names the open groups."""

    name = "lfp"

    def run(self, problem, inst, route, time_limit, workers, progress) -> Outcome:
        """The point is ``(table (G, m, A), beta per group, None)``; the certificate the brackets."""
        be = route.backend
        sol = solve_lfp(
            inst.p,
            inst.lower,
            inst.upper,
            be,
            inst.reference,
            time_limit=time_limit,
            workers=workers,
            progress=progress,
        )
        rel_gap = sol.gap / np.maximum(sol.beta, 1e-300)
        uncertified = ~(rel_gap <= GAP_TOL)  # NaN is uncertified
        if np.any(uncertified):
            raise SolverError(_uncertified_message(inst, sol, rel_gap, uncertified))
        stats = dict(
            steps=sol.steps,
            lp_solves=sol.lp_solves,
            lp_build_s=round(sol.lp_build_s, 6),
            lp_solve_s=round(sol.lp_solve_s, 6),
            lp_rows=sol.lp_shape[0],
            lp_cols=sol.lp_shape[1],
            max_relative_gap=float(rel_gap.max(initial=0.0)),
            chunks=sol.chunks,
            workers=sol.workers,
            solver=f"{sol.solver} {sol.version}",
        )
        table = route.chain.invert(sol.table, [inst])
        return Outcome(
            (table, sol.beta, None),
            f"certified: proven lower bound within {stats['max_relative_gap']:.1e} (relative)",
            be.label,
            certificate=lfp_certificate(sol, stats["max_relative_gap"]),
            stats=stats,
        )


def lfp_certificate(sol: LFPSolution, max_relative_gap: float) -> Certificate:
    """The LFP's brackets [lower_g, beta_g] per group (Lemma 3: groups are independent), with
    the largest relative gap; the bound on the largest confidence is the largest lower end.
    Each lower end's proof: a level and its Farkas ray (``verification.brackets``), arrays over
    the groups (``level`` NaN, the ray zeros: the closed-form bound ``closedform.atr.lower_bound``
    proves it)."""
    return Certificate(
        "lfp-brackets",
        "every group's max confidence lies in a proven bracket [lower bound, beta] no wider than the gap",
        bound=float(sol.lower.max()) if sol.lower.size else 0.0,
        side="lower",
        gap=max_relative_gap,
        data={
            "units": "max confidence (beta)",
            "groups": int(sol.beta.size),
            "max_relative_gap": max_relative_gap,
            "lower": sol.lower,
            "upper": sol.beta,
            "tolerance": GAP_TOL,
            "level": sol.level,
            "ray": sol.ray,
        },
    )


def _uncertified_message(inst, sol: LFPSolution, rel_gap: np.ndarray, uncertified: np.ndarray) -> str:
    """Which groups the LFP left open, their brackets and why (up to five, widest first)."""
    order = np.argsort(-np.nan_to_num(np.where(uncertified, rel_gap, -np.inf), nan=np.inf), kind="stable")
    shown = [int(g) for g in order[: min(5, int(uncertified.sum()))]]
    lines = [
        f"{inst.group_key(g)}: best table {sol.beta[g]:.12g}, proven lower bound {sol.lower[g]:.12g} "
        f"(relative gap {rel_gap[g]:.2g} > {GAP_TOL:g})"
        for g in shown
    ]
    more = int(uncertified.sum()) - len(shown)
    return (
        f"the linear-fractional method could not certify {int(uncertified.sum())} group(s) of {inst.n_groups}: "
        + "; ".join(lines)
        + (f"; and {more} more" if more > 0 else "")
        + ". Why: a step's LP (tolerance 1e-10) was feasible at a level inside the bracket yet gave no better "
        "table, so the bracket cannot be narrowed at the LP's accuracy (bounds or masses finer than ~1e-9?); "
        "no optimum is reported"
    )


RUNNER = LFPMethod()
