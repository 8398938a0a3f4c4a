"""Data files named by a spec: safe path resolution and long-format tables (CSV, Parquet).

Long format: one column per variable, named after it, whose values are labels, plus one value
column. Paths are relative to the spec's folder and may not leave it (no ``..`` escape, no
absolute path) unless the caller allows it (``--allow-paths``). The check is made on the file
actually opened: the path is opened first and the opened descriptor's real path
(``/proc/self/fd/N``) is compared with the folder, and that same open file is what pandas or
pyarrow reads, so a symlink swapped in between cannot redirect the read. Label lookup is
vectorized: reading a table of millions of rows costs a few numpy passes, not a Python loop
per row. Labels are the text written: a CSV's label columns are read as text (``01`` and
``1`` are two labels), its value columns as numbers; Parquet columns keep their stored types
(a numeric label matches the spec's label by value). A header naming a column twice, and a value column of booleans or dates, are errors
that name the column (never silently the first copy, never coerced to numbers).

Partitioned Parquet: a path naming a folder (``"data/"``: every ``*.parquet`` in it) or a glob
(``"data/part-*.parquet"``) is one long table made of all its parts, in sorted path order (a
group's rows may lie in several parts). Each part is opened and checked like a single file (it
must stay inside the spec's folder), its SHA-256 is recorded under its own path (``digests``:
one entry per part, keyed ``data/part-0.parquet``), and the parts must agree on their columns
and on each column's kind of values. Parquet is read a column at a time, only the columns a
table or a domain needs (``DataFiles.columns``). A CSV is parsed once, by pyarrow's
multithreaded reader, only the columns the spec names (``DataFiles.expect``), while a thread
hashes the same open file and checks it as UTF-8 (``_Digest``). The columns read stay numpy arrays
and dictionary codes (``Coded``) from the reader to the counts (``DataFiles.arrays``): no pandas
object is made on that path; ``frame`` and ``columns`` give DataFrames to callers that want one.
"""

from __future__ import annotations

import codecs
import contextvars
import csv
import glob
import hashlib
import io
import math
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .. import files
from ..errors import SpecError
from .parser import missing_file_hint
from .source import Span
from .tables import Domain, parse_number

if TYPE_CHECKING:
    import pandas as pd

# Where reading reports its progress: a callable (what, done, total) set by the CLI around a
# load (``reading_progress``), None elsewhere. A context variable, not an argument, because the
# builder and the reader know nothing of a terminal.
READING: contextvars.ContextVar = contextvars.ContextVar("privopt_reading_progress", default=None)


def _report(what: str, done: int, total: int) -> None:
    hook = READING.get()
    if hook is not None:
        hook(what, done, total)


SUFFIXES = {".csv": "csv", ".tsv": "tsv", ".txt": "csv", ".parquet": "parquet", ".pq": "parquet"}


