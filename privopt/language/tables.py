"""Reading an inline table body ``{ ... }`` into an array over named axes.

Two layouts (docs/language.md, "Tables"):

* matrix: a header line with the labels of the column variable, then one row per combination
  of the row-key variables, written ``key labels: value value ...``;
* entries: ``labels: value`` pairs separated by commas or newlines, the labels naming every
  axis in order (``{ s1: 0.3, s2: 0.7 }`` for a one-variable table).

Every error points at the offending cell, label or row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ..errors import SpecError
from ..records import Record
from ..render import visible
from .source import Source, Span


class Domain(Protocol):
    """What the table and data-file readers need of a variable: its name and labels (the
    model's ``Variable`` is one). The readers stay below the model layer."""

    @property
    def name(self) -> str: ...

    @property
    def labels(self) -> tuple[str, ...]: ...

    @property
    def values(self) -> np.ndarray | None: ...  # the labels' numbers, when all are numeric

    @property
    def size(self) -> int: ...

    def index_of(self, text: str, value: float | None = None) -> int | None: ...


_TOKEN = re.compile(
    r"""
    (?P<comment>\#[^\n]*)
  | (?P<newline>\n)
  | (?P<space>[ \t\r\f]+)
  | (?P<string>"[^"\n]*")
  | (?P<colon>:)
  | (?P<comma>,)
  | (?P<word>[^\s:,"#{}]+)
  | (?P<brace>[{}])
  | (?P<bad>.)
    """,
    re.VERBOSE,
)
# A number as the spec language writes it (grammar.lark's NUMBER) with an optional sign: table
# cells (parse_value), --set / API param values (build.parse_param) and CLI numbers: parse_number.
NUMBER_SYNTAX = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", re.ASCII)  # ASCII digits only


@dataclass(frozen=True)
class _Tok:
    kind: str  # word | string | colon | comma
    text: str
    span: Span


class RawTable(Record):
    """Values as written: ``data`` over ``axes``; ``cell_spans[idx]`` locates each cell."""

    axes: tuple[str, ...]
    data: np.ndarray
    cell_spans: dict[tuple[int, ...], Span]


def parse_number(text: str) -> float | None:
    """``text`` as a number written in the spec language's syntax (ASCII digits, an optional
    sign; no ``_``, ``nan``, ``inf`` or hex), None if it is not one. It may be +-inf when it
    overflows: callers that need a finite value say so."""
    return float(text) if NUMBER_SYNTAX.fullmatch(text) else None


def parse_value(text: str) -> float | None:
    """A cell value: a number or a fraction ``a/b``. None if it is neither."""
    if "/" in text:
        num, _, den = text.partition("/")
        n, d = parse_number(num), parse_number(den)
        return n / d if n is not None and d is not None and d != 0 else None
    return parse_number(text)


def _lines(source: Source, start: int, body: str) -> list[list[_Tok]]:
    """Tokens of the body (without the braces), grouped by line; empty lines dropped."""
    lines: list[list[_Tok]] = [[]]
    inner = body[1:-1]
    offset = start + 1
    pos = 0
    while pos < len(inner):
        m = _TOKEN.match(inner, pos)
        assert m is not None  # the pattern covers every character ("bad" takes any one)
        kind = m.lastgroup
        if kind == "newline":
            lines.append([])
        elif kind in ("word", "string", "colon", "comma"):
            text = m.group()
            if kind == "string":
                text = text[1:-1]
            lines[-1].append(_Tok(kind, text, source.span(offset + m.start(), offset + m.end())))
        elif kind == "brace":
            raise SpecError("unexpected brace inside a table", source.span(offset + m.start()))
        elif kind == "bad":
            at = source.span(offset + m.start())
            if m.group() == '"':
                raise SpecError("this string is not closed on its line", at, 'write a label as "text" on one line')
            raise SpecError(
                f"unexpected character '{visible(m.group())}' in a table",
                at,
                "a table holds labels, numbers, ':' and ','",
            )
        pos = m.end()
    return [ln for ln in lines if ln]


def _label_index(var: Domain, tok: _Tok) -> int:
    value = parse_value(tok.text) if tok.kind == "word" else None
    idx = var.index_of(tok.text, value)
    if idx is None:
        import difflib

        close = difflib.get_close_matches(tok.text, var.labels, n=1)
        hint = f"did you mean '{close[0]}'?" if close else f"{var.name} takes {{{', '.join(var.labels)}}}"
        raise SpecError(f"label '{tok.text}' is not in the domain of {var.name}", tok.span, hint)
    return idx


def _value(tok: _Tok) -> float:
    if tok.kind != "word":
        raise SpecError(f'expected a number, found "{tok.text}"', tok.span)
    v = parse_value(tok.text)
    if v is not None and not np.isfinite(v):
        raise SpecError(
            f"{tok.text} is too large for a number (the largest is about 1.8e308)",
            tok.span,
            "use smaller counts, or rescale",
        )
    if v is None:
        percent = parse_value(tok.text[:-1]) if tok.text.endswith("%") else None
        hint = "table cells are numbers like 0.25, 3 or 1/3"
        if percent is not None:
            hint = f"table cells are numbers: write {percent / 100:g} for {tok.text}"
        raise SpecError(f"'{tok.text}' is not a number", tok.span, hint)
    return v


def read_inline(source: Source, body: str, body_span: Span, row_vars: list[Domain], col_var: Domain) -> RawTable:
    """Read a table body laid out with ``row_vars`` as row keys and ``col_var`` as columns."""
    axes_vars = row_vars + [col_var]
    shape = tuple(v.size for v in axes_vars)
    data = np.full(shape, np.nan)
    spans: dict[tuple[int, ...], Span] = {}
    lines = _lines(source, body_span.start, body)
    if not lines:
        raise SpecError("the table is empty", body_span, _layout_hint(row_vars, col_var))

    first = lines[0]
    if any(t.kind == "colon" for t in first):
        _read_entries(lines, axes_vars, data, spans)
    else:
        _read_matrix(lines, row_vars, col_var, data, spans)

    missing = np.argwhere(np.isnan(data))
    if missing.size:
        idx = tuple(missing[0])
        what = " ".join(v.labels[i] for v, i in zip(axes_vars, idx))
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        names = ", ".join(v.name for v in axes_vars)
        raise SpecError(
            f"the table has no value for ({names}) = ({what}){more}",
            body_span,
            "every combination of labels needs a value",
        )
    return RawTable(tuple(v.name for v in axes_vars), data, spans)


def _layout_hint(row_vars: list[Domain], col_var: Domain) -> str:
    keys = " ".join(v.name for v in row_vars)
    if not row_vars:
        return f"write the labels of {col_var.name} on one line and the values on the next"
    return f"write a header line with the labels of {col_var.name}, then one row '{keys}: values' per combination"


def _read_matrix(lines, row_vars, col_var, data, spans) -> None:
    header = lines[0]
    for t in header:
        if t.kind not in ("word", "string"):
            raise SpecError(f"unexpected '{t.text}' in the header line", t.span, _layout_hint(row_vars, col_var))
    cols = [_label_index(col_var, t) for t in header]
    seen: dict[int, _Tok] = {}
    for c, t in zip(cols, header):
        if c in seen:
            raise SpecError(f"column '{t.text}' appears twice in the header", t.span)
        seen[c] = t
    if len(cols) != col_var.size:
        absent = [lab for i, lab in enumerate(col_var.labels) if i not in seen]
        raise SpecError(
            f"the header lacks {col_var.name} label(s) {', '.join(absent)}",
            header[-1].span,
            f"the header lists every label of {col_var.name}: {' '.join(col_var.labels)}",
        )
    done: dict[tuple[int, ...], Span] = {}
    for line in lines[1:]:
        colon = next((i for i, t in enumerate(line) if t.kind == "colon"), None)
        if colon is None:
            if row_vars:
                raise SpecError(
                    "this row has no key",
                    line[0].span,
                    f"start the row with the {'/'.join(v.name for v in row_vars)} label(s) and ':'",
                )
            key_toks, value_toks = [], line
        else:
            key_toks, value_toks = line[:colon], line[colon + 1 :]
        if len(key_toks) != len(row_vars):
            span = key_toks[0].span.to(key_toks[-1].span) if key_toks else line[0].span
            names = " ".join(v.name for v in row_vars) or "(none)"
            raise SpecError(
                f"a row key here has {len(key_toks)} label(s); this table's rows are keyed by {names}", span
            )
        key = tuple(_label_index(v, t) for v, t in zip(row_vars, key_toks))
        row_span = line[0].span.to(line[-1].span)
        if key in done:
            raise SpecError("this row is written twice", row_span, f"the first one is at line {done[key].line}")
        done[key] = row_span
        values = [t for t in value_toks if t.kind != "comma"]
        if len(values) != len(cols):
            raise SpecError(
                f"this row has {len(values)} value(s) but the header has {len(cols)} column(s)",
                row_span,
                f"one value per {col_var.name} label: {' '.join(col_var.labels[c] for c in cols)}",
            )
        for c, t in zip(cols, values):
            data[key + (c,)] = _value(t)
            spans[key + (c,)] = t.span


def _read_entries(lines, axes_vars, data, spans) -> None:
    entries: list[list[_Tok]] = [[]]
    for line in lines:
        for t in line:
            if t.kind == "comma":
                entries.append([])
            else:
                entries[-1].append(t)
        entries.append([])
    for entry in (e for e in entries if e):
        colon = next((i for i, t in enumerate(entry) if t.kind == "colon"), None)
        if colon is None or colon != len(entry) - 2:
            raise SpecError(
                "expected 'labels: value'",
                entry[0].span.to(entry[-1].span),
                f"each entry names {' '.join(v.name for v in axes_vars)} then ':' and one value",
            )
        keys = entry[:colon]
        if len(keys) != len(axes_vars):
            raise SpecError(
                f"this entry has {len(keys)} label(s); it needs one for each of {', '.join(v.name for v in axes_vars)}",
                entry[0].span.to(entry[-1].span),
            )
        idx = tuple(_label_index(v, t) for v, t in zip(axes_vars, keys))
        if idx in spans:
            raise SpecError("this entry is written twice", entry[0].span.to(entry[-1].span))
        data[idx] = _value(entry[-1])
        spans[idx] = entry[-1].span
