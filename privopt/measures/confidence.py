"""Maximum inference confidence (Chen et al. Def. 3, Lemma 1) evaluated on a concrete table.

For QID group g, outcome a and record x in the group,

    conf(x_U, a -> x_S) = P(x) D~_a(x) / sum_{x' in T_{x_U}} P(x') D~_a(x')        (eq. 37)

An outcome no record of the group can receive (denominator 0) is never observed, so it lets
the adversary infer nothing: its confidence is 0. Everything is vectorized over groups.
"""

from __future__ import annotations

import numpy as np

from .reduce import gmax, gsum


def conditional_prior(p: np.ndarray) -> np.ndarray:
    """P(x | T_{x_U}) per group: the prior scaled to sum 1 in each group (0 for a group of zero
    mass). Confidences are invariant to this scaling; the LP methods use it for conditioning."""
    P = gsum(p, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(P > 0, p / np.where(P > 0, P, 1.0), 0.0)


def group_max_confidence(p: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Conf(X_U = x_U, A -> X_S) per group (the max over outcomes and records).

    Computed as max_a [max_i joint / sum_i joint]: two reductions and a (G, A) division,
    never a full array of ratios.
    """
    joint = p[:, :, None] * table
    denom = gsum(joint)
    top = gmax(joint)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(denom > 0, top / np.where(denom > 0, denom, 1.0), 0.0)
    return ratio.max(axis=1)


def beta_min(p: np.ndarray) -> np.ndarray:
    """Lemma 5: the privacy limit max_x P(x | T_{x_U}) per group (0 for a group of zero mass)."""
    P = gsum(p)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(P > 0, gmax(p) / np.where(P > 0, P, 1.0), 0.0)


def c_star(p: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Def. 7: the maximum posterior confidence per group when the true D is released."""
    return group_max_confidence(p, reference)
