"""The sets a constraint ``f(x) in S`` names (issue 20, item 2), as small frozen records.

Canonical sets (what ``core.canonical.CanonicalProgram`` and the backends take):

* ``Zero``: ``f(x) = 0``;
* ``Nonnegative``: ``f(x) >= 0`` (a spec's ``lhs <= rhs`` is ``rhs - lhs`` in it);
* ``SecondOrderCone``: ``{(t, u) : |u|_2 <= t}``;
* ``PSD``: a symmetric matrix with no negative eigenvalue.

Privacy and table sets (what a spec writes), each naming its ``bridges``: the rewrites into
canonical sets a plan may choose (MathOptInterface's bridges), printed by ``describe``:

* ``SimplexRows``: the rows of a conditional table sum to 1, cells in [0, 1] (Chen et al.
  Def. 2's T(A | X); Ding et al.'s P(Y | X));
* ``Fidelity``: cell bounds on a transparency table (Chen et al. eqs. 9-10: ``|Dt - D| <= 1 -
  delta``, ``Dt >= alpha D``), affine cell by cell;
* ``Budget``: a dp / ldp budget, every pair of source cells ``P(y | s) <= e^eps P(y | s') +
  delta / |Y|`` (Ding et al. eq. 4; Dwork & Roth Def. 2.4);
* ``LogLift``: ``|log P(y | s) / P(y)| <= eps`` (Ding et al. eq. 5);
* ``GaussianDP``: a Gaussian release is (eps, delta)-DP when every Mahalanobis sensitivity
  ``sqrt(f_j' Sigma^+ f_j) w_j`` is at most the calibration's bound (Balle & Wang Thm. 8, or
  Dwork & Roth Thm. A.1 for ``classic``; Ramon & Basu Sec. 3.2);
* ``Leakage``: ``I(Y; F) <= eps`` bits (Shariatnasab et al. eq. 3), nonconvex in the channel:
  no bridge, the certified global method bounds it.

Each set holds only the data that defines it; ``privopt.verification`` holds one verifier per
set (membership of a returned point, with the tolerances privopt verifies at).
"""

from __future__ import annotations

from typing import ClassVar

from ..records import Record


class Bridge(Record):
    """A rewrite of a set into canonical ones: ``name`` (what a plan prints), the canonical
    sets it yields (``into``) and ``why``, one sentence."""

    name: str
    into: tuple[str, ...]
    why: str

    def to_dict(self) -> dict:
        return {"bridge": self.name, "into": list(self.into), "why": self.why}


class ConstraintSet(Record):
    """A set of the program: ``kind`` (a short name), whether it is ``canonical`` (a backend
    takes it as it is), its ``bridges`` to canonical sets and ``unbridged``, why a set without
    bridges has none. ``text`` is the constraint as the spec wrote it (for messages)."""

    kind: ClassVar[str] = ""
    canonical: ClassVar[bool] = False
    bridges: ClassVar[tuple[Bridge, ...]] = ()
    unbridged: ClassVar[str] = ""

    def describe(self) -> dict:
        """The set and its bridges as data a plan can print."""
        return {
            "set": self.kind,
            "canonical": self.canonical,
            "bridges": [b.to_dict() for b in self.bridges],
            **({"unbridged": self.unbridged} if self.unbridged else {}),
        }


# ------------------------------------------------------------------ canonical sets


class Zero(ConstraintSet):
    """``f(x) = 0`` (an equality row)."""

    kind: ClassVar[str] = "zero"
    canonical: ClassVar[bool] = True
    text: str = ""


class Nonnegative(ConstraintSet):
    """``f(x) >= 0`` (an inequality row, or a bound)."""

    kind: ClassVar[str] = "nonnegative"
    canonical: ClassVar[bool] = True
    text: str = ""


class SecondOrderCone(ConstraintSet):
    """``{(t, u) : |u|_2 <= t}`` of dimension ``size``."""

    kind: ClassVar[str] = "soc"
    canonical: ClassVar[bool] = True
    size: int = 0
    text: str = ""


class PSD(ConstraintSet):
    """Symmetric ``order x order`` matrices with every eigenvalue >= 0 (a covariance)."""

    kind: ClassVar[str] = "psd"
    canonical: ClassVar[bool] = True
    order: int = 0
    text: str = ""


# ------------------------------------------------------------------ table and privacy sets

_ROWS = Bridge("rows", ("zero", "nonnegative"), "each row's sum is an equality row; each cell a bound [0, 1]")


