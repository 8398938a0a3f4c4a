"""The exceptions privopt raises.

Every error privopt raises on purpose derives from one root, so callers can catch
``PrivoptError`` and know it was a reported condition, not a bug::

    PrivoptError
    ├── SpecError (ValueError)         the spec text or its data is wrong; carries a source span
    │   └── UnsupportedError           well-formed, but no method privopt has can solve it
    ├── UsageError (ValueError)        a bad command-line or API argument (unknown method, bad --set)
    ├── InfeasibleError                the problem has no feasible point; says which group and bound
    └── SolverError (RuntimeError)     a solver stopped without a usable answer
        └── VerificationError          a returned point failed privopt's own independent check

Messages say what to change, not only what went wrong (the style of httpx and attrs).
"""

from __future__ import annotations

from typing import Protocol

from .render import visible

__all__ = [
    "did_you_mean",
    "PrivoptError",
    "SpecError",
    "UnsupportedError",
    "UsageError",
    "InfeasibleError",
    "SolverError",
    "VerificationError",
]


def did_you_mean(name, options) -> str:
    """``"; did you mean 'highs'?"`` for a misspelt ``name`` among ``options`` (difflib's closest
    match), or "" when none is close: the tail of an "unknown NAME" message."""
    import difflib

    close = difflib.get_close_matches(str(name), [str(o) for o in options], n=1)
    return f"; did you mean '{close[0]}'?" if close else ""


class Located(Protocol):
    """Where an error points: what a span of spec text (``privopt.language.source.Span``)
    offers. Stated here so the lowest layer need not import the language layer."""

    def location(self) -> str: ...  # "FILE:LINE:COL"

    def excerpt(self) -> str: ...  # the source line and a caret under the spot


class PrivoptError(Exception):
    """Root of every error privopt raises deliberately."""


class SpecError(PrivoptError, ValueError):
    """A problem with the spec: its syntax, its meaning, or a data file it names.

    ``span`` locates the offending text; ``hint`` says what to change. ``str(err)`` is
    the full report: ``FILE:LINE:COL: error: ...``, the source line, a caret under the
    spot, and the hint. An error about the spec as a whole (no objective, a file that cannot
    be read) has no span but names the file: ``FILE: error: ...``.
    """

    def __init__(self, message: str, span: Located | None = None, hint: str | None = None, file: str | None = None):
        super().__init__(message)
        self.message = message
        self.span = span
        self.hint = hint
        self.file = file

    def __str__(self) -> str:
        # message and hint may quote labels, names or paths from the spec: shown as escapes
        message = visible(self.message)
        if self.span is None:
            text = f"{visible(self.file)}: error: {message}" if self.file else f"error: {message}"
        else:
            text = f"{self.span.location()}: error: {message}\n{self.span.excerpt()}"
        if self.hint:
            text += f"\nhint: {visible(self.hint)}"
        return text


class UnsupportedError(SpecError):
    """The spec is well-formed but describes a program no privopt method can solve."""


class UsageError(PrivoptError, ValueError):
    """A bad argument to the command line or the Python API. ``str(err)`` shows control
    characters of the argument quoted in it as escapes."""

    def __str__(self) -> str:
        return visible(super().__str__())


class InfeasibleError(PrivoptError):
    """No table satisfies the constraints. ``reasons`` lists one plain sentence per cause."""

    def __init__(self, message: str, reasons: list[str] | None = None):
        super().__init__(message)
        self.reasons = list(reasons or [])

    def __str__(self) -> str:
        lines = [self.args[0]] + [f"  - {r}" for r in self.reasons]
        return "\n".join(lines)


class SolverError(PrivoptError, RuntimeError):
    """A solver ended without an answer privopt can use (error, limit, numerical trouble)."""


class VerificationError(SolverError):
    """A solver's point failed privopt's independent recomputation of the constraints."""
