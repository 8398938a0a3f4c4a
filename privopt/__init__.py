"""privopt: optimization modelling for privacy mechanism design.

    >>> import privopt
    >>> problem = privopt.load("specs/atr_table4.priv")
    >>> result = problem.solve()
    >>> result.beta, result.table("Dt")
"""

from .api import load, loads, solve
from .errors import (
    InfeasibleError,
    PrivoptError,
    SolverError,
    SpecError,
    UnsupportedError,
    UsageError,
    VerificationError,
)
from .ir.model import Problem
from .results import Result

__version__ = "0.1.0"

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