class SimplexRows(ConstraintSet):
    """Each row of a conditional table (``width`` cells, over its targets) sums to 1 and every
    cell lies in [0, 1]. ``atol``: the absolute row tolerance of a table built from its free
    parameters (a 2 x 2 channel from (p1, p2)); None: ``row_tol(width)``, the rounding of the
    sum. ``table`` names it in messages (empty: "a row")."""

    kind: ClassVar[str] = "simplex rows"
    bridges: ClassVar[tuple[Bridge, ...]] = (_ROWS,)
    width: int = 1
    atol: float | None = None
    table: str = ""


class Fidelity(ConstraintSet):
    """A transparency table's cell bound ``coef * Dt + const <= 0`` (or ``== 0``), cell by
    cell (Chen et al. eqs. 9-10)."""

    kind: ClassVar[str] = "fidelity"
    bridges: ClassVar[tuple[Bridge, ...]] = (
        Bridge("cell rows", ("nonnegative", "zero"), "affine in each cell: a bound on the cell, or an equality"),
    )
    sense: str = "<="
    text: str = ""


_PAIRWISE = Bridge(
    "pairwise rows",
    ("nonnegative",),
    "P(y | s) - e^eps P(y | s') <= delta / |Y| for every ordered pair (s, s') and outcome y: exact, quadratic in |S|",
)
_ENVELOPE = Bridge(
    "envelope rows",
    ("nonnegative",),
    "lo(y) <= P(y | s) <= hi(y) <= e^eps lo(y) + delta / |Y| per outcome: linear in |S| (Ding et al. eq. 4)",
)


class Budget(ConstraintSet):
    """A ``dp`` or ``ldp`` budget: every pair (s, s') of source cells (all pairs, or the
    adjacent ``pairs`` given) has ``P(y | s) <= e^eps P(y | s') + delta / |Y|`` (Ding et al.
    eq. 4, Dwork & Roth Def. 2.4); verified as the least eps the table achieves at delta."""

    kind: ClassVar[str] = "budget"
    bridges: ClassVar[tuple[Bridge, ...]] = (_ENVELOPE, _PAIRWISE)
    privacy: str = "ldp"  # "ldp" | "dp"
    eps: float = 0.0
    delta: float = 0.0
    adjacent: bool = False  # over the given adjacent pairs only
    text: str = ""


class LogLift(ConstraintSet):
    """``e^-eps <= P(y | s) / P(y) <= e^eps`` for every live s and y (Ding et al. eq. 5)."""

    kind: ClassVar[str] = "loglift"
    bridges: ClassVar[tuple[Bridge, ...]] = (
        Bridge(
            "lift rows",
            ("nonnegative",),
            "P(y | s) - e^eps P(y) <= 0 and e^-eps P(y) - P(y | s) <= 0: linear, P(y) fixed",
        ),
    )
    eps: float = 0.0
    text: str = ""


class GaussianDP(ConstraintSet):
    """A Gaussian release ``F x + G z``, ``z ~ N(0, S)``, is (eps, delta)-DP when every input's
    Mahalanobis sensitivity ``w_j sqrt(f_j' Sigma^+ f_j)`` (Sigma = G S G') is at most the
    calibration's bound at (eps, delta): Balle & Wang Thm. 8 (``analytic``), Dwork & Roth
    Thm. A.1 (``classic``); Ramon & Basu Sec. 3.2."""

    kind: ClassVar[str] = "gaussian dp"
    bridges: ClassVar[tuple[Bridge, ...]] = (
        Bridge("soc", ("soc",), "f_j' Sigma^-1 f_j <= t_j as a rotated cone per input over diagonal variances"),
        Bridge("psd", ("psd",), "[[Sigma, f_j], [f_j', t_j]] >= 0 per input (Schur complement), for correlated noise"),
    )
    eps: float = 0.0
    delta: float = 0.0
    calibration: str = "analytic"
    text: str = ""


class Leakage(ConstraintSet):
    """``I(Y; F) <= eps`` bits of a channel W(Y | X) (Shariatnasab et al. eq. 3)."""

    kind: ClassVar[str] = "leakage"
    unbridged: ClassVar[str] = (
        "I(Y; F) is convex in the channel, but the objective Q is not: the certified global method "
        "(bisection on the symmetric channels, a 1-D search along the boundary otherwise) bounds the program"
    )
    eps: float = 0.0
    text: str = ""


SETS: tuple[type[ConstraintSet], ...] = (
    Zero,
    Nonnegative,
    SecondOrderCone,
    PSD,
    SimplexRows,
    Fidelity,
    Budget,
    LogLift,
    GaussianDP,
    Leakage,
)
"""Every set, canonical first."""