@dataclass
class DataFiles:
    """Resolves and reads the files of one spec, each file once."""

    folder: Path
    allow_paths: bool = False
    _tables: dict[Path, CsvTable] = field(default_factory=dict)  # CSV/TSV files: the columns read so far
    _expected: dict[str, tuple[dict, dict]] = field(default_factory=dict)  # path -> (label, value) columns
    _codes: dict[tuple, np.ndarray] = field(default_factory=dict)  # (path, column, labels) -> codes
    _parquet: dict[tuple[Path, ...], ParquetSource] = field(default_factory=dict)
    _csv_read: dict[str, CsvTable] = field(default_factory=dict)  # CSV/TSV path as written -> its columns read
    _tallies: dict[str, list[Tally]] = field(default_factory=dict)  # path -> tallies of its text columns
    digests: dict[str, str] = field(
        default_factory=dict
    )  # path as written -> SHA-256 of the bytes read (one entry per part)

    def _check_written(self, raw: Path, folder: Path, span: Span) -> None:
        """The path as written stays inside the spec's folder (unless paths are allowed): not
        absolute, no ``..`` escape. The file actually opened is checked again (``open``)."""
        if self.allow_paths:
            return
        if raw.is_absolute():
            raise SpecError(
                "absolute paths are not allowed in a spec",
                span,
                "give the path relative to the spec's folder, or pass --allow-paths (allow_paths=True in Python)",
            )
        if not Path(os.path.normpath(folder / raw)).is_relative_to(folder):
            raise _leaves(span)

    def open(self, text: str, span: Span) -> tuple[Path, io.BufferedReader]:
        """Open a data file and check the file actually opened: a regular file, inside the
        spec's folder unless paths are allowed. Returns its real path and the open file."""
        if not text:
            raise SpecError("the file path is empty", span)
        raw = Path(text)
        folder = self.folder.resolve()
        self._check_written(raw, folder, span)
        target = self.folder / raw
        try:
            fd = files.open_regular(target)
        except FileNotFoundError:
            raise SpecError(f"data file '{text}' does not exist", span, missing_file_hint(text, target)) from None
        except (IsADirectoryError, files.NotRegularFile) as e:
            if isinstance(e, IsADirectoryError) or e.kind == "a folder":
                raise SpecError(f"'{text}' is a folder, not a data file", span) from None
            raise SpecError(
                f"'{text}' is {e.kind}, not a regular file", span, "give the path of a .csv, .tsv or .parquet file"
            ) from None
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

    def expect(self, text: str, labels=(), values=()) -> None:
        """Columns the spec may read from the file ``text``: ``labels`` as a variable's labels
        (text), ``values`` as numbers. The first read of a CSV/TSV file reads these (those its
        header has) and no other column, in one pass; a column asked for later that was not
        expected is read then, in one more pass."""
        want = self._expected.setdefault(text, ({}, {}))
        want[0].update(dict.fromkeys(labels))
        want[1].update(dict.fromkeys(values))

    def frame(self, text: str, span: Span, labels=()) -> pd.DataFrame:
        """The whole table of a data file or a partitioned dataset (every column), as a pandas
        DataFrame (text columns as categoricals).

        ``labels`` names the columns read as a variable's labels: in a CSV/TSV they are the
        text written (``01`` is not ``1``, ``1.0`` is not ``1``), never a number guessed from
        it; the other columns keep their guessed types (value columns are numbers). Parquet
        columns keep their stored types."""
        source = self._parquet_source(text, span)
        if source is not None:
            return to_frame(source.read(source.names, span))
        return to_frame(self._csv(text, span, None, labels))

    def columns(self, text: str, span: Span, names: list[str], labels=()) -> pd.DataFrame:
        """The named columns of a data file or dataset as a pandas DataFrame (``arrays``)."""
        return to_frame(self._arrays(text, span, names, labels))

    def arrays(self, text: str, span: Span, names: list[str], labels=()) -> dict[str, Column]:
        """The named columns of a data file or dataset as arrays (``Column``: numbers as numpy,
        text as dictionary codes); only these are read (with the columns ``expect`` named for
        a CSV). A missing column is an error naming the file and the closest column.
        ``labels``: those of ``names`` read as a variable's labels (text as written in a CSV,
        see ``frame``). The builder reads through this: no pandas object is made."""
        return self._arrays(text, span, names, labels)

    def _arrays(self, text: str, span: Span, names: list[str], labels=()) -> dict[str, Column]:
        source = self._parquet_source(text, span)
        names = list(dict.fromkeys(names))
        if source is None:
            cols = self._csv(text, span, names, labels)
            return {n: cols[n] for n in names}
        for n in names:
            if n not in source.names:
                _missing_column(n, source.names, text, span)
        return source.read(names, span)

    def _csv(self, text: str, span: Span, names: list[str] | None, labels) -> dict[str, Column]:
        """The columns ``names`` (None: every column) of a CSV/TSV file, with the columns
        expected of it, read in one pass unless already read; ``labels`` among them as text. A
        label column read earlier as guessed numbers is read again as text. Every pass must
        see the same bytes (the digest of the first)."""
        real, fh = self.open(text, span)
        with fh:
            table = self._tables.get(real)
            if table is None:
                table = self._tables[real] = CsvTable(_header(fh, _kind_of(text, span), text, span))
            header = [h.strip() for h in table.header]
            for n in names or ():
                if n not in header:
                    _missing_column(n, header, text, span)
            as_labels, as_values = self._expected.get(text, ({}, {}))
            wanted = dict.fromkeys(header if names is None else names)
            wanted.update((n, None) for n in header if n in as_labels or n in as_values)
            text_cols = set(labels) | (set(as_labels) - set(as_values))
            todo = [
                n for n in header if n in wanted and (n not in table.cols or n in text_cols and n not in table.texts)
            ]
            if todo:
                more, digest = _read(fh, text, span, [n for n in todo if n in text_cols], only=todo)
                if table.digest not in (None, digest):
                    raise SpecError(
                        f"data file '{text}' changed while it was read",
                        span,
                        "run again on a file that is not being written",
                    )
                table.digest = digest
                table.cols.update(more)
                table.cols = {n: table.cols[n] for n in header if n in table.cols}  # the header's order
                table.texts = (table.texts - set(todo)) | {n for n, c in more.items() if isinstance(c, Coded)}
            if table.digest is not None:
                self.digests[text] = table.digest
        self._csv_read[text] = table
        return table.cols

    def tally(self, text: str, span: Span, names: list[str]) -> Tally | None:
        """The records of ``text`` counted per combination of the dictionary codes of the
        columns ``names`` (``Tally``), made once per file and shared: the tally is taken over
        every column of a CSV/TSV read as text so far (the spec's label columns, read in one
        pass), so the domains and record tables of one file are marginals of one ``bincount``
        (over ``names`` alone when those are too many cells). None when a column is not text
        (numbers in a Parquet file), holds a null, or the combinations are too many
        (``TALLY_CELLS``): the caller counts row by row, and reports what is wrong there."""
        cols = self.arrays(text, span, names, labels=names)
        for t in self._tallies.get(text, ()):
            if all(t.cols.get(n) is cols[n] for n in names):
                return t
        table = self._csv_read.get(text)
        wide = dict(cols)
        if table is not None:
            wide.update((n, c) for n, c in table.cols.items() if n in table.texts and n not in cols)
        for group in (wide, cols) if len(wide) > len(cols) else (cols,):
            t = Tally.of(group)
            if t is not None:
                self._tallies.setdefault(text, []).append(t)
                return t
        return None

    def codes(self, text: str, span: Span, col: Column, var: Domain) -> np.ndarray:
        """``_codes`` of the column ``var.name`` of ``text``, computed once per domain: the
        tables of one spec read from one file share their columns' codes."""
        key = (text, var.name, tuple(var.labels))
        if key not in self._codes:
            self._codes[key] = _codes(col, var, text, span, self)
        return self._codes[key]

    def columns_of(self, text: str, span: Span) -> list[str]:
        """The column names of a data file or dataset (Parquet: from the schema, no data read)."""
        source = self._parquet_source(text, span)
        if source is not None:
            return list(source.names)
        real, fh = self.open(text, span)
        with fh:
            table = self._tables.get(real)
            header = table.header if table is not None else _header(fh, _kind_of(text, span), text, span)
        return [h.strip() for h in header]

    def row_text(self, text: str, span: Span, row: int) -> str:
        """'row N of FILE' for row ``row`` (0-based) of the long table ``text``: N counts data
        rows from 1, the header not counted (as ``apply`` and ``audit`` do); in a dataset FILE
        is the part and N counts that part's rows."""
        source = self._parquet_source(text, span)
        if source is not None:
            return source.row_text(row)
        return _row_text(text, row)

    def parts(self, text: str, span: Span) -> list[Path] | None:
        """The checked real paths of a Parquet dataset's parts (or of one Parquet file), their
        digests recorded; None for a CSV/TSV file. For an engine that reads the parts itself."""
        source = self._parquet_source(text, span)
        return None if source is None else [p.real for p in source.parts]

    def _parquet_source(self, text: str, span: Span) -> ParquetSource | None:
        """The Parquet file or dataset ``text`` names (opened, checked and digested once), or
        None for a single CSV/TSV file."""
        matched = self._dataset_paths(text, span)
        if matched is None:
            if SUFFIXES.get(Path(text).suffix.lower()) != "parquet":
                return None
            matched = [text]
        opened = [(name, *self.open(name, span)) for name in matched]
        key = tuple(real for _, real, _ in opened)
        if key in self._parquet:
            for _, _, fh in opened:
                fh.close()
        else:
            self._parquet[key] = ParquetSource.open(opened, text, span)
        source = self._parquet[key]
        for part in source.parts:
            self.digests[part.name] = part.digest
        return source

    def _dataset_paths(self, text: str, span: Span) -> list[str] | None:
        """The parts (paths relative to the spec's folder, sorted) of a folder or pattern, or
        None when ``text`` names a single file. No part matched is an error.

        A path is literal unless the spec says otherwise (docs/language.md, "From a file"): a
        name that exists as written is that file or folder, whatever its characters
        (``cnt[1].parquet``, ``survey[2024].csv``); otherwise it is a pattern only when it holds
        ``*`` or ``?``, and ``[`` and ``]`` stay literal even then."""
        if not text:
            return None
        written = self.folder / text
        if text.endswith(("/", os.sep)) or _is_dir(written):
            is_glob = False
        elif os.path.lexists(written) or not any(c in text for c in "*?"):
            return None
        else:
            is_glob = True
        folder = self.folder.resolve()
        raw = Path(text)
        self._check_written(raw, folder, span)
        pattern = _literal_brackets(text) if is_glob else glob.escape(text.rstrip("/" + os.sep)) + "/*.parquet"
        found = sorted(
            p for p in glob.glob(pattern, root_dir=self.folder, recursive=True) if not _is_dir(self.folder / p)
        )
        if not found:
            if is_glob:
                raise SpecError(f"no file matches '{text}'", span, f"looked for {self.folder / text}")
            raise SpecError(
                f"'{text.rstrip('/')}' is a folder with no .parquet files",
                span,
                "give the path of a .csv, .tsv or .parquet file, or of a folder of .parquet files (a partitioned dataset)",
            )
        out = []
        for p in found:
            name = os.path.normpath(p)  # relative to the spec's folder (absolute only with --allow-paths)
            if SUFFIXES.get(Path(name).suffix.lower()) != "parquet":
                raise SpecError(
                    f"'{name}' (matched by '{text}') is not a Parquet file",
                    span,
                    "a dataset of several files is read from .parquet parts only; narrow the pattern",
                )
            out.append(name)
        return out


