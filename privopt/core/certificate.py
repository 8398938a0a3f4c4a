"""The one shape in which every route records why its answer is optimal (issue 20, item 5;
``privopt verify`` re-checks it, issue 22).

``kind`` is one of:

* ``theorem``: a closed form; ``data`` names the theorem and the conditions checked;
* ``dual-bound``: an LP/QP/conic optimum with a proven bound from dual multipliers (weak
  duality); ``data`` holds the multipliers or how they were made feasible;
* ``lfp-brackets``: the generalized linear-fractional method; a proven bracket per group;
* ``global-bound``: a nonconvex program's global method; its proven lower bound;
* ``enumeration``: a program with few binaries (a design choice) solved as one continuous program
  per assignment (``lower/choice.py``); ``data`` records every assignment (pruned by a row over
  binaries only, proven infeasible by its solver, or solved with its optimum) and the chosen one;
  ``bound`` is the best branch's optimum, the optimum of the whole program;
* ``composite``: several blocks, each with its own certificate (building blocks, issue 21).

``bound`` is the proven bound on the objective (a lower bound when minimizing, ``side``
"lower"; an upper bound when maximizing) and ``gap`` the relative distance of the answer from
it; both None for a theorem, whose answer is exact.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from ..records import Record

CERTIFICATE_KINDS = ("theorem", "dual-bound", "lfp-brackets", "global-bound", "enumeration", "composite")


class Certificate(Record):
    kind: str
    claim: str  # what it proves, one sentence for the user
    bound: float | None = None
    side: str | None = None  # "lower" | "upper" | None
    gap: float | None = None  # relative
    data: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        if self.kind not in CERTIFICATE_KINDS:
            raise ValueError(f"unknown certificate kind '{self.kind}'; kinds: {', '.join(CERTIFICATE_KINDS)}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "claim": self.claim,
            "bound": self.bound,
            "side": self.side,
            "gap": self.gap,
            "data": self.data,
        }
