"""Closed-form optimum of the binary ATR problem (Chen et al. Theorem 1, Algorithm 1), corrected.

Per QID group, write y_i = P(x_i) D~_1(x_i) in [a_i, b_i] = P(x_i) [L_i, U_i] (the effective
bounds of eq. 11 on D~_1) and z_i = P(x_i) - y_i, P = sum_i P(x_i). With

    m1 = max_i a_i                 (= P(x^1) D~_1(x^1)_min)
    m0 = max_i (P(x_i) - b_i)      (= P(x^0) D~_0(x^0)_min)
    beta_1 = m1 / sum_i min(b_i, m1)            beta_0 = m0 / sum_i min(P(x_i) - a_i, m0)
    beta_p = (m1 + m0) / P                       beta_min = max_i P(x_i) / P   (Lemma 5)

the optimum of (OPT-Sub) is

    beta* = max(beta_0, beta_1, beta_p, beta_min).

Theorem 1 as printed omits beta_min. Each of the four is a lower bound (beta_min by Lemma 5;
beta_p as a mediant of the two binding ratios; beta_a because M / sum_i min(b_i, M) is
non-decreasing in the largest joint M >= m_a); without beta_min the theorem fails, e.g. on a
group of one record with free bounds (it gives 0; the optimum is 1). docs/atr.md has the
achievability proof: at beta*, the set of S1 = sum_i y_i meeting every constraint is a
non-empty interval [max(m1/beta, P - s0max), min(P - m0/beta, s1max)], where
s_amax(beta) is the largest s with sum_i min(cap_i, beta s) >= s.

The returned table is one optimal solution (beta_p cases have many, Sec. 7.4.2): S1 is
chosen nearest the true mapping's sum, and each y_i starts at the true P(x_i) D_1(x_i),
clipped into its feasible interval, then moves proportionally to meet S1. Everything is
vectorized over groups; the only sort (for s_amax) runs on the groups that need it.

Every group is certified: the lower bound beta* is compared with the confidence recomputed
from the returned table (``measures.confidence``).
"""

from __future__ import annotations

import numpy as np

from ..lower.atr import tighten_to_simplex
from ..measures.reduce import gmax, gsum, shift_onto_sum
from ..records import Record

CASES = ("beta_0", "beta_1", "beta_p", "beta_min")
ZERO_MASS = 1e-14  # joint masses below this fraction of the group are rounding crumbs


class BinaryATRSolution(Record):
    beta: np.ndarray  # (G,) optimal beta per group (0 for a group of zero mass)
    candidates: np.ndarray  # (G, 4) beta_0, beta_1, beta_p, beta_min
    case: np.ndarray  # (G,) index into CASES of the binding candidate
    d1: np.ndarray  # (G, m) the optimal D~_1
    achieved: np.ndarray  # (G,) max confidence recomputed from the returned table
    d0: np.ndarray | None = None  # (G, m) D~_0, exact where it is the small side; None: 1 - d1

    @property
    def table(self) -> np.ndarray:
        """(G, m, 2): D~_0, D~_1. Use this, not ``1 - d1``: where D~_0 is tiny it is computed
        directly, since 1 - d1 keeps only its absolute precision (1e-16)."""
        d0 = 1.0 - self.d1 if self.d0 is None else self.d0
        return np.stack([d0, self.d1], axis=2)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(num > 0, num / np.where(den > 0, den, 1.0), 0.0)


