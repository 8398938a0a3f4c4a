"""``max_confidence(PUBLIC..., OUTCOME -> PRIVATE...)``: the adversary's largest posterior
confidence in a private value (Chen et al. Def. 3),

    max_{x_pub, o, x_priv} P(x_priv | x_pub, o) = P(x_pub, o, x_priv) / P(x_pub, o),

a ratio of forms affine in the design Dt (eq. 16): quasi-linear, minimized by the
linear-fractional methods (Charnes-Cooper, Dinkelbach) of privopt/methods/.
"""

from __future__ import annotations

from .base import Atom


class MaxConfidence(Atom):
    """Read as a transparency report's objective (builder/build.py); in an expression the context refuses it and says how to write it."""

    name = "max_confidence"
    curvature = "ratio"
    sign = "nonnegative"


ATOM = MaxConfidence()
