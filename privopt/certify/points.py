"""A result's released point read back into its block kind's form (``privopt verify``).

A released table is a list of rows ``{axis: label, ..., "value": v}`` (``Result.to_dict``,
``solve --json``) or, for ``solve --out``, whose ``result.json`` leaves the tables out, the
CSV file beside it (``NAME.csv`` or ``table_NAME.csv``, ``outdir.out_files``): ``frame``
reads either. Values are parsed by Python's ``float`` (correctly rounded: the shortest
round-trip text gives the float back exactly). ``dense`` maps a table onto the array over the given axes, vectorized (labels to codes by a
categorical per axis, then one ``ravel_multi_index``): a label that is not one of its
variable's, a row given twice or a cell missing is reported (``PointError``, which ``check``
turns into a failed check naming the table and the row), a null value is NaN (the verifiers'
finite-point checks then fail on it).
"""

from __future__ import annotations

import csv as stdcsv
from pathlib import Path

import numpy as np
import pandas as pd

from ..lower.reductions import QIDGroups
from ..model.problem import Problem
from ..outdir import RESERVED


class PointError(ValueError):
    """The released point cannot be read back: which table, which row, what is wrong."""


def frame(result: dict, name: str, folder: Path | None) -> pd.DataFrame:
    """The released table ``name`` as a frame of text columns: from the result's ``tables`` or,
    when it has none (``--out``), from its CSV file in ``folder``."""
    tables = result.get("tables")
    if isinstance(tables, dict):
        rows = tables.get(name)
        if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
            raise PointError(f"table {name}: the result has no rows for it")
        return pd.DataFrame.from_records(rows)
    taken = {n.lower() for n in RESERVED}
    file = f"{name}.csv" if f"{name}.csv".lower() not in taken else f"table_{name}.csv"
    if folder is None or not (folder / file).is_file():
        raise PointError(f"table {name}: the result has no tables and there is no {file} beside it (solve --json)")
    return _read_csv(folder / file)


def _read_csv(path: Path) -> pd.DataFrame:
    """A released table's CSV (``outdir``): labels as categoricals (Arrow dictionaries: a
    label's text once), ``value`` as float64 (Arrow parses decimal text correctly rounded, so
    the shortest round-trip text gives each float back exactly); any other text in ``value``
    leaves it as text (``values`` then reads it cell by cell)."""
    import pyarrow as pa
    from pyarrow import csv

    with path.open(encoding="utf-8", newline="") as fh:
        names = next(stdcsv.reader(fh), [])
    types = {n: pa.dictionary(pa.int32(), pa.string()) for n in names if n != "value"}
    strings = csv.ConvertOptions(column_types=types | {"value": pa.string()}, strings_can_be_null=False)
    try:
        table = csv.read_csv(path, convert_options=csv.ConvertOptions(column_types=types | {"value": pa.float64()}))
    except pa.ArrowInvalid:
        table = csv.read_csv(path, convert_options=strings)
    return table.to_pandas()


def values(column: pd.Series) -> np.ndarray:
    """A value column as floats, each parsed exactly (numpy's correctly rounded conversion of
    numbers and of their text); null, empty or other text: NaN (the element-wise fallback runs
    only on a column that is not all numbers)."""
    if column.dtype.kind == "f":
        return column.to_numpy(dtype=float)
    v = column.to_numpy(dtype=object)
    missing = pd.isna(v)
    v = np.where(missing, "nan", v)
    try:
        return v.astype(float)
    except (TypeError, ValueError):
        out = np.full(len(v), np.nan)
        for k, x in enumerate(v.tolist()):
            if isinstance(x, (int, float, str)) and not isinstance(x, bool):
                try:
                    out[k] = float(x)
                except ValueError:
                    continue
        return out


def _codes(column: pd.Series, labels: tuple[str, ...]) -> np.ndarray:
    """Each entry's position in ``labels`` (-1: not one of them), through the categories of a
    categorical column (each distinct label looked up once)."""
    index = pd.Index(list(labels))
    if isinstance(column.dtype, pd.CategoricalDtype):
        at = np.append(index.get_indexer(column.cat.categories.astype(str)), -1)
        return at[column.cat.codes.to_numpy()]  # code -1 (a missing label) picks the trailing -1
    return index.get_indexer(column.astype(str))


def dense(problem: Problem, name: str, table: pd.DataFrame, axes: tuple[str, ...]) -> np.ndarray:
    """The released ``table`` (``frame``) as an array over ``axes`` (C order)."""
    missing = [a for a in (*axes, "value") if a not in table.columns]
    if missing:
        raise PointError(f"table {name}: the rows have no column {', '.join(missing)}")
    shape = problem.shape(axes)
    codes = []
    for a in axes:
        labels = problem.variables[a].labels
        c = _codes(table[a], labels)
        bad = np.flatnonzero(c < 0)
        if bad.size:
            k = int(bad[0])
            raise PointError(
                f"table {name} row {k}: {a} = {table[a].iloc[k]!r} is not one of its labels ({', '.join(labels)})"
            )
        codes.append(c.astype(np.int64))
    flat = np.ravel_multi_index(codes, shape) if axes else np.zeros(len(table), dtype=np.int64)
    size = int(np.prod(shape, dtype=np.int64))
    counts = np.bincount(flat, minlength=size)
    if counts.max(initial=0) > 1:
        k = int(np.flatnonzero(counts[flat] > 1)[1])
        raise PointError(f"table {name} row {k}: a cell given twice")
    if counts.min(initial=1) < 1:
        cell = np.unravel_index(int(np.flatnonzero(counts == 0)[0]), shape)
        where = ", ".join(f"{a} = {problem.variables[a].labels[i]}" for a, i in zip(axes, cell))
        raise PointError(f"table {name}: the cell {where} is missing")
    out = np.empty(size)
    out[flat] = values(table["value"])
    return out.reshape(shape)


def table_point(problem: Problem, result: dict, folder: Path | None) -> np.ndarray:
    """A mechanism's design, flat in the design's axis order (as its routes return it)."""
    d = problem.design
    return dense(problem, d.name, frame(result, d.name, folder), d.axes).ravel()


def report_point(problem: Problem, result: dict, folder: Path | None):
    """(the lowered instance (``QIDGroups``), the table (G, m, A), beta per group): the released
    table moved from the design's axes into the instance's order, the groups' beta in spec
    order (a null beta, NaN)."""
    inst, _ = QIDGroups().apply(problem)
    d = problem.design
    order = inst.public + inst.private + (inst.outcome,)
    arr = dense(problem, d.name, frame(result, d.name, folder), order)
    table = arr.reshape(inst.n_groups, inst.group_size, inst.n_outcomes)
    groups = result.get("groups") or []
    if len(groups) != inst.n_groups:
        raise PointError(f"groups: the result lists {len(groups)} QID groups, the spec has {inst.n_groups}")
    beta = values(pd.Series([g.get("beta") if isinstance(g, dict) else None for g in groups], dtype=object))
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


def channel_point(problem: Problem, result: dict, folder: Path | None) -> np.ndarray:
    """The 2 x 2 channel W(Y | X)."""
    m = problem.obfuscation
    return dense(problem, m.design, frame(result, m.design, folder), (m.data, m.release))
