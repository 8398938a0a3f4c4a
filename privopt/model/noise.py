"""The model of a noise-placement program (Ramon & Basu Sec. 3.2): continuous inputs, Gaussian
noise whose (co)variances are the decision variables, and a release linear in both.

The released vector is ``O = F x + sum_k G_k n_k + c`` with ``x`` the private inputs (each
coordinate in its range ``[lo_j, hi_j]``) and independent noise vectors ``n_k ~ N(0, S_k)``;
``S_k`` is diagonal (a variance per coordinate) or, for ``correlated`` noise, any covariance
matrix. So ``O - F x - c ~ N(0, Sigma)`` with ``Sigma = sum_k G_k S_k G_k'``, and

* ``dp(x -> O) <= (eps, delta)`` holds iff the largest Mahalanobis sensitivity
  ``max_j w_j sqrt(f_j' Sigma^+ f_j)`` (``w_j = hi_j - lo_j``, ``f_j`` column j of F; neighbours
  differ in one coordinate by at most its width) is at most the calibration's bound
  (``measures.gaussian``);
* ``E[sum((O - F x)^2)] = tr(Sigma) + |c|^2`` is the expected squared error.
"""

from __future__ import annotations

from dataclasses import field

import numpy as np

from ..language.source import Span
from ..records import Identity


class Continuous(Identity):
    """``var x : ROLE real[n] in [lo, hi]``: n continuous values, coordinate j in [lo[j], hi[j]]."""

    name: str
    role: str
    lo: np.ndarray = field(repr=False)
    hi: np.ndarray = field(repr=False)
    span: Span | None = field(default=None, repr=False)
    range_span: Span | None = field(default=None, repr=False)  # the ``[lo, hi]`` written

    @property
    def size(self) -> int:
        return int(self.lo.size)

    @property
    def widths(self) -> np.ndarray:
        return self.hi - self.lo


class Noise(Identity):
    """``noise NAME : gaussian[k] [correlated]``: its map into the release ``G`` (m x k) and
    whether its covariance is a full matrix (else a variance per coordinate)."""

    name: str
    size: int
    correlated: bool
    G: np.ndarray = field(repr=False)
    span: Span | None = field(default=None, repr=False)


class DPRequirement(Identity):
    """``dp(x -> O) <= (eps, delta)`` under ``calibration`` (analytic | classic)."""

    source: str
    release: str
    eps: float
    delta: float
    calibration: str
    span: Span | None = field(default=None, repr=False)
    text: str = ""


class NoiseObjective(Identity):
    """``minimize E[sum((O - F x)^2)]``: the expected squared error ``tr(Sigma) + |c|^2``."""

    sense: str
    text: str
    offset: float  # |c|^2: the part no noise choice changes
    kind: str = "expected_squared_error"
    span: Span | None = field(default=None, repr=False)

    # E[...] (builder/atoms/expect.py); tr(Sigma) is linear in the (co)variances
    atom = "E"
    curvature = "affine"

    @property
    def is_quadratic(self) -> bool:
        return False


class NoiseModel(Identity):
    """Everything the noise family's stages need: the input, the release's linear map, the noise
    variables in declaration order and the privacy requirement."""

    input: Continuous
    release: str
    F: np.ndarray = field(repr=False)  # m x n: the release's dependence on x
    noises: tuple[Noise, ...]
    requirement: DPRequirement
    objective: NoiseObjective

    @property
    def answers(self) -> int:
        return int(self.F.shape[0])
