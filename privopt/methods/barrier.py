"""The barrier method: noise placement (Ramon & Basu Sec. 3.2) at large sizes by a log-barrier
Newton method on the variances, certified by the Lagrange dual point it carries.

The program (``lower.noise.ConicProgram``, diagonal noise, scaled units): with ``G = [G_1 ...
G_K]`` (m x N, every noise coordinate's column), ``c_i = |g_i|^2`` and ``Sigma(s) = G diag(s) G'``

    (P)   minimize c's   subject to   phi_j(s) = f_j' Sigma(s)^-1 f_j <= t_j  (j = 1..n),  s >= 0

(the paper's program after Sec. 3.2's constraint ``w_j^2 a_j' Sigma^-1 a_j <= Delta^2``, with
``t_j = (Delta / w_j)^2``). It applies where ``Sigma(s)`` is positive definite for every
``s > 0``: some noise enters every answer alone (``G`` holds a diagonal square block with a
nonzero diagonal; the answers' own noise ``xi``). Each ``phi_j`` is convex (matrix-fractional).

**Barrier.** For ``tau > 0`` the centre ``s(tau)`` minimizes

    B_tau(s) = tau c's - sum_j log(t_j - phi_j(s)) - sum_i log s_i,

by primal-dual Newton steps (``_centre``: the multipliers ``lam_j`` carried beside ``s``, so a
constraint driven near its boundary recovers in a few steps) with a backtracking line search on
``B_tau`` that keeps ``s`` strictly feasible. With
``W = G' Sigma^-1 F`` (N x n, ``w_ij = g_i' Sigma^-1 f_j``), ``P = G' Sigma^-1 G`` and
``d_j = 1 / (t_j - phi_j)``:

    d phi_j / d s_i = -w_ij^2,     d^2 phi_j / d s_i d s_k = 2 P_ik w_ij w_kj,

so the gradient is ``tau c - (W o W) d - 1/s`` and the Hessian
``2 P o (W diag(d) W') + V diag(d^2) V' + diag(1/s^2)`` (``V = W o W``, ``o`` elementwise; the
step uses ``lam`` for ``d`` in the first term and ``lam o d`` for ``d^2``). One
step costs one m x m Cholesky factorization of Sigma (``Sigma^-1`` itself only for the block of P
of the noise entering one answer alone, ``_gram``), products of order m N n and N^2 (m + n), and
one N x N Cholesky factorization of the Hessian.

**The dual and the bound.** Writing ``f' Sigma^-1 f = max_y 2 y'f - y' Sigma y`` and
``y_j = Y_j / mu_j`` turns the Lagrangian of (P) into ``sum_i s_i (c_i - sum_j (g_i' Y_j)^2 /
mu_j) + sum_j (2 Y_j' f_j - mu_j t_j)``; its infimum over ``s >= 0`` is finite exactly when
every bracket is nonnegative, so the Lagrange dual is

    (D)   maximize sum_j (2 Y_j' f_j - mu_j t_j)   subject to   sum_j (g_i' Y_j)^2 / mu_j <= c_i,

and every feasible (Y, mu) bounds (P) from below (weak duality; ``ConicProgram.dual_cvxpy``
states the same dual). At a centre, stationarity ``tau c = V d + 1/s`` gives the dual point
``mu = d / tau``, ``Y_j = mu_j Sigma^-1 f_j``: ``sum_j mu_j w_ij^2 = c_i - 1 / (tau s_i) <= c_i``,
feasible, at the duality gap ``(n + N) / tau``. Off the centre the same formula is made exactly
feasible by ``ConicProgram.dual_bound``'s rescaling. The barrier parameter grows by
``TAU_GROWTH`` after each centring until the bound is within ``BARRIER_RTOL`` of the loss.

The verifier does not trust any of this: ``methods.conic.verify`` recomputes the sensitivities
and the loss from the variances alone and re-evaluates (D) at the returned (Y, mu)
(``ConicProgram.dual_bound``), scaled by the calibration's proven bound.

``RUNNER`` applies the route's chain (``lower.reductions.GaussianCalibration``), solves, maps
the variances back (``route.chain.invert``), cleans them to exact feasibility
(``ConicProgram.clean``) and verifies them (``solve_verified``). ``classify.analyse_conic``
says where it applies and when it is chosen over the conic program (docs/noise-placement.md).
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field

import numpy as np
import scipy
import scipy.linalg
import scipy.linalg.lapack
from threadpoolctl import threadpool_limits

from ..core.plan import Outcome
from ..errors import SolverError
from ..lower.noise import ConicProgram
from ..model.noise import NoiseModel
from .conic import verify

BARRIER_RTOL = 1e-8  # the gap the method stops at (relative): the certificate asks CONIC_RTOL = 1e-6
TAU_GROWTH = 20.0  # the barrier parameter's factor between centrings
CENTRED = 1e-2  # a centring stops when the Newton decrement lambda^2 / 2 is below this
MAX_NEWTON = 400  # Newton steps in all, a guard against a stall


def blas_threads() -> int:
    """The BLAS threads the method runs on: the cores the machine leaves idle, ``floor(cores +
    1/2 - load)`` (``load`` the one-minute load average, ``cores`` those this process may run
    on), at least one. On a loaded machine OpenBLAS's threads wait on each other: n = m = 400
    took 291 s on two threads against 31 s on one at a load average of 16 on 2 cores
    (docs/noise-placement.md), so only idle cores are taken; a quiet machine gains up to its
    core count on the factorizations and products."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(cores, math.floor(cores + 0.5 - os.getloadavg()[0])))


