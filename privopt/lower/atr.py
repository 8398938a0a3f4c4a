"""Lowering an ATR problem (Chen et al. Sec. 6, problem (OPT) eq. 16) to dense group arrays.

Records are the combinations of the public and private attributes; a QID group is one
combination of the public attributes (Table 3: T_{x_U}). Every group holds every private
combination, so the instance is dense:

    p[g, i]       prior P(x) of record i of group g (joint, or P(x_S | x_U): the optimum only
                  depends on P(x | T_{x_U}), so either scale gives the same answer)
    lower/upper   [g, i, a] bounds on D~_a(x) from the fidelity constraints (eq. 11), clipped to [0, 1]
    reference     [g, i, a] the true mapping D, when the spec gives it

Bounds are intersected with the simplex: with binary outcomes D~_0 = 1 - D~_1, so the
effective bounds on D~_1 are [max(L1, 1 - U0), min(U1, 1 - L0)].
"""

from __future__ import annotations

import numpy as np

from ..errors import InfeasibleError
from ..measures.reduce import osum
from ..model.problem import Problem
from ..records import Record

FEAS_TOL = 1e-12


class ATRInstance(Record):
    public: tuple[str, ...]
    private: tuple[str, ...]
    outcome: str
    public_labels: tuple[tuple[str, ...], ...]  # per public variable
    private_labels: tuple[tuple[str, ...], ...]
    outcome_labels: tuple[str, ...]
    p: np.ndarray  # (G, m)
    lower: np.ndarray  # (G, m, A)
    upper: np.ndarray  # (G, m, A)
    reference: np.ndarray | None  # (G, m, A)

    @property
    def n_groups(self) -> int:
        return self.p.shape[0]

    @property
    def group_size(self) -> int:
        return self.p.shape[1]

    @property
    def n_outcomes(self) -> int:
        return self.lower.shape[2]

    def group_key(self, g: int) -> dict[str, str]:
        idx = np.unravel_index(g, tuple(len(labels) for labels in self.public_labels)) if self.public else ()
        return {v: labs[i] for v, labs, i in zip(self.public, self.public_labels, idx)}

    def binary_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Effective bounds on D~_1 (outcome index 1) for two outcomes."""
        lo, hi = tighten_to_simplex(self.lower, self.upper)
        return lo[..., 1], hi[..., 1]


TIGHTEN_TOL = 1e-12


def tighten_to_simplex(lower: np.ndarray, upper: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bounds on D~_a(x) implied by sum_a D~_a(x) = 1: L'_a = max(L_a, 1 - sum_{b != a} U_b) and
    U'_a = min(U_a, 1 - sum_{b != a} L_b), over the last axis.

    A bound is moved only by more than TIGHTEN_TOL: rounding in 1 - (sum U - U_a) must not turn
    a lower bound of 0 into 1e-16, because any positive floor on a record that alone can take an
    outcome forces confidence 1 there (Def. 3), so the error would not stay small.
    """
    lo_sum = osum(lower, keepdims=True)
    hi_sum = osum(upper, keepdims=True)
    lo = np.maximum(lower, 1.0 - (hi_sum - upper))
    hi = np.minimum(upper, 1.0 - (lo_sum - lower))
    lo = np.where(lo - lower > TIGHTEN_TOL, lo, lower)
    hi = np.where(upper - hi > TIGHTEN_TOL, hi, upper)
    return lo, hi


