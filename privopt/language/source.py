"""Source text and spans: where in a spec file something was written.

A ``Span`` renders the ``FILE:LINE:COL`` location and a caret excerpt used by every
spec error (Lark's ``UnexpectedInput.get_context`` style, with line numbers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..records import Record
from ..render import clip, visible

EXCERPT_WIDTH = 100  # characters of a long line shown around the caret


class Source(Record):
    """A spec's text and where it came from (``path`` is None for in-memory text)."""

    text: str = field(repr=False)
    path: Path | None = None
    _line_starts: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        starts = [0] + [m.end() for m in re.finditer("\n", self.text)]
        object.__setattr__(self, "_line_starts", tuple(starts))

    @property
    def name(self) -> str:
        return str(self.path) if self.path is not None else "<spec>"

    @property
    def folder(self) -> Path:
        return self.path.parent if self.path is not None else Path.cwd()

    def line_col(self, pos: int) -> tuple[int, int]:
        """1-based (line, column) of a character offset."""
        import bisect

        pos = max(0, min(pos, len(self.text)))
        line = bisect.bisect_right(self._line_starts, pos) - 1
        return line + 1, pos - self._line_starts[line] + 1

    def line_text(self, line: int) -> str:
        start = self._line_starts[line - 1]
        end = self.text.find("\n", start)
        return self.text[start:] if end < 0 else self.text[start:end]

    def span(self, start: int, end: int | None = None) -> Span:
        return Span(self, start, start + 1 if end is None or end <= start else end)


@dataclass(frozen=True)
class Span:
    """A half-open character range ``[start, end)`` in a ``Source``."""

    source: Source = field(repr=False)
    start: int
    end: int

    @property
    def line(self) -> int:
        return self.source.line_col(self.start)[0]

    @property
    def column(self) -> int:
        return self.source.line_col(self.start)[1]

    def location(self) -> str:
        line, col = self.source.line_col(self.start)
        return f"{visible(self.source.name)}:{line}:{col}"

    def text(self) -> str:
        return self.source.text[self.start : self.end]

    def excerpt(self) -> str:
        """The source line with a caret run under the span (clipped to that line).

        A long line is cut to a window around the caret (``render.clip``), and control
        characters are shown as escapes (``render.visible``); the caret counts each escape's
        width, so it stays under the character it points at."""
        line, col = self.source.line_col(self.start)
        text = self.source.line_text(line).rstrip(" \t\r")
        end_line, end_col = self.source.line_col(self.end)
        width = (end_col - col) if end_line == line else len(text) - col + 1
        window, wcol = clip(text, col, EXCERPT_WIDTH)
        head, marked = window[: wcol - 1], window[wcol - 1 : wcol - 1 + max(1, width)]
        shown_head = visible(head)
        pad = "".join("\t" if c == "\t" else " " for c in shown_head)
        carets = "^" * max(1, len(visible(marked)))
        width = max(5, len(str(line)))  # the gutter grows with the line number, the caret with it
        return f"{line:>{width}} | {visible(window)}\n{' ' * width} | {pad}{carets}"

    def to(self, other: Span) -> Span:
        """The span covering from the start of self to the end of other."""
        return Span(self.source, min(self.start, other.start), max(self.end, other.end))
