"""Reductions over a short axis of large arrays: the records of a group (axis 1 of (G, m, ...))
or the outcomes of a record (the last axis).

numpy reduces a short axis with an inner loop of that length for every outer element, which
is slow when the axis is short and the array large (390,625 groups of 5 records: about 10x
slower than needed). For axes of length <= SMALL we combine the slices instead: n - 1
vectorized operations over everything else. The Python loop runs over the axis length (a
group size or an outcome count), never over groups or records.
"""

from __future__ import annotations

import numpy as np

SMALL = 32


def _reduce(ufunc, x: np.ndarray, axis: int, keepdims: bool) -> np.ndarray:
    axis = axis % x.ndim
    n = x.shape[axis]
    if n > SMALL or n == 0:
        return ufunc.reduce(x, axis=axis, keepdims=keepdims)
    index = [slice(None)] * x.ndim
    index[axis] = 0
    out = x[tuple(index)].copy()
    for j in range(1, n):
        index[axis] = j
        ufunc(out, x[tuple(index)], out=out)
    return np.expand_dims(out, axis) if keepdims else out


def gsum(x: np.ndarray, keepdims: bool = False, axis: int = 1) -> np.ndarray:
    """Sum over ``axis`` (default: the records of each group)."""
    return _reduce(np.add, x, axis, keepdims)


def gmax(x: np.ndarray, keepdims: bool = False, axis: int = 1) -> np.ndarray:
    """Maximum over ``axis`` (default: the records of each group)."""
    return _reduce(np.maximum, x, axis, keepdims)


def osum(x: np.ndarray, keepdims: bool = False) -> np.ndarray:
    """Sum over the last axis (the outcomes of each record)."""
    return _reduce(np.add, x, -1, keepdims)


def shift_onto_sum(x: np.ndarray, lower: np.ndarray, upper: np.ndarray, target, axis: int) -> np.ndarray:
    """Clip ``x`` into [lower, upper], then move it onto ``sum(x, axis) == target``: each entry
    moves toward the needed side in proportion to its room there, so entries stay in their
    bounds (the sum falls short only where the bounds cannot reach the target).

    Used to put LP rows back onto the simplex (axis -1, target 1) and the closed form's joint
    masses onto their group total S1 (axis 1, target s).
    """
    x = np.clip(x, lower, upper)
    gap = np.expand_dims(target, axis) - _reduce(np.add, x, axis, keepdims=True)
    room = np.where(gap >= 0, upper - x, x - lower)
    total = _reduce(np.add, room, axis, keepdims=True)
    frac = np.where(total > 0, np.abs(gap) / np.where(total > 0, total, 1.0), 0.0)
    return x + np.sign(gap) * room * np.minimum(frac, 1.0)


def repair_rows(X: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Clip to the bounds, then move each row onto sum 1 within its bounds (proportionally)."""
    return shift_onto_sum(X, lower, upper, np.ones(X.shape[:-1]), axis=-1)


def worst(a: float, b: float) -> float:
    """The larger of two errors, NaN if either is NaN (``max`` would drop a NaN second
    argument, so an error that is not a number could read as 0)."""
    return float("nan") if a != a or b != b else max(a, b)
