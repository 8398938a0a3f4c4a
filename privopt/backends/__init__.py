"""LP/QP backends. ``get_backend(name)`` returns an instance or raises ``UsageError``."""

from __future__ import annotations

from ..errors import UsageError
from .base import Backend, LinearProgram, LPSolution
from .highs import HighsBackend

BACKENDS: dict[str, type[Backend]] = {"highs": HighsBackend}


def get_backend(name: str) -> Backend:
    try:
        backend = BACKENDS[name]()
    except KeyError:
        raise UsageError(f"unknown backend '{name}'; available: {', '.join(BACKENDS)}") from None
    ok, why = backend.available()
    if not ok:
        raise UsageError(f"backend '{name}' is unavailable here: {why}")
    return backend


__all__ = ["Backend", "LinearProgram", "LPSolution", "BACKENDS", "get_backend"]
