"""A closed-form term of a split bounded at second order inside its cells: k-ary randomized
response beside solved blocks (issue 21, item 3; docs/blocks.md, "How far the split's bound
closes").

The block's value at eps is ``g(eps) = (k - 1) / (e^eps + k - 1)`` exactly (``closedform/rr.py``'s
theorem), so its term at share ``y`` (``eps = lo + y / scale``, weight ``w >= 0``) is ``G(y) = w
g(lo + y / scale)``. With ``f = (k - 1) e^-eps``, ``g = f / (1 + f)``:

    g'(eps) = -f / (1 + f)^2,     g''(eps) = f (1 - f) / (1 + f)^3

(concave where ``f > 1``, below ``ln(k - 1)``; convex above). Taylor's theorem with the
remainder at some point between: ``G(x) >= G(y) + G'(y) (x - y) - K (x - y)^2 / 2`` with ``K =
max(0, -min G'')`` over the cell, and ``-g'' = f (f - 1) / (1 + f)^3 <= f1 (f1 - 1) / (1 +
max(f2, 1))^3`` for ``f`` in ``[f2, f1]`` (the numerator increases in ``f`` past 1/2, the
denominator is least at the least ``f``), 0 where the cell is convex (``f1 <= 1``: the tangent).
Each point's bound toward a cell beside it is that concave quadratic in ``y``, exact at the point
and off by ``O(h^2)`` on a cell of width h: the pieces ``split.CellEnds`` merges, with no solve.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..closedform.rr import rr_value

KIND = "randomized-response"  # a term's certificates in a result (``RRDual.records``)


@dataclass(frozen=True)
class RRDual:
    """Randomized response's certificate at share ``y`` (module docstring): ``k``, the weight
    ``w``, and the share's map to eps (``eps = lo + y / scale``)."""

    share_concave = True  # its pieces are concave in the share (``split._share_concave``)

    k: float
    weight: float
    lo: float
    scale: float
    y: float

    def value(self, y: float) -> float:
        return self.weight * rr_value(self.k, self.lo + y / self.scale)

    def slope(self, y: float) -> float:
        """``G'(y) = -w f / (1 + f)^2 / scale``."""
        f = (self.k - 1.0) * math.exp(-(self.lo + y / self.scale))
        return -self.weight * f / (1.0 + f) ** 2 / self.scale

    def curvature(self, a: float, b: float) -> float:
        """``K >= max(0, -G'')`` over the shares ``[a, b]`` (module docstring)."""
        f1 = (self.k - 1.0) * math.exp(-(self.lo + a / self.scale))
        f2 = (self.k - 1.0) * math.exp(-(self.lo + b / self.scale))
        if f1 <= 1.0:
            return 0.0
        return self.weight * f1 * (f1 - 1.0) / (1.0 + max(f2, 1.0)) ** 3 / self.scale**2

    def line(self, x: float, K: float) -> float:
        d = x - self.y
        return self.value(self.y) + self.slope(self.y) * d - K * d * d / 2

    def cell(self, x: float) -> tuple[float, float]:
        """The bound toward share ``x`` at ``x`` and at the point (``split.CellEnds``)."""
        K = self.curvature(min(x, self.y), max(x, self.y))
        return self.line(x, K), self.value(self.y)

    def kink(self, right: RRDual) -> float:
        """Where this point's quadratic toward ``right`` and ``right``'s toward this point meet,
        both with the whole cell's ``K`` (their difference is then linear in the share); -inf
        (+inf) when the upper (lower) end's bound alone is the larger one."""
        a, b = self.y, right.y
        K = self.curvature(a, b)

        def gap(x: float) -> float:
            return self.line(x, K) - right.line(x, K)

        lo, hi = gap(a), gap(b)
        if lo <= 0:
            return -math.inf
        if hi >= 0:
            return math.inf
        return a + (b - a) * lo / (lo - hi)

    @staticmethod
    def records(var: str, certs) -> dict:
        """A term's certificates as a result records them: the points that have one; ``k`` and
        the weight are re-derived by ``privopt verify`` from the block and the objective."""
        have = [j for j, d in enumerate(certs) if d is not None]
        first = certs[have[0]]
        return {"var": var, "kind": KIND, "points": have, "k": first.k, "weight": first.weight}
