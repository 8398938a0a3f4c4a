"""The rewrites a plan chains (``core.plan.Reduction``: ``accepts / apply / invert``).

* ``QIDGroups``: a max-confidence ratio over a design table -> one block per QID group (Chen
  et al. Lemma 3: the program separates by group); ``lower.atr.lower_atr``; the inverse is the
  identity on the (G, m, A) table, which the report's block kind labels;
* ``Dinkelbach``: the per-group ratio programs -> a sequence of LPs (Dinkelbach-type steps,
  Crouzeix, Ferland & Schaible 1985; Chen et al. Sec. 6): ``apply`` hands the block instance
  to ``methods.lfp``, which builds and solves the steps' LPs; the inverse is the identity;
* ``BudgetRows``: an affine or convex quadratic objective over a design table -> an LP/QP
  whose budgets are rows (Ding et al. eq. 1, Ramon & Basu Sec. 3.3): per released value an
  upper and lower envelope, ``cond[a, y] <= u_y``, ``cond[a, y] >= l_y``, ``u_y <= e^eps l_y
  + delta / |A|`` (2|A||Y| + |Y| rows), or every pair its own row (``pairwise``: |A|^2 |Y|
  rows, for a backend that stalls on envelopes); ``lower.mechanism.lower_mechanism``. The
  inverse keeps the design's columns;
* ``GaussianCalibration``: Gaussian-DP sets over noise variances -> a conic program (Ramon &
  Basu Sec. 3.2): the calibration ``w_j^2 f_j' Sigma^-1 f_j <= Delta^2`` per input as rotated
  second-order cones ``z^2 <= u s`` (PSD blocks for correlated noise);
  ``lower.noise.lower_noise``. The inverse maps the solver's variances back to real units
  (``program.unit``).

Each ``accepts`` reads the program's structure (its objective's curvature, a design table,
its constraints' sets), never its block kind, and each says in ``why`` what it does, for the
plan (``privopt explain``). ``needs`` is what the program it ends in asks of a backend
(``CanonicalProgram.needs``' words: "quadratic", "soc", "psd"), for ``backends.pick``; a
chain's needs are the union (``chain_needs``).
"""

from __future__ import annotations

from ..core.plan import Match
from ..core.sets import GaussianDP


class QIDGroups:
    name = "qid-groups"
    why = "Lemma 3 (Chen et al.): the program separates by QID group; one block of (records x outcomes) per group"
    needs = frozenset()

    def accepts(self, problem) -> Match:
        """A max-confidence ratio (Chen et al. eq. 16) over a design table."""
        if problem.design is not None and problem.objective.curvature == "ratio":
            return Match.yes(self.why)
        return Match.no("not a max-confidence ratio over a design table")

    def apply(self, problem):
        from .atr import lower_atr

        inst = lower_atr(problem)
        return inst, inst

    def invert(self, table, inst):
        """The (G, m, A) table over the instance's groups, records and outcomes, as it is."""
        return table


class Dinkelbach:
    """The ratio program of each QID group, ``min max_a q X_a / S_a`` (Chen et al. eq. 16), as
    a sequence of LPs: at a level beta' in the group's proven bracket, ``min t s.t. q X_a -
    beta' S_a <= w_a t`` (one block LP over the open groups of a chunk per step, Sec. 6); a
    step with ``t <= 0`` lowers the bracket's top, one with ``t > 0`` raises its bottom."""

    name = "dinkelbach"
    why = (
        "the max-confidence ratio program as a sequence of LPs: Dinkelbach-type steps (Crouzeix, Ferland & Schaible "
        "1985) in a proven bracket per group, one block LP over the open groups of a chunk per step (Sec. 6)"
    )
    needs = frozenset()  # each step is an LP

    def accepts(self, program) -> Match:
        """The per-group blocks of a ratio program (``lower.atr.ATRInstance``)."""
        from .atr import ATRInstance

        if isinstance(program, ATRInstance):
            return Match.yes(self.why)
        return Match.no("not the per-group blocks of a max-confidence ratio")

    def apply(self, inst):
        """The block instance, as ``methods.lfp.solve_lfp`` reads it (p, lower, upper, reference)
        to build each step's LP; nothing to invert."""
        return inst, None

    def invert(self, table, _):
        """The (G, m, A) table the steps found, as it is."""
        return table


class BudgetRows:
    name = "budget-rows"

    def __init__(self, pairwise: bool = False, budgets: int = 1, quadratic: bool = False):
        self.pairwise = pairwise
        self.budgets = budgets
        self.needs = frozenset({"quadratic"}) if quadratic else frozenset()

    @property
    def why(self) -> str:
        if not self.budgets:
            return "the design's rows, cells and linear constraints as LP rows (the spec has no privacy budget)"
        if self.pairwise:
            return "each privacy budget as linear rows, every pair of source values its own row (|A|^2 |Y| rows)"
        return "each privacy budget as linear rows through upper and lower envelopes per released value (2|A||Y| + |Y| rows)"

    def accepts(self, problem) -> Match:
        """A design table with an affine or convex quadratic objective."""
        if problem.design is not None and problem.objective.curvature in ("affine", "convex"):
            return Match.yes(self.why)
        return Match.no("not an affine or convex quadratic objective over a design table")

    def apply(self, problem):
        from .mechanism import lower_mechanism

        mlp = lower_mechanism(problem, pairwise=self.pairwise)
        return mlp, mlp.n_design

    def invert(self, x, n_design: int):
        """The design's cells: the program's first ``n_design`` columns."""
        return x[:n_design]


class GaussianCalibration:
    name = "gaussian-calibration"

    def __init__(self, correlated: bool = False):
        self.correlated = correlated
        # the bridges of the Gaussian-DP set it takes: rotated SOCs, PSD blocks for correlated noise
        self.needs = frozenset(k for b in GaussianDP.bridges if b.name == "soc" or correlated for k in b.into)

    @property
    def why(self) -> str:
        cones = "second-order cones" + (" and PSD blocks (correlated noise)" if self.correlated else "")
        return f"the calibration w_j^2 f_j' Sigma^-1 f_j <= Delta^2 per input, as {cones}"

    def accepts(self, problem) -> Match:
        """Gaussian-DP sets over noise variances."""
        if GaussianDP.kind in problem.sets and problem.noise is not None:
            return Match.yes(self.why)
        return Match.no("no Gaussian-DP set over noise variances")

    def apply(self, problem):
        from .noise import lower_noise

        program = lower_noise(problem.noise)
        return program, program

    def invert(self, values: dict, program) -> dict:
        """The solver's variances in real units, by block (``ConicProgram.real``)."""
        return program.real(values)


def chain_needs(chain) -> frozenset[str]:
    """What the program a chain of these reductions ends in asks of a backend: the union of
    its reductions' ``needs``."""
    return frozenset().union(*(r.needs for r in chain.reductions))
