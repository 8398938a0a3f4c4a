"""The plan of a solve: one recognizer (a theorem answers), or one chain of reductions ending
in a method and a backend. ``privopt explain`` prints it; ``pipeline.solve`` runs it.

A **recognizer** is a closed form with the conditions of its theorem: ``accepts(problem)``
returns a ``Match`` (truthy, with what it read) or a ``Match`` that is falsy with the reason it
does not apply, and ``solve(problem, match)`` answers without a solver.

A **reduction** rewrites a program into a simpler one and maps the answer back (cvxpy's
``reductions/reduction.py``; MathOptInterface's bridges): ``accepts(problem)``, ``apply(problem)
-> (program, inverse_data)``, ``invert(solution, inverse_data)``. A ``Chain`` applies its
reductions in order and inverts in reverse.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..records import Record

STEP_KINDS = ("recognizer", "reduction", "method", "backend")


class Step(Record):
    """One step of a plan: ``name`` (e.g. "theorem-1", "budget-rows", "lfp", "highs"), its
    ``kind`` (one of ``STEP_KINDS``) and ``why`` it is taken (a sentence for the user)."""

    name: str
    kind: str
    why: str

    def __post_init__(self):
        if self.kind not in STEP_KINDS:
            raise ValueError(f"unknown step kind '{self.kind}'; kinds: {', '.join(STEP_KINDS)}")

    def to_dict(self) -> dict[str, str]:
        return {"step": self.name, "kind": self.kind, "why": self.why}


class Match(Record):
    """Whether a recognizer or reduction applies: truthy when it does (``data`` holds what it
    read from the program), falsy with ``why`` it does not."""

    ok: bool
    why: str
    data: Any = field(default=None, repr=False)

    def __bool__(self) -> bool:
        return self.ok

    @classmethod
    def yes(cls, why: str, data: Any = None) -> Match:
        return cls(True, why, data)

    @classmethod
    def no(cls, why: str) -> Match:
        return cls(False, why)


@dataclass
class Outcome:
    """What a route returns to the driver (``pipeline/driver.py``): the point (in the block
    kind's own form: a (G, m, A) table, a design vector, variances by noise variable, a
    channel), the optimality statement and its evidence, the method's claimed objective (or
    None), the certificate when the route alone proves it (else the block kind makes it after
    verification), the stats, the backend label (None: no solver), the solve time and
    ``context``, whatever the block kind needs after the solve (e.g. the lowered program)."""

    point: Any
    optimality: str
    backend: str | None = None
    claimed: float | None = None
    evidence: dict | None = None
    certificate: Any = None  # core.certificate.Certificate
    stats: dict = field(default_factory=dict)
    solve_s: float = 0.0
    context: Any = None


@runtime_checkable
class Method(Protocol):
    """A method (``--method``) that runs a plan's chain: ``run`` applies the route's
    reductions to the block kind's ``prepared`` program, solves on the route's backend and maps
    the answer back (``route.chain.invert``) into the block kind's form."""

    name: str

    def run(self, problem, prepared, route, time_limit, workers, progress) -> Outcome: ...


@runtime_checkable
class Recognizer(Protocol):
    """A closed form: the theorem's name, the method it implements, its conditions and answer."""

    name: str  # e.g. "theorem-1"
    method: str  # the method name users give (--method), e.g. "closed-form"

    def accepts(self, problem) -> Match: ...

    def solve(self, problem, match: Match) -> Any: ...

    def answer(self, problem, match: Match, prepared, backend, time_limit) -> Outcome:
        """The closed form's answer as the driver takes it: the point in the block kind's own
        form, with the theorem's certificate (``prepared``: what the kind's ``prepare`` made)."""
        ...


@runtime_checkable
class Reduction(Protocol):
    """A rewrite with its inverse (cvxpy's ``Reduction``)."""

    name: str

    def accepts(self, problem) -> Match: ...

    def apply(self, problem) -> tuple[Any, Any]: ...

    def invert(self, solution, inverse_data) -> Any: ...


class Chain(Record):
    """Reductions applied in order; ``invert`` maps a solution back through them in reverse."""

    reductions: tuple[Reduction, ...]

    def accepts(self, problem) -> Match:
        for r in self.reductions:
            m = r.accepts(problem)
            if not m:
                return Match.no(f"{r.name}: {m.why}")
            problem, _ = r.apply(problem)
        return Match.yes(" -> ".join(r.name for r in self.reductions))

    def apply(self, problem) -> tuple[Any, list]:
        inverse = []
        for r in self.reductions:
            problem, data = r.apply(problem)
            inverse.append(data)
        return problem, inverse

    def invert(self, solution, inverse_data: list) -> Any:
        for r, data in zip(reversed(self.reductions), reversed(inverse_data)):
            solution = r.invert(solution, data)
        return solution


class Plan(Record):
    """What ``explain --json`` prints: the problem class, the steps, and the census of the
    canonical program the chain ends in (None when a recognizer answers)."""

    problem_class: str
    steps: tuple[Step, ...]
    canonical: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"class": self.problem_class, "plan": [s.to_dict() for s in self.steps], "canonical": self.canonical}

    def text_lines(self) -> list[str]:
        width = max((len(s.kind) for s in self.steps), default=0)
        lines = [f"{k + 1}. {s.kind:<{width}}  {s.name}: {s.why}" for k, s in enumerate(self.steps)]
        if self.canonical is not None:
            cons = ", ".join(f"{n:,} {k}" for k, n in self.canonical["constraints"].items() if n)
            lines.append(
                f"canonical program: {self.canonical['variables']:,} variables"
                + (f" ({self.canonical['integers']:,} integer)" if self.canonical.get("integers") else "")
                + f", {self.canonical['objective']} objective"
                + (f"; sets: {cons}" if cons else "")
            )
        return lines