@dataclass
class ParquetPart:
    name: str  # path as written (relative to the spec's folder)
    real: Path
    digest: str
    file: object  # pyarrow.parquet.ParquetFile over the open, checked file
    rows: int


@dataclass
class ParquetSource:
    """One Parquet file or a dataset of parts: read by column, concatenated in part order."""

    text: str
    parts: list[ParquetPart]
    names: list[str]  # column names (stripped), the same in every part
    raw: dict[str, str]  # stripped name -> name in the files
    offsets: np.ndarray  # first row of each part in the long table
    _cache: dict[str, Column] = field(default_factory=dict)

    @classmethod
    def open(cls, opened, text: str, span: Span) -> ParquetSource:
        import pyarrow.parquet as pq

        parts: list[ParquetPart] = []
        first_schema = None
        try:
            for name, real, fh in opened:
                where = f"'{name}'" if name == text else f"'{name}' (a part of '{text}')"
                if os.fstat(fh.fileno()).st_size == 0:
                    raise SpecError(f"data file {where} is empty", span)
                digest = hashlib.file_digest(fh, "sha256").hexdigest()
                fh.seek(0)
                try:
                    pf = pq.ParquetFile(fh)
                except Exception as e:  # noqa: BLE001 (pyarrow's errors have no common base class)
                    first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                    raise SpecError(f"cannot read {where}: not a Parquet file ({first})", span) from None
                _no_duplicate_columns(pf.schema_arrow.names, name, span)
                schema = {str(n).strip(): _kind(t) for n, t in zip(pf.schema_arrow.names, pf.schema_arrow.types)}
                if first_schema is None:
                    first_schema = (name, schema)
                elif schema != first_schema[1]:
                    raise SpecError(
                        f"the parts of '{text}' have different columns: {_schema_diff(first_schema, (name, schema))}",
                        span,
                        "write every part with the same columns and types",
                    )
                parts.append(ParquetPart(name, real, digest, pf, pf.metadata.num_rows))
        except BaseException:
            for _, _, fh in opened:
                fh.close()
            raise
        rows = np.array([p.rows for p in parts], dtype=np.int64)
        if rows.sum() == 0:
            raise SpecError(f"data file '{text}' has a header but no rows", span)
        pf0 = parts[0].file
        raw = {str(n).strip(): n for n in pf0.schema_arrow.names}
        offsets = np.concatenate([[0], np.cumsum(rows)[:-1]])
        return cls(text, parts, list(raw), raw, offsets)

    def row_text(self, row: int) -> str:
        """'row N of PART' for row ``row`` (0-based) of the long table, N counting data rows of
        the part from 1."""
        if len(self.parts) == 1:
            return _row_text(self.text, row)
        k = int(np.searchsorted(self.offsets, row, side="right")) - 1
        return _row_text(self.parts[k].name, row - int(self.offsets[k]))

    def read(self, names: list[str], span: Span) -> dict[str, Column]:
        """The named columns (``Column``s). A null in any of them is an error naming its row and
        column: a missing value is never dropped, filled or read as a label."""
        todo = [n for n in names if n not in self._cache]
        if todo:
            import pyarrow as pa
            import pyarrow.compute as pac

            try:
                tables = []
                for k, p in enumerate(self.parts):
                    tables.append(p.file.read(columns=[self.raw[n] for n in todo]))
                    _report(f"read {self.text}", k + 1, len(self.parts))
                table = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
            except Exception as e:  # noqa: BLE001 (pyarrow's errors have no common base class)
                first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                raise SpecError(f"cannot read '{self.text}': {first}", span) from None
            for n in todo:
                col = table.column(self.raw[n])
                if col.null_count:
                    raise _empty_cell(self.row_text(pac.index(pac.is_null(col), True).as_py()), n, "a null", span)
                self._cache[n] = from_arrow(col)
        return {n: self._cache[n] for n in names}


def _row_text(name: str, row: int) -> str:
    """'row N of FILE' for the 0-based data row ``row``: N counts data rows from 1."""
    return f"row {row + 1} of '{name}'"


def _empty_cell(where: str, column: str, what: str, span: Span) -> SpecError:
    """A missing value: located, never dropped, filled or guessed."""
    return SpecError(
        f"{where}: {column} is empty ({what})",
        span,
        f"give every row a value in column '{column}'; privopt reads a file as written and does not fill a missing value",
    )


def _literal_brackets(pattern: str) -> str:
    """A glob pattern whose ``[`` and ``]`` match themselves (``*``, ``?`` and ``**`` still match)."""
    return "".join("[[]" if c == "[" else "[]]" if c == "]" else c for c in pattern)


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except (OSError, ValueError):  # a name too long, a symlink loop: open() explains
        return False


def _leaves(span: Span) -> SpecError:
    return SpecError(
        "this path leaves the spec's folder",
        span,
        "keep data files beside the spec (or below it), or pass --allow-paths (allow_paths=True in Python)",
    )


def _real_path(fd: int, opened: Path) -> Path:
    """Where the open descriptor ``fd`` really points (Linux: /proc/self/fd; elsewhere the
    path's resolution, which has the check-then-open window this avoids on Linux)."""
    proc = f"/proc/self/fd/{fd}"
    if os.path.exists(proc):
        return Path(os.readlink(proc))
    return Path(os.path.realpath(opened))


@dataclass
class CsvTable:
    """The columns of one CSV/TSV file read so far (stripped names), those of them holding the
    text written (``texts``), and the SHA-256 of the bytes they were read from."""

    header: list[str]  # the header's names as written
    cols: dict[str, Column] = field(default_factory=dict)
    texts: set[str] = field(default_factory=set)
    digest: str | None = None


