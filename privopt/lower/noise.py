"""Noise placement -> a convex conic program (Ramon & Basu Sec. 3.2; model/noise.py).

The program: choose noise variances ``s`` (and covariances ``C_k`` of correlated noise) to

    minimize    sum_i s_i |g_i|^2 + sum_k tr(G_k' G_k C_k)         ( = tr(Sigma) )
    subject to  w_j^2 f_j' Sigma^+ f_j <= Delta^2    for every input coordinate j
                s >= 0, C_k PSD

with ``Sigma = G_d diag(s) G_d' + sum_k G_k C_k G_k'`` and ``Delta`` the calibration's largest
sensitivity. Each constraint is matrix-fractional, jointly convex. Two lowerings:

* ``soc`` (default): by the least-norm identity ``a' (G W G')^+ a = min { z' W^+ z : G z = a }``
  (W block diagonal, PSD), constraint j becomes ``G z_j = f_j`` and
  ``sum_i z_ji^2 / s_i + sum_k y_jk' C_k^+ y_jk <= t_j``: rotated second-order cones
  ``z^2 <= u s`` for the diagonal noise (one 3-dimensional cone per coordinate) and small
  ``(k+1) x (k+1)`` PSD blocks only for correlated noise. A zero variance forces its ``z`` to
  0, so a singular Sigma is handled exactly. For n inputs and N noise coordinates this is
  n N cones and n m equalities: linear in m, where the PSD form grows as m^2.
* ``psd``: ``[[Sigma, f_j], [f_j', t_j]] PSD`` for every j (cvxpy's ``matrix_frac``), the
  program as the paper states it; ``privopt check`` solves both and compares.

Variances are scaled by ``unit = max_j w_j^2 / Delta^2`` so the solver sees numbers near 1.
"""

from __future__ import annotations

import functools
import math
import sys
from dataclasses import dataclass, field

import numpy as np

from ..core.canonical import CanonicalProgram, ProgramBuilder, psd_layout
from ..errors import SpecError
from ..measures.gaussian import max_sensitivity, sensitivities_of_factor
from ..model.noise import NoiseModel
from ..verification.sets import factor

FORMS = ("soc", "psd")


@dataclass(frozen=True, eq=False)
class Block:
    """A group of noise coordinates entering the release through ``G`` (m x k)."""

    name: str
    G: np.ndarray = field(repr=False)
    correlated: bool

    @property
    def size(self) -> int:
        return int(self.G.shape[1])

    @property
    def weights(self) -> np.ndarray:
        """Each coordinate's variance's share of the loss tr(Sigma): |g_i|^2."""
        return np.einsum("ij,ij->j", self.G, self.G)


