"""``noise NAME : gaussian[k]``: a vector of k zero-mean Gaussian entries, whose variance per entry
(or full covariance, ``correlated``) is designed (Ramon & Basu Sec. 3.2); the release is affine
in its entries.
"""

from __future__ import annotations

from .base import Atom


class Gaussian(Atom):
    """Read in a noise declaration (builder/noise.py); in an expression the context refuses it and says how to write it."""

    name = "gaussian"
    curvature = "affine"
    sign = None


ATOM = Gaussian()
