"""Corollary 2 of Shariatnasab, Shirani & Iyengar (2023): the optimal symmetric test channel
under BSC query noise, in closed form.

Conditions (the predicate ``corollary2_applies``): P_X uniform, ``P(F | X)`` a binary symmetric
channel BSC(q), and W restricted to symmetric channels (``P(Y=1|X=0) == P(Y=0|X=1) = p``).

Then X, Y and F are all uniform, ``P(Y | F)`` is BSC(p * q) with ``p * q = p (1 - q) + q (1 - p)
= q + p (1 - 2q)``, and the leakage is ``I(Y; F) = 1 - h_b(p * q)``. For q < 1/2 and p in
[0, 1/2], p * q increases from q to 1/2, the leakage decreases, and Q increases with p (proof
of Theorem 2: rho increases in p1 and in p2 below p1 + p2 = 1), so the optimum is the smallest p
with ``h_b(p * q) >= 1 - eps``::

    p = (h_b^-1(1 - eps) - q) / (1 - 2 q),   clamped to [0, 1/2]

(eps >= 1 - h_b(q) = I(X; F) gives p = 0, no noise; eps = 0 gives p = 1/2, Y independent of X).
A BSC(q) with q > 1/2 is a BSC(1 - q) followed by relabelling F, which changes no leakage: q is
replaced by min(q, 1 - q). At q = 1/2, F is independent of X and p = 0 for every eps >= 0.

The paper states it for "P_{F|Y}" a BSC(q) (it means P_{F|X}) and does not say that P_X must be
uniform; with a non-uniform P_X, Y and F are not uniform, ``I(Y; F) != 1 - h_b(p * q)`` and the
formula is not optimal (tests/test_obfuscation_math.py shows an instance).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..core.certificate import Certificate
from ..core.plan import Outcome
from ..errors import UsageError
from ..lower.obfuscation import DEFAULT_TOL, ChannelSolution, optimal_channel, relative_gap
from ..measures.obfuscation import channel, check_channel, check_px, entropy_gap_inverse, krcc_q

__all__ = [
    "COROLLARY_2",
    "Corollary2",
    "bsc_parameter",
    "bsc_symmetric_channel",
    "bsc_symmetric_p",
    "corollary2_applies",
]


def bsc_parameter(F_given_X) -> float | None:
    """q when ``P(F | X)`` is BSC(q) exactly (F[0, 1] == F[1, 0]), else None."""
    F = check_channel(F_given_X, "P(F | X)")
    if F[0, 1] == F[1, 0] and F[0, 0] == F[1, 1]:
        return float(F[0, 1])
    return None


def corollary2_applies(px1, F_given_X, symmetric: bool) -> bool:
    """Corollary 2's conditions, read from the math: uniform P_X (exactly 1/2), BSC query
    noise (exactly symmetric table) and the symmetric restriction on W."""
    return bool(symmetric) and check_px(px1) == 0.5 and bsc_parameter(F_given_X) is not None


def bsc_symmetric_p(eps: float, q: float) -> float:
    """Corollary 2's crossover ``p = (h_b^-1(1 - eps) - q) / (1 - 2q)`` clamped to [0, 1/2]
    (q replaced by min(q, 1 - q); q = 1/2 gives 0). h_b^-1(1 - eps) is computed from eps
    directly (``entropy_gap_inverse``), so a tiny eps keeps its precision."""
    try:
        eps, q = float(eps), float(q)
    except (TypeError, ValueError):
        raise UsageError(f"eps and q must be numbers, got {eps!r} and {q!r}") from None
    if not eps >= 0:
        raise UsageError(f"the leakage budget eps must be >= 0 bits, got {eps!r}")
    if not 0.0 <= q <= 1.0:
        raise UsageError(f"the BSC crossover q must lie in [0, 1], got {q!r}")
    q = min(q, 1.0 - q)
    if q == 0.5:
        return 0.0
    x = entropy_gap_inverse(eps)
    return float(np.clip((x - q) / (1.0 - 2.0 * q), 0.0, 0.5))


def bsc_symmetric_channel(eps: float, q: float) -> np.ndarray:
    """Corollary 2's optimal symmetric test channel ``W = BSC(p)`` (2x2, rows X, columns Y),
    p from ``bsc_symmetric_p``. Valid only where ``corollary2_applies``."""
    p = bsc_symmetric_p(eps, q)
    return channel(p, p)


class Corollary2:
    """Shariatnasab et al. Corollary 2 as a recognizer (``core.plan.Recognizer``): with a
    leakage bound, uniform P_X, BSC(q) query noise and the symmetric restriction, the optimal
    test channel is BSC(p), ``p = (h_b^-1(1 - eps) - q) / (1 - 2q)`` clamped to [0, 1/2]."""

    name = "corollary-2"
    method = "closed-form"
    cites = "Shariatnasab, Shirani & Iyengar, Corollary 2"

    def in_scope(self, problem) -> bool:
        """About the rank distance Q(P_X, W) (Theorem 1's ``krcc``) as the objective."""
        return problem.objective.atom == "krcc"

    def accepts(self, problem):
        from ..core.plan import Match

        model = problem.obfuscation
        if model.leakage is None:
            return Match.no("there is no leakage bound (the identity channel is optimal)")
        if corollary2_applies(model.px1, model.F_given_X, model.symmetric):
            q = bsc_parameter(model.F_given_X)
            return Match.yes(
                f"Corollary 2: uniform P_X, BSC({q:g}) query noise and symmetric W give "
                "p = (h_b^-1(1 - eps) - q) / (1 - 2q), clamped to [0, 1/2]",
                data={
                    "q": q,
                    "conditions": ["P_X uniform", f"P(F | X) is BSC({q:g})", "W symmetric", "a leakage bound"],
                },
            )
        reasons = []
        if not model.symmetric:
            reasons.append("W is not restricted to symmetric channels")
        if model.px1 != 0.5:
            reasons.append(f"P_X is not uniform (P_X(1) = {model.px1:g})")
        if bsc_parameter(model.F_given_X) is None:
            reasons.append("P(F | X) is not a binary symmetric channel")
        return Match.no("Corollary 2 needs " + "; ".join(reasons))

    def solve(self, problem, match) -> np.ndarray:
        """The channel W = BSC(p) (2 x 2, rows X, columns Y)."""
        model = problem.obfuscation
        return bsc_symmetric_channel(model.eps, match.data["q"])

    def answer(self, problem, match, prepared, backend, time_limit) -> Outcome:
        """Corollary 2's channel with the certified symmetric bisection (``lower/obfuscation.py``)
        as its check: the bisection's proven lower bound L has ``L <= Q* <= Q(BSC(p))``, and the
        answer stands when ``Q(BSC(p)) - L <= DEFAULT_TOL``. Where the formula's p lost digits to
        cancellation (near eps = I(X; F) it subtracts two numbers near q, and Q ~ sqrt(p) turns the
        rounding of a p ~ 1e-17 into ~1e-9 in Q) the bisection's channel, which solves the same
        equation to the last bit, is returned instead. ``context`` is (the bisection, the failures
        of the check): the block kind reports a bisection that did not certify the answer."""
        model = problem.obfuscation
        W = self.solve(problem, match)
        ref = optimal_channel(model.px1, model.F_given_X, model.eps, symmetric=True, tol=DEFAULT_TOL)
        Q = krcc_q(model.px1, W)
        formula = "Corollary 2: p = (h_b^-1(1 - eps) - q) / (1 - 2q), clamped to [0, 1/2]"
        if ref.status == "optimal" and Q - ref.lower_bound > DEFAULT_TOL:
            why = (
                f"the formula's p = {W[0, 1]!r} lost digits to cancellation (Q {Q:.6g}); "
                f"the bisection's p = {ref.p1!r} solves the same equation to the last bit"
            )
            sol = replace(ref, method="corollary-2, refined by bisection", notes=(formula, why))
        else:
            lower = min(ref.lower_bound, Q)  # the bisection's bound, or Q where rounding put it above
            sol = ChannelSolution(
                W,
                Q,
                lower,
                Q - lower,
                ref.leakage,
                ref.status,
                0,
                0,
                "corollary-2",
                True,
                model.eps,
                DEFAULT_TOL,
                (formula,),
            )
        optimality = (
            f"global: Corollary 2 (closed form), within {sol.gap:.1e} of the proven lower bound of the "
            f"certified symmetric bisection (tolerance {DEFAULT_TOL:g} in Q)"
        )
        evidence = {
            "kind": "closed form (Corollary 2) and a proven lower bound",
            "bound": sol.lower_bound,
            "side": "lower",
            "gap": sol.gap,
            "tolerance": DEFAULT_TOL,
        }
        failures = (
            []
            if ref.status == "optimal"
            else [f"the symmetric bisection did not certify Corollary 2's answer: {ref.notes}"]
        )
        cert = Certificate(
            "theorem",
            "Corollary 2 (Shariatnasab et al.): the symmetric channel BSC(p) is optimal; its Q is within the "
            "tolerance of the certified symmetric bisection's proven lower bound",
            bound=sol.lower_bound,
            side="lower",
            gap=relative_gap(sol.gap, sol.q_value),
            data={
                "theorem": self.cites,
                "conditions": match.data["conditions"],
                "absolute_gap": sol.gap,
                "tolerance": DEFAULT_TOL,
                "method": sol.method,
            },
        )
        return Outcome(
            sol, optimality, "none", claimed=sol.q_value, evidence=evidence, certificate=cert, context=(ref, failures)
        )


COROLLARY_2 = Corollary2()
