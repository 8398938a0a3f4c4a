"""Problem classification: a pure pass that says what program a Problem is and which methods
apply, with the reason for each. No matrices are built and nothing is solved here.

The program is read from the problem's structure, never from its block kind: its objective's
curvature (``objective.curvature``, the atoms' vocabulary of builder/atoms/base.py) and the sets
of its constraints (``problem.sets``) decide the methods (``_analyse``); the recognizers of
``closedform.registry`` add the closed forms, each with the reason it applies or not.
"""

from __future__ import annotations

from dataclasses import field

import numpy as np

from .closedform.registry import recognize
from .core.sets import GaussianDP
from .methods import METHODS
from .model.problem import Problem
from .records import Record

ATR_METHODS = ("closed-form", "lfp")  # what a transparency report may name (analyse_ratio decides which apply)


class Analysis(Record):
    problem_class: str  # e.g. "atr-max-confidence"
    program: str  # "generalized linear-fractional program"
    applicable: dict[str, str]  # method -> why it applies
    not_applicable: dict[str, str]  # method -> why not
    chosen: str
    why: str
    size: dict[str, int] = field(default_factory=dict)

    def summary_lines(self) -> list[str]:
        lines = [f"class:   {self.problem_class} ({self.program})"]
        lines.append(f"method:  {self.chosen} - {self.why}")
        for m, why in self.applicable.items():
            lines.append(f"  can use {m}: {why}")
        for m, why in self.not_applicable.items():
            lines.append(f"  cannot use {m}: {why}")
        lines.append("size:    " + ", ".join(f"{k} {v:,}" for k, v in self.size.items()))
        return lines


# why a method is not listed for a program whose analysis does not mention it
_ELSEWHERE = {
    "conic": "the conic method is for Gaussian noise placement (continuous variables)",
    "barrier": "the barrier method is for Gaussian noise placement (continuous variables)",
    "global": "the global method is for nonconvex programs (rank-preserving obfuscation); this program has an exact convex method",
}


def analyse(problem: Problem) -> Analysis:
    """What ``problem`` is and which methods apply, with a reason for every method."""
    a = _analyse(problem)
    missing = {
        m: _ELSEWHERE.get(m, "it does not apply to this problem")
        for m in METHODS
        if m not in a.applicable and m not in a.not_applicable
    }
    if missing:
        a = Analysis(a.problem_class, a.program, a.applicable, {**a.not_applicable, **missing}, a.chosen, a.why, a.size)
    return a


def _analyse(problem: Problem) -> Analysis:
    """The analysis of the program ``problem`` is, read from its structure (never its kind):

    * a Gaussian-DP constraint set over noise variances: a conic program (``analyse_conic``);
    * a nonconvex objective (krcc's rank distance): the certified global method (``analyse_global``);
    * a ratio objective (max_confidence, min_uncertainty) over a design table: a generalized
      linear-fractional program (``analyse_ratio``);
    * an affine or convex quadratic objective over a design table: an LP or a QP (``analyse_linear``).

    The recognizers (``closedform.registry``) add the closed forms and Prop. 2's reduced LP."""
    curvature = problem.objective.curvature
    if GaussianDP.kind in problem.sets:
        return analyse_conic(problem)
    if curvature == "nonconvex":
        return analyse_global(problem)
    if curvature == "ratio":
        return analyse_ratio(problem)
    return analyse_linear(problem)


def analyse_ratio(problem: Problem) -> Analysis:
    """A max-confidence ratio over a design table (Chen et al. eq. 16): a generalized
    linear-fractional program, separable by QID group (Lemma 3): the LFP method, or Theorem 1
    for a binary outcome (closedform/atr.py)."""
    m = problem.objective.measure
    n_out = problem.variables[m.outcome].size
    groups = int(np.prod([problem.variables[v].size for v in m.public], dtype=np.int64)) if m.public else 1
    per_group = int(np.prod([problem.variables[v].size for v in m.private], dtype=np.int64))
    size = {
        "groups": groups,
        "records per group": per_group,
        "outcomes": n_out,
        "design cells": groups * per_group * n_out,
    }
    not_applicable = {
        "reduced-lp": "Prop. 2 of Ding et al. is about sanitization, not transparency reports",
        "lp": "the objective max_confidence is a ratio of linear forms, not linear (use lfp)",
        "qp": "the objective max_confidence is a ratio of linear forms, not quadratic (use lfp)",
    }
    applicable = {
        "lfp": "any number of outcomes: Dinkelbach-type steps, one block LP over all groups per step (Sec. 6, Lemma 3)"
    }
    rec, match = recognize(problem, "closed-form")  # Theorem 1 (closedform/atr.py)
    if rec is not None:
        applicable["closed-form"] = match.why
        chosen, why = "closed-form", "a theorem gives the optimum for binary outcomes; no solver needed"
    else:
        not_applicable["closed-form"] = match.why
        chosen, why = "lfp", f"{m.outcome} has {n_out} outcomes, beyond the closed form"
    return Analysis(
        problem_class="atr-" + problem.objective.kind.replace("_", "-"),
        program="generalized linear-fractional program, separable by QID group",
        applicable=applicable,
        not_applicable=not_applicable,
        chosen=chosen,
        why=why,
        size=size,
    )


