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
"""

from __future__ import annotations

import re

from rich.markup import escape as _rich_escape

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
