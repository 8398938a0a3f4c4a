"""Rendering user-derived text (titles, labels, file names, source excerpts) for a terminal.

A spec is untrusted input: its title or a label may hold escape sequences (an OSC 52 clipboard
write, a screen clear), bidirectional overrides that reorder what the reader sees, or Rich
markup (``[b]F[/b]``). Every piece of user text privopt prints passes through ``visible``
(plain output) or ``markup`` (inside a Rich markup string), so it reaches the terminal as the
characters that were written, never as instructions to the terminal.

* ``visible(text)``: control characters (C0, DEL, C1), line and paragraph separators and the
  bidi controls become visible escapes (``\\x1b``, ``\\n``, ``\\u202e``); a backslash stays one
  backslash; everything else, including non-ASCII letters, is kept.
* ``visible_lines(text)``: the same, keeping the line breaks of a multi-line message.
* ``markup(text)``: ``visible`` and then Rich's markup escape, for text placed inside a
  string printed with markup on.
* ``clip(line, col, width)``: a window of a long line around a 1-based column, with ``...``
  where it was cut, and the column of the same character inside the window (caret excerpts
  of a 5 MB line stay one screen wide).

Numbers are printed by ``fmt`` (6 significant digits), ``fmt12`` (12: objectives, params) and
``sci`` (2, scientific: gaps, violations), and tables by ``print_table``, which never cuts a
cell (every command and every result section lays its tables out through it).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from rich.markup import escape as _rich_escape

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

# C0 controls (tab kept), DEL, C1 controls, and the Unicode format characters that change how
# text is displayed: line/paragraph separators, bidi embeddings/overrides/isolates, and marks.
_UNSAFE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\x1b": "\\x1b"}


def _escape_char(m: re.Match[str]) -> str:
    ch = m.group(0)
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: object) -> str:
    """``text`` with every control or display-changing character shown as an escape."""
    return _UNSAFE.sub(_escape_char, str(text))


def visible_lines(text: object) -> str:
    """``visible`` applied line by line: a multi-line message keeps its line breaks."""
    return "\n".join(visible(line) for line in str(text).split("\n"))


def markup(text: object) -> str:
    """``visible(text)``, escaped for use inside a Rich markup string."""
    return _rich_escape(visible(text))


def clip(line: str, col: int, width: int = 100) -> tuple[str, int]:
    """A window of at most about ``width`` characters of ``line`` around the 1-based column
    ``col``: (the window, with "..." marking each cut end, and the column of the same
    character inside it)."""
    if len(line) <= width:
        return line, col
    start = max(0, min(col - 1 - width // 2, len(line) - width))
    end = start + width
    head = "..." if start > 0 else ""
    tail = "..." if end < len(line) else ""
    return head + line[start:end] + tail, col - start + len(head)


def fmt(x) -> str:
    """A number to 6 significant digits (1.94865e-19 stays 1.94865e-19); "-" for None or NaN;
    anything else as its text."""
    if x is None:
        return "-"
    try:
        xf = float(x)
    except (TypeError, ValueError):
        return str(x)
    return "-" if xf != xf else f"{xf:.6g}"


def fmt12(x) -> str:
    """``x`` to 12 significant digits (an objective, a param); "-" for None or NaN."""
    return "-" if x is None or x != x else f"{x:.12g}"


def sci(x) -> str:
    """``x`` in scientific notation to 2 significant digits (a gap, a violation); "-" for None or NaN."""
    return "-" if x is None or x != x else f"{x:.1e}"


def print_table(t: Table, console: Console, names: list[str] | None = None) -> None:
    """Print ``t`` whole at the console's width W, never cutting a cell (rich's own layout cuts a
    cell that does not fit with "…", so 1.94865e-19 read as 1.94...). With, for each column,
    ``lo`` the width of its longest word (a number is one word) and ``hi`` of its longest line:

    1. as a table, when the columns fit at ``hi``;
    2. as a table with cells wrapped at spaces, when they fit at ``lo``: each column gets ``lo``
       plus a share of the room left in proportion to ``hi - lo``, so no word or number is
       ever broken;
    3. the same without borders or cell padding, when that fits;
    4. else as one block per row, ``header: value`` on a line each (the vertical layout), the
       headers being ``names`` when given (markup, one per column).
    """
    from rich import box
    from rich.measure import Measurement

    wide = console.options.update_width(1_000_000)
    lo, hi = [], []
    for col in t.columns:
        col.overflow = "fold"  # never reached (no column is narrower than its longest word)
        sizes = [Measurement.get(console, wide, c) for c in (col.header, *col.cells)]
        lo.append(max(m.minimum for m in sizes))
        hi.append(max(m.maximum for m in sizes))

    def laid_out() -> bool:
        frame = Measurement.get(console, wide, t).maximum - sum(hi)  # borders and padding
        room = console.width - frame - sum(lo)
        if frame + sum(hi) <= console.width:
            return True
        if room < 0:
            return False
        slack = [h - m for h, m in zip(hi, lo)]
        for col, m, sl in zip(t.columns, lo, slack):
            col.width = m + room * sl // sum(slack)
        return True

    if not laid_out():
        t.box, t.show_edge, t.padding, t.pad_edge = box.SIMPLE_HEAD, False, (0, 1), False
        if not laid_out():
            _print_records(t, console, names)
            return
    console.print(t)


def _print_records(t: Table, console: Console, names: list[str] | None) -> None:
    """``t`` in the vertical layout: its title, then per row a numbered block of ``header: value``
    lines, wrapped at spaces."""
    if t.title:
        console.print(t.title, style="italic", soft_wrap=False)
    headers = names or [" ".join(str(c.header).split()) for c in t.columns]
    columns = [list(c.cells) for c in t.columns]
    for i in range(t.row_count):
        for k, (header, cells) in enumerate(zip(headers, columns)):
            lead = f"{i + 1:>3}. " if k == 0 else "     "
            console.print(f"{lead}{header}: {cells[i] if i < len(cells) else ''}", soft_wrap=False)
    if t.row_count == 0:
        console.print("  (no rows)")
