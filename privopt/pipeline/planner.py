"""The plan of a solve (``core.plan.Plan``): one recognizer, or one chain of reductions ending
in a method and a backend; and the ``Route`` the driver runs.

* closed forms (``closedform.registry``): the recognizer alone, or for Prop. 2 the recognizer
  and the backend its transport LP runs on;
* transparency reports, lfp: ``qid-groups`` (a ``Reduction``), ``dinkelbach`` (the method's
  steps: the ratio program as a sequence of LPs, ``methods.lfp.solve_lfp``), the method, the
  backend;
* mechanisms, lp / qp: ``budget-rows`` (envelope or pairwise rows, per backend), the method,
  the backend;
* noise placement, conic: ``gaussian-calibration`` (soc / psd cones), the method, the backend;
* obfuscation, global: the method (privopt's own; no solver).

The census (``canonical``) is the canonical program's the chain ends in, None when a
recognizer answers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..closedform.registry import recognize
from ..core.plan import Chain, Match, Plan, Step
from ..lower.reductions import BudgetRows, GaussianCalibration, QIDGroups
from ..methods.lp import use_pairwise

DINKELBACH = Step(
    "dinkelbach",
    "reduction",
    "the max-confidence ratio program as a sequence of LPs: Dinkelbach-type steps (Crouzeix, Ferland & Schaible "
    "1985) in a proven bracket per group, one block LP over the open groups of a chunk per step (Sec. 6)",
)


@dataclass(frozen=True)
class Route:
    """What the driver runs: a ``recognizer`` with its ``match``, or a ``chain`` of reductions
    (possibly empty) ending in ``method``; ``backend`` the Backend object (None: no solver)."""

    method: str
    backend: Any = None
    recognizer: Any = None
    match: Match | None = None
    chain: Chain = Chain(())
    extra: tuple[Step, ...] = ()  # named steps over existing code, after the chain's reductions
    label: str | None = None  # the resolved backend's label, used or not (an infeasible Result names it)

    def steps(self, why_method: str, why_backend: str) -> tuple[Step, ...]:
        if self.recognizer is not None:
            out = [Step(self.recognizer.name, "recognizer", f"{self.recognizer.cites}: {self.match.why}")]
        else:
            out = [Step(r.name, "reduction", r.why) for r in self.chain.reductions]
            out += list(self.extra)
            out.append(Step(self.method, "method", why_method))
        if self.backend is not None:
            out.append(Step(self.backend.label, "backend", why_backend))
        return tuple(out)


def route(problem, method: str, be) -> Route:
    """The route of ``method`` (already checked to apply) on the Backend ``be`` (or None)."""
    label = be.label if be is not None else None
    rec, match = recognize(problem, method)
    if rec is not None:
        return Route(method, be if method == "reduced-lp" else None, rec, match, label=label)
    if method == "lfp":
        return Route(method, be, chain=Chain((QIDGroups(),)), extra=(DINKELBACH,), label=label)
    if method in ("lp", "qp"):
        return Route(
            method, be, chain=Chain((BudgetRows(use_pairwise(problem, be), len(problem.budgets)),)), label=label
        )
    if method == "conic":
        correlated = any(n.correlated for n in problem.noise.noises)
        return Route(method, be, chain=Chain((GaussianCalibration(correlated),)), label=label)
    return Route(method, label=label)  # the global method: privopt's own, no solver


def census(problem, r: Route) -> dict | None:
    """The canonical program's census (``CanonicalProgram.census``) of the route's chain; None
    when a recognizer answers."""
    if r.recognizer is not None:
        return None
    if r.method == "global":
        from ..methods.obfuscation import census as global_census

        return global_census(problem.obfuscation.symmetric)
    from ..methods.canonical import canonical_program

    # lfp (its first Dinkelbach step), lp / qp (with the route's pairwise choice) and conic
    pairwise = bool(r.chain.reductions) and getattr(r.chain.reductions[0], "pairwise", False)
    return canonical_program(problem, r.method, pairwise=pairwise).census()


def make_plan(problem, analysis, r: Route, backend_why: str, with_census: bool = True) -> Plan:
    """The plan of route ``r``: its steps with why each is taken, and (``with_census``) the census."""
    why_method = analysis.applicable.get(r.method, analysis.why)
    return Plan(analysis.problem_class, r.steps(why_method, backend_why), census(problem, r) if with_census else None)