def lower_atr(problem: Problem, bounds: bool = True) -> ATRInstance:
    """Dense arrays of the ATR instance; raises ``InfeasibleError`` when bounds are contradictory.
    ``bounds=False`` leaves the constraints out (lower 0, upper 1): the prior and the true
    mapping alone, for measuring a given table (``privopt audit``)."""
    m = problem.objective.measure
    design = problem.design
    order = m.public + m.private + (m.outcome,)
    shape = problem.shape(order)
    G = int(np.prod(shape[: len(m.public)], dtype=np.int64)) if m.public else 1
    msize = int(np.prod(shape[len(m.public) : -1], dtype=np.int64))
    A = shape[-1]

    def to_dense(arr: np.ndarray, axes: tuple[str, ...]) -> np.ndarray:
        return np.transpose(arr, [axes.index(a) for a in order]).reshape(G, msize, A)

    lower = np.zeros((G, msize, A))
    upper = np.ones((G, msize, A))
    lower_src = np.full((G, msize, A), -1)  # index of the constraint that set each bound (-1: [0, 1])
    upper_src = np.full((G, msize, A), -1)
    reasons: list[str] = []
    for k, c in enumerate(problem.constraints if bounds else ()):
        coef = to_dense(np.broadcast_to(c.coef, problem.shape(design.axes)), design.axes)
        const = to_dense(np.broadcast_to(c.const, problem.shape(design.axes)), design.axes)
        with np.errstate(divide="ignore", invalid="ignore"):
            bound = -const / coef
        pos, neg, zero = coef > 0, coef < 0, coef == 0
        sets_upper = (pos | (~zero & (c.sense == "=="))) & (bound < upper)
        sets_lower = (neg | (~zero & (c.sense == "=="))) & (bound > lower)
        upper = np.where(sets_upper, bound, upper)
        lower = np.where(sets_lower, bound, lower)
        upper_src = np.where(sets_upper, k, upper_src)
        lower_src = np.where(sets_lower, k, lower_src)
        broken = zero & ((np.abs(const) > 1e-12) if c.sense == "==" else (const > 1e-12))
        if broken.any():
            g, i, a = np.argwhere(broken)[0]
            reasons.append(
                f"{_where(c)}'{c.text}' fails at {_cell_text(problem, order, G, msize, g, i, a)}"
                f" whatever the design ({int(broken.sum())} cell(s))"
            )
    bad = lower > upper + FEAS_TOL
    if bad.any():
        g, i, a = np.argwhere(bad)[0]

        def src(k: int) -> str:
            return "0 <= design <= 1" if k < 0 else f"{_where(problem.constraints[k])}'{problem.constraints[k].text}'"

        reasons.append(
            f"at {_cell_text(problem, order, G, msize, g, i, a)} the bounds are empty: lower bound "
            f"{lower[g, i, a]:.6g} from {src(lower_src[g, i, a])} exceeds upper bound {upper[g, i, a]:.6g} "
            f"from {src(upper_src[g, i, a])} ({int(bad.sum())} cell(s) like this)"
        )
    lower = np.minimum(lower, upper)  # only differ by <= FEAS_TOL here
    row_lo, row_hi = osum(lower), osum(upper)
    bad_rows = (row_lo > 1 + FEAS_TOL) | (row_hi < 1 - FEAS_TOL)
    if bad_rows.any() and not reasons:
        g, i = np.argwhere(bad_rows)[0]
        reasons.append(
            f"no distribution over {m.outcome} fits the bounds for {_record_text(problem, order, G, msize, g, i)}: "
            f"lower bounds sum to {row_lo[g, i]:.6g}, upper bounds to {row_hi[g, i]:.6g} ({int(bad_rows.sum())} record(s))"
        )
    if reasons:
        raise InfeasibleError("the constraints admit no table", reasons)

    prior = problem.known[m.prior]
    p_axes = m.public + m.private
    p = np.transpose(prior.data, [prior.axes.index(a) for a in p_axes]).reshape(G, msize)
    ref = None
    if m.reference is not None:
        r = problem.known[m.reference]
        ref = to_dense(r.data, r.axes)
    labels = lambda names: tuple(problem.variables[n].labels for n in names)  # noqa: E731
    return ATRInstance(
        public=m.public,
        private=m.private,
        outcome=m.outcome,
        public_labels=labels(m.public),
        private_labels=labels(m.private),
        outcome_labels=problem.variables[m.outcome].labels,
        p=np.ascontiguousarray(p, dtype=float),
        lower=lower,
        upper=upper,
        reference=ref,
    )


def _where(c) -> str:
    return f"line {c.span.line}: " if c.span is not None else ""


def _cell_text(problem, order, G, msize, g, i, a) -> str:
    return _record_text(problem, order, G, msize, g, i) + f", {order[-1]}={problem.variables[order[-1]].labels[a]}"


def _record_text(problem, order, G, msize, g, i) -> str:
    sizes = problem.shape(order[:-1])
    flat = int(g) * msize + int(i)
    idx = np.unravel_index(flat, sizes)
    return ", ".join(f"{v}={problem.variables[v].labels[j]}" for v, j in zip(order[:-1], idx))


__all__ = ["ATRInstance", "lower_atr"]