def _kind_of(text: str, span: Span) -> str:
    kind = SUFFIXES.get(Path(text).suffix.lower())
    if kind is None:
        raise SpecError(f"cannot tell the format of '{text}'", span, "use a .csv, .tsv or .parquet file")
    return kind


def _read(fh: io.BufferedReader, text: str, span: Span, labels=(), only=None) -> tuple[dict[str, Column], str]:
    """The file's columns (``Column``s by stripped name), and the SHA-256 of the bytes they
    were read from (recorded in results).
    In a CSV/TSV the columns named in ``labels`` are read as text; ``only``: read just these
    columns (stripped names), in the header's order."""
    kind = _kind_of(text, span)
    if os.fstat(fh.fileno()).st_size == 0:
        raise SpecError(f"data file '{text}' is empty", span)
    try:
        if kind == "parquet":
            import pyarrow.parquet as pq

            digest = hashlib.file_digest(fh, "sha256").hexdigest()
            fh.seek(0)
            table = pq.read_table(fh)
            _no_duplicate_columns(table.column_names, text, span)
            cols = {n: from_arrow(table.column(n)) for n in table.column_names}
        else:
            header = _header(fh, kind, text, span)
            fh.seek(0)
            raw = [h for h in header if h.strip() in set(labels)]
            keep = None if only is None else [h for h in header if h.strip() in set(only)]
            cols, digest = _read_text(fh, kind, text, span, raw, keep)
    except SpecError:
        raise
    except Exception as e:  # pandas/pyarrow parse errors have no common base class
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise SpecError(f"cannot read '{text}': {first}", span) from None
    if not cols or len(next(iter(cols.values()))) == 0:
        raise SpecError(f"data file '{text}' has a header but no rows", span)
    return {str(n).strip(): c for n, c in cols.items()}, digest


HEADER_BYTES = 1 << 16  # bytes read for the header (and the test for a binary file)
CSV_BLOCK = 1 << 22  # bytes pyarrow parses at a time (in parallel, one block a thread)


def _header(fh: io.BufferedReader, kind: str, text: str, span: Span) -> list[str]:
    """The header's names as written (a binary file refused, a name given twice refused);
    the file's position is left where it was."""
    first = os.pread(fh.fileno(), HEADER_BYTES, 0)
    if not first:
        raise SpecError(f"data file '{text}' is empty", span)
    if b"\x00" in first[:8192]:
        raise SpecError(f"data file '{text}' is binary, not {kind.upper()} text", span)
    sep = "\t" if kind == "tsv" else ","
    header = next(csv.reader(io.StringIO(first.decode("utf-8-sig", errors="replace")), delimiter=sep), [])
    _no_duplicate_columns(header, text, span)
    return header


class _Digest:
    """The SHA-256 of an open file's bytes and their UTF-8 check, read in a thread of its own
    while the parser reads the same open file (``_read_text``): ``CSV_BLOCK`` bytes at a time
    into one reused buffer (``os.preadv``), hashed (``hashlib`` releases the GIL on large
    buffers), an ASCII block taken as it stands and any other given to an incremental decoder,
    so a character split between two blocks is read whole; each block is reported as read
    (``READING``). The file must not change in between: its size, modification time and change
    time (``st_ctime_ns``, which no program can set back) are the same after the parse and the
    hash as before (``unchanged``), or the read is refused.
    The first bad byte is kept, not raised in the thread: ``result`` raises it, naming its
    line."""

    def __init__(self, fh: io.BufferedReader, text: str, span: Span):
        self.fd, self.text, self.span = fh.fileno(), text, span
        self.stat = os.fstat(self.fd)
        self.sha = hashlib.sha256()
        self.bad: int | None = None  # offset of the first byte that is not UTF-8
        self.split = False  # the last line ends inside a UTF-8 character
        self.error: BaseException | None = None
        self.hook = READING.get()  # read here: the thread has no context of its own
        self.worker = threading.Thread(target=self._digest, name="privopt-sha256", daemon=True)
        self.worker.start()

    def _digest(self) -> None:
        try:
            decoder = codecs.getincrementaldecoder("utf-8")()
            at, total = 0, self.stat.st_size
            block = bytearray(CSV_BLOCK)  # one buffer, read into again and again
            while n := os.preadv(self.fd, [block], at):
                data = block if n == len(block) else block[:n]
                self.sha.update(data)
                if self.bad is None:
                    pending = len(decoder.getstate()[0])
                    if pending or not data.isascii():
                        try:
                            decoder.decode(data)
                        except UnicodeDecodeError as e:
                            self.bad = at - pending + e.start
                at += n
                if self.hook is not None:
                    self.hook(f"read {self.text}", at, total)
            if self.bad is None:
                try:
                    decoder.decode(b"", final=True)
                except UnicodeDecodeError:
                    self.split = True
        except BaseException as e:  # noqa: BLE001 (raised again by ``result``, in the caller's thread)
            self.error = e

    def unchanged(self) -> None:
        """The file's size, modification and change times are those it had when the hash began."""
        now = os.fstat(self.fd)
        was = self.stat
        if (now.st_size, now.st_mtime_ns, now.st_ctime_ns) != (was.st_size, was.st_mtime_ns, was.st_ctime_ns):
            raise SpecError(
                f"data file '{self.text}' changed while it was read",
                self.span,
                "run again on a file that is not being written",
            )

    def result(self) -> str:
        """After the parse: the SHA-256 of the file's bytes; a bad byte, a file changed while
        read, or a read error raised here."""
        self.worker.join()
        if self.error is not None:
            raise self.error
        self.unchanged()
        if self.split:
            raise SpecError(
                f"the last line of '{self.text}' ends inside a UTF-8 character",
                self.span,
                "save the data file as UTF-8",
            )
        if self.bad is None:
            return self.sha.hexdigest()
        lines, at = 0, 0
        while at < self.bad:  # the error's line: newlines before the byte, counted a block at a time
            block = os.pread(self.fd, min(CSV_BLOCK, self.bad - at), at)
            lines, at = lines + block.count(b"\n"), at + len(block)
        byte = os.pread(self.fd, 1, self.bad)[0]
        raise SpecError(
            f"line {lines + 1} of '{self.text}': byte 0x{byte:02x} is not UTF-8",
            self.span,
            "save the data file as UTF-8",
        )


def _native(fh: io.BufferedReader):
    """What pyarrow reads for the open file ``fh``: on Linux its descriptor's path in /proc,
    which opens the same file (never what its name may point to now) and lets pyarrow read it
    without Python; elsewhere the Python file itself."""
    proc = f"/proc/self/fd/{fh.fileno()}"
    return proc if os.path.exists(proc) else fh


