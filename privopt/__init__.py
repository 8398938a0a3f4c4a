"""privopt: optimization modelling for privacy mechanism design.

Load a spec, solve it, read the verified answer::

    import privopt

    problem = privopt.load("specs/atr_table4.priv", params={"delta": 0.95})
    result = problem.solve()            # a Result; result.infeasible is a boolean
    result.objective, result.table("Dt"), result.params, result.to_json()

docs/api.md describes every function, every field of ``Result`` and the JSON it writes.
"""

from ._version import __version__
from .api import Problem, load, loads, solve
from .errors import (
    InfeasibleError,
    PrivoptError,
    SolverError,
    SpecError,
    UnsupportedError,
    UsageError,
    VerificationError,
)
from .results import Result

__all__ = [
    "load",
    "loads",
    "solve",
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
