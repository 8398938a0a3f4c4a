"""``privopt apply``: draw each record's released value from the solved design table.

The math
--------
A design is a conditional table T = P(targets | given) (``problem.design``): for every cell c,
a combination of labels of the conditioning variables ``given``, the row T(. | c) is a
distribution over the (joint) labels t of the targets. ``apply`` reads one record per CSV row,
looks up the record's cell c from its conditioning columns and releases t with probability
T(t | c), independently across records:

    P(release_1 = t_1, ..., release_n = t_n | records) = prod_i T(t_i | c_i).

An ATR spec draws the outcome from ``Dt = P(decision | gender, income)``; a mechanism or an
obfuscation spec draws Y from ``M = P(Y | S, X)`` or ``P(Y | X)``. A design with several targets
is drawn jointly (one draw over the targets' label combinations, C order) and appends one column
per target.

Sampling: each row of the solved table is cleaned for sampling (entries below 0, solver noise of
order 1e-12, are clipped to 0 and the row is divided by its sum; a row off 1 by more than 1e-6
is a bug and raises), F = its cumulative sum with every entry from the last positive one on set
to exactly 1. Record i gets one uniform u_i in [0, 1) (``numpy.random.default_rng(seed)``, i.e.
PCG64 seeded through SeedSequence; ``Generator.random``, in record order) and target index
``#{j : F_c(j) <= u_i}`` (inverse-CDF), so label j is drawn with probability F(j) - F(j-1) =
T(j | c) up to float rounding, and a label of probability 0 is never drawn. The stream is
consumed in record order whatever the chunk size, so the same spec, data, seed and privopt
version give a byte-identical file.

The file
--------
RECORDS.csv is RFC 4180 CSV in UTF-8 (a leading BOM is allowed and kept): a header, one row per
record, fields separated by ``,``, a field that holds ``,``, ``"`` or a line break quoted with
``"`` and its quotes doubled; lines end in LF, CRLF or CR (a last line may have none). The file
is parsed once, vectorized over its bytes with numpy: a ``,`` or a line break outside quotes
(an even number of ``"`` before it) separates fields or records. A ``"`` that neither opens a
field nor closes one is refused (RFC 4180 has no meaning for it), so the parse is unambiguous.

FILE.csv is RECORDS.csv byte for byte (every field, quote, line ending and the BOM, unchanged)
with ``,LABEL`` inserted before each record's line ending (at the end for a last line without
one) and ``,TARGET`` after the header; a label that needs quoting is quoted. It is written to a
hidden temp file beside FILE.csv and renamed onto it (``os.replace``) at the end, so an error or
an interrupt leaves no FILE.csv and no temp file.

Interface (called by ``privopt.cli``'s ``apply``): ``check_out`` before solving, ``read_records``
before solving (bad records fail fast), ``fresh_seed`` and ``write_release`` after.
"""

from __future__ import annotations

import itertools
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import outdir
from .errors import UsageError
from .files import NotRegularFile, describe, read_regular
from .render import visible

__all__ = ["ApplyReport", "Records", "check_out", "fresh_seed", "read_records", "write_release"]

_QUOTE, _COMMA, _LF, _CR = 0x22, 0x2C, 0x0A, 0x0D
_BOM = b"\xef\xbb\xbf"
CHUNK = 1 << 17  # records per write chunk (the draw does not depend on it)
_SHOWN = 60  # characters of a bad value shown in a message
_LISTED = 20  # labels listed in a message


@dataclass(frozen=True, eq=False)
class Records:
    """RECORDS.csv, read and checked against a design: what ``write_release`` needs.

    ``data`` is the file's bytes as read (held so that a file changed while solving cannot
    make the output inconsistent). Record 0 is the header; record r >= 1 is ``row r``. Its
    fields end at ``ends[r]``, where its line ending (if any) begins: the appended field goes
    there, and everything between two such points is copied as it is. ``cells[i]`` is the flat
    index (C order over ``given``) of row i+1's conditioning labels.
    """

    path: Path
    data: bytes
    columns: tuple[str, ...]  # the header's names, unquoted
    given: tuple[str, ...]  # the design's conditioning variables (their columns are checked)
    design: str  # the design table's name
    ends: np.ndarray  # int64, one per record including the header
    cells: np.ndarray  # int64, one per data record

    @property
    def count(self) -> int:
        """Number of data records (rows after the header)."""
        return int(self.cells.size)