class BarrierRunner:
    """The ``core.plan.Method`` of ``--method barrier``: the route's chain to the conic program,
    solved by the barrier method and verified (``solve_verified``); the outcome's point is the
    cleaned variances in real units, its context the program, the solution and the
    verification (the block kind reports them). No backend: numpy and LAPACK only."""

    name = "barrier"

    def run(self, problem, prepared, route, time_limit, workers, progress) -> Outcome:
        t0 = time.perf_counter()
        with threadpool_limits(limits=blas_threads(), user_api="blas"):
            program, inverse = route.chain.apply(problem)
        lower_s = time.perf_counter() - t0

        def real(values: dict) -> dict:
            return route.chain.invert(values, inverse)

        cov, sol, verification = solve_verified(problem.noise, program, time_limit, real=real)
        stats = {
            "lower_s": round(lower_s, 6),
            "barrier_solve_s": round(sol.solve_s, 6),
            "newton_steps": sol.iterations,
            "centrings": sol.centrings,
        }
        context = {
            "program": program,
            "solution": sol,
            "verification": verification,
            "backend": None,
            "time_limit": time_limit,
            "form": "barrier",
        }
        return Outcome(cov, verification["optimality"], "none", stats=stats, context=context)


RUNNER = BarrierRunner()


def census(model: NoiseModel) -> dict:
    """The program the barrier method solves, counted as ``core.canonical.CanonicalProgram.census``
    counts (it builds no canonical program): the N noise variances with their bounds s >= 0,
    and one convex (matrix-fractional) constraint per input."""
    coordinates = sum(x.size for x in model.noises)
    return {
        "variables": coordinates,
        "integers": 0,
        "objective": "linear",
        "constraints": {"zero": 0, "nonnegative": coordinates, "soc": 0, "psd": 0, "convex": int(model.F.shape[1])},
    }


def solve_verified(model: NoiseModel, program: ConicProgram, time_limit=None, real=None):
    """(covariances in real units, ``BarrierSolution``, verification): ``solve_barrier``, the
    variances cleaned (``ConicProgram.clean``) and verified by ``methods.conic.verify``, the
    certificate the dual point's value (``ConicProgram.dual_bound``; nothing else is solved).
    ``real`` maps the program's variances to real units (default ``ConicProgram.real``).

    BLAS runs on ``blas_threads()`` thread(s) meanwhile, the idle cores: on a loaded machine
    OpenBLAS's threads wait on each other, so a 3 x 2 placement took 6 s instead of 0.1 s and
    n = m = 400 288 s instead of 16 s (docs/noise-placement.md)."""
    with threadpool_limits(limits=blas_threads(), user_api="blas"):
        sol = solve_barrier(program, time_limit=time_limit)
        cov = program.clean(model, (real or program.real)(sol.values))
        check = verify(
            model,
            cov,
            program,
            sol.objective,
            bound=lambda enough: (program.dual_bound(sol.Y, sol.mu), (sol.Y, sol.mu)),
        )
    return cov, sol, check


@dataclass(eq=False)
class BarrierSolution:
    """The method's answer in the program's scaled units: the variances by block, the dual
    point (Y, n x m; mu, n), the primal value c's, the proven bound (real units, with the
    offset: ``ConicProgram.dual_bound``), Newton steps (``iterations``) and centrings, and the
    time spent."""

    values: dict[str, np.ndarray] = field(repr=False)
    Y: np.ndarray = field(repr=False)
    mu: np.ndarray = field(repr=False)
    objective: float
    bound: float
    iterations: int
    centrings: int
    solve_s: float
    solver: str = "privopt barrier"
    version: str = field(default_factory=lambda: f"(numpy {np.__version__}, scipy {scipy.__version__})")


