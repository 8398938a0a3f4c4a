"""Lowering a mechanism problem to one sparse LP or QP (backends/base.py's canonical form).

Columns: the design's cells ``M`` (C order over the design's axes), then auxiliary envelope
columns of the pairwise budgets, then (for a QP) one residual column r_k per squared term,
with the row ``a_k x - r_k = -b_k`` and the diagonal Hessian ``2 w_k``. Rows, each tagged with the family (spec statement) it
comes from, so an infeasible program can name what blocks it:

* every conditioning row of the design sums to 1; cells lie in [0, 1];
* each linear constraint, one row per defined cell (``A x + b <= 0`` or ``== 0``);
* ``ldp`` / ``dp`` over all pairs of source values, in linear size: per released value y,
  an upper envelope ``u_y`` and a lower envelope ``l_y`` with

      cond[a, y] <= u_y,   cond[a, y] >= l_y,   u_y <= e^eps l_y + delta / |A|

  which holds iff ``max_a cond[a, y] <= e^eps min_a cond[a, y] + delta / |A|`` (Ding et al.
  eq. 1 for delta = 0; Ramon & Basu Sec. 3.3 for delta > 0): 2|A||Y| + |Y| rows instead of
  |A|^2 |Y|;
* ``dp`` over an adjacency relation: one row per ordered adjacent pair and y;
* ``loglift`` (eq. 2): ``e^-eps P(y) <= cond[a, y] <= e^eps P(y)`` for every a with
  ``P(a) > 0``, where ``P(y) = sum_a P(a) cond[a, y]``: |log P(a | y) / P(a)| <= eps,
  multiplied through by P(a) P(y) >= 0. Already 2|A||Y| rows.

Every budget row is stated with the factor e^-eps <= 1 (``e^-eps u_y - l_y <= e^-eps delta / |A|``
and likewise for pairs and log-lift), so no coefficient exceeds 1 in magnitude and ``exp``
cannot overflow; the eps range privopt accepts is checked by ``budget_range`` before lowering
(docs/verification.md).
"""

from __future__ import annotations

import math

import numpy as np

from ..backends.base import LinearProgram
from ..errors import SpecError
from ..model.linear import LinTable, widen_columns
from ..model.problem import Budget, LinearConstraint, Problem
from ..records import Record

# A table meeting a budget with eps may need cells e^-(D eps) times the largest (D: the
# longest chain of pairs, 1 for all pairs); double precision ends near e^-708 (subnormals
# aside), so D * eps <= LOG_RANGE always works; beyond it an answer is given only when it
# verifies, else the budget is refused (docs/verification.md).
LOG_RANGE = 680.0


class MechanismLP(Record):
    lp: LinearProgram
    n_design: int
    sign: float  # +1 minimize, -1 maximize: objective value = sign * scale * (c @ x) + const
    const: float
    families: tuple[str, ...]  # family k: "line L: text"
    row_family: np.ndarray  # family index of every row
    scale: float = 1.0  # the objective's cost scale (a power of 2): c and Q are divided by it

    def objective_value(self, x: np.ndarray) -> float:
        quad = 0.5 * float(x @ (self.lp.Q @ x)) if self.lp.Q is not None else 0.0
        return float(self.sign * self.scale * (self.lp.c @ x + quad) + self.const)

    def in_objective_units(self, value: float) -> float:
        """A value of the lowered program's ``c x (+ 1/2 x'Qx)`` (a bound, say) in the spec's units."""
        return self.sign * self.scale * value + self.const

    def restricted(self, keep_families) -> LinearProgram:
        """The same program with only the rows of ``keep_families`` (for infeasibility
        diagnosis) and a zero objective."""
        rows = np.flatnonzero(np.isin(self.row_family, list(keep_families)))
        lp = self.lp
        return LinearProgram(
            np.zeros_like(lp.c), lp.A[rows], lp.row_lower[rows], lp.row_upper[rows], lp.col_lower, lp.col_upper
        )


def _family_text(span, text: str) -> str:
    return f"line {span.line}: '{text}'" if span is not None else text