def _read_text(
    fh: io.BufferedReader, kind: str, text: str, span: Span, labels=(), only=None
) -> tuple[dict[str, Column], str]:
    """A CSV/TSV file's columns (``Column``s) and the SHA-256 of its bytes: pyarrow's
    multithreaded reader parses blocks in parallel, only the ``only`` columns (names as in the
    header; None: every column), while a thread hashes and checks the same open file
    (``_Digest``). Each integer column is kept in
    the smallest integer type that holds it, so 2 million rows of small labels cost 2 MB a
    column (docs/performance.md, "Data path"). A file pyarrow cannot read (a ragged row, a row
    longer than a block) is read by pandas, whose errors say what is wrong. Neither reads any
    text as missing: ``NA``, ``null``, ``None`` are labels like any other, and an empty cell is
    kept as empty text (an error where read). The ``labels`` columns are read as text,
    dictionary-encoded (a few labels: int8 codes a row), never as guessed numbers."""
    import pyarrow as pa
    import pyarrow.csv as pc

    sep = "\t" if kind == "tsv" else ","
    digest = _Digest(fh, text, span)
    try:
        table = pc.read_csv(
            _native(fh),
            read_options=pc.ReadOptions(block_size=CSV_BLOCK),
            parse_options=pc.ParseOptions(delimiter=sep),
            # text labels as dictionary codes; no text means "missing" ("NA" is North America, and
            # an empty cell is an error where it is read, never a silent gap)
            convert_options=pc.ConvertOptions(
                auto_dict_encode=True,
                null_values=[],
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
                column_types={n: pa.dictionary(pa.int32(), pa.string()) for n in labels},
                include_columns=list(only) if only is not None else [],
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError) as e:
        sha = digest.result()  # a byte that is not UTF-8 is the error to report, wherever the parse stopped
        fh.seek(0)
        if "columns, got" in str(e):  # a row with more or fewer fields than the header
            _ragged_row(fh, sep, text, span)
        import pandas as pd

        df = pd.read_csv(
            fh,
            sep=sep,
            keep_default_na=False,
            na_filter=False,
            dtype={n: str for n in labels},
            usecols=list(only) if only is not None else None,
        )
        digest.unchanged()
        return {n: from_pandas(df[n]) for n in df.columns}, sha
    finally:
        digest.worker.join()  # the thread ends with the read, whatever happened
    sha = digest.result()
    return {n: from_arrow(table.column(n)) for n in table.column_names}, sha


def _ragged_row(fh: io.BufferedReader, sep: str, text: str, span: Span) -> None:
    """The error for the first data row whose number of fields differs from the header's
    (rows counted from 1 after the header, blank lines not counted, as pyarrow skips them).
    Only on this error path is the file walked row by row (by the csv module's C reader);
    pandas would take a longer row's first fields as an index and shift every column."""
    wrapper = io.TextIOWrapper(fh, encoding="utf-8-sig", newline="")
    try:
        rows = csv.reader(wrapper, delimiter=sep, strict=True)
        header = next(rows, [])
        n = 0
        for fields in rows:
            if not fields:
                continue
            n += 1
            if len(fields) != len(header):
                raise SpecError(
                    f"row {n} of '{text}' has {len(fields)} field(s), the header has {len(header)}",
                    span,
                    "give every row one field per column of the header (a field holding the separator is quoted)",
                )
    except csv.Error:  # a quote left open: pandas' error says where
        pass
    finally:
        wrapper.detach()  # the file stays open for the caller
        fh.seek(0)


@dataclass(frozen=True)
class Coded:
    """A column of text kept as a dictionary: row ``r`` holds ``labels[codes[r]]`` (code -1: a
    null). Each distinct text is held once (``labels``, as written: an object array) and each
    row as one small integer, so a lookup costs one pass over the distinct texts and one
    ``take`` over the rows, never a Python string per record."""

    codes: np.ndarray  # signed integers, the smallest type holding -1 .. len(labels) - 1
    labels: np.ndarray  # object array of the distinct values (str when read from a CSV)

    def __len__(self) -> int:
        return int(self.codes.size)

    def cell(self, row: int):
        """The value of row ``row`` as written (None for a null)."""
        code = int(self.codes[row])
        return None if code < 0 else self.labels[code]

    def used(self) -> np.ndarray:
        """The labels some row holds (a dictionary may keep a label no row uses), in
        dictionary order: one ``bincount`` of the codes, no sort."""
        hits = np.bincount(self.codes.astype(np.intp) + 1, minlength=len(self.labels) + 1)[1:]
        return self.labels[hits > 0]


# A column read from a data file: numbers, booleans and dates as a numpy array, text as ``Coded``.
Column = np.ndarray | Coded

TALLY_CELLS = 1 << 22  # combinations of dictionary codes one tally counts (32 MB of int64 counts)


@dataclass(frozen=True)
class Tally:
    """Records per combination of the dictionary codes of some text columns of one file:

        counts[k_1, ..., k_m] = #{rows r : codes_i[r] = k_i for every column i},

    one ``np.bincount`` of the rows' flat index (in the smallest integer type that holds it).
    A record table over some of these columns is a marginal of it (sum over the others,
    exact in int64) with each column's labels mapped to its domain once per distinct label;
    a domain read from a file is the labels whose marginal is positive. So the rows are
    walked once per file, not once per table and once per domain."""

    cols: dict[str, Coded]
    counts: np.ndarray  # int64, one axis per column of ``cols`` (in its order), len(labels) long

    @classmethod
    def of(cls, cols: dict[str, Column]) -> Tally | None:
        """The tally of ``cols``, or None when one is not text, holds a null (code -1), or the
        combinations number more than ``TALLY_CELLS`` or a quarter of the rows (then counting
        the rows of each table saves nothing: 390,625 groups of 5 private values from 2 million
        records)."""
        if not cols or not all(isinstance(c, Coded) for c in cols.values()):
            return None
        sizes = [len(c.labels) for c in cols.values()]
        cells = math.prod(sizes)
        rows = len(next(iter(cols.values())))
        if cells > min(TALLY_CELLS, rows // 4) or any(c.codes.min() < 0 for c in cols.values()):
            return None
        dtype = np.int16 if cells <= 1 << 15 else np.int32
        codes = [c.codes for c in cols.values()]
        flat = codes[0].astype(dtype)
        for c, size in zip(codes[1:], sizes[1:]):
            flat *= size
            flat += c
        return cls(dict(cols), np.bincount(flat, minlength=cells).reshape(sizes))

    def marginal(self, names: list[str]) -> np.ndarray:
        """Records per combination of the labels of the columns ``names`` (in that order)."""
        keep = [list(self.cols).index(n) for n in names]
        m = self.counts.sum(axis=tuple(i for i in range(self.counts.ndim) if i not in keep))
        return m.transpose(np.argsort(np.argsort(keep)))

    def table(self, axes: list[Domain], text: str, span: Span) -> np.ndarray | None:
        """``count_records``' array over ``axes`` from the tally: each column's labels looked up
        in its domain once, then one weighted ``bincount`` over the combinations of labels
        (several labels may name one domain label: ``" a"`` and ``"a"``). None when a record
        holds a label outside its domain: ``count_records`` then finds its row."""
        m = self.marginal([v.name for v in axes])
        flat = np.zeros((1,) * m.ndim, dtype=np.intp)
        for i, v in enumerate(axes):  # in the order, and with the checks, of ``_codes``
            col = self.cols[v.name]
            if v.values is not None:
                _not_coerced(col, v.name, text, span, f"the numeric labels of {v.name}")
            found = _label_index(col.labels, v)
            if self.marginal([v.name])[found < 0].any():
                return None
            flat = flat * v.size + np.maximum(found, 0).reshape([-1 if k == i else 1 for k in range(m.ndim)])
        cells = math.prod(v.size for v in axes)
        return np.bincount(
            np.broadcast_to(flat, m.shape).ravel(), weights=m.astype(np.float64).ravel(), minlength=cells
        )


def _small_ints(v: np.ndarray) -> np.ndarray:
    """Integers in the smallest type that holds them: 2 million small labels cost 2 MB."""
    if v.size:
        lo, hi = int(v.min()), int(v.max())
        for small in (np.int8, np.int16, np.int32):
            info = np.iinfo(small)
            if info.min <= lo and hi <= info.max:
                return v.astype(small)
    return v


def from_arrow(col) -> Column:
    """A pyarrow column (chunked or not) as a ``Column``: integers without nulls in the smallest
    type that holds them, other numbers as float64, text (a dictionary, its chunks' dictionaries
    unified, or plain strings, encoded here) as ``Coded``, booleans and dates as numpy arrays.
    Any other type goes through pandas (``from_pandas``)."""
    import pyarrow as pa

    t = col.type
    if pa.types.is_integer(t) and col.null_count == 0:
        return _small_ints(_numpy(col))
    if pa.types.is_floating(t) and col.null_count == 0:
        return _numpy(col).astype(np.float64, copy=False)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        col = col.dictionary_encode()
        t = col.type
    if pa.types.is_dictionary(t) and (pa.types.is_string(t.value_type) or pa.types.is_large_string(t.value_type)):
        if col.null_count == 0:
            return _unified(col.chunks if isinstance(col, pa.ChunkedArray) else [col])
        whole = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col  # dictionaries unified
        if isinstance(whole, pa.ChunkedArray):  # no chunks: an empty column
            whole = pa.array([], type=t)
        labels = np.array(whole.dictionary.to_pylist() + [None], dtype=object)[:-1]  # a 1-D array of str
        indices = whole.indices
        codes = _numpy(indices if indices.null_count == 0 else indices.fill_null(-1))
        return Coded(codes.astype(_code_type(len(labels)), copy=False), labels)
    if (pa.types.is_boolean(t) or pa.types.is_temporal(t)) and col.null_count == 0:
        v = col.to_numpy(zero_copy_only=False) if isinstance(col, pa.Array) else col.to_numpy()
        if v.dtype.kind in "bmM":
            return v
    return from_pandas(col.to_pandas())


def _unified(chunks) -> Coded:
    """Dictionary chunks without nulls (a CSV read a block at a time: each block has its own
    dictionary) as one ``Coded``: each chunk's few texts given their index among all the
    chunks' texts (first seen first, as pyarrow's unification orders them), then one ``take``
    of the chunk's indices straight into the small codes, with no int32 copy of the column."""
    index: dict[str, int] = {}
    luts = [[index.setdefault(w, len(index)) for w in c.dictionary.to_pylist()] for c in chunks]
    labels = np.array([*index, None], dtype=object)[:-1]  # a 1-D array of str
    dtype = _code_type(len(labels))
    codes = np.empty(sum(len(c) for c in chunks), dtype=dtype)
    at = 0
    for c, lut in zip(chunks, luts):
        if not len(c):
            continue
        width = np.dtype(f"i{c.indices.type.bit_width // 8}")
        raw = np.frombuffer(c.indices.buffers()[1], dtype=width, count=len(c), offset=c.indices.offset * width.itemsize)
        np.take(np.array(lut, dtype=dtype), raw, out=codes[at : at + len(c)], mode="clip")  # in range: no copy
        at += len(c)
    return Coded(codes, labels)


def _numpy(col) -> np.ndarray:
    """A pyarrow column of integers or floats without nulls as a numpy array, copied from its
    chunks' data buffers (pyarrow's own ``to_numpy`` imports pandas, about 0.7 s, wherever
    pandas is installed; the data path has no other use for it)."""
    import pyarrow as pa

    t = col.type
    dtype = np.dtype(
        f"{'f' if pa.types.is_floating(t) else 'i' if pa.types.is_signed_integer(t) else 'u'}{t.bit_width // 8}"
    )
    chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    parts = [np.frombuffer(c.buffers()[1], dtype=dtype, count=len(c), offset=c.offset * dtype.itemsize) for c in chunks]
    return np.concatenate(parts) if parts else np.empty(0, dtype=dtype)


def from_pandas(col) -> Column:
    """A pandas Series (or anything ``from_arrow`` does not take) as a ``Column``: a
    categorical keeps its codes, numbers, booleans and dates stay numpy arrays, anything else
    (text, mixed objects, nullable types) is factorized once into ``Coded`` (a null: -1)."""
    if isinstance(col, (np.ndarray, Coded)):
        return col
    import pandas as pd

    col = pd.Series(col) if not isinstance(col, pd.Series) else col
    if isinstance(col.dtype, pd.CategoricalDtype):
        labels = np.asarray(col.cat.categories, dtype=object)
        return Coded(col.cat.codes.to_numpy().astype(_code_type(len(labels)), copy=False), labels)
    if isinstance(col.dtype, np.dtype) and col.dtype.kind in "iufbmM":
        v = col.to_numpy()
        return _small_ints(v) if v.dtype.kind in "iu" else v
    codes, uniques = pd.factorize(col, use_na_sentinel=True)
    labels = np.asarray(uniques, dtype=object)
    return Coded(codes.astype(_code_type(len(labels)), copy=False), labels)


def to_frame(cols: dict[str, Column]) -> pd.DataFrame:
    """Columns as a pandas DataFrame (``Coded`` as categoricals), for callers that want one."""
    import pandas as pd

    return pd.DataFrame(
        {
            n: pd.Categorical.from_codes(c.codes, categories=pd.Index(c.labels, dtype=object))
            if isinstance(c, Coded)
            else c
            for n, c in cols.items()
        },
        copy=False,
    )


def _rows(cols: dict[str, Column]) -> int:
    return len(next(iter(cols.values()))) if cols else 0


def _decode(data: bytes, text: str, span: Span, lines_before: int = 0) -> str:
    """The bytes as UTF-8 text; a bad byte is an error naming its line (``lines_before``: lines
    in the file before ``data``)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        row = lines_before + data.count(b"\n", 0, e.start) + 1
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


def _missing_column(name: str, columns: list, text: str, span: Span):
    import difflib

    close = difflib.get_close_matches(name, list(columns), n=1)
    hint = f"did you mean '{close[0]}'?" if close else f"its columns are: {', '.join(map(str, columns))}"
    raise SpecError(f"'{text}' has no column '{name}'", span, hint)


def _kind(t) -> str:
    """A column type's kind, for comparing the parts of a dataset (int8 and int64 agree)."""
    import pyarrow as pa

    if pa.types.is_dictionary(t):
        t = t.value_type
    for kind, test in (
        ("integers", pa.types.is_integer),
        ("numbers", pa.types.is_floating),
        ("text", pa.types.is_string),
        ("text", pa.types.is_large_string),
        ("booleans", pa.types.is_boolean),
        ("dates or times", pa.types.is_temporal),
    ):
        if test(t):
            return kind
    return str(t)


def _schema_diff(a: tuple[str, dict], b: tuple[str, dict]) -> str:
    (na, sa), (nb, sb) = a, b
    only_a = [c for c in sa if c not in sb]
    only_b = [c for c in sb if c not in sa]
    if only_a or only_b:
        col, has, lacks = (only_a[0], na, nb) if only_a else (only_b[0], nb, na)
        return f"'{has}' has a column '{col}' that '{lacks}' lacks"
    col = next(c for c in sa if sa[c] != sb[c])
    return f"column '{col}' holds {sa[col]} in '{na}' but {sb[col]} in '{nb}'"


def _codes(col: Column, var: Domain, text: str, span: Span, files: DataFiles | None = None) -> np.ndarray:
    """Index of each row's label in ``var``'s domain; an error names the first unknown label.
    ``col`` may be a pandas Series (the Dask engine's rows): it is made a ``Column`` first."""
    col = from_pandas(col)
    if var.values is not None:
        _not_coerced(col, var.name, text, span, f"the numeric labels of {var.name}")
    lut = _integer_lookup(col, var)
    if lut is not None:  # integer labels in an integer column: one table lookup per row
        lo, table = lut
        inside = (col >= lo) & (col < lo + table.size)
        codes = np.where(inside, table[np.where(inside, col - lo, 0)], np.int8(-1)).astype(table.dtype, copy=False)
    elif var.values is not None and isinstance(col, np.ndarray) and col.dtype.kind in "iuf":
        vals = col.astype(float, copy=False)
        order = np.argsort(var.values, kind="stable")
        sorted_vals = var.values[order]
        pos = np.clip(np.searchsorted(sorted_vals, vals), 0, len(sorted_vals) - 1)
        ok = np.isclose(sorted_vals[pos], vals, rtol=0, atol=1e-12)
        codes = np.where(ok, order[pos], -1)
    else:  # text: each distinct label looked up once, then one take over the rows (a null, -1, finds none)
        coded = col if isinstance(col, Coded) else _coded_numbers(col)
        lut = np.append(_label_index(coded.labels, var), -1).astype(_code_type(var.size))  # a null: -1, the last
        codes = lut[coded.codes]
    bad = np.flatnonzero(codes < 0)
    if bad.size:
        row = int(bad[0])
        where = files.row_text(text, span, row) if files else _row_text(text, row)
        cell = col.cell(row) if isinstance(col, Coded) else col[row]
        if _is_missing(cell):
            raise _empty_cell(where, var.name, "an empty cell" if isinstance(cell, str) else "a null", span)
        raise SpecError(
            f"{where}: {var.name} = '{cell}' is not in its domain"
            + (f" ({bad.size} rows have unknown labels)" if bad.size > 1 else ""),
            span,
            f"{var.name} takes {{{', '.join(var.labels[:12])}{', ...' if var.size > 12 else ''}}}",
        )
    return codes


def _label_index(labels: np.ndarray, var: Domain) -> np.ndarray:
    """Each distinct text's index in ``var``'s domain (surrounding spaces ignored), -1 where
    it is none of its labels."""
    index = {label: k for k, label in enumerate(var.labels)}
    return np.array([index.get(str(v).strip(), -1) for v in labels], dtype=np.int64)


def _coded_numbers(col: np.ndarray) -> Coded:
    """A column of numbers (or booleans, dates) matched as text: its distinct values, each
    written as numpy writes it (``1``, ``1.5``, ``True``), and each row's index among them."""
    uniq, inverse = np.unique(col, return_inverse=True)
    return Coded(inverse.reshape(-1).astype(np.int64), np.array([str(v) for v in uniq], dtype=object))


def _is_missing(cell) -> bool:
    """An empty text cell or a null (None, NaN in a column of text: a column of numbers holds
    no null, a null was refused when it was read, and NaN there is the text ``nan`` written)."""
    if isinstance(cell, str):
        return cell.strip() == ""
    return cell is None or (isinstance(cell, float) and math.isnan(cell))


MAX_TABLE_CELLS = 1 << 28  # cells of one table read from a file (2 GiB of float64)
LOOKUP_MAX = 1 << 20  # integer labels spanning at most this many values are looked up in a table


def _integer_lookup(col: Column, var: Domain):
    """(lowest label, table: label - lowest -> code, -1 where no label) when ``var``'s labels
    are integers and ``col`` holds integers, spanning at most ``LOOKUP_MAX`` values; else None.
    The codes come out in the smallest integer type that holds them (int8 for a few labels):
    2 million rows cost 2 MB a column, not 16 MB of floats and 16 MB of int64 codes."""
    values = var.values
    if values is None or not isinstance(col, np.ndarray) or col.dtype.kind not in "iu":
        return None
    if not np.all(values == np.round(values)) or not np.all(np.abs(values) < 2.0**53):
        return None
    ints = values.astype(np.int64)
    lo, hi = int(ints.min()), int(ints.max())
    if hi - lo >= LOOKUP_MAX:
        return None
    dtype = _code_type(var.size)
    table = np.full(hi - lo + 1, -1, dtype=dtype)
    table[ints - lo] = np.arange(var.size, dtype=dtype)
    return lo, table


def _code_type(size: int) -> type:
    """The smallest signed integer type holding the codes -1 .. size - 1."""
    return np.int8 if size < 127 else np.int16 if size < 32767 else np.int32


def _not_coerced(col: Column, name: str, text: str, span: Span, wanted: str) -> None:
    """Booleans, dates and durations are not numbers: refuse them instead of reading 0/1 or
    nanoseconds since 1970 (a column of objects: its first 1,000 distinct values tested)."""
    import datetime

    kind = col.dtype.kind if isinstance(col, np.ndarray) else "O"
    found = {"b": "booleans", "M": "dates or times", "m": "durations"}.get(kind)
    if found is None and isinstance(col, Coded):
        objects = (bool, np.bool_, datetime.date, datetime.time, datetime.timedelta)
        if any(isinstance(v, objects) for v in col.labels[:1000]):
            found = "booleans or dates"
    if found:
        raise SpecError(
            f"column '{name}' of '{text}' holds {found}, not {wanted}", span, f"store {wanted} in column '{name}'"
        )


def _numbers(col: Column) -> np.ndarray:
    """A value column as float64; text that is not a number becomes NaN (an error where read).
    Text is parsed once per distinct label (pandas' ``to_numeric``: only on this path)."""
    if isinstance(col, np.ndarray):
        return col.astype(np.float64, copy=False)
    import pandas as pd

    parsed = pd.to_numeric(pd.Series(col.labels, dtype=object), errors="coerce").to_numpy(dtype=float)
    return np.append(parsed, np.nan)[col.codes]


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
    shape = tuple(v.size for v in axes)
    cells = _cells(axes, span)
    cols = files.arrays(text, span, [v.name for v in axes] + [value_column], labels=[v.name for v in axes])
    flat = _flat_index(files, cols, axes, text, span)
    raw = cols[value_column]
    _not_coerced(raw, value_column, text, span, "numbers")
    values = _numbers(raw)
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        row = int(bad[0])
        where = files.row_text(text, span, row)
        cell = raw.cell(row) if isinstance(raw, Coded) else raw[row]
        if _is_missing(cell) and isinstance(raw, Coded):
            raise _empty_cell(where, value_column, "an empty cell" if isinstance(cell, str) else "a null", span)
        raise SpecError(
            f"{where}: {value_column} = '{cell}' is not a number", span, f"column '{value_column}' holds finite numbers"
        )
    size = cells
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


def _cells(axes: list[Domain], span: Span) -> int:
    """The number of cells of a table over ``axes``, checked before any memory is allocated."""
    cells = math.prod(v.size for v in axes)
    if cells > MAX_TABLE_CELLS:
        raise SpecError(
            f"a table over {', '.join(v.name for v in axes)} has {cells:,} cells, more than the {MAX_TABLE_CELLS:,} privopt holds",
            span,
            "use variables with fewer labels",
        )
    return cells


def _flat_index(files: DataFiles, cols: dict[str, Column], axes: list[Domain], text: str, span: Span) -> np.ndarray:
    """Each row's cell in a table over ``axes`` (C order), built one axis at a time as
    np.ravel_multi_index would: one code column alive at once, not one per axis."""
    flat = np.zeros(_rows(cols), dtype=np.int64)
    for v in axes:
        flat *= v.size
        flat += files.codes(text, span, cols[v.name], v)
    return flat


def count_records(files: DataFiles, text: str, span: Span, axes: list[Domain]) -> np.ndarray:
    """Records per combination of labels: a file of one row per record (person, applicant)
    gives the array ``n[c] = #{rows r : labels(r) = c}`` over ``axes`` (float64; zero where no
    record has the combination). Vectorized: text columns are counted once per file
    (``DataFiles.tally``) and each table is a marginal of that count, its labels looked up once
    per distinct text; other columns' labels are looked up once (``_codes``) and the cells
    counted with one ``np.bincount``. A label outside a domain, an empty cell or a null is an
    error naming its row, never a dropped record."""
    shape = tuple(v.size for v in axes)
    cells = _cells(axes, span)
    tally = files.tally(text, span, [v.name for v in axes])
    counted = tally.table(axes, text, span) if tally is not None else None
    if counted is not None:
        return counted.reshape(shape)
    cols = files.arrays(text, span, [v.name for v in axes], labels=[v.name for v in axes])
    flat = _flat_index(files, cols, axes, text, span)
    return np.bincount(flat, minlength=cells).astype(np.float64).reshape(shape)


def distinct_labels(files: DataFiles, text: str, span: Span, column: str) -> tuple[str, ...]:
    """Sorted distinct values of a column (numerically when they are all numbers). An empty
    cell is an error naming its row: a domain is read as written, never with a gap dropped."""
    col = files.arrays(text, span, [column], labels=[column])[column]
    tally = files.tally(text, span, [column]) if isinstance(col, Coded) else None
    if tally is not None:  # no null; the labels some record holds, from the file's one count
        held = col.labels[tally.marginal([column]) > 0]
        if not any(_is_missing(v) for v in held):
            return _sorted_labels(held)
    if isinstance(col, Coded):
        blank = np.array([_is_missing(v) for v in col.labels], dtype=bool)  # each distinct label once
        empty = np.append(blank, True)[col.codes]  # a null's code, -1, takes the last entry
        if empty.any():
            row = int(np.flatnonzero(empty)[0])
            cell = col.cell(row)
            raise _empty_cell(
                files.row_text(text, span, row), column, "an empty cell" if isinstance(cell, str) else "a null", span
            )
    return labels_of(col)


def labels_of(col: Column) -> tuple[str, ...]:
    """The sorted distinct labels of a column without missing values, as a domain read from a
    file has them. A column of numbers (Parquet) gives each number's shortest text, sorted by
    value. A column of text gives each label as written (surrounding spaces ignored), sorted by
    value when every label is a number in the spec's syntax (``2`` before ``10``; ``01`` and
    ``1`` are two labels, in that order), else as text. ``col`` may be a pandas Series."""
    col = from_pandas(col)
    if isinstance(col, np.ndarray) and col.dtype.kind in "iuf":
        return tuple(_fmt_number(v) for v in np.unique(col))
    return _sorted_labels(col.used() if isinstance(col, Coded) else _coded_numbers(col).labels)


def _sorted_labels(uniq) -> tuple[str, ...]:
    """Distinct values as a domain's labels (``labels_of``): stripped, sorted by value when all
    are numbers in the spec's syntax, else as text."""
    labels = set(str(v).strip() for v in uniq)
    numbers = {lab: parse_number(lab) for lab in labels}
    if labels and all(x is not None and math.isfinite(x) for x in numbers.values()):
        return tuple(sorted(labels, key=lambda lab: (numbers[lab], lab)))
    return tuple(sorted(labels))


def _fmt_number(v) -> str:
    f = float(v)
    return str(int(f)) if f.is_integer() else repr(f)
