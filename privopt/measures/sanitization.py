"""Privacy and utility measures of a mechanism, computed from the table itself.

All measures take dense arrays; nothing here knows about LP rows. Logs are natural for the
privacy budgets (eps) and base 2 for mutual information (bits). Conditionals given an event
of probability 0 are skipped.

* ``ldp``: Ding et al. eq. 1, max over y, s, s' of log P(y | s) / P(y | s');
* ``loglift``: eq. 2, max over s, y of |log P(s | y) / P(s)| = |log P(y | s) / P(y)|;
* ``pairwise_eps``: the smallest eps with cond[a, y] <= e^eps cond[a', y] + delta / |A| over
  the given pairs (all pairs when none are given), the measure behind dp(x -> y) <= (eps, delta);
* ``mutual_info``: I(A; B) in bits of a joint table;
* ``tv``: 1 - sum_x P(X = x, Y = x) (App. B).
"""

from __future__ import annotations

import numpy as np


def _log_ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """log(num / den) with 0/0 -> -inf (no constraint) and x/0 -> +inf."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(num) - np.log(den)
    out[(num <= 0) & (den <= 0)] = -np.inf
    out[(num > 0) & (den <= 0)] = np.inf
    return out


def pairwise_eps(cond: np.ndarray, live: np.ndarray, delta: float = 0.0, pairs: np.ndarray | None = None) -> float:
    """Smallest eps such that ``cond[a, y] <= e^eps cond[a', y] + delta / |A|`` for all pairs.

    ``cond`` is (A, Y); ``live`` (A,) marks source values that occur (P(a) > 0 or all)."""
    slack = delta / cond.shape[0]
    c = cond[live] if pairs is None else cond
    if pairs is None:
        hi, lo = c.max(axis=0), c.min(axis=0)
        v = _log_ratio(np.maximum(hi - slack, 0.0), lo)
    else:
        ok = live[pairs[:, 0]] & live[pairs[:, 1]]
        a1, a2 = pairs[ok, 0], pairs[ok, 1]
        v = _log_ratio(np.maximum(c[a1] - slack, 0.0), c[a2])
    v = v[np.isfinite(v) | (v > 0)]
    return float(max(v.max(initial=0.0), 0.0))


def pairwise_violation(cond: np.ndarray, live: np.ndarray, eps: float, delta: float = 0.0, pairs=None) -> float:
    """Largest ``cond[a, y] - e^eps cond[a', y] - delta / |A|`` (<= 0 when the budget holds):
    the linear form, which is what a tolerance can be stated for."""
    slack = delta / cond.shape[0]
    e = np.exp(eps)
    if pairs is None:
        c = cond[live]
        return float((c.max(axis=0) - e * c.min(axis=0) - slack).max(initial=0.0))
    ok = live[pairs[:, 0]] & live[pairs[:, 1]]
    return float((cond[pairs[ok, 0]] - e * cond[pairs[ok, 1]] - slack).max(initial=0.0))


def loglift(cond: np.ndarray, weights: np.ndarray) -> float:
    """max over a with P(a) > 0 and y with P(y) > 0 of |log cond[a, y] / P(y)|."""
    live = weights > 0
    py = weights[live] @ cond[live]
    c = cond[live][:, py > 0]
    v = np.abs(_log_ratio(c, np.broadcast_to(py[py > 0], c.shape)))
    return float(v.max(initial=0.0))


def loglift_violation(cond: np.ndarray, weights: np.ndarray, eps: float) -> float:
    live = weights > 0
    py = weights[live] @ cond[live]
    c = cond[live]
    e = np.exp(eps)
    return float(np.maximum(c - e * py, py / e - c).max(initial=0.0))


def mutual_info(joint: np.ndarray) -> float:
    """I(A; B) in bits of a 2-D joint distribution."""
    pa = joint.sum(axis=1, keepdims=True)
    pb = joint.sum(axis=0, keepdims=True)
    denom = pa * pb
    m = joint > 0
    return float(np.sum(joint[m] * np.log2(joint[m] / denom[m])))


def tv(joint_xy: np.ndarray) -> float:
    return float(1.0 - np.trace(joint_xy))


def conditional(joint: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """P(B | A) from a 2-D joint P(A, B), and which a have P(a) > 0."""
    pa = joint.sum(axis=1)
    live = pa > 0
    cond = np.divide(joint, pa[:, None], out=np.zeros_like(joint), where=live[:, None])
    return cond, live