@dataclass(frozen=True)
class ApplyReport:
    """What ``write_release`` wrote: ``records`` rows, the ``target`` column(s) (names joined
    by ", "), drawn from the design ``table``, to ``path`` with ``seed``."""

    records: int
    target: str
    table: str
    path: Path
    seed: int


# ---------------------------------------------------------------------------- before solving


def check_out(out: Path, data: Path) -> None:
    """Before solving: ``UsageError`` if ``out``'s folder does not exist or cannot be written,
    ``out`` is a folder, or ``out`` is the same file as ``data`` (which must stay untouched)."""
    out = Path(out)
    shown = visible(out)
    outdir.check_file_target(out, "--out", "name a CSV file to write")
    same = False
    try:
        same = os.path.samefile(out, data)
    except OSError:  # one of them does not exist
        same = os.path.abspath(out) == os.path.abspath(data)
    if same:
        raise UsageError(
            f"--out {shown}: is the records file given to --data; name another file (the records are kept as they are)"
        )


def read_records(problem, data: Path) -> Records:
    """Read RECORDS.csv and check it against ``problem``'s design; raise ``UsageError`` naming
    the file, the row (``row N``, 1-based, header not counted), the column and the value.

    Checked: the file exists and is UTF-8; every ``"`` opens or closes a quoted field and every
    quoted field is closed; a header; one column per conditioning variable of the design (each
    once); no column named after a target; every row has the header's number of fields; each
    conditioning value is one of its variable's labels, compared as text."""
    design = problem.design
    if design is None:
        raise UsageError(
            f"apply needs a design table P(target | given) to draw from; {visible(problem.source_name)} is a "
            "noise-placement spec (it places Gaussian noise, no table of records -> released values)"
        )
    path = Path(data)
    name = visible(path)
    try:
        raw = read_regular(path)  # a FIFO or device is refused at once, never waited on
    except (FileNotFoundError, IsADirectoryError, NotRegularFile) as e:
        raise UsageError(f"--data {name}: {describe(e)}; name a CSV file of records") from None
    except OSError as e:
        raise UsageError(f"--data {name}: cannot read it ({describe(e)})") from None
    if not raw:
        raise UsageError(
            f"{name}: the file is empty; it needs a header naming the columns {', '.join(design.given) or '(any)'}"
        )

    buf = np.frombuffer(raw, dtype=np.uint8)
    starts, ends = _records(buf, name)  # pass 1: quotes checked, records found
    _check_utf8(raw, buf, starts, name)
    columns = _header(raw, buf, int(ends[0]))
    given = tuple(design.given)
    where = _check_header(columns, given, tuple(design.targets), name)
    cells = _cells(problem, given, where, len(columns), raw, buf, starts, ends, name)  # pass 2
    return Records(path=path, data=raw, columns=columns, given=given, design=design.name, ends=ends, cells=cells)


def fresh_seed() -> int:
    """A random seed (32 bits, from the OS's entropy), to be printed so the run can be repeated."""
    return secrets.randbits(32)


# ---------------------------------------------------------------------------- after solving


