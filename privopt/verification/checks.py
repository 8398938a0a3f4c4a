"""A check, and a verdict as the fold of checks (issue 20, item 5).

A ``Check`` is one recomputed comparison ``measured <= allowed``: its ``name`` names the set or
atom checked (``budget 'ldp(S -> Y) <= 1'``, ``simplex rows``, ``objective tv``), ``margin`` is
``allowed - measured`` (>= 0 when it holds; negative, -inf or NaN when it does not: every
comparison fails on NaN), and ``detail`` is the sentence privopt prints for it (the failure
text when it fails).

A ``Verdict`` is the fold of a program's checks, in the order of the program: every
constraint, then the objective, then the certificate. It passes when every check does, and
carries the values the checks recomputed (``values``: the numbers a result's
``verification`` reports).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..records import Record


class Check(Record):
    name: str
    passed: bool
    margin: float
    detail: str


def compare(name: str, measured: float, allowed: float, failure: str, held: str = "") -> Check:
    """``measured <= allowed`` (False on NaN), with margin ``allowed - measured``; ``detail`` is
    ``failure`` when it fails, else ``held`` (or "<measured> <= <allowed>")."""
    ok = bool(measured <= allowed)
    margin = allowed - measured if not (math.isnan(measured) or math.isnan(allowed)) else math.nan
    return Check(name, ok, float(margin), failure if not ok else (held or f"{measured + 0.0:.3g} <= {allowed:.3g}"))


def condition(name: str, holds: bool, failure: str, held: str = "holds") -> Check:
    """A condition with no magnitude (finite cells, a symmetric channel): margin 0 when it
    holds, -inf when it does not."""
    return Check(name, bool(holds), 0.0 if holds else -math.inf, held if holds else failure)


@dataclass
class Verdict:
    """The checks of a point, in order, and the values they recomputed."""

    checks: list[Check] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]

    @property
    def failures(self) -> list[str]:
        """The failure texts, in the order of the checks."""
        return [c.detail for c in self.checks if not c.passed]


def fold(*parts: Iterable[Check] | Verdict) -> Verdict:
    """One verdict from parts in order (constraints, then the objective, then the
    certificate): their checks concatenated, their values merged (a later part's value wins)."""
    out = Verdict()
    for part in parts:
        if isinstance(part, Verdict):
            out.checks.extend(part.checks)
            out.values.update(part.values)
        else:
            out.checks.extend(part)
    return out
