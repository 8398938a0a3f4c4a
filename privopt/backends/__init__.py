"""LP backends. ``get_backend(name, solver)`` returns an instance or raises ``UsageError``.

A backend whose package is missing or broken is listed by ``backend_status`` with the reason;
it never stops the others.
"""

from __future__ import annotations

from ..errors import UsageError, did_you_mean
from .base import Backend, LinearProgram, LPSolution
from .cvxpy import CvxpyBackend
from .highs import HighsBackend
from .pyomo import PyomoBackend
from .scipy import ScipyBackend

BACKENDS: dict[str, type[Backend]] = {
    "highs": HighsBackend,
    "scipy": ScipyBackend,
    "cvxpy": CvxpyBackend,
    "pyomo": PyomoBackend,
}


def get_backend(name: str, solver: str | None = None) -> Backend:
    """The named backend, ready to use; ``UsageError`` if unknown, misconfigured or unavailable."""
    try:
        cls = BACKENDS[name]
    except KeyError:
        raise UsageError(f"unknown backend '{name}'{did_you_mean(name, BACKENDS)}; available: {', '.join(BACKENDS)}") from None
    if solver is not None and not cls.solvers:
        raise UsageError(f"an inner solver (--solver, solver=) applies to backends with inner solvers (cvxpy), not '{name}'")
    backend = cls(solver)
    ok, why = backend.available()
    if not ok:
        raise UsageError(f"backend '{backend.label}' is unavailable here: {why}")
    return backend


def all_backends() -> list[Backend]:
    """One instance per backend and inner solver (unavailable ones included)."""
    out: list[Backend] = []
    for cls in BACKENDS.values():
        out += [cls(s) for s in cls.solvers] if cls.solvers else [cls()]
    return out


__all__ = ["Backend", "LinearProgram", "LPSolution", "BACKENDS", "get_backend", "all_backends"]
