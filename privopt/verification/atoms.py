"""One verifier per objective atom: the objective recomputed from the returned point by a
formula of its own, compared with the value the method or solver reported.

* ``max_confidence``: each group's max confidence ``max_{x, a} P(x | a, group)`` of a
  transparency table (Chen et al. Def. 3), within ``CONF_RTOL`` (relative) of the method's;
* ``joint_objective``: a mechanism's tv or expected distortion from the dense joint P(X, Y)
  (Ding et al. eqs. 8-9; not the LP's row), within ``OBJ_TOL`` of the objective's own
  evaluation;
* ``reported``: a linear or quadratic objective's value on the table against the solver's
  report, within ``OBJ_RTOL`` relative to ``max(|objective|, cost scale)``;
* ``trace_loss``: a noise placement's loss ``|c|^2 + sum_b <G_b' G_b, S_b>`` against
  ``|c|^2 + tr(Sigma) = |c|^2 + |H|_F^2`` (Ramon & Basu Sec. 3.2), within 1e-9 of the loss;
* ``krcc_q``: Q of a rank-preserving channel by Sheppard's formula from eq. 2's covariance
  (Shariatnasab et al.; arcsin, not the method's atan2 form), within rounding
  (``q_allowance``) of the method's;

and the leakage ``leakage_bits`` the ``Leakage`` set's verifier recomputes.
"""

from __future__ import annotations

import math

import numpy as np

from ..measures.confidence import group_max_confidence
from .checks import Verdict, compare
from .tolerances import CONF_RTOL, OBJ_RTOL, OBJ_TOL, Q_ULPS, ULP

# ------------------------------------------------------------------ transparency reports


def max_confidence(p: np.ndarray, table: np.ndarray, beta_g: np.ndarray, group_key) -> Verdict:
    """The max confidence per group recomputed from the prior ``p`` and the table (Def. 3),
    against the method's ``beta_g``: relative error at most ``CONF_RTOL`` (fails on NaN; the
    first group at the largest error is named by ``group_key(g)``). Values: ``achieved`` (per
    group), ``max_confidence``, ``max_confidence_error``, ``max_confidence_relative_error``."""
    achieved = group_max_confidence(p, table)
    gap = achieved - beta_g
    rel = np.abs(gap) / np.maximum(np.maximum(np.abs(achieved), np.abs(beta_g)), 1e-300)
    rel = np.where(gap == 0, 0.0, rel)
    worst_rel = float(rel.max()) if rel.size else 0.0
    if rel.size and not worst_rel <= CONF_RTOL:
        g = int(np.nanargmax(np.where(np.isnan(rel), np.inf, rel)))
        failure = f"group {group_key(g)}: recomputed max confidence {achieved[g]:.12g} differs from {beta_g[g]:.12g}"
    else:
        failure = ""
    values = {
        "achieved": achieved,
        "max_confidence": float(achieved.max()) if achieved.size else 0.0,
        "max_confidence_error": float(np.abs(gap).max()) if gap.size else 0.0,
        "max_confidence_relative_error": float(rel.max(initial=0.0)),
    }
    return Verdict([compare("objective max_confidence", worst_rel, CONF_RTOL, failure)], values)


# ------------------------------------------------------------------ mechanisms


def joint_objective(kind: str, pxy: np.ndarray, distance: np.ndarray | None, value: float, scale: float) -> Verdict:
    """A mechanism's ``tv`` (``P(Y != X) = 1 - tr P(X, Y)``, Ding et al. eq. 8) or
    ``expected_distortion`` (``sum P(x, y) d(x, y)``) from the dense joint ``pxy``, within
    ``OBJ_TOL * scale`` of ``value`` (the objective's own evaluation). Value: ``direct``."""
    from ..measures.sanitization import tv  # a mechanism's check only (issue 23, goal 1)

    direct = tv(pxy) if kind == "tv" else float((pxy * distance).sum())
    check = compare(
        f"objective {kind}",
        abs(direct - value),
        OBJ_TOL * scale,
        f"the objective recomputed from the joint, {direct:.12g}, differs from {value:.12g}",
    )
    return Verdict([check], {"direct": direct})


def reported(kind: str, claimed: float, value: float, scale: float) -> Verdict:
    """The solver's reported objective against the table's own ``value`` (a linear or
    quadratic objective evaluated on the table), within ``OBJ_RTOL * scale``."""
    check = compare(
        f"objective {kind}",
        abs(claimed - value),
        OBJ_RTOL * scale,
        f"the solver's objective {claimed:.12g} differs from the table's {value:.12g}",
    )
    return Verdict([check])


# ------------------------------------------------------------------ noise placement


def trace_loss(blocks, cov: dict[str, np.ndarray], H: np.ndarray, offset: float) -> Verdict:
    """The expected squared error ``offset + sum_b w_b . s_b`` (variances) or ``<G_b' G_b,
    S_b>`` (a covariance), against ``offset + tr(Sigma) = offset + |H|_F^2`` (Sigma = H H'),
    within 1e-9 relative to the loss (no absolute floor: any scale). ``blocks``: each with
    ``name``, ``G``, ``weights``. Value: ``loss``."""
    loss = offset + sum(
        float(b.weights @ cov[b.name]) if cov[b.name].ndim == 1 else float(np.sum((b.G.T @ b.G) * cov[b.name]))
        for b in blocks
    )
    direct = offset + float(np.sum(H * H))
    check = compare(
        "objective trace loss",
        abs(direct - loss),
        1e-9 * abs(loss),
        f"the loss recomputed as tr(Sigma), {direct:.12g}, differs from {loss:.12g}",
    )
    return Verdict([check], {"loss": loss})