class _Columns:
    """The noise's columns G (m x N), ordered as the method works on them: first those with
    several nonzero entries (``G_R``, k of them), then those with one (``unit``: a noise entering
    one answer alone, ``g_u e_{r(u)}``; ``rows`` r and ``values`` g). ``order`` maps the
    method's columns to the given ones. When G is square and diagonal (noise on the answers
    alone) ``diagonal`` holds its diagonal: Sigma is then diagonal and every factorization
    elementwise."""

    def __init__(self, G: np.ndarray):
        single = np.count_nonzero(G, axis=0) == 1
        self.order = np.concatenate([np.flatnonzero(~single), np.flatnonzero(single)])
        self.matrix = G[:, self.order]
        self.k = int(np.count_nonzero(~single))
        unit = self.matrix[:, self.k :]
        self.rows = np.argmax(unit != 0, axis=0)
        self.values = unit[self.rows, np.arange(unit.shape[1])]
        square = G.shape[0] == G.shape[1]
        self.diagonal = np.diag(G).copy() if square and np.count_nonzero(G - np.diag(np.diag(G))) == 0 else None
        if self.diagonal is not None:
            self.order, self.matrix = np.arange(G.shape[1]), G

    def sigma(self, s: np.ndarray) -> np.ndarray:
        """``Sigma = G diag(s) G'``: ``G_R diag(s_R) G_R'`` by a symmetric rank-k product
        (BLAS syrk), the unit columns added to the diagonal."""
        H = self.matrix[:, : self.k] * np.sqrt(s[: self.k])
        Sigma = H @ H.T
        m = Sigma.shape[0]
        Sigma[np.diag_indices(m)] += np.bincount(self.rows, weights=self.values**2 * s[self.k :], minlength=m)
        return Sigma

    def transpose_times(self, M: np.ndarray) -> np.ndarray:
        """``G' M`` (N x n for M m x n): a product for ``G_R``, rows of M scaled for the rest."""
        return np.vstack([self.matrix[:, : self.k].T @ M, self.values[:, None] * M[self.rows]])


class _Point:
    """The barrier's quantities at s: Sigma's Cholesky factor L (a vector when Sigma is
    diagonal), ``X = L^-1 F`` and ``phi``."""

    def __init__(self, s: np.ndarray, G: _Columns, F: np.ndarray):
        self.s = s
        if G.diagonal is not None:
            sigma = G.diagonal**2 * s
            if not np.all(sigma > 0):
                raise np.linalg.LinAlgError("Sigma is not positive definite")
            self.L = np.sqrt(sigma)
        else:
            Sigma = G.sigma(s)
            self.L = scipy.linalg.cholesky(Sigma, lower=True, check_finite=False)
        self.X = self.lower_solve(F)
        self.phi = np.einsum("ij,ij->j", self.X, self.X)

    def value(self, tau: float, c: np.ndarray, t: np.ndarray) -> float:
        slack = t - self.phi
        if np.any(slack <= 0) or np.any(self.s <= 0):
            return math.inf
        return float(tau * (c @ self.s) - np.sum(np.log(slack)) - np.sum(np.log(self.s)))

    def lower_solve(self, M: np.ndarray) -> np.ndarray:
        """``L^-1 M``."""
        if self.L.ndim == 1:
            return M / self.L[:, None]
        return scipy.linalg.solve_triangular(self.L, M, lower=True, check_finite=False)

    def sigma_inv_F(self) -> np.ndarray:
        """``Sigma^-1 F`` (m x n) by two triangular solves."""
        if self.L.ndim == 1:
            return self.X / self.L[:, None]
        return scipy.linalg.solve_triangular(self.L, self.X, lower=True, trans="T", check_finite=False)


def _try_point(s, G, F) -> _Point | None:
    try:
        return _Point(s, G, F)
    except np.linalg.LinAlgError:  # Sigma not positive definite to working precision
        return None


def solve_barrier(program: ConicProgram, rtol: float = BARRIER_RTOL, time_limit: float | None = None):
    """(``BarrierSolution``) of ``program`` (diagonal noise with noise on every answer:
    ``classify.barrier_refusal``): centrings of the log barrier at growing tau until
    ``ConicProgram.dual_bound`` at the dual point is within ``rtol`` of the loss (the module's
    docstring), BLAS on ``blas_threads()`` thread(s) (``solve_verified``). ``SolverError`` on a
    time limit or a stall."""
    with threadpool_limits(limits=blas_threads(), user_api="blas"):
        return _solve(program, rtol, time_limit)


