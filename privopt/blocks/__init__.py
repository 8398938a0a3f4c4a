"""Block kinds: what a program designs, and everything about it that is not a method.

A block is one designed object of a program: a transparency report's table (``report``), a
mechanism's table (``table``), Gaussian noise variances (``noise``) or an obfuscation channel
(``channel``). A program holds one block today and several once specs combine specs (issue 21).
Its kind says how the object is prepared for the routes, cleaned of solver noise, verified
(a fold over its constraints' sets and its objective's atom, ``privopt.verification``), certified
when the route alone does not, turned into a ``Result``'s fields, and cross-checked (``routes``
for ``privopt check``). The methods that solve it are not here (``privopt.methods``, one module
per method; closed forms in ``privopt.closedform``): a kind says *what* is designed, a method
*how* a program of that shape is solved.

A block kind object has

* ``name``: the kind's word (``problem.kind``);
* ``prepare(problem)``: what every route of the block reads (the lowered instance of a
  transparency report; None elsewhere); may raise ``InfeasibleError``;
* ``clean(problem, prepared, outcome) -> Outcome``: solver noise removed;
* ``verify(problem, prepared, outcome) -> dict``: the verification (raises
  ``VerificationError`` or ``SolverError`` when the answer cannot be reported);
* ``certificate(problem, prepared, outcome, verification) -> Certificate``: when the route's
  outcome carries none;
* ``fields(problem, prepared, outcome, verification) -> dict``: the Result's block fields
  (objective, beta, groups, tables, measures, details);
* ``routes(problem, analysis, tol) -> list[Route]``: every route ``privopt check`` runs.
"""

from __future__ import annotations

import importlib

# kind -> the module that defines its ``KIND`` object (imported when first used)
MODULES = {
    "atr": "privopt.blocks.report",
    "mechanism": "privopt.blocks.table",
    "noise": "privopt.blocks.noise",
    "obfuscation": "privopt.blocks.channel",
}


def kind(name: str):
    """The block kind object called ``name`` (``KeyError`` for an unknown one)."""
    return importlib.import_module(MODULES[name]).KIND


def kind_of(problem):
    """The block kind of ``problem``'s designed object."""
    return kind(problem.kind)