# ------------------------------------------------------------------ obfuscation


def sheppard(px1: float, W: np.ndarray) -> float:
    """Q = 1/4 + arcsin(rho) / (2 pi) with rho from eq. 2's covariance; 1/4 when a variance is 0."""
    px0 = 1.0 - px1
    py1 = px0 * W[0, 1] + px1 * W[1, 1]
    s11 = 2.0 * px0 * px1
    s22 = 2.0 * (1.0 - py1) * py1
    s12 = 2.0 * px1 * (py1 - W[1, 1])
    if s11 <= 0.0 or s22 <= 0.0:
        return 0.25
    r = min(1.0, max(-1.0, s12 / math.sqrt(s11 * s22)))
    return 0.25 + math.asin(r) / (2.0 * math.pi)


def leakage_bits(px1: float, W: np.ndarray, F: np.ndarray) -> float:
    """I(Y; F) in bits from the table, by the covariance form: the joint ``P(f, y) = sum_x P(x)
    F[x, f] W[x, y]`` differs from ``P(f) P(y)`` by exactly ``dev(f, y) = P_X(0) P_X(1) (F[1, f] -
    F[0, f]) (W[1, y] - W[0, y])`` (binary X), so ``I = sum P(f) P(y) phi(dev / (P(f) P(y))) / ln2``
    with ``phi(x) = (1 + x) log(1 + x) - x`` (``kl_excess``; the linear terms sum to 0). Every
    term is >= 0, so the sum keeps its relative accuracy at any scale (a plain ``sum joint log2(joint
    / outer)`` cancels to ~1e-17 absolute, far above an eps of 1e-30)."""
    from ..measures.obfuscation import kl_excess  # an obfuscation's check only (issue 23, goal 1)

    px = np.array([1.0 - px1, px1])
    joint = np.einsum("x,xf,xy->fy", px, F, W)
    pf, py = joint.sum(axis=1), joint.sum(axis=0)
    outer = pf[:, None] * py[None, :]
    dev = px[0] * px[1] * np.outer(F[1] - F[0], W[1] - W[0])
    live = outer > 0
    return float(np.sum(outer[live] * kl_excess(dev[live] / outer[live])) / math.log(2.0))


def rho_rounding(px1: float, W: np.ndarray, row_error: float) -> float:
    """How much rho is undetermined by the table's rounding: ``Q_ULPS`` of its own evaluation,
    plus the ambiguity of ``u = 1 - p1 - p2`` itself (``W[1, 1] - W[0, 1]`` and ``W[0, 0] -
    W[1, 0]`` differ by the rows' rounding, at most twice ``row_error``, or an ulp) times
    ``|d rho / d u| = sqrt(P_X(0) P_X(1) / (P_Y(0) P_Y(1)))`` (eq. 2's rho is ``u`` times it)."""
    px0 = 1.0 - px1
    py1 = px0 * W[0, 1] + px1 * W[1, 1]
    py0 = px0 * W[0, 0] + px1 * W[1, 0]
    if not py0 * py1 > 0.0:
        return Q_ULPS
    return Q_ULPS + 2.0 * max(row_error, ULP) * math.sqrt(px0 * px1 / (py0 * py1))


def q_allowance(Q: float, dr: float = Q_ULPS) -> float:
    """How far two correct evaluations of Q may differ by rounding alone: ``Q_ULPS`` of the 1/4 in
    ``Q = 1/4 + arcsin(rho) / (2 pi)``, plus arcsin's conditioning for an error ``dr`` in rho
    (``rho_rounding``): ``dr / sqrt(1 - rho^2)``, capped by ``2 sqrt(dr)`` (arcsin is
    1/2-Hoelder at +-1), over 2 pi. A few ulps at every scale, never an absolute 1e-12 that
    exceeds the quantity."""
    r = abs(math.sin(2.0 * math.pi * (Q - 0.25)))
    room = 1.0 - min(1.0, r + dr) ** 2
    cond = 2.0 * math.sqrt(dr) if room <= 0.0 else min(dr / math.sqrt(room), 2.0 * math.sqrt(dr))
    return Q_ULPS * 0.25 + cond / (2.0 * math.pi)


def krcc_q(px1: float, W: np.ndarray, claimed: float | None, row_error: float) -> Verdict:
    """Q by Sheppard's formula from the channel; against the method's ``claimed`` Q (when
    given) within ``q_allowance`` (the rounding of both formulas and of the table's rows,
    ``row_error``). Value: ``objective``."""
    Q = sheppard(px1, W)
    checks = []
    if claimed is not None:
        allowed = q_allowance(Q, rho_rounding(px1, W, row_error))
        checks.append(
            compare(
                "objective krcc Q",
                abs(Q - claimed),
                allowed,
                f"Q recomputed from the table, {Q!r}, differs from the method's {claimed!r} "
                f"by more than rounding ({allowed:.2g})",
            )
        )
    return Verdict(checks, {"objective": Q})
