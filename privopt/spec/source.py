"""Source text and spans: where in a spec file something was written.

A ``Span`` renders the ``FILE:LINE:COL`` location and a caret excerpt used by every
spec error (Lark's ``UnexpectedInput.get_context`` style, with line numbers).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Source:
    """A spec's text and where it came from (``path`` is None for in-memory text)."""

    text: str = field(repr=False)
    path: Path | None = None
    _line_starts: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        starts = [0]
        for i, ch in enumerate(self.text):
            if ch == "\n":
                starts.append(i + 1)
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

    def span(self, start: int, end: int | None = None) -> "Span":
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
        return f"{self.source.name}:{line}:{col}"

    def text(self) -> str:
        return self.source.text[self.start : self.end]

    def excerpt(self) -> str:
        """The source line with a caret run under the span (clipped to that line)."""
        line, col = self.source.line_col(self.start)
        text = self.source.line_text(line)
        end_line, end_col = self.source.line_col(self.end)
        width = (end_col - col) if end_line == line else len(text) - col + 1
        width = max(1, width)
        gutter = f"{line:>5} | "
        pad = "".join("\t" if c == "\t" else " " for c in text[: col - 1])
        return f"{gutter}{text.rstrip()}\n{' ' * 5} | {pad}{'^' * width}"

    def to(self, other: "Span") -> "Span":
        """The span covering from the start of self to the end of other."""
        return Span(self.source, min(self.start, other.start), max(self.end, other.end))