def write_release(problem, result, records: Records, out: Path, seed: int) -> ApplyReport:
    """Draw every record's target from its row of the solved design table and write FILE.csv,
    all or nothing (a temp file beside ``out``, renamed onto it; removed on any error or
    interrupt). ``result`` is ``problem.solve(...)``'s optimal result."""
    design = problem.design
    if design is None or records.design != design.name:
        raise UsageError("apply: these records were read for another problem's design")
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise UsageError(f"--seed {visible(seed)}: must be an integer >= 0")
    if result.status != "optimal" or design.name not in result.tables:
        raise UsageError(
            f"apply: no solved table {visible(design.name)} to draw from (status {visible(result.status)})"
        )
    targets = tuple(design.targets)
    cdf = _cumulative(problem, result.tables[design.name])
    appended = _appended(problem, targets)
    header_add = b"".join(b"," + _csv_field(t).encode("utf-8") for t in targets)

    out = Path(out)
    rng = np.random.default_rng(int(seed))
    try:
        outdir.write_file(out, lambda fh: _write(fh, records, rng, cdf, appended, header_add))
    except OSError as e:
        raise UsageError(f"--out {visible(out)}: cannot write it ({e.strerror or e}); nothing was written") from None
    return ApplyReport(records=records.count, target=", ".join(targets), table=design.name, path=out, seed=int(seed))


def draw(cdf: np.ndarray, cells: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Target index per record: ``#{j : cdf[cell, j] <= u}`` (inverse CDF; ``cdf``'s rows are
    non-decreasing and end in exactly 1, ``u`` in [0, 1)). Vectorized, in blocks that keep the
    comparison matrix small."""
    k = cdf.shape[1]
    out = np.empty(cells.size, dtype=np.int64)
    step = max(1, (1 << 22) // max(k, 1))
    for a in range(0, cells.size, step):
        c, v = cells[a : a + step], u[a : a + step]
        out[a : a + step] = (cdf[c] <= v[:, None]).sum(axis=1)
    return out


# ---------------------------------------------------------------------------- the table


def _cumulative(problem, table) -> np.ndarray:
    """The design table (long DataFrame, one column per axis of labels, then ``value``) as
    cumulative rows: shape (cells over ``given`` in C order, joint targets in C order)."""
    design = problem.design
    axes = tuple(design.axes)
    shape = tuple(problem.variables[a].size for a in axes)
    idx = []
    for a in axes:
        labels = problem.variables[a].labels
        col = np.asarray(table[a].astype(str))
        pos = np.asarray(_label_index(labels).get_indexer(col))
        if (pos < 0).any():
            raise RuntimeError(f"design table {design.name}: column {a} holds a label outside the variable's")
        idx.append(pos)
    arr = np.full(shape, np.nan)
    arr[tuple(idx)] = np.asarray(table["value"], dtype=float)
    n_cells = int(np.prod(shape[: len(design.given)], dtype=np.int64))
    p = arr.reshape(n_cells, -1)
    if len(table) != p.size or not np.isfinite(p).all():
        raise RuntimeError(f"design table {design.name}: not one finite value per cell")
    p = np.clip(p, 0.0, None)
    sums = p.sum(axis=1, keepdims=True)
    if (np.abs(sums - 1.0) > 1e-6).any():
        bad = int(np.argmax(np.abs(sums[:, 0] - 1.0)))
        raise RuntimeError(f"design table {design.name}: row {bad} sums to {float(sums[bad, 0])!r}, not 1")
    cdf = np.cumsum(p / sums, axis=1)
    last = p.shape[1] - 1 - np.argmax(p[:, ::-1] > 0, axis=1)  # the last positive entry of each row
    cdf[np.arange(p.shape[1])[None, :] >= last[:, None]] = 1.0
    return cdf


def _label_index(labels):
    import pandas as pd

    return pd.Index(list(labels), dtype=object)


def _csv_field(text: str) -> str:
    """``text`` as one CSV field: quoted, with quotes doubled, when it holds , " CR or LF (or
    would otherwise be misread: leading/trailing spaces are kept unquoted, as RFC 4180 does)."""
    if any(ch in text for ch in ',"\r\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


def _appended(problem, targets) -> tuple[np.ndarray, np.ndarray]:
    """For every joint target index (C order over ``targets``), the bytes appended to a record:
    ``,LABEL`` per target. Returns (padded bytes, shape (outcomes, width); lengths)."""
    sizes = tuple(problem.variables[t].size for t in targets)
    pieces = []
    for combo in np.ndindex(*sizes):
        pieces.append(
            b"".join(b"," + _csv_field(problem.variables[t].labels[i]).encode("utf-8") for t, i in zip(targets, combo))
        )
    width = max(len(p) for p in pieces)
    table = np.zeros((len(pieces), width), dtype=np.uint8)
    for i, p in enumerate(pieces):
        table[i, : len(p)] = np.frombuffer(p, dtype=np.uint8)
    return table, np.array([len(p) for p in pieces], dtype=np.int64)


# ---------------------------------------------------------------------------- writing


def _write(fh, records: Records, rng, cdf, appended, header_add: bytes) -> None:
    """Stream FILE.csv into ``fh``: the header with the target names, then the records in
    chunks of ``CHUNK``, each with its drawn labels inserted where its fields end."""
    data, ends = records.data, records.ends
    buf = np.frombuffer(data, dtype=np.uint8)
    n = records.count
    pos = int(ends[0])
    fh.write(data[:pos])
    fh.write(header_add)
    table, lengths = appended
    width = table.shape[1]
    for a in range(0, n, CHUNK):
        b = min(a + CHUNK, n)
        u = rng.random(b - a)  # the stream continues across chunks: the draw does not depend on CHUNK
        outcome = draw(cdf, records.cells[a:b], u)
        stop = int(ends[b])  # where row b's fields end
        lens = lengths[outcome]
        ins = table[outcome][np.arange(width)[None, :] < lens[:, None]]
        at = np.repeat(ends[a + 1 : b + 1] - pos, lens)
        fh.write(np.insert(buf[pos:stop], at, ins).data)
        pos = stop
    fh.write(data[pos:])


# ---------------------------------------------------------------------------- parsing


BLOCK = 1 << 24  # bytes per block of the first pass (bounds its temporary arrays)
ROWS = 1 << 18  # records per block of the second pass


def _structural(pos: np.ndarray, quotes: np.ndarray, before: int = 0) -> np.ndarray:
    """The positions in ``pos`` outside quoted fields: an even number of quotes before them
    (``quotes``, sorted, and ``before`` more quotes ahead of all of them)."""
    if pos.size == 0 or (quotes.size == 0 and before % 2 == 0):
        return pos
    return pos[((np.searchsorted(quotes, pos) + before) & 1) == 0]


def _endings(buf: np.ndarray, lf: np.ndarray, cr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) of the line endings made of the structural LFs and CRs given: CRLF, LF, or
    a CR not followed by LF; sorted by position."""
    n = buf.size
    bare = cr[(cr + 1 == n) | (buf[np.minimum(cr + 1, n - 1)] != _LF)]
    crlf = lf > 0
    crlf[crlf] = buf[lf[crlf] - 1] == _CR
    start = np.concatenate([lf - crlf, bare])
    end = np.concatenate([lf + 1, bare + 1])
    order = np.argsort(start, kind="stable")
    return start[order].astype(np.int64, copy=False), end[order].astype(np.int64, copy=False)


