"""The rewrites a plan chains (``core.plan.Reduction``: ``accepts / apply / invert``).

* ``QIDGroups``: a transparency report -> one block per QID group (Chen et al. Lemma 3: the
  program separates by group); ``lower.atr.lower_atr``; the inverse is the identity on the
  (G, m, A) table, which ``blocks.report.released_table`` labels;
* ``BudgetRows``: a mechanism problem -> an LP/QP whose budgets are rows (Ding et al. eq. 1,
  Ramon & Basu Sec. 3.3): per released value an upper and lower envelope, ``cond[a, y] <=
  u_y``, ``cond[a, y] >= l_y``, ``u_y <= e^eps l_y + delta / |A|`` (2|A||Y| + |Y| rows), or
  every pair its own row (``pairwise``: |A|^2 |Y| rows, for a backend that stalls on
  envelopes); ``lower.mechanism.lower_mechanism``. The inverse keeps the design's columns;
* ``GaussianCalibration``: a noise placement -> a conic program (Ramon & Basu Sec. 3.2): the
  calibration ``w_j^2 f_j' Sigma^-1 f_j <= Delta^2`` per input as rotated second-order cones
  ``z^2 <= u s`` (PSD blocks for correlated noise); ``lower.noise.lower_noise``. The inverse
  maps the solver's variances back to real units (``program.unit``).

``STEPS`` says each in a sentence, for the plan (``privopt explain``).
"""

from __future__ import annotations

from ..core.plan import Match


class QIDGroups:
    name = "qid-groups"
    why = "Lemma 3 (Chen et al.): the program separates by QID group; one block of (records x outcomes) per group"

    def accepts(self, problem) -> Match:
        return Match.yes(self.why) if problem.family == "atr" else Match.no("not a transparency report")

    def apply(self, problem):
        from .atr import lower_atr

        inst = lower_atr(problem)
        return inst, inst

    def invert(self, table, inst):
        """The (G, m, A) table over the instance's groups, records and outcomes, as it is."""
        return table


class BudgetRows:
    name = "budget-rows"

    def __init__(self, pairwise: bool = False, budgets: int = 1):
        self.pairwise = pairwise
        self.budgets = budgets

    @property
    def why(self) -> str:
        if not self.budgets:
            return "the design's rows, cells and linear constraints as LP rows (the spec has no privacy budget)"
        if self.pairwise:
            return "each privacy budget as linear rows, every pair of source values its own row (|A|^2 |Y| rows)"
        return "each privacy budget as linear rows through upper and lower envelopes per released value (2|A||Y| + |Y| rows)"

    def accepts(self, problem) -> Match:
        return Match.yes(self.why) if problem.family == "mechanism" else Match.no("not a mechanism problem")

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

    @property
    def why(self) -> str:
        cones = "second-order cones" + (" and PSD blocks (correlated noise)" if self.correlated else "")
        return f"the calibration w_j^2 f_j' Sigma^-1 f_j <= Delta^2 per input, as {cones}"

    def accepts(self, problem) -> Match:
        return Match.yes(self.why) if problem.family == "noise" else Match.no("not a noise placement")

    def apply(self, problem):
        from .noise import lower_noise

        program = lower_noise(problem.noise)
        return program, program

    def invert(self, values: dict, program) -> dict:
        """The solver's variances in real units, by block."""
        return {b.name: values[b.name] * program.unit for b in program.blocks}