def _record(problem: Problem, method: str, applicable: dict, not_applicable: dict) -> None:
    """Whether a recognizer of ``method`` answers ``problem``, with its reason, into the dicts."""
    rec, match = recognize(problem, method)
    if rec is not None:
        applicable[method] = match.why
    elif match is not None:
        not_applicable[method] = match.why


def analyse_linear(problem: Problem) -> Analysis:
    """An affine (or convex quadratic) objective over a design table: a linear (or quadratic)
    program; a closed form or Prop. 2's reduced LP where Ding et al.'s theorems prove it
    optimal (closedform/sanitization.py states the conditions)."""
    from .closedform import sanitization as cf

    size = {
        "design cells": problem.design_size,
        "linear constraints": len(problem.constraints),
        "privacy budgets": len(problem.budgets),
    }
    not_applicable: dict[str, str] = {"lfp": "the objective is not a max-confidence ratio"}
    if problem.objective.is_quadratic:
        size["squared terms"] = int(problem.objective.squares.w.size)
        why = "the objective has squares of affine expressions, so it is not linear"
        return Analysis(
            problem_class="mechanism-qp",
            program="convex quadratic program over the design's cells (nonnegative weights on squares)",
            applicable={
                "qp": "linear constraints and a convex quadratic objective: QP-capable backends (auto: cvxpy with Clarabel; highs, pyomo)"
            },
            not_applicable=not_applicable
            | {"lp": why}
            | {m: recognize(problem, m)[1].why for m in ("closed-form", "reduced-lp")},
            chosen="qp",
            why="no theorem covers a quadratic objective; solve the QP",
            size=size,
        )
    applicable = {"lp": "the constraints and the objective are linear in the design's cells"}
    not_applicable["qp"] = "the objective is linear: the LP is the same program"
    san, _ = cf.match(problem)
    cls = "mechanism-lp" if san is None else "sanitization-markov" if san.markov else "sanitization-non-markov"
    # Lemma 1 / Prop. 1 (closed-form) and Prop. 2 (reduced-lp), closedform/sanitization.py
    for method in ("reduced-lp", "closed-form") if san is not None and san.markov else ("closed-form", "reduced-lp"):
        _record(problem, method, applicable, not_applicable)
    if "closed-form" in applicable:
        chosen, why = "closed-form", "a theorem gives the optimum; no solver needed"
    elif "reduced-lp" in applicable:
        chosen, why = "reduced-lp", "Prop. 2's transport LP is smaller than the full LP and provably optimal"
    else:
        chosen, why = "lp", "no theorem covers this program; solve the LP"
    return Analysis(
        problem_class=cls,
        program="linear program over the design's cells",
        applicable=applicable,
        not_applicable=not_applicable,
        chosen=chosen,
        why=why,
        size=size,
    )


# the conic program's rotated cones (inputs x noise coordinates) from which the barrier method is
# chosen over it: measured in docs/noise-placement.md (the conic program stays for small sizes)
BARRIER_MIN_CONES = 2_500


def barrier_refusal(model) -> str | None:
    """Why the barrier method (methods/barrier.py) does not apply to the noise ``model``, or
    None when it does: it takes diagonal noise, with some noise on every answer by itself (a
    square diagonal ``G`` with a nonzero diagonal), so that Sigma is positive definite at every
    interior point."""
    if any(x.correlated for x in model.noises):
        return "it takes diagonal noise only; correlated covariances need the conic program's PSD blocks"
    for x in model.noises:
        G = x.G
        if G.shape[0] == G.shape[1] and np.count_nonzero(G) == G.shape[0] and np.all(np.diag(G) != 0):
            return None
    return "no noise enters every answer by itself, so Sigma may be singular; the conic program handles that exactly"


def barrier_chosen(inputs: int, coordinates: int) -> bool:
    """The size rule: the barrier method over the conic program from ``BARRIER_MIN_CONES``
    rotated cones (``inputs`` x noise ``coordinates``) on."""
    return inputs * coordinates >= BARRIER_MIN_CONES