def _records(buf: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Pass 1, over blocks of bytes carrying the quote count: check every quote and find the
    line endings outside quotes. Returns, per record (the header first), where it starts and
    where its fields end (its line ending, or the end of the file)."""
    n = buf.size
    t_start, t_end = [], []
    before, last_quote = 0, -1
    for a in range(0, n, BLOCK):
        view = buf[a : min(a + BLOCK, n)]
        q = np.flatnonzero(view == _QUOTE) + a
        _check_quotes(buf, q, before, name)
        lf = _structural(np.flatnonzero(view == _LF) + a, q, before)
        cr = _structural(np.flatnonzero(view == _CR) + a, q, before)
        s, e = _endings(buf, lf, cr)
        t_start.append(s)
        t_end.append(e)
        if q.size:
            last_quote = int(q[-1])
        before += int(q.size)
    if before % 2:
        record, field, line = _locate(buf, last_quote)
        raise UsageError(
            f"{name}: {_where(record, line)}, field {field + 1}: a quoted field is never closed (the file ends inside it)"
        )
    t_s, t_e = np.concatenate(t_start), np.concatenate(t_end)
    tail = n > (int(t_e[-1]) if t_e.size else 0)  # a last record without a line ending
    starts = np.concatenate([[0], t_e if tail else t_e[:-1]]).astype(np.int64)
    ends = np.concatenate([t_s, [n]] if tail else [t_s]).astype(np.int64)
    return starts, ends


def _check_quotes(buf: np.ndarray, q: np.ndarray, before: int, name: str) -> None:
    """Every quote in ``q`` (``before`` quotes precede them in the file) opens a field (its
    first byte, or the second of a doubled quote) or closes one (followed by , a line ending,
    the end of the file, or the doubling quote)."""
    if q.size == 0:
        return
    n = buf.size
    opening, closing = (q[0::2], q[1::2]) if before % 2 == 0 else (q[1::2], q[0::2])
    bom = 3 if bytes(buf[:3]) == _BOM else 0
    prev = buf[np.maximum(opening - 1, 0)]
    ok_open = (opening == bom) | (prev == _COMMA) | (prev == _LF) | (prev == _CR) | (prev == _QUOTE)
    nxt = buf[np.minimum(closing + 1, n - 1)]
    ok_close = (closing + 1 == n) | (nxt == _COMMA) | (nxt == _LF) | (nxt == _CR) | (nxt == _QUOTE)
    bad_open, bad_close = opening[~ok_open], closing[~ok_close]
    if not (bad_open.size or bad_close.size):
        return
    first = min(int(x[0]) for x in (bad_open, bad_close) if x.size)
    record, field, line = _locate(buf, first)
    if bad_open.size and int(bad_open[0]) == first:
        what = 'a " inside a field that is not quoted'
    else:
        what = 'text after the closing " of a quoted field'
    raise UsageError(
        f'{name}: {_where(record, line)}, field {field + 1}: {what}; a field holding " must be quoted '
        'and its quotes doubled (RFC 4180): "5\'11""" for 5\'11"'
    )


