"""Data files named by a spec: safe path resolution and long-format tables (CSV, Parquet).

Long format: one column per variable, named after it, whose values are labels, plus one value
column. Paths are relative to the spec's folder and may not leave it (no ``..`` escape, no
absolute path) unless the caller allows it (``--allow-paths``). The check is made on the file
actually opened: the path is opened first and the opened descriptor's real path
(``/proc/self/fd/N``) is compared with the folder, and that same open file is what pandas or
pyarrow reads, so a symlink swapped in between cannot redirect the read. Label lookup is
vectorized: reading a table of millions of rows costs a few numpy passes, not a Python loop
per row. A header naming a column twice, and a value column of booleans or dates, are errors
that name the column (never silently the first copy, never coerced to numbers).
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import SpecError
from .source import Span
from .tables import Domain

SUFFIXES = {".csv": "csv", ".tsv": "tsv", ".txt": "csv", ".parquet": "parquet", ".pq": "parquet"}


@dataclass
class DataFiles:
    """Resolves and reads the files of one spec, each file once."""

    folder: Path
    allow_paths: bool = False
    _frames: dict[Path, pd.DataFrame] = field(default_factory=dict)
    digests: dict[str, str] = field(default_factory=dict)  # path as written -> SHA-256 of the bytes read

    def open(self, text: str, span: Span) -> tuple[Path, io.BufferedReader]:
        """Open a data file and check the file actually opened: a regular file, inside the
        spec's folder unless paths are allowed. Returns its real path and the open file."""
        if not text:
            raise SpecError("the file path is empty", span)
        raw = Path(text)
        folder = self.folder.resolve()
        if not self.allow_paths:
            if raw.is_absolute():
                raise SpecError(
                    "absolute paths are not allowed in a spec",
                    span,
                    "give the path relative to the spec's folder, or pass --allow-paths",
                )
            if not Path(os.path.normpath(folder / raw)).is_relative_to(folder):
                raise _leaves(span)
        target = self.folder / raw
        try:
            fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            raise SpecError(f"data file '{text}' does not exist", span, f"looked for {target}") from None
        except IsADirectoryError:
            raise SpecError(f"'{text}' is a folder, not a data file", span) from None
        except (OSError, ValueError) as e:
            raise SpecError(
                f"cannot open data file '{text}': {getattr(e, 'strerror', None) or e}",
                span,
                "give the path of a readable file beside the spec (a short name, no symlink loop)",
            ) from None
        try:
            real = _real_path(fd, target)
            if not self.allow_paths and not real.is_relative_to(folder):
                raise _leaves(span)
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                what = "a folder" if stat.S_ISDIR(mode) else "not a regular file (a FIFO, device or socket)"
                raise SpecError(f"'{text}' is {what}", span, "give the path of a .csv, .tsv or .parquet file")
            return real, os.fdopen(fd, "rb")
        except BaseException:
            os.close(fd)
            raise

    def text(self, text: str, span: Span, max_bytes: int) -> str:
        """A data file's text (UTF-8, at most ``max_bytes``), its SHA-256 recorded like a table's."""
        _, fh = self.open(text, span)
        with fh:
            if os.fstat(fh.fileno()).st_size > max_bytes:
                raise SpecError(f"data file '{text}' is larger than {max_bytes:,} bytes", span, "use a smaller file")
            data = fh.read(max_bytes + 1)
        if len(data) > max_bytes:  # grew while being read
            raise SpecError(f"data file '{text}' is larger than {max_bytes:,} bytes", span, "use a smaller file")
        self.digests[text] = hashlib.sha256(data).hexdigest()
        return _decode(data, text, span).removeprefix("\ufeff")

    def frame(self, text: str, span: Span) -> pd.DataFrame:
        real, fh = self.open(text, span)
        with fh:
            if real not in self._frames:
                self._frames[real], self.digests[text] = _read(fh, text, span)
        return self._frames[real]


def _leaves(span: Span) -> SpecError:
    return SpecError(
        "this path leaves the spec's folder",
        span,
        "keep data files beside the spec (or below it), or pass --allow-paths",
    )


def _real_path(fd: int, opened: Path) -> Path:
    """Where the open descriptor ``fd`` really points (Linux: /proc/self/fd; elsewhere the
    path's resolution, which has the check-then-open window this avoids on Linux)."""
    proc = f"/proc/self/fd/{fd}"
    if os.path.exists(proc):
        return Path(os.readlink(proc))
    return Path(os.path.realpath(opened))