def analyse_conic(problem: Problem) -> Analysis:
    """Gaussian noise placement (Ramon & Basu Sec. 3.2): one matrix-fractional constraint per
    input, so a convex conic program (lower/noise.py), solved by cvxpy; or, for diagonal noise
    with noise on every answer, by the barrier method (methods/barrier.py), chosen by size
    (``barrier_chosen``)."""
    model = problem.noise
    m, n = model.F.shape
    coordinates = sum(x.size for x in model.noises)
    size = {
        "inputs": n,
        "answers": m,
        "noise variables": len(model.noises),
        "noise coordinates": coordinates,
    }
    others = "the decision variables are noise variances, not table cells"
    correlated = [x.name for x in model.noises if x.correlated]
    cones = "second-order cones" + (f" and PSD blocks (correlated: {', '.join(correlated)})" if correlated else "")
    applicable = {
        "conic": f"dp(x -> O) under the {model.requirement.calibration} calibration is w_j^2 f_j' Sigma^-1 f_j "
        "<= Delta^2 for every input j (convex in the variances); the loss tr(Sigma) is linear"
    }
    not_applicable = {k: others for k in METHODS if k not in ("conic", "barrier")}
    refusal = barrier_refusal(model)
    chosen, why = (
        "conic",
        "the variances enter Sigma^-1: no LP or QP says this; a conic solver does (cvxpy with Clarabel)",
    )
    if refusal is not None:
        not_applicable["barrier"] = refusal
    else:
        applicable["barrier"] = (
            "diagonal noise with noise on every answer: Newton's method on the log barrier with m x m Cholesky "
            "factorizations of Sigma, certified by its Lagrange dual point (gap <= 1e-6)"
        )
        cones_n = n * coordinates
        if barrier_chosen(n, coordinates):
            chosen = "barrier"
            why = (
                f"the conic program has {n:,} x {coordinates:,} = {cones_n:,} rotated cones, at least "
                f"{BARRIER_MIN_CONES:,}: the barrier method's m x m factorizations solve it faster (0.48 s against 46 s "
                "end to end at n = m = 100, docs/noise-placement.md)"
            )
        else:
            why += f" ({cones_n:,} rotated cones, below the {BARRIER_MIN_CONES:,} where the barrier method is chosen)"
    return Analysis(
        problem_class="noise-placement",
        program=f"convex conic program: {cones}; one matrix-fractional constraint per input",
        applicable=applicable,
        not_applicable=not_applicable,
        chosen=chosen,
        why=why,
        size=size,
    )


def analyse_global(problem: Problem) -> Analysis:
    """Rank-preserving obfuscation (Shariatnasab et al.): minimize Q(P_X, W) subject to
    I(Y; F) <= eps. I is convex in W but Q is only quasiconcave on the channels that matter, so
    the program is a concave-type minimization over a convex set: nonconvex, solved globally
    with a proven bound (methods/obfuscation.py). Corollary 2 is a recognizer: with uniform P_X,
    BSC query noise and the symmetric restriction the optimum is in closed form."""
    model = problem.obfuscation
    size = {"channel cells": 4, "free parameters": 1 if model.symmetric else 2}
    why_global = (
        "bisection along the symmetric channels: I(p, p) is nonincreasing and Q increasing on [0, 1/2], "
        "so the smallest feasible p is optimal; the bracket is the certificate"
        if model.symmetric
        else "a 1-D search along the boundary of the convex feasible set (the leakage bound active, or an edge): "
        "its height over P_Y(1) is concave, so its tangents bound Q from below between the search's points"
    )
    applicable = {"global": why_global + " (gap <= 1e-9 in Q)"}
    not_applicable = {
        k: "the program is nonconvex (Q is not convex in W); no LP, QP or conic form says it" for k in METHODS
    }
    del not_applicable["global"]
    chosen, why = "global", "the certified global method; the answer is the global optimum to 1e-9 in Q"
    rec, match = recognize(problem, "closed-form")  # Corollary 2 (closedform/obfuscation.py)
    if rec is not None:
        applicable = {"closed-form": match.why, **applicable}
        del not_applicable["closed-form"]
        chosen, why = "closed-form", "Corollary 2's conditions hold (checked against the certified bisection)"
    else:
        not_applicable["closed-form"] = match.why
    return Analysis(
        problem_class="rank-preserving-obfuscation",
        program="nonconvex: minimize Q(P_X, W) (quasiconcave) subject to I(Y; F) <= eps (convex in W)",
        applicable=applicable,
        not_applicable=not_applicable,
        chosen=chosen,
        why=why,
        size=size,
    )