@dataclass(frozen=True, eq=False)
class ConicProgram:
    """The noise-placement program in scaled units (variances = ``unit`` x the solver's)."""

    F: np.ndarray = field(repr=False)  # m x n_eff: the inputs' columns that move the release
    t: np.ndarray = field(repr=False)  # n_eff: (Delta / w_j)^2 in scaled units (x unit)
    blocks: tuple[Block, ...]
    unit: float
    offset: float
    sensitivity_bound: float

    @property
    def size(self) -> dict[str, int]:
        return {
            "answers": int(self.F.shape[0]),
            "inputs that move the release": int(self.F.shape[1]),
            "noise coordinates": int(sum(b.size for b in self.blocks)),
        }

    def real(self, values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The solver's variances (scaled units, by block) in real units: times ``unit``."""
        return {b.name: values[b.name] * self.unit for b in self.blocks}

    def clean(self, model: NoiseModel, cov: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """A solver's (co)variances ``cov`` (real units) made exactly feasible: negative
        variances clipped to 0, correlated blocks projected onto the PSD cone (negative
        eigenvalues to 0), then every (co)variance scaled by ``kappa = max(1, max_j Delta_j^2 /
        Delta_max^2)``, the least factor that brings the largest Mahalanobis sensitivity
        ``Delta_j = w_j |H^+ f_j|`` (``H H' = Sigma``) to the calibration's bound: every
        constraint scales as 1/kappa, so the scaled point is feasible to the last bit and costs
        a relative ``kappa - 1`` more."""
        out = {}
        for name, S in cov.items():
            S = np.nan_to_num(np.asarray(S, dtype=float), nan=0.0)
            if S.ndim == 1:
                out[name] = np.maximum(S, 0.0) + 0.0
            else:
                lam, V = np.linalg.eigh((S + S.T) / 2)
                out[name] = (V * np.maximum(lam, 0.0)) @ V.T
        H = factor({b.name: b.G for b in self.blocks}, out, model.answers)
        worst = float(np.max(sensitivities_of_factor(H, model.F, model.input.widths), initial=0.0))
        if worst > self.sensitivity_bound and math.isfinite(worst):
            kappa = (worst / self.sensitivity_bound) ** 2 * (1 + 1e-12)
            out = {name: S * kappa for name, S in out.items()}
        return out

    def to_cvxpy(self, form: str = "soc"):
        """(cvxpy Problem, {block name: its cvxpy variable}, {name: cvxpy constraint}) in scaled
        units. The constraints named are those whose multipliers give a point of the dual
        (``dual_point``): ``reach`` (``G z_j = f_j``, n x m) and ``budget`` (``sum_i z_ji^2 /
        s_i <= t_j``, n); the soc form only (the psd form names none)."""
        import cvxpy as cp

        n = self.F.shape[1]
        diag = [b for b in self.blocks if not b.correlated]
        corr = [b for b in self.blocks if b.correlated]
        sigma, nu = self.balance
        raw = {b.name: cp.Variable(b.size, nonneg=True, name=b.name) for b in diag}  # s / sigma
        svars = {name: sigma * v for name, v in raw.items()}
        cvars = {b.name: cp.Variable((b.size, b.size), PSD=True, name=b.name) for b in corr}
        cost = 0
        for b in diag:
            cost = cost + (b.weights @ svars[b.name])
        for b in corr:
            cost = cost + cp.trace((b.G.T @ b.G) @ cvars[b.name])
        cons = []
        if n == 0:  # nothing to protect: no noise is needed
            pass
        elif form == "psd":
            sigma = 0
            for b in diag:
                sigma = sigma + b.G @ cp.diag(svars[b.name]) @ b.G.T
            for b in corr:
                sigma = sigma + b.G @ cvars[b.name] @ b.G.T
            sigma = (sigma + sigma.T) / 2
            cons += [cp.matrix_frac(self.F[:, j], sigma) <= self.t[j] for j in range(n)]
        else:
            lhs = 0
            reach = 0
            if diag:
                # z^2 <= u s as (z / zeta)^2 <= (u / nu)(s / sigma), zeta^2 = sigma nu: each
                # cone sees numbers near 1 (see ``balance``); the named constraints keep their units
                zeta = math.sqrt(sigma * nu)
                Gd = np.hstack([b.G for b in diag])
                s = cp.hstack([raw[b.name] for b in diag])
                N = Gd.shape[1]
                U = cp.Variable((n, N))
                S = np.ones((n, 1)) @ cp.reshape(s, (1, N), order="C")
                free = self.reach_free if not corr else None
                if free is None:
                    Z = cp.Variable((n, N))
                    reach = reach + zeta * (Z @ Gd.T)
                else:  # G z_j = f_j solved: z_j = z0_j + K c_j, no equality rows left
                    z0, K = free
                    Z = z0.T / zeta
                    if K.shape[1]:
                        Z = Z + cp.Variable((n, K.shape[1])) @ (K.T / zeta)
                cone = cp.SOC(
                    cp.vec(U + S, order="C"), cp.vstack([2 * cp.vec(Z, order="C"), cp.vec(U - S, order="C")]), axis=0
                )
                lhs = lhs + nu * cp.sum(U, axis=1)
            for b in corr:
                Y = cp.Variable((n, b.size))
                tau = cp.Variable(n)
                cons += [cp.matrix_frac(Y[j, :], cvars[b.name]) <= tau[j] for j in range(n)]
                lhs = lhs + tau
                reach = reach + Y @ b.G.T
            named = {"budget": lhs <= self.t}
            if diag:
                named["cone"] = cone
            if not diag or free is None:
                named["reach"] = reach == self.F.T
            cons += list(named.values())
            return cp.Problem(cp.Minimize(cost), cons), svars | cvars, named
        return cp.Problem(cp.Minimize(cost), cons), svars | cvars, {}

    def canonical(self, form: str = "soc") -> CanonicalProgram:
        """The program ``to_cvxpy(form)`` builds, as a ``core.canonical.CanonicalProgram`` in
        the same scaled units (same optimum; the loss is ``offset + unit * optimum``); its
        layout (which columns hold the noise, which rows the budgets) is ``lowered``'s."""
        return self.lowered(form)[0]

    def lowered(self, form: str = "soc") -> tuple[CanonicalProgram, CanonicalLayout]:
        """(the canonical program, its ``CanonicalLayout``): ``canonical``'s program and where
        in it the noise's columns and the budget, reach and fixed rows are.

        Columns: the variances over ``sigma`` (``r = s / sigma >= 0``, cost ``sigma |g_i|^2``)
        and, per correlated block, its covariance C as a psd cone (cost ``tr(G'G C)``). Then
        for every input coordinate j (none when no input moves the release):

        * ``soc``: per (j, i) of the diagonal noise one cone ``(a, b, c)``, ``|(b, c)| <= a``,
          with ``a = u + r_i``, ``c = u - r_i`` (a zero row ``a - c = 2 r_i``) and ``b = 2 z``:
          to_cvxpy's rotated cone ``z^2 <= u r_i`` in its balanced units ``(u, z) / (nu,
          zeta)``; where ``G z_j = f_j`` is solved (``reach_free``) the rows ``b = 2 (z0 + K
          c_j) / zeta`` over free c_j. Per correlated block and j the cone ``[[C, y_j], [y_j',
          tau_j]]`` (``matrix_frac(y_j, C) <= tau_j``), its C part tied to C by zero rows. The
          budget rows ``nu sum_i u_ji + sum_k tau_jk <= t_j``, and the reach rows ``zeta Z_j Gd'
          + sum_k Y_jk G_k' = f_j`` where to_cvxpy keeps them.
        * ``psd``: per j the cone ``[[Sigma, f_j], [f_j', t_j]]`` of order m + 1 (cvxpy's
          ``matrix_frac(f_j, Sigma) <= t_j``), its Sigma part tied by zero rows to ``Sigma =
          sigma G_d diag(r) G_d' + sum_k G_k C_k G_k'`` and its last row fixed to (f_j, t_j).
        """
        if form not in FORMS:
            raise ValueError(f"unknown form '{form}'; forms: {', '.join(FORMS)}")
        out = ProgramBuilder()
        n = self.F.shape[1]
        diag = [b for b in self.blocks if not b.correlated]
        corr = [b for b in self.blocks if b.correlated]
        sigma, nu = self.balance
        columns = {b.name: out.columns(b.size, lower=0.0, cost=sigma * b.weights) for b in diag}
        r = np.concatenate([columns[b.name] for b in diag]) if diag else np.zeros(0, int)
        C = {}
        for b in corr:
            i, j, scale = psd_layout(b.size)
            C[b.name] = columns[b.name] = out.cones("psd", 1, i.size, cost=(b.G.T @ b.G)[i, j] * scale)[0]
        layout = CanonicalLayout(self, columns)
        if n == 0:  # nothing to protect: no noise is needed
            return out.build(), layout
        if form == "psd":
            self._canonical_psd(out, r, C, diag, corr)
        else:
            self._canonical_soc(out, r, C, diag, corr, layout)
        return out.build(), layout

    def _canonical_soc(self, out: ProgramBuilder, r, C, diag, corr, layout: CanonicalLayout) -> None:
        """The soc form's cones and rows (``canonical``); the budget, reach and fixed rows
        recorded in ``layout``."""
        m, n = self.F.shape
        sigma, nu = self.balance
        budget = layout.budget = out.rows(n, -np.inf, self.t)
        reach_terms = []  # (rows (n, m, 1), cols (n, 1, p), values (1, m, p)) of reach[j, l]
        keep_reach = True
        if diag:
            zeta = math.sqrt(sigma * nu)
            Gd = np.hstack([b.G for b in diag])
            N = Gd.shape[1]
            cone = out.cones("soc", n * N, 3).reshape(n, N, 3)
            a, z2, c = cone[..., 0], cone[..., 1], cone[..., 2]
            tie = out.rows(n * N, 0.0, 0.0).reshape(n, N)  # a - c = 2 r_i
            out.terms(tie, a, 1.0)
            out.terms(tie, c, -1.0)
            out.terms(tie, r[None, :], -2.0)
            out.terms(budget[:, None], a, nu / 2)  # nu u = nu (a + c) / 2
            out.terms(budget[:, None], c, nu / 2)
            free = self.reach_free if not corr else None
            if free is None:  # zeta Z Gd' with Z = b / 2
                reach_terms.append((z2[:, None, :], zeta / 2 * Gd[None, :, :]))
            else:  # b = 2 (z0 + K c_j) / zeta
                z0, K = free
                keep_reach = False
                fix = layout.fixed = out.rows(n * N, 2 * z0.T.ravel() / zeta, 2 * z0.T.ravel() / zeta).reshape(n, N)
                out.terms(fix, z2, 1.0)
                if K.shape[1]:
                    cj = out.columns(n * K.shape[1]).reshape(n, 1, K.shape[1])
                    out.terms(fix[:, :, None], cj, -2 / zeta * K[None, :, :])
        for b in corr:
            k = b.size
            i, j, scale = psd_layout(k + 1)
            cones = out.cones("psd", n, i.size)  # [[C, y_j], [y_j', tau_j]] per j
            inner = i < k
            where = np.full((k, k), -1)
            ci, cj, _ = psd_layout(k)
            where[ci, cj] = np.arange(ci.size)
            tie = out.rows(n * int(inner.sum()), 0.0, 0.0).reshape(n, -1)
            out.terms(tie, cones[:, inner], 1.0)
            out.terms(tie, C[b.name][where[i[inner], j[inner]]][None, :], -1.0)
            last = np.flatnonzero(i == k)  # (k, p) for p < k: sqrt(2) y_p, then (k, k): tau
            out.terms(budget, cones[:, last[-1]], 1.0)
            reach_terms.append((cones[:, None, last[:-1]], b.G[None, :, :] / scale[last[:-1]]))
        if keep_reach:
            reach = out.rows(n * m, self.F.T.ravel(), self.F.T.ravel()).reshape(n, m, 1)
            layout.reach = reach[..., 0]
            for cols, values in reach_terms:
                out.terms(reach, cols, values)

    def _canonical_psd(self, out: ProgramBuilder, r, C, diag, corr) -> None:
        """The psd form's cones and rows (``canonical``)."""
        m, n = self.F.shape
        sigma, _ = self.balance
        i, j, scale = psd_layout(m + 1)
        inner = np.flatnonzero(i < m)  # Sigma's entries (i, j), i >= j
        cones = out.cones("psd", n, i.size)
        tie = out.rows(n * inner.size, 0.0, 0.0).reshape(n, inner.size, 1)
        out.terms(tie[..., 0], cones[:, inner], 1.0)
        si, sj, ss = i[inner], j[inner], scale[inner]
        if diag:  # Sigma_ij = sigma sum_p G_ip G_jp r_p
            Gd = np.hstack([b.G for b in diag])
            out.terms(tie, r[None, None, :], -(ss * sigma)[None, :, None] * (Gd[si] * Gd[sj])[None])
        for b in corr:  # (G C G')_ij = sum_pq G_ip G_jq C_pq, C_pq = x_k / scale_k on both triangles
            p, q, cs = psd_layout(b.size)
            coef = (b.G[si][:, p] * b.G[sj][:, q] + np.where(p != q, b.G[si][:, q] * b.G[sj][:, p], 0.0)) / cs
            out.terms(tie, C[b.name][None, None, :], -(ss[:, None] * coef)[None])
        edge = np.flatnonzero(i == m)  # (m, l) for l < m: sqrt(2) f_lj, then (m, m): t_j
        fixed = np.column_stack([self.F.T * scale[edge[:-1]], self.t]).ravel()
        rows = out.rows(fixed.size, fixed, fixed).reshape(n, edge.size)
        out.terms(rows, cones[:, edge], 1.0)

    @functools.cached_property
    def balance(self) -> tuple[float, float]:
        """Scales (sigma, nu) of the variances and of the budget shares ``u_ji = z_ji^2 / s_i``.

        A rotated cone ``z^2 <= u s`` is solved to an absolute accuracy in ``(u + s, u - s)``:
        with s ~ 200 and u ~ 0.005 (an answer-noise baseline) a 1e-9 accuracy is 4e-5 relative
        in u. sigma is the equal variance that meets every constraint, ``max_j |G^+ f_j|^2 /
        t_j`` (the least-norm z_j), and nu the mean share ``t_j / N``; variances are solved as
        ``s / sigma`` and shares as ``u / nu``, so both are near 1 where the noise matters."""
        n = self.F.shape[1]
        G = np.hstack([b.G for b in self.blocks]) if self.blocks else np.zeros((self.F.shape[0], 0))
        if n == 0 or G.shape[1] == 0:
            return 1.0, 1.0
        z = self.least_norm
        sigma = float(np.max(np.sum(z * z, axis=0) / self.t))
        nu = float(np.mean(self.t)) / G.shape[1]
        ok = math.isfinite(sigma) and sigma > 0 and math.isfinite(nu) and nu > 0
        return (sigma, nu) if ok else (1.0, 1.0)

    @functools.cached_property
    def least_norm(self) -> np.ndarray:
        """z0 (N x n): the least-norm least-squares solutions of ``G z_j = f_j`` (``G`` every
        block's columns; an SVD solve), shared by ``balance`` and ``reach_free``."""
        G = np.hstack([b.G for b in self.blocks])
        return np.linalg.lstsq(G, self.F, rcond=None)[0]

    @functools.cached_property
    def reach_free(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(z0, K): every solution of ``G z_j = f_j`` is ``z0_j + K c`` (z0 the least-norm
        solutions, N x n; K an orthonormal basis of G's null space, N x k), for diagonal noise
        when every f_j is in G's range; else None (the soc form keeps the equalities). With the
        equalities solved the program has n k free coordinates instead of n N, and no equality
        rows: k = n for noise on inputs and answers (G = [F, I]), 0 for one side alone."""
        n = self.F.shape[1]
        if n == 0 or not self.blocks or any(b.correlated for b in self.blocks):
            return None
        G = np.hstack([b.G for b in self.blocks])
        z0 = self.least_norm
        residual = float(np.max(np.abs(G @ z0 - self.F)))
        if not residual <= 1e-12 * max(float(np.max(np.abs(self.F))), 1e-300) * max(G.shape):
            return None  # some f_j is out of G's range: no noise reaches it, the program is infeasible
        import scipy.linalg

        return z0, scipy.linalg.null_space(G)

    def dual_point(self, duals: dict[str, np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
        """Candidate points (Y, mu) of the Lagrange dual (``dual_cvxpy``) from the soc form's
        multipliers by name: mu_j the budget's (``budget``, n). With the equalities ``G z_j =
        f_j`` kept (``reach``, n x m, multiplier lambda_j), minimizing the Lagrangian over z
        gives ``y_j = lambda_j / 2``. With them solved, the cones' multipliers beta_j on their
        coordinates ``2 z_j / zeta`` (``pull``, n x N; or ``cone``, ``to_cvxpy``'s multiplier
        (alpha, beta) of its cones, beta's first row): stationarity over the free coordinates
        says the cones' pull on z_j, ``-2 beta_j / zeta``, lies in G's row space: it is ``G'
        lambda_j``, so y_j solves ``G' y_j = -beta_j / zeta`` (least squares). Signs follow the
        solver's conventions, so both are offered; each is only a candidate: ``dual_bound`` makes
        it feasible before it bounds anything (and does not depend on the scale of Y or of mu)."""
        if "budget" not in duals:
            return []
        n, m = self.F.shape[1], self.F.shape[0]
        mu = np.asarray(duals["budget"], dtype=float).reshape(n)
        if "reach" in duals:
            y = np.asarray(duals["reach"], dtype=float).reshape(n, m) / 2
        elif ("pull" in duals or "cone" in duals) and self.reach_free is not None:
            sigma, nu = self.balance
            G = np.hstack([b.G for b in self.blocks])
            beta = duals["pull"] if "pull" in duals else np.asarray(duals["cone"][1], dtype=float)[0]
            beta = np.asarray(beta, dtype=float).reshape(n, G.shape[1])
            y = np.linalg.lstsq(G.T, (beta / math.sqrt(sigma * nu)).T, rcond=None)[0].T
        else:
            return []
        return [(y, mu), (-y, mu)]

    def dual_bound(self, Y: np.ndarray, mu: np.ndarray) -> float:
        """A proven lower bound on the optimum (in real units, with the offset) from any (Y, mu).

        mu is clipped at 0 and y_j zeroed where mu_j = 0. Let r be the largest ratio of a dual
        condition's left side to its right side (``sum_j (g_i' y_j)^2 / mu_j <= |g_i|^2``; for a
        correlated block the largest eigenvalue of ``B^-1/2 (sum_j G'y_j y_j'G / mu_j) B^-1/2``
        on the range of ``B = G'G``). Both sides scale as alpha^2 / beta under
        ``(Y, mu) -> (alpha Y, beta mu)``, so ``beta = alpha^2 r`` is feasible for every alpha,
        with value ``2 alpha a - alpha^2 r b`` (``a = sum_j y_j' f_j``, ``b = t' mu``); the best
        alpha = a / (r b) gives ``a^2 / (r b)``, never less than the plain repair (alpha = 1,
        ``2a - r b``). 0 when a <= 0 (Y = 0 is feasible); -inf when no finite bound follows."""
        if self.F.shape[1] == 0:
            return self.offset
        Y = np.array(Y, dtype=float)
        mu = np.maximum(np.asarray(mu, dtype=float), 0.0)
        if not (np.all(np.isfinite(Y)) and np.all(np.isfinite(mu))):
            return -math.inf
        live = mu > 0
        Y[~live] = 0.0
        inv = np.divide(1.0, mu, out=np.zeros_like(mu), where=live)
        r = 0.0
        for b in self.blocks:
            W = Y @ b.G  # n x k: g_i' y_j
            if not b.correlated:
                need = (W**2 * inv[:, None]).sum(axis=0)
                g2 = b.weights
                if np.any((g2 == 0) & (need > 0)):
                    return -math.inf
                r = max(r, float(np.max(np.divide(need, g2, out=np.zeros_like(g2), where=g2 > 0), initial=0.0)))
            else:
                # W's columns G_k' y_j lie in the range of B = G_k' G_k: compare there (B may be singular)
                lam, V = np.linalg.eigh(b.G.T @ b.G)
                keep = lam > 1e-12 * max(float(lam.max(initial=0.0)), 1e-300)
                R = V[:, keep] / np.sqrt(lam[keep])
                K = R.T @ ((W * inv[:, None]).T @ W) @ R
                r = max(r, float(np.linalg.eigvalsh((K + K.T) / 2).max(initial=0.0)))
        a = float(np.sum(Y * self.F.T))
        b = float(self.t @ mu)
        if a <= 0:
            return self.offset
        if not (r > 0 and b > 0 and math.isfinite(r)):
            return -math.inf  # the dual is unbounded along Y: the program is infeasible, no bound
        return self.offset + self.unit * (a * a / (r * b))

    def dual_cvxpy(self):
        """The Lagrange dual, in scaled units: (cvxpy Problem, Y (n x m), mu (n)).

            maximize    sum_j (2 y_j' f_j - mu_j t_j)
            subject to  sum_j (g_i' y_j)^2 / mu_j <= |g_i|^2        (each diagonal noise coordinate i)
                        sum_j G_k' y_j y_j' G_k / mu_j <= G_k' G_k   (each correlated block, as an LMI)

        Any feasible (Y, mu) bounds the optimum from below: for a feasible choice,
        ``f' Sigma^+ f >= 2 u'f - u' Sigma u`` with u = y_j / mu_j gives
        ``tr(Sigma) >= tr(Sigma P) >= sum_j (2 y_j' f_j - mu_j t_j)``, P = sum_j y_j y_j' / mu_j."""
        import cvxpy as cp

        m, n = self.F.shape
        Y = cp.Variable((n, m))
        mu = cp.Variable(n, nonneg=True)
        cons = []
        diag = [b for b in self.blocks if not b.correlated]
        if diag:
            Gd = np.hstack([b.G for b in diag])
            N = Gd.shape[1]
            W = Y @ Gd
            Q = cp.Variable((n, N))
            Mu = cp.reshape(mu, (n, 1), order="C") @ np.ones((1, N))
            cons.append(
                cp.SOC(
                    cp.vec(Q + Mu, order="C"), cp.vstack([2 * cp.vec(W, order="C"), cp.vec(Q - Mu, order="C")]), axis=0
                )
            )
            cons.append(cp.sum(Q, axis=0) <= np.concatenate([b.weights for b in diag]))
        for b in self.blocks:
            if b.correlated:
                Wk = b.G.T @ Y.T  # k x n
                cons.append(cp.bmat([[b.G.T @ b.G, Wk], [Wk.T, cp.diag(mu)]]) >> 0)
        objective = 2 * cp.sum(cp.multiply(Y, self.F.T)) - self.t @ mu
        return cp.Problem(cp.Maximize(objective), cons), Y, mu


@dataclass(eq=False)
class CanonicalLayout:
    """Where the noise and the soc form's rows are in ``ConicProgram.lowered``'s canonical
    program: ``columns`` by block (a diagonal block's variances over ``sigma``, ``r = s /
    sigma``; a correlated block's covariance C as its psd cone's svec columns,
    ``core.canonical.psd_layout``) and, for the soc form, the rows of the budgets (n), of the
    kept equalities ``reach`` (n x m, ``G z_j = f_j``) and of the fixed cone coordinates
    ``fixed`` (n x N, ``b = 2 (z0 + K c_j) / zeta`` where the equalities are solved)."""

    program: ConicProgram = field(repr=False)
    columns: dict[str, np.ndarray] = field(repr=False)
    budget: np.ndarray | None = field(default=None, repr=False)
    reach: np.ndarray | None = field(default=None, repr=False)
    fixed: np.ndarray | None = field(default=None, repr=False)

    def values(self, x: np.ndarray) -> dict[str, np.ndarray]:
        """The noise's (co)variances in the program's scaled units (``to_cvxpy``'s values) from
        the canonical solution ``x``: ``sigma r`` for a diagonal block, C unpacked from its
        svec (``C[i, j] = C[j, i] = x_k / scale_k``) for a correlated one."""
        sigma, _ = self.program.balance
        out = {}
        for b in self.program.blocks:
            cols = x[self.columns[b.name]]
            if not b.correlated:
                out[b.name] = sigma * cols
                continue
            i, j, scale = psd_layout(b.size)
            C = np.zeros((b.size, b.size))
            C[i, j] = cols / scale
            C[j, i] = cols / scale
            out[b.name] = C
        return out

    def duals(self, row_dual: np.ndarray | None) -> dict[str, np.ndarray]:
        """The soc form's multipliers by the names ``ConicProgram.dual_point`` takes, from the
        canonical solve's row multipliers (``backends.base``: ``row_dual`` = d objective / d
        row bound):

        * ``budget``: mu_j = ``-row_dual[budget_j]``: a budget ``... <= t_j`` loosened lowers
          the loss, so its Lagrange multiplier is minus the derivative (>= 0);
        * ``reach``, the equalities kept: lambda_j = ``-row_dual[reach_j]`` (the same rows, in
          the same units, as ``to_cvxpy``'s ``reach``);
        * ``pull``, the equalities solved: the cones' multipliers beta_j on their coordinates
          ``b = 2 z_j / zeta``. Each such coordinate enters its fixed row alone, with
          coefficient 1 and no cost, so the cone's stationarity ``c_b - A_b' lambda = s_b``
          (lambda = ``row_dual``) gives beta_j = s_b = ``-row_dual[fixed_j]`` (``dual_point``
          offers both signs of the resulting y in any case).

        Empty for the psd form and for a solve without multipliers (the dual is then solved)."""
        if row_dual is None or self.budget is None:
            return {}
        row_dual = np.asarray(row_dual, dtype=float)
        out = {"budget": -row_dual[self.budget]}
        if self.reach is not None:
            return out | {"reach": -row_dual[self.reach]}
        if self.fixed is not None:
            return out | {"pull": -row_dual[self.fixed]}
        return {}


def lower_noise(model: NoiseModel, blocks: tuple[Block, ...] | None = None) -> ConicProgram:
    """The conic program of ``model`` (or of the same release with other noise ``blocks``: the
    baselines put noise on the inputs alone, ``G = F``, or on the answers alone, ``G = I``).

    Variances are solved in units of ``unit = (w_max / Delta)^2`` and the budgets are
    ``t_j = (Delta / w_j)^2 unit = (w_max / w_j)^2``, computed as that ratio so that neither a
    width of 1e200 nor one of 2e-300 overflows on the way. For the spec's own noise
    (``blocks`` None) ``check_scale`` first refuses, at the range, data whose variances or loss
    a double cannot hold; every lowering is then checked to hand the solver finite numbers only."""
    req = model.requirement
    bound = max_sensitivity(req.eps, req.delta, req.calibration)
    w = model.input.widths
    moving = np.flatnonzero(np.any(model.F != 0, axis=0))
    w_max = float(np.max(w[moving])) if moving.size else 1.0
    t = (w_max / w[moving]) ** 2
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is reported below, located
        if blocks is None:
            blocks = tuple(Block(n.name, n.G, n.correlated) for n in model.noises)
            check_scale(model, ConicProgram(model.F[:, moving], t, blocks, 1.0, 0.0, bound))
        log_unit = 2.0 * (math.log(w_max) - math.log(bound)) if moving.size else 0.0
        unit = math.exp(log_unit) if log_unit < math.log(sys.float_info.max) else math.inf
        program = ConicProgram(model.F[:, moving], t, blocks, unit, model.objective.offset, bound)
        _check_finite(model, program)
    return program


# Variances and losses are kept this far inside the doubles' range: a variance 2^-52 times
# the unit is still a normal double, and the loss can be summed with room to spare.
SCALE_MIN = sys.float_info.min / sys.float_info.epsilon  # 1.0e-292
SCALE_MAX = sys.float_info.max * sys.float_info.epsilon  # 4.0e292


def check_scale(model: NoiseModel, program: ConicProgram) -> None:
    """Refuse (a ``SpecError`` at the input's range) a spec whose noise a double cannot hold.

    Every variance is ``unit`` times the solver's number, ``unit = (w / Delta)^2`` (w the
    range's width, Delta the calibration's largest sensitivity), and the loss of the spec's
    placement and of both baselines is at most ``unit sigma tr(G'G)`` (``sigma`` the equal
    variance that meets every constraint, ``ConicProgram.balance``: that choice is feasible).
    ``unit`` must be at least ``SCALE_MIN`` and these losses at most ``SCALE_MAX``; the log10 of
    each is computed from logs, so the message can name the magnitude that would overflow.
    ``program`` is the spec's program in units of 1 (``unit`` 1, no offset)."""
    if program.F.shape[1] == 0:
        return
    x = model.input
    span = x.range_span if x.range_span is not None else x.span
    w = float(np.max(x.widths))
    log10_unit = 2.0 * (math.log10(w) - math.log10(program.sensitivity_bound))
    m = model.F.shape[0]
    estimates = []
    for blocks in (program.blocks, (Block("input_only", model.F, False),), (Block("output_only", np.eye(m), False),)):
        scaled = ConicProgram(program.F, program.t, blocks, 1.0, 0.0, program.sensitivity_bound)
        sigma, _ = scaled.balance
        weight = sum(float(np.sum(b.G * b.G)) for b in blocks)
        if sigma > 0 and weight > 0 and math.isfinite(sigma * weight):
            estimates.append(math.log10(sigma * weight))
    log10_loss = log10_unit + max(estimates, default=0.0)
    lo, hi = x.lo.min(), x.hi.max()
    about = (
        f"its noise variances are about (w / Delta)^2 = 1e{log10_unit:+.0f} (w = {w:.3g} the range's width, Delta = "
        f"{program.sensitivity_bound:.3g} the largest sensitivity the budget allows)"
    )
    if log10_unit < math.log10(SCALE_MIN):
        raise SpecError(
            f"the range [{lo:.6g}, {hi:.6g}] of {x.name} is too narrow to compute with: {about}, below "
            f"{SCALE_MIN:.2g}, where doubles lose their digits",
            span,
            f"measure {x.name} in units 1e{math.floor(-log10_unit / 2):d} times smaller (multiply the range by "
            f"1e{math.floor(-log10_unit / 2):d}; the loss scales with the square of the unit)"
            + (", or ask for a smaller eps" if program.sensitivity_bound > 1 else ""),
        )
    if log10_loss > math.log10(SCALE_MAX) or log10_unit > math.log10(SCALE_MAX):
        raise SpecError(
            f"the range [{lo:.6g}, {hi:.6g}] of {x.name} is too wide to compute with: {about}, and the "
            f"expected squared error about 1e{log10_loss:+.0f}, beyond {SCALE_MAX:.2g} (the largest double is "
            f"{sys.float_info.max:.3g})",
            span,
            f"measure {x.name} in units 1e{max(math.floor(log10_loss / 2), 1):d} times larger (divide the range by "
            f"1e{max(math.floor(log10_loss / 2), 1):d}; the loss scales with the square of the unit)"
            + (", or allow a larger eps or delta" if program.sensitivity_bound < 1e-3 else ""),
        )


def _check_finite(model: NoiseModel, program: ConicProgram) -> None:
    """No NaN or inf reaches a solver: the lowering's data (the release's matrices, the
    budgets, the unit and the loss's weights) must be finite, else a ``SpecError`` at the
    privacy requirement (its release holds the numbers)."""
    parts = {
        "the release's coefficients of the input": program.F,
        "the budgets": program.t,
        "the variance unit": program.unit,
    }
    for b in program.blocks:
        parts[f"the coefficients of the noise {b.name}"] = b.G
        parts[f"the squared coefficients of the noise {b.name}"] = b.weights
    parts["the constant part of the loss"] = program.offset
    for what, value in parts.items():
        if not np.all(np.isfinite(value)):
            raise SpecError(
                f"{what} overflow a double ({sys.float_info.max:.3g}): the program cannot be solved in these units",
                model.requirement.span,
                "rescale the matrices or the input's range so that the numbers stay below 1e150",
            )