def lower_mechanism(problem: Problem, pairwise: bool = False) -> MechanismLP:
    """The LP of ``problem``. ``pairwise=True`` writes every pair of an ldp/dp budget as its
    own row instead of the envelopes (|A|^2 |Y| rows): an independent formulation that
    ``privopt check`` solves beside the envelope form."""
    import scipy.sparse as sp

    design = problem.design
    n = problem.design_size
    shape = problem.shape(design.axes)
    if pairwise:
        problem = _all_pairs(problem)
    n_aux = sum(_aux_columns(b) for b in problem.budgets)
    squares = problem.objective.squares
    n_sq = squares.w.size if squares is not None else 0
    N = n + n_aux + n_sq
    blocks: list[tuple[sp.csr_array, np.ndarray, np.ndarray, int]] = []  # A, lo, hi, family
    families: list[str] = []

    # the design is a conditional distribution: rows sum to 1
    M = LinTable.variable(design.axes, shape, n)
    sums = M.sum_over(design.targets)
    families.append(
        _family_text(design.span, f"design {design.name}: each row of P({', '.join(design.targets)} | ...) sums to 1")
    )
    ones = np.ones(sums.cells)
    blocks.append((sums.matrix(), ones, ones, 0))

    for c in problem.constraints:
        assert isinstance(c, LinearConstraint)
        fam = len(families)
        families.append(_family_text(c.span, c.text))
        A, b = c.expr.take(np.ones(c.expr.cells, dtype=bool))
        lo = -b if c.sense == "==" else np.full(b.size, -np.inf)
        blocks.append((A, lo, -b, fam))

    offset = n
    for bud in problem.budgets:
        fam = len(families)
        families.append(_family_text(bud.span, bud.text))
        for A, lo, hi in _budget_rows(bud, offset, N):
            blocks.append((A, lo, hi, fam))
        offset += _aux_columns(bud)

    Q = None
    col_lower = np.zeros(N)
    col_upper = np.ones(N)
    if squares is not None:
        # one residual column r_k per square with the row  a_k x - r_k = -b_k,  so r_k = a_k x + b_k;
        # sum_k w_k r_k^2 = 1/2 r' diag(2 w) r (minimize only): a diagonal Hessian, where A'WA
        # would be dense per block
        fam = len(families)
        families.append(_family_text(problem.objective.span, "the squared terms of the objective"))
        r_cols = n + n_aux + np.arange(n_sq)
        Ak = widen_columns(squares.A, N) - sp.csr_array((np.ones(n_sq), (np.arange(n_sq), r_cols)), shape=(n_sq, N))
        blocks.append((Ak.tocsr(), -squares.b, -squares.b, fam))
        Q = sp.csc_array((2.0 * squares.w, (r_cols, r_cols)), shape=(N, N))
        # r_k's range over the unit box (implied, never binding): every column is then bounded,
        # so a solver's "unbounded" verdict is recognizably wrong (backends/highs.py)
        col_lower[r_cols] = squares.b + squares.A.minimum(0).sum(axis=1)
        col_upper[r_cols] = squares.b + squares.A.maximum(0).sum(axis=1)
    A = sp.vstack([widen_columns(blk[0], N) for blk in blocks], format="csc")
    row_lower = np.concatenate([blk[1] for blk in blocks])
    row_upper = np.concatenate([blk[2] for blk in blocks])
    row_family = np.concatenate([np.full(blk[0].shape[0], blk[3]) for blk in blocks])

    obj = problem.objective
    sign = 1.0 if obj.sense == "minimize" else -1.0
    row = obj.expr.matrix()
    c = np.zeros(N)
    c[:n] = sign * row.toarray().ravel()
    const = float(obj.expr.b[0])
    scale = _cost_scale(c, Q)
    c = c / scale
    Q = Q / scale if Q is not None else None
    lp = LinearProgram(c, A, row_lower, row_upper, col_lower, col_upper, Q)
    return MechanismLP(lp, n, sign, const, tuple(families), row_family, scale)


def objective_scale(problem: Problem) -> float:
    """The cost scale ``lower_mechanism`` divides the objective by (``_cost_scale``)."""
    import scipy.sparse as sp

    obj = problem.objective
    c = np.abs(obj.expr.matrix().toarray().ravel())
    Q = sp.csc_array(2.0 * np.abs(obj.squares.w)[None, :]) if obj.squares is not None else None
    return _cost_scale(c, Q)


def _cost_scale(c: np.ndarray, Q) -> float:
    """The power of 2 nearest the largest cost coefficient (1 for a zero objective). Solvers
    judge reduced costs against an absolute tolerance (HiGHS: 1e-9), so costs of 1e-9 would
    stop them at the first basis; dividing by a power of 2 is exact, and the optimum is the
    same."""
    largest = max(float(np.abs(c).max(initial=0.0)), float(np.abs(Q.data).max(initial=0.0)) if Q is not None else 0.0)
    if not (largest > 0 and np.isfinite(largest)):
        return 1.0
    return float(2.0 ** np.round(np.log2(largest)))


def chain_length(b: Budget) -> int:
    """The longest shortest chain of pairs a -> a' -> ... of a budget (1 for all pairs and for
    log-lift): a floor on cond[a, y] propagates that far, so a table may need cells
    e^-(chain * eps) times the largest."""
    import scipy.sparse as sp

    if b.pairs is None or b.kind == "loglift" or b.pairs.size == 0:
        return 1
    from scipy.sparse.csgraph import shortest_path

    k = b.source_cells
    if k > 2000:  # a path never has more than k - 1 steps; skip the all-pairs search
        return k - 1
    g = sp.csr_array((np.ones(len(b.pairs)), (b.pairs[:, 0], b.pairs[:, 1])), shape=(k, k))
    d = shortest_path(g, unweighted=True, directed=True)
    return max(int(d[np.isfinite(d)].max(initial=1)), 1)