def _read(fh: io.BufferedReader, text: str, span: Span) -> tuple[pd.DataFrame, str]:
    """The file's table, and the SHA-256 of the bytes it was read from (recorded in results)."""
    kind = SUFFIXES.get(Path(text).suffix.lower())
    if kind is None:
        raise SpecError(
            f"cannot tell the format of '{text}'", span, "use a .csv, .tsv or .parquet file"
        )
    if os.fstat(fh.fileno()).st_size == 0:
        raise SpecError(f"data file '{text}' is empty", span)
    try:
        if kind == "parquet":
            import pyarrow.parquet as pq

            digest = hashlib.file_digest(fh, "sha256").hexdigest()
            fh.seek(0)
            table = pq.read_table(fh)
            _no_duplicate_columns(table.column_names, text, span)
            df = table.to_pandas()
        else:
            data = fh.read()
            digest = hashlib.sha256(data).hexdigest()
            df = _read_text(data, kind, text, span)
    except SpecError:
        raise
    except Exception as e:  # pandas/pyarrow parse errors have no common base class
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise SpecError(f"cannot read '{text}': {first}", span) from None
    if df.shape[0] == 0:
        raise SpecError(f"data file '{text}' has a header but no rows", span)
    df.columns = [str(c).strip() for c in df.columns]
    return df, digest


def _read_text(data: bytes, kind: str, text: str, span: Span) -> pd.DataFrame:
    """A CSV/TSV file's bytes: UTF-8 text (an error names the row of a bad byte) whose header
    names each column once."""
    if b"\x00" in data[:8192]:
        raise SpecError(f"data file '{text}' is binary, not {kind.upper()} text", span)
    _decode(data, text, span)
    sep = "\t" if kind == "tsv" else ","
    header = next(csv.reader(io.StringIO(data[:65536].decode("utf-8-sig", errors="replace")), delimiter=sep), [])
    _no_duplicate_columns(header, text, span)
    try:
        return pd.read_csv(io.BytesIO(data), sep=sep, engine="pyarrow")
    except Exception:  # pyarrow is strict about ragged rows: let pandas explain
        return pd.read_csv(io.BytesIO(data), sep=sep)


def _decode(data: bytes, text: str, span: Span) -> str:
    """The bytes as UTF-8 text; a bad byte is an error naming its line."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        row = data.count(b"\n", 0, e.start) + 1
        raise SpecError(
            f"line {row} of '{text}': byte 0x{data[e.start]:02x} is not UTF-8", span, "save the data file as UTF-8"
        ) from None


def _no_duplicate_columns(names, text: str, span: Span) -> None:
    seen: set[str] = set()
    for name in (str(n).strip() for n in names):
        if name in seen:
            raise SpecError(
                f"'{text}' has two columns named '{name}'", span, "give each column of the header its own name"
            )
        seen.add(name)


def _column(df: pd.DataFrame, name: str, text: str, span: Span) -> pd.Series:
    if name not in df.columns:
        import difflib

        close = difflib.get_close_matches(name, list(df.columns), n=1)
        hint = f"did you mean '{close[0]}'?" if close else f"its columns are: {', '.join(map(str, df.columns))}"
        raise SpecError(f"'{text}' has no column '{name}'", span, hint)
    return df[name]


def _codes(col: pd.Series, var: Domain, text: str, span: Span) -> np.ndarray:
    """Index of each row's label in ``var``'s domain; an error names the first unknown label."""
    if var.values is not None:
        _not_coerced(col, var.name, text, span, f"the numeric labels of {var.name}")
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


def _not_coerced(col: pd.Series, name: str, text: str, span: Span, wanted: str) -> None:
    """Booleans, dates and durations are not numbers: refuse them instead of reading 0/1 or
    nanoseconds since 1970."""
    dtype = col.dtype
    kinds = (
        ("booleans", pd.api.types.is_bool_dtype(dtype)),
        ("dates or times", pd.api.types.is_datetime64_any_dtype(dtype)),
        ("durations", pd.api.types.is_timedelta64_dtype(dtype)),
    )
    found = next((k for k, hit in kinds if hit), None)
    if found is None and dtype == object and len(col):
        import datetime

        sample = col.dropna().iloc[:1000]
        if sample.map(lambda v: isinstance(v, (bool, datetime.date, datetime.time, datetime.timedelta))).any():
            found = "booleans or dates"
    if found:
        raise SpecError(
            f"column '{name}' of '{text}' holds {found}, not {wanted}", span, f"store {wanted} in column '{name}'"
        )


def read_long_table(
    files: DataFiles,
    text: str,
    span: Span,
    axes: list[Domain],
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
    _not_coerced(raw, value_column, text, span, "numbers")
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
    if pd.api.types.is_numeric_dtype(col.dtype) and not pd.api.types.is_bool_dtype(col.dtype):
        uniq = np.sort(uniq)
        return tuple(_fmt_number(v) for v in uniq)
    return tuple(sorted(str(v).strip() for v in uniq))


def _fmt_number(v) -> str:
    f = float(v)
    return str(int(f)) if f.is_integer() else repr(f)
