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
    """Largest shortfall ``e^-eps (cond[a, y] - delta / |A|) - cond[a', y]`` (<= 0 when the
    budget holds): the linear form on the side of the smaller cell, so it never overflows and
    is what the smaller cell must be raised by (docs/verification.md)."""
    return float(max(pairwise_shortfall(cond, live, eps, delta, pairs).max(initial=0.0), 0.0))


def pairwise_shortfall(cond: np.ndarray, live: np.ndarray, eps: float, delta: float = 0.0, pairs=None) -> np.ndarray:
    """(A, Y): how far each live cell lies below its floor ``e^-eps (cond[a, y] - delta / |A|)``
    over the pairs (a, a'), the floors propagated along chains of pairs until they hold
    everywhere (at most |A| vectorized passes; one for all pairs). 0 where the budget holds."""
    slack = delta / cond.shape[0]
    f = np.exp(-eps)
    c = np.where(live[:, None], cond, 0.0)
    if pairs is None:
        top = c.max(axis=0, initial=0.0)
        floor = np.broadcast_to(f * np.maximum(top - slack, 0.0), c.shape)
        return np.where(live[:, None], np.maximum(floor - c, 0.0), 0.0)
    ok = live[pairs[:, 0]] & live[pairs[:, 1]]
    a1, a2 = pairs[ok, 0], pairs[ok, 1]
    level = c.copy()
    for _ in range(cond.shape[0]):
        need = np.zeros_like(level)
        np.maximum.at(need, a2, f * np.maximum(level[a1] - slack, 0.0))
        raised = np.maximum(level, need)
        if np.array_equal(raised, level):
            break
        level = raised
    return level - c


def loglift(cond: np.ndarray, weights: np.ndarray) -> float:
    """max over a with P(a) > 0 and y with P(y) > 0 of |log cond[a, y] / P(y)|."""
    live = weights > 0
    py = weights[live] @ cond[live]
    c = cond[live][:, py > 0]
    v = np.abs(_log_ratio(c, np.broadcast_to(py[py > 0], c.shape)))
    return float(v.max(initial=0.0))


def loglift_violation(cond: np.ndarray, weights: np.ndarray, eps: float) -> float:
    """Largest ``e^-eps cond - P(y)`` or ``e^-eps P(y) - cond`` (<= 0 when the budget holds)."""
    live = weights > 0
    py = weights[live] @ cond[live]
    c = cond[live]
    f = np.exp(-eps)
    return float(np.maximum(f * c - py, f * py - c).max(initial=0.0))


def loglift_shortfall(cond: np.ndarray, weights: np.ndarray, eps: float) -> np.ndarray:
    """(A, Y): how far each cell with ``weights > 0`` lies below ``e^-eps P(y)``."""
    live = weights > 0
    py = weights[live] @ cond[live]
    return np.where(live[:, None], np.maximum(np.exp(-eps) * py[None, :] - cond, 0.0), 0.0)


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