def _solve(program: ConicProgram, rtol: float, time_limit: float | None) -> BarrierSolution:
    t0 = time.perf_counter()
    F, t = program.F, program.t
    c = np.concatenate([b.weights for b in program.blocks])
    live = c > 0  # a zero column of G moves nothing and costs nothing: its variance stays 0
    G = _Columns(np.hstack([b.G for b in program.blocks])[:, live])
    c = c[live][G.order]
    m, n = F.shape
    N = G.matrix.shape[1]
    if n == 0:  # no input moves the release: no noise is needed, and the bound is the offset
        zero = {b.name: np.zeros(b.size) for b in program.blocks}
        return BarrierSolution(zero, np.zeros((0, m)), np.zeros(0), 0.0, program.offset, 0, 0, time.perf_counter() - t0)
    # a strictly feasible start: equal variances twice the least that meet every constraint
    p = _Point(np.ones(N), G, F)
    p = _Point(np.full(N, 2.0 * float(np.max(p.phi / t))), G, F)
    tau = (n + N) / float(c @ p.s)
    lam = 1.0 / (t - p.phi)
    steps = centrings = 0
    while True:
        p, lam, mu, taken = _centre(p, lam, tau, G, F, c, t, t0, time_limit, MAX_NEWTON - steps)
        steps += taken
        centrings += 1
        Y = (p.sigma_inv_F() * mu).T
        loss = program.offset + program.unit * float(c @ p.s)
        bound = program.dual_bound(Y, mu)
        if loss - bound <= rtol * abs(loss):
            break
        if (n + N) / tau < 1e-3 * rtol * float(c @ p.s):
            raise SolverError("the barrier method's dual point fell short of its bound at a negligible barrier gap")
        tau *= TAU_GROWTH
    s = np.zeros(live.size)
    s[np.flatnonzero(live)[G.order]] = p.s
    values, start = {}, 0
    for b in program.blocks:
        values[b.name] = s[start : start + b.size]
        start += b.size
    return BarrierSolution(values, Y, mu, float(c @ p.s), bound, steps, centrings, time.perf_counter() - t0)


def _centre(p: _Point, lam, tau, G, F, c, t, t0, time_limit, budget) -> tuple[_Point, np.ndarray, np.ndarray, int]:
    """Primal-dual Newton steps on ``B_tau`` from ``p`` and the multipliers ``lam`` until the
    decrement ``-grad' ds / 2 <= CENTRED``: (the point, its multipliers, its dual estimate mu,
    the steps taken).

    The step solves ``H_lam ds = -grad`` (``_derivatives``): the barrier's Hessian with the
    multipliers ``lam_j`` in place of ``d_j = 1 / (t_j - phi_j)`` in ``sum_j lam_j
    Hess(phi_j)`` and ``lam_j d_j`` in place of ``d_j^2`` (Newton's method on the perturbed
    KKT conditions ``tau c = V lam + 1/s``, ``lam_j (t_j - phi_j) = 1``, lam eliminated); the
    multipliers move by ``dlam = d - lam - lam d o (V' ds)``, kept positive. At ``lam = d`` this
    is the primal Newton step; away from it a constraint pushed near its boundary recovers in a
    few steps, where the primal step only doubles its slack per step. The line search decreases
    ``B_tau`` (``H_lam`` is positive definite, so ``ds`` descends).

    The estimate is ``(lam + dlam) / tau = (d - lam d o (V' ds)) / tau``: near the end the
    slacks ``t_j - phi_j`` are tiny, a small decrement leaves ``d / tau`` off by far more
    than the gap, and the corrected one is dual feasible to the Newton step's accuracy."""
    for k in range(max(budget, 0) + 1):
        if time_limit is not None and time.perf_counter() - t0 > time_limit:
            raise SolverError(f"the barrier method reached the time limit ({time_limit:g} s) before its certificate")
        d, V, grad, H = _derivatives(p, lam, tau, G, F, c, t)
        ds = -_newton_solve(H, grad)
        slope = float(grad @ ds)
        dlam = d - lam - lam * d * (V.T @ ds)
        if -slope / 2 <= CENTRED:
            return p, lam, np.maximum(lam + dlam, 0.0) / tau, k
        if k < budget:
            p, step = _line_search(p, ds, slope, tau, G, F, c, t)
            neg = dlam < 0
            reach = float(np.min(-lam[neg] / dlam[neg])) if np.any(neg) else math.inf
            lam = lam + min(step, 0.99 * reach) * dlam
    raise SolverError(f"the barrier method did not converge within {MAX_NEWTON} Newton steps")


