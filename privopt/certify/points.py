"""A result's released point read back into its block kind's form (``privopt verify``).

A released table is a list of rows ``{axis: label, ..., "value": v}`` (``Result.to_dict``).
``dense`` maps it onto the array over the given axes, vectorized (labels to codes by a
categorical per axis, then one ``ravel_multi_index``): a label that is not one of its
variable's, a row given twice or a cell missing is reported (``PointError``, which ``check``
turns into a failed check naming the table and the row), a null value is NaN (the verifiers'
finite-point checks then fail on it).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..lower.reductions import QIDGroups
from ..model.problem import Problem


class PointError(ValueError):
    """The released point cannot be read back: which table, which row, what is wrong."""


def dense(problem: Problem, name: str, rows, axes: tuple[str, ...]) -> np.ndarray:
    """The released table ``name`` (its JSON ``rows``) as an array over ``axes`` (C order)."""
    if not isinstance(rows, list) or not rows:
        raise PointError(f"table {name}: the result has no rows for it")
    frame = pd.DataFrame.from_records(rows)
    missing = [a for a in (*axes, "value") if a not in frame.columns]
    if missing:
        raise PointError(f"table {name}: the rows have no column {', '.join(missing)}")
    shape = problem.shape(axes)
    codes = []
    for a in axes:
        labels = problem.variables[a].labels
        c = pd.Categorical(frame[a].astype(str), categories=list(labels)).codes
        bad = np.flatnonzero(c < 0)
        if bad.size:
            k = int(bad[0])
            raise PointError(
                f"table {name} row {k}: {a} = {frame[a].iloc[k]!r} is not one of its labels ({', '.join(labels)})"
            )
        codes.append(c.astype(np.int64))
    flat = np.ravel_multi_index(codes, shape) if axes else np.zeros(len(frame), dtype=np.int64)
    size = int(np.prod(shape, dtype=np.int64))
    counts = np.bincount(flat, minlength=size)
    if counts.max(initial=0) > 1:
        k = int(np.flatnonzero(counts[flat] > 1)[1])
        raise PointError(f"table {name} row {k}: a cell given twice")
    if counts.min(initial=1) < 1:
        cell = np.unravel_index(int(np.flatnonzero(counts == 0)[0]), shape)
        where = ", ".join(f"{a} = {problem.variables[a].labels[i]}" for a, i in zip(axes, cell))
        raise PointError(f"table {name}: the cell {where} is missing")
    values = pd.to_numeric(frame["value"], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    out = np.empty(size)
    out[flat] = values
    return out.reshape(shape)


def table_point(problem: Problem, result: dict) -> np.ndarray:
    """A mechanism's design, flat in the design's axis order (as its routes return it)."""
    d = problem.design
    return dense(problem, d.name, (result.get("tables") or {}).get(d.name), d.axes).ravel()


def report_point(problem: Problem, result: dict):
    """(the lowered instance (``QIDGroups``), the table (G, m, A), beta per group): the released
    table moved from the design's axes into the instance's order, the groups' beta in spec
    order (a null beta, NaN)."""
    inst, _ = QIDGroups().apply(problem)
    d = problem.design
    order = inst.public + inst.private + (inst.outcome,)
    arr = dense(problem, d.name, (result.get("tables") or {}).get(d.name), order)
    table = arr.reshape(inst.n_groups, inst.group_size, inst.n_outcomes)
    groups = result.get("groups") or []
    if len(groups) != inst.n_groups:
        raise PointError(f"groups: the result lists {len(groups)} QID groups, the spec has {inst.n_groups}")
    beta = pd.to_numeric(pd.Series([g.get("beta") for g in groups]), errors="coerce").to_numpy(dtype=float)
    return inst, table, beta


def noise_point(problem: Problem, result: dict) -> dict[str, np.ndarray]:
    """The noise (co)variances by name (a list: diagonal variances; a list of lists: a
    covariance)."""
    recorded = result.get("noise") or {}
    out = {}
    for n in problem.noise.noises:
        if n.name not in recorded:
            raise PointError(f"noise {n.name}: the result has no variances for it")
        try:
            out[n.name] = np.array(recorded[n.name], dtype=float)
        except (TypeError, ValueError):
            raise PointError(f"noise {n.name}: its variances are not numbers") from None
    return out


def channel_point(problem: Problem, result: dict) -> np.ndarray:
    """The 2 x 2 channel W(Y | X)."""
    m = problem.obfuscation
    return dense(problem, m.design, (result.get("tables") or {}).get(m.design), (m.data, m.release))