def _locate(buf: np.ndarray, pos: int) -> tuple[int, int, int]:
    """(record index, 0 = header; field index, 0-based; line number, 1-based) of byte ``pos``,
    from the bytes before it (so it is right even when the file is broken after ``pos``). For
    error messages only: it reads the file up to ``pos`` again."""
    head = buf[:pos]
    q = np.flatnonzero(head == _QUOTE)
    lf = _structural(np.flatnonzero(head == _LF), q)
    cr = _structural(np.flatnonzero(head == _CR), q)
    _, t_end = _endings(buf, lf, cr)
    begin = int(t_end[-1]) if t_end.size else 0
    commas = _structural(np.flatnonzero(buf[begin:pos] == _COMMA) + begin, q)
    return int(t_end.size), int(commas.size), _line_at(buf, pos)


def _line_at(buf: np.ndarray, pos: int) -> int:
    """The 1-based line of byte ``pos``, counting every line break before it (LF, CRLF, CR;
    inside quotes too, as an editor does)."""
    head = buf[:pos]
    lf = int(np.count_nonzero(head == _LF))
    cr = np.flatnonzero(head == _CR)  # each before pos, so cr + 1 is a byte of the file
    bare = int(np.count_nonzero(buf[cr + 1] != _LF))
    return 1 + lf + bare


def _where(record: int, line: int) -> str:
    """``row N`` (with the line when a quoted line break makes them differ) or ``the header``."""
    if record == 0:
        return "the header" if line == 1 else f"the header (line {line})"
    return f"row {record}" if line == record + 1 else f"row {record} (line {line})"


