"""k-ary randomized response is the least-tv mechanism under eps-DP and a uniform prior
(Kairouz, Oh & Viswanath; issue 21, item 3).

Conditions (``RandomizedResponse.accepts``): the design is ``Q = P(Y | X)`` with Y released
over X's k >= 2 values, ``P(X)`` uniform, one ``ldp``/``dp`` budget eps on ``X -> Y`` over all
pairs (delta = 0), the objective ``minimize tv(X, Y) = P(Y != X)``, and no other constraint.

Theorem: the optimum is k-ary randomized response, ``Q(y | x) = e^eps / (e^eps + k - 1)`` for
``y = x`` and ``1 / (e^eps + k - 1)`` otherwise, with value ``(k - 1) / (e^eps + k - 1)``.
Proof: for each output y the budget gives ``Q(y | y) <= e^eps Q(y | x)`` for every x, so
``Q(y | y) (1 + (k - 1) e^-eps) <= sum_x Q(y | x)``; summing over y (the rows of Q sum to 1),
``sum_y Q(y | y) <= k e^eps / (e^eps + k - 1)``, and ``tv = 1 - sum_y Q(y | y) / k`` is at least
``(k - 1) / (e^eps + k - 1)``, which randomized response attains.

The recognizer is registered (``closedform.registry``): a single spec that meets the conditions
is answered without a solver, its ``theorem`` certificate cites ``CITES`` and ``privopt verify``
re-checks the conditions on the rebuilt spec and recomputes the optimum (``certify/proofs.py``).
Where a condition fails the recognizer declines with its reason and the LP decides (a
non-uniform prior, for one, can do better: always releasing the likeliest value).

The value as a function of the budget, ``rr_value(k, eps)``, is what the composite split uses
for such a block without solving it (``composite/solve.py``): it is concave in eps below
``ln(k - 1)`` and convex above.
"""

from __future__ import annotations

import math

import numpy as np

from ..core.certificate import Certificate
from ..core.plan import Match, Outcome

CITES = "Kairouz, Oh & Viswanath (2014), k-ary randomized response"
CLAIM = "closed form: k-ary randomized response, tv = (k - 1) / (e^eps + k - 1)"


def rr_value(k: float, eps: float) -> float:
    """``(k - 1) / (e^eps + k - 1)``: the least ``P(Y != X)`` at budget eps, computed as
    ``(k - 1) e^-eps / (1 + (k - 1) e^-eps)`` (no overflow; it underflows to 0 only past eps ~ 745)."""
    f = (k - 1.0) * math.exp(-eps)
    return f / (1.0 + f)


def rr_table(k: int, eps: float) -> np.ndarray:
    """Randomized response ``Q[x, y]``: ``e^eps / (e^eps + k - 1)`` on the diagonal, ``1 / (e^eps + k - 1)`` off it."""
    t = math.exp(-eps)
    off = t / (1.0 + (k - 1) * t)
    q = np.full((k, k), off)
    np.fill_diagonal(q, 1.0 - (k - 1) * off)
    return q


class RandomizedResponse:
    """The theorem as a recognizer (``core.plan.Recognizer``; module docstring)."""

    name = "randomized-response"
    method = "closed-form"
    cites = CITES
    claim = CLAIM

    def in_scope(self, problem) -> bool:
        """About the tv of one release ``P(Y | X)`` of one data variable over its own values (the
        spec has no other variable), linear in the design."""
        d, obj = problem.design, problem.objective
        if d is None or getattr(obj, "atom", None) != "tv" or obj.is_quadratic:
            return False
        if len(d.given) != 1 or len(d.targets) != 1 or obj.pair != d.given + d.targets:
            return False
        (x,), (y,) = d.given, d.targets
        return problem.variables[y].over == x and set(problem.variables) == {x, y}

    def accepts(self, problem) -> Match:
        (x,), (y,) = problem.design.given, problem.design.targets
        if problem.objective.sense != "minimize":
            return Match.no(f"randomized response minimizes tv({x}, {y})")
        k = problem.variables[x].size
        prior = problem.joint
        if k < 2 or prior is None or prior.axes != (x,) or not np.all(prior.data == prior.data[0]):
            return Match.no(f"randomized response needs a uniform prior on {x} (k >= 2 values)")
        if problem.constraints:
            return Match.no("randomized response is optimal only without other constraints")
        if len(problem.budgets) != 1:
            return Match.no("randomized response has exactly one dp or ldp budget")
        b = problem.budgets[0]
        if b.kind not in ("dp", "ldp") or b.source != (x,) or b.target != y or b.delta != 0:
            return Match.no(f"randomized response's budget is a pure dp or ldp budget on {x} -> {y}")
        if b.pairs is not None and {tuple(p) for p in np.asarray(b.pairs).tolist()} != {
            (i, j) for i in range(k) for j in range(k) if i != j
        }:
            return Match.no("randomized response is optimal when every pair of values is protected")
        return Match.yes(
            f"k-ary randomized response is optimal, tv = (k - 1) / (e^eps + k - 1): a uniform prior on the {k} "
            f"values of {x}, one pure budget eps over all pairs, tv({x}, {y}) and nothing else",
            data={
                "k": k,
                "eps": float(b.eps),
                "conditions": [
                    f"P({x}) uniform over k = {k} values",
                    f"{y} released over {x}",
                    f"one {b.kind} budget, all pairs, delta = 0",
                    f"minimize tv({x}, {y}), no other constraint",
                ],
            },
        )

    def solve(self, problem, match: Match, backend=None, time_limit=None):
        """(the design, flat in the design's axis order (given, target); None: no LP was solved)."""
        return rr_table(match.data["k"], match.data["eps"]).ravel(), None

    def answer(self, problem, match: Match, prepared=None, backend=None, time_limit=None) -> Outcome:
        """Randomized response with the theorem's certificate; the block kind verifies the table."""
        k, eps = match.data["k"], match.data["eps"]
        cert = Certificate(
            "theorem",
            f"{CLAIM} (k = {k}, eps = {eps:g})",
            data={"theorem": CITES, "conditions": match.data["conditions"], "k": k, "eps": eps},
        )
        return Outcome(
            self.solve(problem, match)[0],
            CLAIM,
            None,
            claimed=rr_value(k, eps),
            evidence={"kind": "theorem", "source": CLAIM},
            certificate=cert,
        )


RANDOMIZED_RESPONSE = RandomizedResponse()
