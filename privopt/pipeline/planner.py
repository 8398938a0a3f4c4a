"""The plan of a solve (``core.plan.Plan``): one recognizer, or one chain of reductions ending
in a method and a backend; and the ``Route`` the driver runs.

* closed forms (``closedform.registry``): the recognizer alone, or for Prop. 2 the recognizer
  and the backend its transport LP runs on;
* lfp (a max-confidence ratio over a design table): ``qid-groups``, ``dinkelbach`` (the ratio
  program as a sequence of LPs, ``methods.lfp.solve_lfp``), the method, the backend;
* lp / qp (an affine or convex quadratic objective over a design table): ``budget-rows``
  (envelope or pairwise rows, per backend), the method, the backend;
* conic (Gaussian-DP sets over noise variances): ``gaussian-calibration`` (soc / psd cones),
  the method, the backend;
* barrier (the same program, diagonal noise, chosen by size: ``classify.analyse_conic``):
  ``gaussian-calibration``, the method (privopt's own Newton method; no solver);
* global (a nonconvex objective): the method (privopt's own; no solver).

The census (``canonical``) is the canonical program's the chain ends in, None when a
recognizer answers. ``needs`` is what that program asks of a backend (``backends.pick``
chooses the default one from it), read off the chain's reductions without building it.
"""

from __future__ import annotations

from typing import Any

from ..closedform.registry import recognize
from ..core.plan import Chain, Match, Plan, Step
from ..lower.reductions import BudgetRows, Dinkelbach, GaussianCalibration, QIDGroups, chain_needs
from ..records import Record

# the methods whose route ends in a canonical program a backend solves, in the order a program's
# default backend is read from the first that applies (closed forms and the global method need none)
SOLVER_METHODS = ("lfp", "lp", "qp", "conic")


class Route(Record):
    """What the driver runs: a ``recognizer`` with its ``match``, or a ``chain`` of reductions
    (possibly empty) ending in ``method``; ``backend`` the Backend object (None: no solver)."""

    method: str
    backend: Any = None
    recognizer: Any = None
    match: Match | None = None
    chain: Chain = Chain(())
    label: str | None = None  # the resolved backend's label, used or not (an infeasible Result names it)

    def steps(self, why_method: str, why_backend: str) -> tuple[Step, ...]:
        if self.recognizer is not None:
            out = [Step(self.recognizer.name, "recognizer", f"{self.recognizer.cites}: {self.match.why}")]
        else:
            out = [Step(r.name, "reduction", r.why) for r in self.chain.reductions]
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
    if method not in SOLVER_METHODS:  # the global and barrier methods: privopt's own, no solver
        return Route(method, chain=chain(problem, method), label=label)
    return Route(method, be, chain=chain(problem, method, be), label=label)


def chain(problem, method: str, be=None) -> Chain:
    """The reductions ``method`` applies to ``problem`` before it solves (none for the global
    method, privopt's own); ``be`` decides whether budgets become pairwise rows."""
    if method == "lfp":
        return Chain((QIDGroups(), Dinkelbach()))
    if method in ("lp", "qp"):
        from ..methods.lp import use_pairwise  # an LP's route only (issue 23, goal 1: a closed form does not import it)

        pairwise = be is not None and use_pairwise(problem, be)
        return Chain((BudgetRows(pairwise, len(problem.budgets), problem.objective.curvature == "convex"),))
    if method in ("conic", "barrier"):
        return Chain((GaussianCalibration(any(n.correlated for n in problem.noise.noises)),))
    return Chain(())


def needs(problem, analysis) -> frozenset[str] | None:
    """What the program's canonical form asks of a backend (``CanonicalProgram.needs``' words),
    from the chain of the first method of ``SOLVER_METHODS`` that applies; None when none does
    (a program only a closed form or the global method solves needs no solver)."""
    method = next((m for m in SOLVER_METHODS if m in analysis.applicable), None)
    return None if method is None else chain_needs(chain(problem, method))


def census(problem, r: Route) -> dict | None:
    """The canonical program's census (``CanonicalProgram.census``) of the route's chain; None
    when a recognizer answers."""
    if r.recognizer is not None:
        return None
    if r.method == "global":
        from ..methods.obfuscation import census as global_census

        return global_census(problem.obfuscation.symmetric)
    if r.method == "barrier":
        from ..methods.barrier import census as barrier_census

        return barrier_census(problem.noise)
    from ..methods.canonical import canonical_program

    # lfp (its first Dinkelbach step), lp / qp (with the route's pairwise choice) and conic
    pairwise = bool(r.chain.reductions) and getattr(r.chain.reductions[0], "pairwise", False)
    return canonical_program(problem, r.method, pairwise=pairwise).census()


def make_plan(problem, analysis, r: Route, backend_why: str, with_census: bool = True) -> Plan:
    """The plan of route ``r``: its steps with why each is taken, and (``with_census``) the census."""
    why_method = analysis.applicable.get(r.method, analysis.why)
    return Plan(analysis.problem_class, r.steps(why_method, backend_why), census(problem, r) if with_census else None)