def _check_utf8(raw: bytes, buf: np.ndarray, starts: np.ndarray, name: str) -> None:
    """UsageError at the first byte that is not UTF-8. Decoded in pieces that begin at records
    (a line ending is ASCII, so no piece splits a character); nothing decoded is kept."""
    if raw.isascii():
        return
    step = 1 << 24
    cuts = {0} | {int(starts[np.searchsorted(starts, off, side="right") - 1]) for off in range(step, len(raw), step)}
    bounds = [*sorted(cuts), len(raw)]
    view = memoryview(raw)
    for a, b in itertools.pairwise(bounds):
        try:
            str(view[a:b], "utf-8")
        except UnicodeDecodeError as e:
            pos = a + e.start
            record, field, line = _locate(buf, pos)
            raise UsageError(
                f"{name}: {_where(record, line)}, field {field + 1}: byte 0x{raw[pos]:02x} is not UTF-8; save the records as UTF-8"
            ) from None


def _unquote(field: bytes) -> str:
    """A field's text: quotes removed and doubled quotes undone; invalid UTF-8 shown escaped."""
    if field[:1] == b'"' and field[-1:] == b'"' and len(field) >= 2:
        field = field[1:-1].replace(b'""', b'"')
    return field.decode("utf-8", errors="backslashreplace")


def _header(raw: bytes, buf: np.ndarray, end: int) -> tuple[str, ...]:
    """The header's column names (``raw[:end]``), unquoted; a leading BOM is not part of the
    first name."""
    q = np.flatnonzero(buf[:end] == _QUOTE)
    commas = _structural(np.flatnonzero(buf[:end] == _COMMA), q)
    begin = len(_BOM) if raw.startswith(_BOM) else 0
    cuts = [begin - 1, *(int(c) for c in commas), end]
    return tuple(_unquote(raw[x + 1 : y]) for x, y in itertools.pairwise(cuts))


def _check_header(columns, given, targets, name) -> dict[str, int]:
    """Each conditioning variable's column (exactly once) and no target's; the column index of
    each conditioning variable."""
    present = ", ".join(visible(c) for c in columns) if any(columns) else "(none)"
    where = {}
    for var in given:
        hits = [j for j, c in enumerate(columns) if c == var]
        if not hits:
            near = [c for c in columns if c.strip().casefold() == var.casefold()]
            hint = (
                f" ({visible(repr(near[0]))} differs only in case or spaces; names are matched exactly)" if near else ""
            )
            raise UsageError(
                f"{name}: no column {var}{hint}; the design needs one column per conditioning variable "
                f"({', '.join(given)}), named after it. The header has: {present}"
            )
        if len(hits) > 1:
            raise UsageError(
                f"{name}: the header has {len(hits)} columns named {var} (columns {', '.join(str(h + 1) for h in hits)}); keep one"
            )
        where[var] = hits[0]
    for t in targets:
        if t in columns:
            raise UsageError(
                f"{name}: already has a column {t} (column {columns.index(t) + 1}), the design's target that apply "
                "appends; rename or remove it"
            )
    return where


def _cells(problem, given, where, k, raw, buf, starts, ends, name) -> np.ndarray:
    """Pass 2, over blocks of ``ROWS`` records (a record starts outside quotes, so each block
    is parsed on its own): every row has ``k`` fields; the flat cell index of each row's
    conditioning labels. UsageError at the first bad row (a wrong number of fields, or a value
    that is no label: the first in file order, counting all such values)."""
    n = int(starts.size) - 1
    shape = tuple(problem.variables[v].size for v in given)
    cells = np.zeros(n, dtype=np.int64)
    first_bad, bad_count = None, 0
    for a in range(1, n + 1, ROWS):
        b = min(a + ROWS, n + 1)
        lo, hi = int(starts[a]), int(ends[b - 1])
        seg = buf[lo:hi]
        commas = _structural(np.flatnonzero(seg == _COMMA), np.flatnonzero(seg == _QUOTE)) + lo
        st, en = starts[a:b], ends[a:b]
        first = np.searchsorted(commas, st)
        fields = np.searchsorted(commas, en) - first + 1
        ragged = np.flatnonzero(fields != k)
        if ragged.size:
            if first_bad is not None:
                break  # an earlier row holds a bad value: report it
            r = a + int(ragged[0])
            where_ = _where(r, _line_at(buf, int(starts[r])))
            if ends[r] == starts[r]:
                raise UsageError(
                    f"{name}: {where_} is a blank line; every row needs the header's {k} field(s) (remove the line)"
                )
            raise UsageError(
                f"{name}: {where_} has {int(fields[r - a])} field(s), the header has {k}; every row needs one field per column"
            )
        codes, spans = [], []
        for var in given:
            spans.append(_field_spans(where[var], k, commas, st, en, first))
            codes.append(_codes(problem.variables[var], raw, *spans[-1]))
        bad = np.zeros(b - a, dtype=bool)
        for c in codes:
            bad |= c < 0
        if bad.any():
            bad_count += int(bad.sum())
            if first_bad is None:
                i = int(np.argmax(bad))
                j = next(j for j, c in enumerate(codes) if c[i] < 0)
                fs, fe = spans[j]
                first_bad = (a + i, given[j], _unquote(raw[int(fs[i]) : int(fe[i])]))
        elif first_bad is None and codes:
            cells[a - 1 : b - 1] = np.ravel_multi_index(tuple(codes), shape)
    if first_bad is not None:
        _bad_value(problem, *first_bad, bad_count, buf, starts, name)
    return cells


