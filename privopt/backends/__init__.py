"""Backends. ``get_backend(name, solver)`` returns an instance or raises ``UsageError``;
``pick(needs, solver)`` names the default backend for a program's needs.

A backend whose package is missing or broken is listed by ``backend_status`` with the reason;
it never stops the others.
"""

from __future__ import annotations

from ..errors import UsageError, did_you_mean
from .base import BACKENDS, CAPABILITIES, Backend, CanonicalProgram, LinearProgram, LPSolution
from .cvxpy import CvxpyBackend
from .highs import HighsBackend
from .pyomo import PyomoBackend
from .scipy import ScipyBackend

BACKENDS.update(
    {
        "highs": HighsBackend,
        "scipy": ScipyBackend,
        "cvxpy": CvxpyBackend,
        "pyomo": PyomoBackend,
    }
)


def get_backend(name: str, solver: str | None = None, check: bool = True) -> Backend:
    """The named backend, ready to use; ``UsageError`` if unknown, misconfigured or unavailable.
    ``check=False`` leaves out the availability check (which imports the backend's package): for
    the default backend of a plan a closed form answers, which names it and does not use it."""
    try:
        cls = BACKENDS[name]
    except KeyError:
        raise UsageError(
            f"unknown backend '{name}'{did_you_mean(name, BACKENDS)}; available: {', '.join(BACKENDS)}"
        ) from None
    if solver is not None and not cls.solvers:
        raise UsageError(
            f"an inner solver (--solver, solver=) applies to backends with inner solvers (cvxpy), not '{name}'"
        )
    backend = cls(solver)
    ok, why = backend.available() if check else (True, "")
    if not ok:
        raise UsageError(f"backend '{backend.label}' is unavailable here: {why}")
    return backend


def all_backends() -> list[Backend]:
    """One instance per backend and inner solver (unavailable ones included)."""
    out: list[Backend] = []
    for cls in BACKENDS.values():
        out += [cls(s) for s in cls.solvers] if cls.solvers else [cls()]
    return out


def pick(needs: frozenset[str], solver: str | None = None) -> tuple[str, str | None]:
    """(backend name, inner solver) that solves a program needing ``needs``
    (``CanonicalProgram.needs``) by default, as cvxpy's ``pick_default_solver`` picks by
    problem form:

    * an LP or a MILP: highs (its simplex and branch and cut; ``solver`` passes through, so a
      solver named with highs is refused as before);
    * a quadratic objective or cones, no integers: cvxpy with CLARABEL (an interior-point
      conic solver; HiGHS 1.15's QP solver calls some bounded shaped-noise QPs unbounded,
      docs/backends.md);
    * integers with a quadratic objective or second-order cones: cvxpy with SCIP (branch and
      bound over cones; HiGHS takes no cones, CLARABEL no integers), when pyscipopt imports;
      else a ``UsageError`` saying so and what to install. No backend here takes integers
      with PSD cones."""
    needs = frozenset(needs)
    if unknown := needs - set(CAPABILITIES):
        raise ValueError(f"unknown needs {sorted(unknown)}; known: {', '.join(CAPABILITIES)}")
    if needs <= {"integer"}:
        return "highs", solver
    if "integer" not in needs:
        return "cvxpy", solver or "CLARABEL"
    has = " and ".join(CAPABILITIES[k] for k in CAPABILITIES if k in needs)
    if "psd" in needs:
        raise UsageError(
            f"this program has {has}: no backend here solves PSD cones with integers "
            "(SCIP takes second-order cones, not PSD ones); fix the integer choices and solve each program"
        )
    try:
        import pyscipopt  # noqa: F401
    except Exception as e:  # a broken install raises more than ImportError
        raise UsageError(
            f"this program has {has}: HiGHS takes integers but no cones or quadratic objective with them, and CLARABEL "
            f"cones but no integers; SCIP takes both, through cvxpy, but pyscipopt cannot be imported here "
            f"({type(e).__name__}: {e}); install it: pip install pyscipopt"
        ) from None
    return "cvxpy", solver or "SCIP"


__all__ = [
    "Backend",
    "CanonicalProgram",
    "LinearProgram",
    "LPSolution",
    "BACKENDS",
    "get_backend",
    "all_backends",
    "pick",
]
