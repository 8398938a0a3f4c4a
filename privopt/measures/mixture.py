"""The naive mixture baseline of Ramon & Basu Sec. 3.3.

With probability alpha release the true value x, otherwise a draw from the background B:

    f_alpha(y | x) = alpha [y = x] + (1 - alpha) B(y)

It meets every moment constraint of the form E[g(y) | x] == alpha g(x) + (1 - alpha) E[g(B)]
by construction. privopt recovers alpha from the spec's own equality constraints (each is
affine in alpha along the mixture family, so one least-squares fit; the fit must be exact),
then reports the mixture's objective and the privacy it achieves, beside the optimum.
"""

from __future__ import annotations

import numpy as np

from ..model.problem import Problem

FIT_TOL = 1e-9


def naive_mixture(problem: Problem) -> tuple[float, np.ndarray] | None:
    """(alpha, the mixture as a design vector), or None when the spec is not of this shape:
    a design P(y | x) over numeric labels with every x among y's labels, one known
    distribution B over y, and equality constraints that pin alpha exactly."""
    d = problem.design
    if len(d.targets) != 1 or len(d.given) != 1:
        return None
    V = problem.variables
    x, y = V[d.given[0]], V[d.targets[0]]
    if x.values is None or y.values is None:
        return None
    backgrounds = [t for t in problem.known.values() if t.axes == (y.name,) and not t.given]
    eqs = [c for c in problem.constraints if getattr(c, "sense", None) == "=="]
    if len(backgrounds) != 1 or not eqs:
        return None
    pos = np.searchsorted(y.values, x.values) if np.all(np.diff(y.values) > 0) else None
    if (
        pos is None
        or np.any(pos >= y.size)
        or not np.allclose(y.values[np.minimum(pos, y.size - 1)], x.values, atol=1e-12)
    ):
        return None
    delta = np.zeros((x.size, y.size))
    delta[np.arange(x.size), pos] = 1.0
    background = np.broadcast_to(backgrounds[0].data, (x.size, y.size))
    dv, bv = delta.ravel(), background.ravel()  # the design's axes are (x, y): given, then target
    u = np.concatenate([(c.expr.value(dv) - c.expr.value(bv)).ravel()[c.expr.defined_mask()] for c in eqs])
    v = np.concatenate([c.expr.value(bv).ravel()[c.expr.defined_mask()] for c in eqs])
    if float(u @ u) == 0.0:
        return None
    alpha = -float(u @ v) / float(u @ u)
    if not (0.0 <= alpha <= 1.0) or np.abs(alpha * u + v).max() > FIT_TOL:
        return None
    return alpha, alpha * dv + (1 - alpha) * bv