def _field_spans(j, k, commas, starts, ends, first) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) byte offsets of field ``j`` (0-based, of ``k``) in each record given by
    ``starts``/``ends``, whose first separating comma is ``commas[first]``."""
    fs = starts if j == 0 else commas[first + j - 1] + 1
    fe = ends if j == k - 1 else commas[first + j]
    return fs, fe


def _codes(variable, raw: bytes, fs: np.ndarray, fe: np.ndarray) -> np.ndarray:
    """The label index of every field ``raw[fs[i]:fe[i]]``, matched as bytes against each
    label written plain (when it needs no quotes) or quoted; -1 for a value that is no label.
    Hash-based (``pyarrow.compute.index_in``) over zero-copy slices of ``raw``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    m = int(fs.size)
    if m == 0:
        return np.zeros(0, dtype=np.int64)
    # one binary array over the whole file whose even elements are the fields (odd: the gaps)
    offsets = np.empty(2 * m + 1, dtype=np.int64)
    offsets[0:-1:2] = fs
    offsets[1::2] = fe
    offsets[-1] = fe[-1]
    spans = pa.Array.from_buffers(pa.large_binary(), 2 * m, [None, pa.py_buffer(offsets), pa.py_buffer(raw)])
    values = spans.take(pa.array(np.arange(0, 2 * m, 2, dtype=np.int64)))
    forms, owner = [], []
    for i, label in enumerate(variable.labels):
        quoted = '"' + label.replace('"', '""') + '"'
        for form in [label, quoted] if _csv_field(label) == label else [quoted]:
            forms.append(form.encode("utf-8"))
            owner.append(i)
    hit = pc.index_in(values, value_set=pa.array(forms, pa.large_binary())).fill_null(-1).to_numpy(zero_copy_only=False)
    return np.where(hit >= 0, np.asarray(owner, dtype=np.int64)[np.maximum(hit, 0)], -1)


def _bad_value(problem, r, var, text, count, buf, starts, name) -> None:
    """Raise the UsageError for row ``r``'s value ``text`` of ``var``, quoting the value
    (shortened) and listing the labels, with a hint for a near miss."""
    where = _where(r, _line_at(buf, int(starts[r])))
    shown = text if len(text) <= _SHOWN else text[:_SHOWN] + "..."
    labels = list(problem.variables[var].labels)
    listed = ", ".join(labels[:_LISTED]) + (f", ... ({len(labels)} labels)" if len(labels) > _LISTED else "")
    hint = ""
    if text.strip() in labels:
        hint = " (values are matched exactly: remove the spaces)"
    elif any(text.casefold() == lab.casefold() for lab in labels):
        hint = " (values are matched exactly, case included)"
    more = f"; {count} rows have values outside the labels" if count > 1 else ""
    raise UsageError(f"{name}: {where}, column {var}: '{shown}' is not a label of {var} ({listed}){hint}{more}")
