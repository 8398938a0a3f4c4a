"""Rank-preserving obfuscation (Shariatnasab, Shirani & Iyengar 2023): the model.

A binary data variable X with law P_X, the attacker's fingerprint F with a known channel
P(F | X), and the designed single-letter test channel W = P(Y | X) (2 x 2, rows X, columns Y):

* utility: the Kendall rank distance ``Q(P_X, W)`` of Theorem 1 (``krcc(X, Y)``), minimized;
* privacy: the leakage ``I(Y; F) <= eps`` bits, Y - X - F Markov (``mutual_info(Y; F)``;
  ``mutual_info(Y; X)`` is the same with F = X);
* optionally ``P(Y = 1 | X = 0) == P(Y = 0 | X = 1)``: W is a binary symmetric channel
  (Corollary 2's setting).

Labels: the first label of X is "0" and the second "1" in the paper's notation (the degree of a
row counts its second labels). Swapping both X's and Y's labels reverses both rankings, which
changes no pair's concordance: Q and the leakage do not depend on the choice.
"""

from __future__ import annotations

from dataclasses import field

import numpy as np

from ..language.source import Span
from ..records import Identity


class LeakageBound(Identity):
    """``mutual_info(release; other) <= eps`` in bits; ``other`` is the fingerprint F (or X)."""

    release: str
    other: str
    eps: float
    span: Span | None = field(default=None, repr=False)
    text: str = ""


class RankObjective(Identity):
    """``minimize krcc(data, release)``: Q(P_X, W) of Theorem 1 (eq. 2's covariance)."""

    data: str
    release: str
    span: Span | None = field(default=None, repr=False)
    text: str = ""
    sense: str = "minimize"
    kind: str = "krcc"
    is_quadratic: bool = False

    # krcc (builder/atoms/krcc.py): a polynomial in W, neither convex nor concave (quasiconcave
    # on the channels that matter, Shariatnasab et al.); no convex program says its minimum
    atom = "krcc"
    curvature = "nonconvex"


class ObfuscationModel(Identity):
    """Everything the global method needs: ``px1 = P(X = second label)``, the fingerprint
    channel ``F_given_X`` (2 x 2, rows X, columns F; the identity when the leakage is measured
    against X itself), the leakage bound (None: no privacy requirement) and whether W is
    restricted to symmetric channels."""

    data: str
    release: str
    design: str
    px1: float
    F_given_X: np.ndarray = field(repr=False)
    leakage: LeakageBound | None
    symmetric: bool
    objective: RankObjective
    labels: tuple[str, str] = ("0", "1")  # X's labels: the paper's 0 and 1
    symmetric_span: Span | None = field(default=None, repr=False)

    @property
    def eps(self) -> float:
        """The leakage budget in bits (inf without a bound)."""
        return self.leakage.eps if self.leakage is not None else float("inf")

    @property
    def px(self) -> np.ndarray:
        return np.array([1.0 - self.px1, self.px1])