def _s_max(caps: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """Largest s >= 0 with sum_i min(caps_i, beta s) >= s, per row (beta > 0).

    With tau = beta s and caps sorted descending c_(0) >= c_(1) >= ..., the concave function
    g(tau) = sum_i min(c_i, tau) - tau / beta is >= 0 exactly on [0, tau*]. Let k0 be the first
    breakpoint with g(c_(k0)) >= 0; on [c_(k0), c_(k0-1)], sum_i min(c_i, tau) = k0 tau + R_k0
    (R_k = sum_{j>=k} c_(j)), so tau* = R_k0 / (1/beta - k0).
    """
    n, m = caps.shape
    c = -np.sort(-caps, axis=1)
    c = np.concatenate([c, np.zeros((n, 1))], axis=1)  # a breakpoint at 0 always has g = 0
    suffix = np.cumsum(c[:, ::-1], axis=1)[:, ::-1]  # R_k
    k = np.arange(m + 1)
    inv = 1.0 / beta
    g = k * c + suffix - c * inv[:, None]
    k0 = np.argmax(g >= -1e-15 * np.maximum(1.0, suffix[:, :1]), axis=1)
    tau = suffix[np.arange(n), k0] / (inv - k0)
    return tau * inv


def lower_bound(p: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """A proven lower bound on beta*_g for any number of outcomes (exact for two).

    With bounds tightened by the simplex (sum_a D~_a = 1), a_{i,a} = P(x_i) L_{i,a}, caps
    b_{i,a} = P(x_i) U_{i,a} and m_a = max_i a_{i,a}:

        max( max_a m_a / sum_i min(b_{i,a}, m_a),   sum_a m_a / P,   max_i P(x_i) / P ).

    The first is Theorem 1's beta_a argument (any outcome alone), the second the mediant of
    the binding ratios (sum_a S_a = P), the third Lemma 5. For two outcomes this is the
    optimum (see ``solve_binary``).
    """
    lo, hi = tighten_to_simplex(lower, upper)
    P = gsum(p)
    a = p[:, :, None] * lo
    b = p[:, :, None] * hi
    m = gmax(a)  # (G, A)
    s = gsum(np.minimum(b, m[:, None, :]))
    per_outcome = _ratio(m, s).max(axis=1)
    return np.maximum.reduce([per_outcome, _ratio(m.sum(axis=1), P), _ratio(gmax(p), P)])


def _allocate(p, a, b, floor0, beta, s, y_target, d_target, lo, hi):
    """One optimal table at (beta, S1 = s): each y_i starts at the target, is clipped into its
    interval [max(a_i, P(x_i) - beta (P - s)), min(b_i, beta s)], and the rows move
    proportionally onto sum s. Returns D~_1 and its max confidence per group."""
    P = gsum(p)
    y_lo = np.maximum(a, p - beta[:, None] * (P - s)[:, None])
    y_hi = np.minimum(b, beta[:, None] * s[:, None])
    y_hi = np.maximum(y_hi, y_lo)
    y = np.clip(shift_onto_sum(y_target, y_lo, y_hi, s, axis=1), a, b)
    # Rounding in p - beta (P - s) can leave 1e-17 where the optimum has no mass, and a lone
    # positive mass has confidence 1 (Def. 3; with no mass the outcome is never observed). So we
    # also try the table with such crumbs at exactly 0, for either outcome where the bounds allow,
    # and keep per group whichever has the lower recomputed confidence: a tiny mass can also be
    # what the optimum needs (at beta = beta_min every record's share is proportional).
    crumb = ZERO_MASS * P[:, None]
    y_clean = np.where((y < crumb) & (a <= 0), 0.0, y)
    y_clean = np.where((p - y_clean < crumb) & (floor0 <= 0), p, y_clean)
    d1, achieved = _table(p, y, d_target, lo, hi)
    idx = np.flatnonzero((y_clean != y).any(axis=1))  # usually none
    if idx.size:
        d1_clean, achieved_clean = _table(p[idx], y_clean[idx], d_target[idx], lo[idx], hi[idx])
        take = achieved_clean < achieved[idx]
        d1[idx[take]] = d1_clean[take]
        achieved[idx[take]] = achieved_clean[take]
    return d1, achieved


def _table(p, y, d_default, lo, hi):
    """D~_1 from the joint masses y (d_default where P(x) = 0) and its max confidence per group."""
    with np.errstate(divide="ignore", invalid="ignore"):
        d1 = np.where(p > 0, y / np.where(p > 0, p, 1.0), d_default)
    d1 = np.clip(d1, lo, hi)
    return d1, _binary_confidence(p, d1)


def _binary_confidence(p: np.ndarray, d1: np.ndarray) -> np.ndarray:
    """group_max_confidence for two outcomes, without building the (G, m, 2) table."""
    y = p * d1
    z = p * (1.0 - d1)
    return np.maximum(_ratio(gmax(y), gsum(y)), _ratio(gmax(z), gsum(z)))


def solve_binary(p: np.ndarray, lo: np.ndarray, hi: np.ndarray, target: np.ndarray | None = None) -> BinaryATRSolution:
    """Optimal D~_1 for every group at once.

    ``p`` (G, m) prior, ``lo``/``hi`` (G, m) effective bounds on D~_1 with lo <= hi, ``target``
    (G, m) the true D_1 used to pick among optimal solutions (None: the bounds' midpoint).

    The allocation works with the approve-side masses y_i, so a deny-side mass z_i = P(x_i) - y_i
    far below y_i keeps only y_i's absolute precision. Groups whose certificate still fails are
    solved again with the outcomes swapped (then z is computed directly and D~_0 stored exactly,
    ``BinaryATRSolution.table``), and the better orientation is kept per group.
    """
    sol = _solve_binary(p, lo, hi, target)
    P = gsum(np.asarray(p, dtype=float))
    off = np.flatnonzero((P > 0) & (sol.achieved > sol.beta * (1 + 1e-12) + 1e-15))
    if not off.size:
        return sol
    t = None if target is None else 1.0 - np.asarray(target)[off]
    flip = _solve_binary(np.asarray(p, dtype=float)[off], 1.0 - hi[off], 1.0 - lo[off], t)
    take = off[flip.achieved < sol.achieved[off]]
    use = flip.achieved < sol.achieved[off]
    d1, d0, achieved = sol.d1.copy(), 1.0 - sol.d1, sol.achieved.copy()
    d0[take] = flip.d1[use]
    d1[take] = 1.0 - flip.d1[use]
    achieved[take] = flip.achieved[use]
    return BinaryATRSolution(beta=sol.beta, candidates=sol.candidates, case=sol.case, d1=d1, achieved=achieved, d0=d0)


def _solve_binary(p: np.ndarray, lo: np.ndarray, hi: np.ndarray, target: np.ndarray | None) -> BinaryATRSolution:
    p = np.asarray(p, dtype=float)
    P = gsum(p)
    a, b = p * lo, p * hi
    # bounds on z_i = P(x_i) D~_0(x_i), computed as products, not as p - b: with hi = 1 - 1e-16
    # the difference p - p*hi keeps no correct digit
    floor0, cap0 = p * (1.0 - hi), p * (1.0 - lo)
    m1 = gmax(a)
    m0 = gmax(floor0)
    s1 = gsum(np.minimum(b, m1[:, None]))
    s0 = gsum(np.minimum(cap0, m0[:, None]))
    cand = np.stack([_ratio(m0, s0), _ratio(m1, s1), _ratio(m1 + m0, P), _ratio(gmax(p), P)], axis=1)
    beta = cand.max(axis=1)
    case = np.argmax(cand >= beta[:, None] * (1 - 1e-12), axis=1)

    live = P > 0
    safe_beta = np.where(live, beta, 1.0)
    # the feasible interval of S1 = sum y; the fast inner interval first
    s_lo = np.maximum(m1 / safe_beta, P - s0)
    s_hi = np.minimum(P - m0 / safe_beta, s1)
    need = live & (s_lo > s_hi)
    if need.any():
        idx = np.flatnonzero(need)
        bb = safe_beta[idx]
        s1max = _s_max(b[idx], bb)
        s0max = _s_max(cap0[idx], bb)
        s_lo[idx] = np.maximum(m1[idx] / bb, P[idx] - s0max)
        s_hi[idx] = np.minimum(P[idx] - m0[idx] / bb, s1max)
    s_lo = np.maximum(s_lo, gsum(a))
    s_hi = np.minimum(s_hi, gsum(b))
    d_target = 0.5 * (lo + hi) if target is None else np.clip(target, lo, hi)
    y_target = p * d_target
    ok = s_lo <= s_hi
    s = np.where(ok, np.clip(gsum(y_target), s_lo, s_hi), 0.5 * (s_lo + s_hi))
    d1, achieved = _allocate(p, a, b, floor0, safe_beta, s, y_target, d_target, lo, hi)

    # S1 nearest the true mapping is best for fidelity, but a tiny S1 (or P - S1) makes
    # p - beta (P - S1) cancel; where the certificate then fails, try the interval's ends and
    # middle and keep the best (vectorized over those groups only).
    off = np.flatnonzero(live & (achieved > beta * (1 + 1e-12) + 1e-15))
    for s_alt in (s_lo, s_hi, 0.5 * (s_lo + s_hi)) if off.size else ():
        idx = off
        d_alt, ach_alt = _allocate(
            p[idx],
            a[idx],
            b[idx],
            floor0[idx],
            safe_beta[idx],
            s_alt[idx],
            y_target[idx],
            d_target[idx],
            lo[idx],
            hi[idx],
        )
        take = ach_alt < achieved[idx]
        d1[idx[take]] = d_alt[take]
        achieved[idx[take]] = ach_alt[take]
    beta = np.where(live, beta, 0.0)
    return BinaryATRSolution(beta=beta, candidates=cand, case=case, d1=d1, achieved=achieved)


class Theorem1:
    """Chen et al. Theorem 1 (eq. 11's bounds, Algorithm 1), with Lemma 5's floor beta_min, as
    a recognizer (``core.plan.Recognizer``): it applies to every transparency report whose
    outcome is binary, since each of its constraints is ``coef * Dt + const (<= | ==) 0`` cell
    by cell (builder/build.py), so however it is spelled (``|Dt - D| <= c``, ``Dt >= alpha D``,
    a chain) it is a lower or upper bound per cell: the theorem's setting."""

    name = "theorem-1"
    method = "closed-form"
    cites = "Chen et al., Theorem 1 (with Lemma 5's beta_min)"

    def in_scope(self, problem) -> bool:
        """About a max-confidence ratio (Chen et al. eq. 16) over a design table."""
        return problem.design is not None and problem.objective.curvature == "ratio"

    def accepts(self, problem):
        from ..core.plan import Match

        m = problem.objective.measure
        n_out = problem.variables[m.outcome].size
        if n_out != 2:
            return Match.no(f"Theorem 1 covers two outcomes; {m.outcome} has {n_out}")
        texts = list(dict.fromkeys(c.text for c in problem.constraints))
        read = (
            f"{', '.join(repr(t) for t in texts)} read as bounds L <= {problem.design.name} <= U per cell; "
            if texts
            else ""
        )
        return Match.yes(
            f"binary outcome with elementwise fidelity bounds: {read}Theorem 1 (with beta_min, Lemma 5), vectorized over groups",
            data={
                "conditions": ["the outcome is binary", "every constraint is a bound per cell"]
                + [repr(t) for t in texts]
            },
        )

    def solve(self, problem, match, inst) -> BinaryATRSolution:
        """beta* = max(beta_0, beta_1, beta_p, beta_min) per group and a table attaining it,
        from the lowered instance ``inst`` (``lower.atr.lower_atr(problem)``, which the caller
        makes: lower/atr.py reads this module's bounds)."""
        lo, hi = inst.binary_bounds()
        return solve_binary(inst.p, lo, hi, inst.reference[..., 1] if inst.reference is not None else None)

    def answer(self, problem, match, inst, backend=None, time_limit=None):
        """The theorem's answer for the driver (``core.plan.Outcome``): the point ``(table (G, m,
        2), beta* per group, the binding case per group)``, from the lowered instance ``inst``
        (the block kind's ``prepare``), with the theorem's certificate: each live group's table
        attains the lower bound beta* = max(beta_0, beta_1, beta_p, beta_min), which certifies it
        optimal (the block kind's verification recomputes each group's max confidence)."""
        from ..core.certificate import Certificate
        from ..core.plan import Outcome

        sol = self.solve(problem, match, inst)
        live = inst.p.sum(axis=1) > 0  # groups with positive mass: the others bound no inference
        counts = np.bincount(sol.case[live], minlength=len(CASES))
        cases = {name: int(n) for name, n in zip(CASES, counts)}
        cert = Certificate(
            "theorem",
            "Theorem 1 (Chen et al., with Lemma 5's floor beta_min): in every group the table attains the lower "
            "bound beta* = max(beta_0, beta_1, beta_p, beta_min)",
            data={
                "theorem": self.cites,
                "conditions": match.data["conditions"],
                "binding_case_groups": cases,
                "checked": "each group's max confidence, recomputed from the table, equals beta* (relative 1e-8)",
            },
        )
        return Outcome(
            (sol.table, sol.beta, sol.case),
            "certified: closed-form lower bound attained",
            None,
            certificate=cert,
            stats={"binding_case_groups": cases},
        )


THEOREM_1 = Theorem1()