def check_budget_range(budgets) -> None:
    """Refuse a budget whose verified tables may need numbers outside double precision:
    ``chain_length * eps > LOG_RANGE`` (SpecError at the budget, with the range that works).
    The mechanism pipeline calls it with the budgets a returned table failed."""
    for b in budgets:
        chain = chain_length(b)
        if chain * b.eps <= LOG_RANGE:
            continue
        top = LOG_RANGE / chain
        via = f" across a chain of {chain} adjacent pairs" if chain > 1 else ""
        raise SpecError(
            f"eps = {b.eps:g} is beyond what privopt can solve and verify for '{b.text}': the "
            f"returned table did not verify, and a table meeting the budget may need cells "
            f"e^-{chain * b.eps:.4g} times others{via}; double precision ends near e^-708",
            b.span,
            f"use eps <= {top:.6g} for this budget, where every table it allows can be represented (a "
            "larger eps constrains the table only through which cells are zero, which floating point "
            "cannot tell from tiny values)",
        )


def _all_pairs(problem: Problem) -> Problem:
    from dataclasses import replace

    budgets = []
    for b in problem.budgets:
        if b.kind in ("ldp", "dp") and b.pairs is None:
            k = b.source_cells
            a1, a2 = np.nonzero(~np.eye(k, dtype=bool))
            b = replace(b, pairs=np.stack([a1, a2], axis=1))
        budgets.append(b)
    return replace(problem, budgets=tuple(budgets))


def _aux_columns(b: Budget) -> int:
    """Envelope columns (u_y, l_y per released value) for a budget over all pairs."""
    return 2 * b.cond.shape[-1] if b.kind in ("ldp", "dp") and b.pairs is None else 0


def _budget_rows(b: Budget, offset: int, N: int):
    """The rows of one budget, each stated on the side that keeps every coefficient <= 1 in
    magnitude: ``cond[a, y] <= e^eps cond[a', y] + s`` is written
    ``e^-eps cond[a, y] - cond[a', y] <= e^-eps s`` (docs/verification.md, Scaling).
    ``e^-eps`` is computed as ``exp(-eps)``, which cannot overflow."""
    import scipy.sparse as sp

    cond = b.cond.widen(N)
    ny = cond.shape[-1]
    na = cond.cells // ny
    A = cond.matrix()
    live = cond.defined_mask().reshape(na, ny)
    alive_a = live.all(axis=1)
    f = math.exp(-b.eps)  # e^-eps in (0, 1] for eps >= 0
    if b.kind == "loglift":
        assert not np.any(cond.b), "an induced conditional has no constant part"
        w = np.where(alive_a, b.weights, 0.0)
        # P(y) = sum_a w_a cond[a, y]: one row per y
        Py = sp.kron(sp.csr_array(w[None, :]), sp.eye_array(ny), format="csr") @ A
        keep = np.flatnonzero(np.repeat(alive_a & (b.weights > 0), ny))
        Py_rep = Py[np.tile(np.arange(ny), na)[keep]]
        Ak = A[keep]
        inf = np.full(keep.size, np.inf)
        zero = np.zeros(keep.size)
        yield (f * Ak - Py_rep).tocsr(), -inf, zero  # cond <= e^eps P(y), times e^-eps
        yield (Ak - f * Py_rep).tocsr(), zero, inf  # cond >= e^-eps P(y)
        return
    slack = b.delta / na
    if b.pairs is not None:
        a1, a2 = b.pairs[:, 0], b.pairs[:, 1]
        ok = alive_a[a1] & alive_a[a2]
        a1, a2 = a1[ok], a2[ok]
        r1 = (a1[:, None] * ny + np.arange(ny)).ravel()
        r2 = (a2[:, None] * ny + np.arange(ny)).ravel()
        rows = (f * A[r1] - A[r2]).tocsr()
        yield rows, np.full(r1.size, -np.inf), np.full(r1.size, f * slack) - (f * cond.b[r1] - cond.b[r2])
        return
    cells = np.flatnonzero(np.repeat(alive_a, ny))
    y_of = cells % ny
    upper_col = offset + y_of  # u_y
    lower_col = offset + ny + y_of  # l_y
    k = cells.size
    U = sp.csr_array((np.ones(k), (np.arange(k), upper_col)), shape=(k, N))
    L = sp.csr_array((np.ones(k), (np.arange(k), lower_col)), shape=(k, N))
    base = cond.b[cells]
    inf = np.full(k, np.inf)
    yield (A[cells] - U).tocsr(), -inf, -base  # cond <= u_y
    yield (A[cells] - L).tocsr(), -base, inf  # cond >= l_y
    env = sp.csr_array(
        (
            np.concatenate([np.full(ny, f), -np.ones(ny)]),
            (np.tile(np.arange(ny), 2), np.concatenate([offset + np.arange(ny), offset + ny + np.arange(ny)])),
        ),
        shape=(ny, N),
    )
    yield env, np.full(ny, -np.inf), np.full(ny, f * slack)  # e^-eps u_y - l_y <= e^-eps delta / |A|
