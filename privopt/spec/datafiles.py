"""Data files named by a spec: safe path resolution and long-format tables (CSV, Parquet).

Long format: one column per variable, named after it, whose values are labels, plus one value
column. Paths are relative to the spec's folder and may not leave it (no ``..`` escape, no
absolute path) unless the caller allows it (``--allow-paths``). Label lookup is vectorized:
reading a table of millions of rows costs a few numpy passes, not a Python loop per row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import SpecError
from ..ir.model import Variable
from .source import Span

SUFFIXES = {".csv": "csv", ".tsv": "tsv", ".txt": "csv", ".parquet": "parquet", ".pq": "parquet"}


@dataclass
class DataFiles:
    """Resolves and reads the files of one spec, each file once."""

    folder: Path
    allow_paths: bool = False
    _frames: dict[Path, pd.DataFrame] = field(default_factory=dict)

    def resolve(self, text: str, span: Span) -> Path:
        raw = Path(text)
        if not text:
            raise SpecError("the file path is empty", span)
        if not self.allow_paths:
            if raw.is_absolute():
                raise SpecError(
                    "absolute paths are not allowed in a spec",
                    span,
                    "give the path relative to the spec's folder, or pass --allow-paths",
                )
            folder = self.folder.resolve()
            resolved = (folder / raw).resolve()
            if not resolved.is_relative_to(folder):
                raise SpecError(
                    "this path leaves the spec's folder",
                    span,
                    "keep data files beside the spec (or below it), or pass --allow-paths",
                )
        else:
            resolved = (self.folder / raw).resolve()
        if not resolved.exists():
            raise SpecError(f"data file '{text}' does not exist", span, f"looked for {resolved}")
        if not resolved.is_file():
            raise SpecError(f"'{text}' is not a file", span)
        return resolved

    def frame(self, text: str, span: Span) -> pd.DataFrame:
        path = self.resolve(text, span)
        if path not in self._frames:
            self._frames[path] = _read(path, text, span)
        return self._frames[path]


def _read(path: Path, text: str, span: Span) -> pd.DataFrame:
    kind = SUFFIXES.get(path.suffix.lower())
    if kind is None:
        raise SpecError(
            f"cannot tell the format of '{text}'", span, "use a .csv, .tsv or .parquet file"
        )
    if path.stat().st_size == 0:
        raise SpecError(f"data file '{text}' is empty", span)
    try:
        if kind == "parquet":
            df = pd.read_parquet(path)
        else:
            with open(path, "rb") as fh:
                head = fh.read(8192)
            if b"\x00" in head:
                raise SpecError(f"data file '{text}' is binary, not {kind.upper()} text", span)
            sep = "\t" if kind == "tsv" else ","
            try:
                df = pd.read_csv(path, sep=sep, engine="pyarrow")
            except Exception:  # pyarrow is strict about ragged rows: let pandas explain
                df = pd.read_csv(path, sep=sep)
    except SpecError:
        raise
    except Exception as e:  # pandas/pyarrow parse errors have no common base class
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise SpecError(f"cannot read '{text}': {first}", span) from None
    if df.shape[0] == 0:
        raise SpecError(f"data file '{text}' has a header but no rows", span)
    df.columns = [str(c).strip() for c in df.columns]
    return df


def _column(df: pd.DataFrame, name: str, text: str, span: Span) -> pd.Series:
    if name not in df.columns:
        import difflib

        close = difflib.get_close_matches(name, list(df.columns), n=1)
        hint = f"did you mean '{close[0]}'?" if close else f"its columns are: {', '.join(map(str, df.columns))}"
        raise SpecError(f"'{text}' has no column '{name}'", span, hint)
    return df[name]


def _codes(col: pd.Series, var: Variable, text: str, span: Span) -> np.ndarray:
    """Index of each row's label in ``var``'s domain; an error names the first unknown label."""
    if var.values is not None and pd.api.types.is_numeric_dtype(col.dtype):
        vals = col.to_numpy(dtype=float)
        order = np.argsort(var.values, kind="stable")
        sorted_vals = var.values[order]
        pos = np.clip(np.searchsorted(sorted_vals, vals), 0, len(sorted_vals) - 1)
        ok = np.isclose(sorted_vals[pos], vals, rtol=0, atol=1e-12)
        codes = np.where(ok, order[pos], -1)
    else:
        strs = col.astype(str).str.strip()
        codes = pd.Index(var.labels).get_indexer(strs).astype(np.int64)
    bad = np.flatnonzero(codes < 0)
    if bad.size:
        row = int(bad[0])
        raise SpecError(
            f"row {row + 2} of '{text}': {var.name} = '{col.iloc[row]}' is not in its domain"
            + (f" ({bad.size} rows have unknown labels)" if bad.size > 1 else ""),
            span,
            f"{var.name} takes {{{', '.join(var.labels[:12])}{', ...' if var.size > 12 else ''}}}",
        )
    return codes


def read_long_table(
    files: DataFiles,
    text: str,
    span: Span,
    axes: list[Variable],
    value_column: str,
    missing: float | None,
) -> np.ndarray:
    """Array over ``axes`` from a long-format file. ``missing`` fills absent combinations
    (0 for counts); None makes an absent combination an error."""
    df = files.frame(text, span)
    shape = tuple(v.size for v in axes)
    codes = [_codes(_column(df, v.name, text, span), v, text, span) for v in axes]
    flat = np.ravel_multi_index(codes, shape) if axes else np.zeros(len(df), dtype=np.int64)
    raw = _column(df, value_column, text, span)
    values = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float)
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        row = int(bad[0])
        raise SpecError(
            f"row {row + 2} of '{text}': {value_column} = '{raw.iloc[row]}' is not a number", span
        )
    size = int(np.prod(shape)) if shape else 1
    hits = np.bincount(flat, minlength=size)
    dup = np.flatnonzero(hits > 1)
    if dup.size:
        combo = np.unravel_index(int(dup[0]), shape)
        what = ", ".join(f"{v.name}={v.labels[i]}" for v, i in zip(axes, combo))
        raise SpecError(
            f"'{text}' has {int(hits[dup[0]])} rows for ({what})",
            span,
            "each combination of labels may appear once; aggregate the file first",
        )
    out = np.full(size, np.nan if missing is None else float(missing))
    out[flat] = values
    if missing is None and (hits == 0).any():
        gap = int(np.flatnonzero(hits == 0)[0])
        combo = np.unravel_index(gap, shape)
        what = ", ".join(f"{v.name}={v.labels[i]}" for v, i in zip(axes, combo))
        n = int((hits == 0).sum())
        raise SpecError(
            f"'{text}' has no row for ({what})" + (f" ({n} combinations are missing)" if n > 1 else ""),
            span,
            "a probability table needs every combination of labels",
        )
    return out.reshape(shape)


def distinct_labels(files: DataFiles, text: str, span: Span, column: str) -> tuple[str, ...]:
    """Sorted distinct values of a column (numerically when they are all numbers)."""
    df = files.frame(text, span)
    col = _column(df, column, text, span).dropna()
    uniq = pd.unique(col)
    if pd.api.types.is_numeric_dtype(col.dtype):
        uniq = np.sort(uniq)
        return tuple(_fmt_number(v) for v in uniq)
    return tuple(sorted(str(v).strip() for v in uniq))


def _fmt_number(v) -> str:
    f = float(v)
    return str(int(f)) if f.is_integer() else repr(f)
