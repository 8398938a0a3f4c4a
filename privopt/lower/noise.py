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

from dataclasses import dataclass, field

import numpy as np

from ..measures.gaussian import max_sensitivity
from ..model.noise import NoiseModel

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

    def to_cvxpy(self, form: str = "soc"):
        """(cvxpy Problem, {block name: its cvxpy variable}) in scaled units."""
        import cvxpy as cp

        n = self.F.shape[1]
        diag = [b for b in self.blocks if not b.correlated]
        corr = [b for b in self.blocks if b.correlated]
        svars = {b.name: cp.Variable(b.size, nonneg=True, name=b.name) for b in diag}
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
                Gd = np.hstack([b.G for b in diag])
                s = cp.hstack([svars[b.name] for b in diag])
                N = Gd.shape[1]
                Z = cp.Variable((n, N))
                U = cp.Variable((n, N))
                S = np.ones((n, 1)) @ cp.reshape(s, (1, N), order="C")
                cons.append(cp.SOC(cp.vec(U + S, order="C"), cp.vstack([2 * cp.vec(Z, order="C"), cp.vec(U - S, order="C")]), axis=0))
                lhs = lhs + cp.sum(U, axis=1)
                reach = reach + Z @ Gd.T
            for b in corr:
                Y = cp.Variable((n, b.size))
                tau = cp.Variable(n)
                cons += [cp.matrix_frac(Y[j, :], cvars[b.name]) <= tau[j] for j in range(n)]
                lhs = lhs + tau
                reach = reach + Y @ b.G.T
            cons += [reach == self.F.T, lhs <= self.t]
        return cp.Problem(cp.Minimize(cost), cons), svars | cvars


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
            cons.append(cp.SOC(cp.vec(Q + Mu, order="C"), cp.vstack([2 * cp.vec(W, order="C"), cp.vec(Q - Mu, order="C")]), axis=0))
            cons.append(cp.sum(Q, axis=0) <= np.concatenate([b.weights for b in diag]))
        for b in self.blocks:
            if b.correlated:
                Wk = b.G.T @ Y.T  # k x n
                cons.append(cp.bmat([[b.G.T @ b.G, Wk], [Wk.T, cp.diag(mu)]]) >> 0)
        objective = 2 * cp.sum(cp.multiply(Y, self.F.T)) - self.t @ mu
        return cp.Problem(cp.Maximize(objective), cons), Y, mu


def lower_noise(model: NoiseModel, blocks: tuple[Block, ...] | None = None) -> ConicProgram:
    """The conic program of ``model`` (or of the same release with other noise ``blocks``: the
    baselines put noise on the inputs alone, ``G = F``, or on the answers alone, ``G = I``)."""
    req = model.requirement
    bound = max_sensitivity(req.eps, req.delta, req.calibration)
    w = model.input.widths
    moving = np.flatnonzero(np.any(model.F != 0, axis=0))
    unit = float(np.max(w[moving]) ** 2 / bound**2) if moving.size else 1.0
    t = (bound / w[moving]) ** 2 * unit
    if blocks is None:
        blocks = tuple(Block(n.name, n.G, n.correlated) for n in model.noises)
    return ConicProgram(model.F[:, moving], t, blocks, unit, model.objective.offset, bound)
