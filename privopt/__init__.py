"""privopt: optimization modelling for privacy mechanism design.

Load a spec, solve it, read the verified answer::

    import privopt

    problem = privopt.load("specs/atr_table4.priv", params={"delta": 0.95})
    result = problem.solve()            # a Result; result.infeasible is a boolean
    result.objective, result.table("Dt"), result.params, result.to_json()

docs/api.md describes every function, every field of ``Result`` and the JSON it writes.
"""

from ._version import __version__
from .errors import (
    InfeasibleError,
    PrivoptError,
    SolverError,
    SpecError,
    UnsupportedError,
    UsageError,
    VerificationError,
)

# imported when first used (PEP 562): ``import privopt`` (and ``privopt --help``) does not pay
# for numpy, pandas, scipy and the solvers until a spec is loaded
_LAZY = {"Problem": "api", "load": "api", "loads": "api", "solve": "api", "Result": "results", "verify": "certify"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'privopt' has no attribute '{name}'")


__all__ = [
    "load",
    "loads",
    "solve",
    "verify",
    "Problem",
    "Result",
    "PrivoptError",
    "SpecError",
    "UnsupportedError",
    "UsageError",
    "InfeasibleError",
    "SolverError",
    "VerificationError",
    "__version__",
]
