"""The certified global method for rank-preserving obfuscation (Shariatnasab, Shirani & Iyengar
2023) as the runner of ``--method global``.

The program: minimize Q(P_X, W) subject to I(Y; F) <= eps bits over 2 x 2 channels W (optionally
symmetric, p1 = p2). It is nonconvex (Q is quasiconcave on the channels that matter), so it is
solved globally (``lower/obfuscation.py``: bisection along the symmetric channels, a certified 1-D
search along the boundary of the feasible set otherwise) and returns a proven lower bound with the answer:
``lower_bound <= Q* <= Q(W)`` with ``Q(W) - lower_bound <= DEFAULT_TOL``.
"""

from __future__ import annotations

import math

from ..core.certificate import Certificate
from ..core.plan import Outcome
from ..lower.obfuscation import DEFAULT_TOL, optimal_channel, relative_gap


class GlobalMethod:
    """``core.plan.Method`` for the obfuscation program: the certified global method under the
    spec's restriction; its certificate is the proven lower bound (``global-bound``)."""

    name = "global"

    def run(self, problem, prepared, route, time_limit, workers, progress) -> Outcome:
        model = problem.obfuscation
        sol = optimal_channel(model.px1, model.F_given_X, model.eps, symmetric=model.symmetric, tol=DEFAULT_TOL)
        optimality = (
            f"global: a proven lower bound within {sol.gap if sol.gap is not None else math.inf:.1e} "
            f"(tolerance {DEFAULT_TOL:g} in Q; {sol.method})"
        )
        evidence = {
            "kind": "proven lower bound (" + "; ".join(sol.notes) + ")",
            "bound": sol.lower_bound,
            "side": "lower",
            "gap": sol.gap,
            "tolerance": DEFAULT_TOL,
        }
        cert = Certificate(
            "global-bound",
            "no channel meeting the leakage bound has a smaller Q than the proven lower bound",
            bound=sol.lower_bound,
            side="lower",
            gap=relative_gap(sol.gap, sol.q_value),
            data={"method": sol.method, "absolute_gap": sol.gap, "tolerance": DEFAULT_TOL, "notes": list(sol.notes)},
        )
        return Outcome(
            sol, optimality, "none", claimed=sol.q_value, evidence=evidence, certificate=cert, context=(sol, [])
        )


RUNNER = GlobalMethod()


def census(symmetric: bool) -> dict:
    """The program the global method solves, counted as ``core.canonical.CanonicalProgram.census``
    counts (it has no canonical program: Q is quasiconcave and the leakage a convex, not conic,
    constraint): the channel's free crossover probabilities (p, or p1 and p2) with their bounds
    [0, 1/2] or [0, 1] (and ``p1 + p2 <= 1`` unrestricted, Thm. 2), and one convex constraint
    I(Y; F) <= eps."""
    n = 1 if symmetric else 2
    return {
        "variables": n,
        "integers": 0,
        "objective": "quasiconcave",
        "constraints": {"zero": 0, "nonnegative": 2 * n + (0 if symmetric else 1), "soc": 0, "psd": 0, "convex": 1},
    }
