"""Methods: how a program of a given shape is solved, one module per method.

* ``lfp``: generalized linear-fractional programs (max-confidence ratios): Dinkelbach-type
  steps over block LPs (Chen et al. Sec. 6);
* ``lp``: linear and convex quadratic programs (methods "lp" and "qp");
* ``conic``: conic programs (second-order and PSD cones: Gaussian noise placement);
* ``barrier``: Gaussian noise placement at large sizes: Newton's method on the log barrier,
  m x m factorizations, certified by the dual point it carries;
* ``obfuscation``: the certified global method for rank-preserving obfuscation.

``runner(method)`` is the ``core.plan.Method`` object the driver runs for a plan's method;
closed forms are recognizers (``privopt.closedform``), not methods.
"""

from __future__ import annotations

import importlib

# every --method privopt has (``privopt.classify`` says which apply to a problem, and why); here, in
# a module that imports nothing, so the command line can offer them without importing a solver
METHODS = ("closed-form", "lfp", "reduced-lp", "lp", "qp", "conic", "barrier", "global")

# --method name -> the module that defines its runner (``RUNNER``)
RUNNERS = {
    "lfp": "privopt.methods.lfp",
    "lp": "privopt.methods.lp",
    "qp": "privopt.methods.lp",
    "conic": "privopt.methods.conic",
    "barrier": "privopt.methods.barrier",
    "global": "privopt.methods.obfuscation",
}


def runner(method: str):
    """The ``core.plan.Method`` that runs ``method`` (``KeyError`` for a closed form)."""
    return importlib.import_module(RUNNERS[method]).RUNNER
