"""One verifier per set (``privopt.core.sets``): does the returned point lie in the set, within
the tolerances privopt verifies at (``verification.tolerances``)?

Each verifier takes the set, the point (a table, a covariance, a channel) and the set's data,
recomputes from them alone, and returns a ``Verdict``: its checks (named for the set, with
margins) and the values it measured. ``verify_set`` dispatches on the set's type
(``VERIFIERS``).

* ``SimplexRows``: ``|sum_y T(y | x) - 1| <= row_tol(width)`` (or the set's ``atol``), and
  ``0 <= T <= 1`` exactly;
* ``Fidelity``: ``coef * Dt + const <= 0`` (``== 0``) cell by cell, relative to
  ``max(floor, |coef Dt| + |const|)``;
* ``Zero`` / ``Nonnegative`` of an affine table ``A x + b``: ``|A x + b|`` / ``max(A x + b,
  0)`` relative to ``max(1, |A| |x| + |b|)``;
* ``Budget`` / ``LogLift``: the least eps the table achieves, in log space (Ding et al. eqs.
  4-5, in their pairwise form: a positive cell beside a zero achieves eps = inf), at most
  ``eps + budget_slack(eps)``;
* ``Nonnegative`` / ``PSD`` of a (co)variance: finite, no negative variance, no eigenvalue
  below ``-1e-12 max |S|``;
* ``GaussianDP``: each input's Mahalanobis sensitivity from a factor ``H H' = Sigma``, the delta
  it achieves at eps by Balle & Wang Thm. 8 in log space, ``log delta_achieved <= log delta +
  log1p(DELTA_RTOL)``, and the classic calibration's own bound (Dwork & Roth Thm. A.1);
* ``Leakage``: ``I(Y; F)`` recomputed from the channel (``atoms.leakage_bits``) at most
  ``eps (1 + LEAK_RTOL)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..core.sets import (
    PSD,
    Budget,
    ConstraintSet,
    Fidelity,
    GaussianDP,
    Leakage,
    LogLift,
    Nonnegative,
    SimplexRows,
    Zero,
)
from ..measures.reduce import worst
from .checks import Check, Verdict, compare, condition
from .tolerances import LEAK_RTOL, VERIFY_TOL, budget_slack, row_tol

# ------------------------------------------------------------------ tables


def simplex_rows(
    s: SimplexRows, table: np.ndarray, k: int = 1, rowsum: Callable[[np.ndarray], np.ndarray] | None = None
) -> Verdict:
    """The rows of ``table`` (over its trailing ``k`` axes) sum to 1 within ``row_tol(width)``
    (or ``s.atol``) and every cell lies in [0, 1] exactly. ``rowsum``: how the rows are summed
    (default numpy's sum over the trailing ``k`` axes; a transparency table of millions of
    short rows passes ``measures.reduce.osum``, its fast reduction). Values:
    ``max_row_sum_error``, ``max_range_violation``. NaN propagates (and fails)."""
    table = np.asarray(table, dtype=float)
    if table.size:
        sums = rowsum(table) if rowsum is not None else table.sum(axis=tuple(range(table.ndim - k, table.ndim)))
        row_err = float(np.abs(sums - 1.0).max())
        range_err = worst(worst(0.0, float(-table.min())), float(table.max() - 1.0))
    else:
        row_err = range_err = 0.0
    values = {"max_row_sum_error": row_err, "max_range_violation": range_err}
    if s.table:  # a named table built from its free parameters (a channel): absolute rows
        cells = compare(
            f"{s.kind} of {s.table}: cells in [0, 1]", range_err, 0.0, f"a cell of {s.table} lies outside [0, 1]"
        )
        rows = compare(
            f"{s.kind} of {s.table}: row sums", row_err, s.atol, f"a row of {s.table} sums to 1 {row_err:+.3g}"
        )
        return Verdict([cells, rows], values)
    tol = row_tol(s.width) if s.atol is None else s.atol
    rows = compare(
        f"{s.kind}: row sums", row_err, tol, f"a row sums to 1 +- {row_err:.3g} (tolerance {tol:.2g}: rounding)"
    )
    cells = compare(f"{s.kind}: cells in [0, 1]", range_err, 0.0, f"a cell lies outside [0, 1] by {range_err:.3g}")
    return Verdict([rows, cells], values)


def fidelity(
    s: Fidelity, coef: np.ndarray, const: np.ndarray, dense: np.ndarray, floor: float = 0.0, tol: float = VERIFY_TOL
) -> Verdict:
    """``coef * dense + const`` is <= 0 (or == 0) in every cell, relative to ``max(floor, |coef
    dense| + |const|)``: floor 0 (``verify``, the table is on its bounds: its own terms'
    rounding) or 1 (a route's measure: within its accuracy, absolutely). Value: ``error``, the
    largest relative violation (a violation of a term-free cell is inf)."""
    val = coef * dense + const
    scale = np.maximum(floor, np.abs(coef * dense) + np.abs(const))
    excess = np.abs(val) if s.sense == "==" else np.maximum(val, 0.0)
    err = float(np.divide(excess, scale, out=np.where(excess > 0, np.inf, 0.0), where=scale > 0).max(initial=0.0))
    return Verdict([compare(f"{s.kind} '{s.text}'", err, tol, f"'{s.text}' is violated by {err:.3g}")], {"error": err})


def linear_error(expr, sense: str, x: np.ndarray) -> float:
    """Largest violation of ``expr(x) == 0`` (sense "==", the set Zero) or ``expr(x) <= 0``
    ("<=", ``-expr`` in Nonnegative) over the defined cells of a ``LinTable`` ``expr = A x +
    b``, relative to ``max(1, |A| |x| + |b|)`` of its cell."""
    mask = expr.defined_mask()
    val = expr.value(x).ravel()[mask]
    A = expr.matrix()
    scale = np.maximum(1.0, (abs(A) @ np.abs(x) + np.abs(expr.b))[mask])
    err = np.abs(val) if sense == "==" else np.maximum(val, 0.0)
    return float((err / scale).max(initial=0.0))


def linear(s: Zero | Nonnegative, expr, x: np.ndarray, tol: float = VERIFY_TOL) -> Verdict:
    """An affine table ``expr`` (a ``LinTable``) in ``Zero`` (``expr = 0``) or ``Nonnegative``
    (``-expr >= 0``, the spec's ``lhs - rhs <= 0``), cell by cell, within ``tol`` relative to
    the magnitude of its terms (at least absolute). Value: ``error``."""
    err = linear_error(expr, "==" if isinstance(s, Zero) else "<=", x)
    return Verdict(
        [
            compare(
                f"{s.kind} '{s.text}'",
                err,
                tol,
                f"'{s.text}' is violated by {err:.3g} (relative to the size of its terms)",
            )
        ],
        {"error": err},
    )


# ------------------------------------------------------------------ privacy budgets


def conditional(cond_table, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(cond, live): a budget's conditional ``P(y | s)`` as an (S, Y) array, evaluated on the
    table ``x``, and which source cells are defined (live)."""
    cond = cond_table.value(x)
    ny = cond.shape[-1]
    cond = cond.reshape(-1, ny)
    live = cond_table.defined_mask().reshape(-1, ny).all(axis=1)
    return cond, live


def achieved_eps(s: Budget | LogLift, cond: np.ndarray, live: np.ndarray, weights=None, pairs=None) -> float:
    """The least eps the conditional satisfies for the set (at a budget's delta): the log of
    its largest ratio, pairwise (inf for a positive cell beside a zero)."""
    from ..measures import sanitization as ms  # a budget's check only (issue 23, goal 1)

    if isinstance(s, LogLift):
        return ms.loglift(cond, np.where(live, weights, 0.0))
    return ms.pairwise_eps(cond, live, s.delta, pairs)


def linear_violation(s: Budget | LogLift, cond: np.ndarray, live: np.ndarray, weights=None, pairs=None) -> float:
    """How far the set's linear form, scaled by e^-eps, is exceeded (0 when it holds): the
    shortfall of the smaller cell of a pair (``privopt check`` compares it)."""
    from ..measures import sanitization as ms  # a budget's check only (issue 23, goal 1)

    if isinstance(s, LogLift):
        return ms.loglift_violation(cond, np.where(live, weights, 0.0), s.eps)
    return ms.pairwise_violation(cond, live, s.eps, s.delta, pairs)


def budget(s: Budget | LogLift, cond: np.ndarray, live: np.ndarray, weights=None, pairs=None) -> Verdict:
    """A dp / ldp budget or a log-lift bound on the conditional ``cond`` (S, Y) with its
    ``live`` source cells (``weights``: P(s), for a log-lift; ``pairs``: the adjacent pairs
    of a budget over them). Values: ``achieved`` eps, ``log_excess`` (achieved - eps) and
    ``violation`` (``linear_violation``)."""
    achieved = achieved_eps(s, cond, live, weights, pairs)
    check = compare(
        f"{s.kind} '{s.text}'",
        achieved,
        s.eps + budget_slack(s.eps),
        f"'{s.text}' does not hold: the table achieves eps = {achieved:.6g}",
    )
    values = {
        "achieved": achieved,
        "log_excess": achieved - s.eps,
        "violation": linear_violation(s, cond, live, weights, pairs),
    }
    return Verdict([check], values)


# ------------------------------------------------------------------ (co)variances and Gaussian noise


def variance(s: Nonnegative | PSD, S: np.ndarray) -> Verdict:
    """A noise's variances (``Nonnegative``) or covariance (``PSD``): finite, no negative
    variance, no eigenvalue below ``-1e-12 max |S|`` (``s.text``: the noise's name)."""
    name = f"{s.kind} {s.text}"
    if not np.all(np.isfinite(S)):
        return Verdict([condition(name, False, f"the noise {s.text} has a variance that is not a finite number")])
    if isinstance(s, Nonnegative):
        low = float(S.min(initial=0.0))
        return Verdict([compare(name, -low, 0.0, f"the noise {s.text} has a negative variance {low:.3g}")])
    low = float(np.linalg.eigvalsh((S + S.T) / 2).min(initial=0.0))
    allowed = 1e-12 * float(np.abs(S).max(initial=0.0))
    return Verdict([compare(name, -low, allowed, f"the covariance of {s.text} is not positive semidefinite")])


def factor(blocks: dict[str, np.ndarray], cov: dict[str, np.ndarray], m: int) -> np.ndarray:
    """H with ``Sigma = sum_b G_b S_b G_b' = H H'``: ``G sqrt(s)`` for variances, ``G V
    sqrt(lambda)`` for a covariance ``S = V diag(lambda) V'`` (negative parts dropped)."""
    parts = [np.zeros((m, 0))]
    for name, G in blocks.items():
        S = cov[name]
        if S.ndim == 1:
            parts.append(G * np.sqrt(np.maximum(S, 0.0)))
        else:
            lam, V = np.linalg.eigh((S + S.T) / 2)
            parts.append(G @ (V * np.sqrt(np.maximum(lam, 0.0))))
    return np.hstack(parts)


def gaussian_dp(s: GaussianDP, H: np.ndarray | None, F: np.ndarray, widths: np.ndarray) -> Verdict:
    """The release ``F x + noise`` with ``Sigma = H H'`` is (eps, delta)-DP: the largest
    Mahalanobis sensitivity ``Delta = max_j w_j |H^+ f_j|`` (``sensitivities_of_factor``; inf
    when H is None: the noise failed its own set) achieves ``log delta(Delta, eps)`` (Balle &
    Wang Thm. 8) at most ``log delta + log1p(DELTA_RTOL)``, in log space (a delta of 1e-300 is
    compared to its own digits); for ``classic``, ``Delta <= classic_bound (1 + DELTA_RTOL)``.
    Values: ``max_sensitivity``, ``log_delta_achieved``, ``delta_achieved``."""
    from ..measures.gaussian import DELTA_RTOL, classic_bound, log_analytic_delta, sensitivities_of_factor

    sens = sensitivities_of_factor(H, F, widths) if H is not None else np.array([math.inf])
    worst_s = float(np.max(sens, initial=0.0))
    log_achieved = log_analytic_delta(worst_s, s.eps)
    achieved = math.exp(log_achieved)
    checks = [
        compare(
            f"{s.kind} '{s.text}'",
            log_achieved,
            math.log(s.delta) + math.log1p(DELTA_RTOL),
            f"'{s.text}' does not hold: the largest sensitivity {worst_s:.6g} gives delta = {achieved:.6g} at eps = {s.eps:g}",
        )
    ]
    if s.calibration == "classic":
        exact = classic_bound(s.eps, s.delta)
        checks.append(
            compare(
                f"{s.kind} '{s.text}': classic calibration",
                worst_s,
                exact * (1 + DELTA_RTOL),
                f"the classic calibration needs sensitivity <= {exact:.12g}; the noise gives {worst_s:.12g}",
            )
        )
    return Verdict(checks, {"max_sensitivity": worst_s, "log_delta_achieved": log_achieved, "delta_achieved": achieved})


# ------------------------------------------------------------------ channels


def leakage(s: Leakage, px1: float, W: np.ndarray, F: np.ndarray) -> Verdict:
    """``I(Y; F) <= eps (1 + LEAK_RTOL)`` bits, the leakage recomputed from the channel
    (``atoms.leakage_bits``: term by term, no cancellation). Value: ``leakage_bits``."""
    from .atoms import leakage_bits

    leak = leakage_bits(px1, W, F)
    check = compare(
        f"{s.kind} '{s.text}'",
        leak,
        s.eps * (1 + LEAK_RTOL),
        f"'{s.text}' does not hold: I = {leak:.12g} bits > {s.eps:g}",
    )
    return Verdict([check], {"leakage_bits": leak})


def symmetric(s: SimplexRows, W: np.ndarray) -> Check:
    """The symmetric restriction of a 2 x 2 channel: ``W[0, 1] == W[1, 0]`` exactly."""
    return condition(
        f"symmetric {s.table}",
        W[0, 1] == W[1, 0],
        f"P(Y = 1 | X = 0) = {W[0, 1]!r} differs from P(Y = 0 | X = 1) = {W[1, 0]!r}",
    )


# ------------------------------------------------------------------ dispatch

VERIFIERS: dict[type[ConstraintSet], Callable[..., Verdict]] = {
    SimplexRows: simplex_rows,
    Fidelity: fidelity,
    Zero: linear,
    Budget: budget,
    LogLift: budget,
    PSD: variance,
    GaussianDP: gaussian_dp,
    Leakage: leakage,
}
"""The verifier of each set (``Nonnegative`` is ``linear`` over an affine table and
``variance`` over a noise's variances: call those directly)."""


def verify_set(s: ConstraintSet, *point, **data) -> Verdict:
    """The verdict of ``point`` in the set ``s``, by its verifier."""
    try:
        verifier = VERIFIERS[type(s)]
    except KeyError:
        raise TypeError(f"no verifier for the set '{s.kind}'; call linear or variance for a nonnegative set") from None
    return verifier(s, *point, **data)