def _newton_solve(H: np.ndarray, grad: np.ndarray) -> np.ndarray:
    """``H^-1 grad`` by a Cholesky factorization of H scaled to a unit diagonal. Where the
    optimum is not unique, H is singular up to the barrier's curvature and can lose positive
    definiteness in rounding: a ridge of ``1e-14``, grown by 100, is then added to the scaled H
    (the step stays a descent direction; the line search and the certificate decide)."""
    scale = 1.0 / np.sqrt(np.diag(H))
    Hs = H * scale[:, None] * scale[None, :]
    ridge = 0.0
    while True:
        try:
            cf = scipy.linalg.cho_factor(Hs, check_finite=False)
            return scale * scipy.linalg.cho_solve(cf, scale * grad, check_finite=False)
        except np.linalg.LinAlgError:
            ridge = 1e-14 if ridge == 0.0 else ridge * 100
            if ridge > 1e-4:
                raise SolverError("the barrier method's Newton system lost positive definiteness") from None
            Hs[np.diag_indices_from(Hs)] += ridge


def _derivatives(p: _Point, lam, tau, G, F, c, t) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(d, V, gradient, Hessian) of ``B_tau`` at ``p`` (the module's docstring), the Hessian
    with the multipliers ``lam`` (``_centre``; ``lam = d`` gives the barrier's own)."""
    d = 1.0 / (t - p.phi)
    if G.diagonal is not None:  # G' Sigma^-1 F scales rows: no m x m x n product
        W = p.sigma_inv_F() * G.diagonal[:, None]
    else:
        W = G.transpose_times(p.sigma_inv_F())  # N x n
    V = W * W
    Wd = W * np.sqrt(lam)
    Vd = V * np.sqrt(lam * d)
    if G.diagonal is not None:  # P = G' Sigma^-1 G is diagonal: only the diagonal of W D W' counts
        H = Vd @ Vd.T
        H[np.diag_indices_from(H)] += 2.0 * (G.diagonal / p.L) ** 2 * np.einsum("ij,ij->i", Wd, Wd)
    else:
        H = 2.0 * _gram(p, G) * (Wd @ Wd.T) + Vd @ Vd.T
    H[np.diag_indices_from(H)] += 1.0 / p.s**2
    grad = tau * c - V @ d - 1.0 / p.s
    return d, V, grad, H


def _gram(p: _Point, G: _Columns) -> np.ndarray:
    """``P = G' Sigma^-1 G`` (N x N) from Sigma's factor L: with ``R = L^-1 G_R``, the block
    ``G_R' Sigma^-1 G_R = R' R`` (syrk), ``Sigma^-1 G_R = L^-T R`` and ``Sigma^-1`` itself
    (LAPACK potri) give the unit columns' rows ``g_u (Sigma^-1)_{r(u), .}`` without a product
    of order m^2 N."""
    R = p.lower_solve(G.matrix[:, : G.k])
    if G.k == G.matrix.shape[1]:
        return R.T @ R
    inverse, info = scipy.linalg.lapack.dpotri(p.L, lower=1)
    if info != 0:
        raise SolverError("the barrier method could not invert Sigma from its Cholesky factor")
    inverse = np.tril(inverse) + np.tril(inverse, -1).T
    T = scipy.linalg.solve_triangular(p.L, R, lower=True, trans="T", check_finite=False)  # Sigma^-1 G_R
    cross = G.values[:, None] * T[G.rows]  # unit rows x k
    return np.block([[R.T @ R, cross.T], [cross, np.outer(G.values, G.values) * inverse[np.ix_(G.rows, G.rows)]]])


def _line_search(p: _Point, ds, slope, tau, G, F, c, t) -> tuple[_Point, float]:
    """(the point, the step): backtracking (Armijo, factor 1/2) from the longest step that
    keeps ``s > 0``."""
    neg = ds < 0
    step = min(1.0, 0.99 * float(np.min(-p.s[neg] / ds[neg]))) if np.any(neg) else 1.0
    f0 = p.value(tau, c, t)
    for _ in range(60):
        q = _try_point(p.s + step * ds, G, F)
        if q is not None and q.value(tau, c, t) <= f0 + 0.01 * step * slope:
            return q, step
        step /= 2
    raise SolverError("the barrier method's line search found no decrease")
