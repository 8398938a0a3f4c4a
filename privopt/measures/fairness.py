"""What a released decision table tells an adversary and a fairness auditor (Chen, Golubchik &
Pal, Sec. 3.2-3.3, Def. 3, Def. 9-11, eq. 25-32, Lemma 2). Pure numpy, vectorized over records.

Records x are the combinations of the input variables (public and private); a table ``T`` is
``(N, A)``: the probability T_a(x) of outcome a for record x; ``w`` ``(N,)`` is the prior P(x)
(any positive scale: every quantity below is a ratio of sums of ``w``).

Inference attack (Sec. 3.2, Def. 3, eq. 37). For QID group g and an outcome a observed with
P(a | g) > 0, the adversary's posterior over the group's private values s is

    P(s | g, a) = P(g, s) T_a(g, s) / sum_s' P(g, s') T_a(g, s'),

its best guess the largest s, conf(g, a -> s) that posterior. The group's max confidence is the
largest over a (Def. 3; for the true D it is Def. 7's C*), and its prior max_s P(s | g) is
Lemma 5's beta_min: what the adversary knows without any report.

Fairness (App. A). With r_z(a) = E[T_a(X) | Z = z] under P(X) (eq. 27-29),

    sp     = D_tv(r_z1, r_z2) = (1/|A|) sum_a |r_z1(a) - r_z2(a)|              (eq. 26-27, 30)
    csp    = max_v D_tv(r_z1,v, r_z2,v), r_z,v(a) = E[T_a(X) | Z = z, V = v]  (eq. 28, 31)
    p_rule = min_a min(r_z1(a) / r_z2(a), r_z2(a) / r_z1(a))                    (eq. 29, 32)
    rm     = -log p_rule  (the relative-metric bias of eq. 25)

Lemma 2, from the fidelity a release T~ achieves against D (Def. 5-6):
delta = 1 - max |T~ - D|, alpha = min over cells of min(T~/D, D/T~) (0/0 = 1, x/0 = 0).
Every record's rates move by at most 1 - delta (in each outcome) and by a factor in
[alpha, 1/alpha], so by the reverse triangle inequality a pair's sp or csp moves by at most
min(2 (1 - delta), 1) (eq. 14) and its rm by at most -2 log(alpha). The paper's eq. 15 also
caps the rm change at 1; that cap is false (docs/audit.md gives a counterexample), so it is
not applied here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

ZERO = 1e-12  # a probability or a rate at most this counts as 0 (the contract's threshold)


# ----------------------------------------------------------------------------- the attack


@dataclass(frozen=True)
class Attack:
    """Sec. 3.2's attack on one table, per group (arrays over groups G, outcomes A, private m).

    ``observed[g, a]``: P(a | g) > ZERO; ``posterior[g, a, :]``: P(s | g, a) (0 where not
    observed); ``confidence[g, a]`` its largest value, ``guess[g, a]`` where it is;
    ``max_confidence[g]`` the largest over observed a, ``outcome[g]`` the first a attaining it;
    ``prior[g]`` max_s P(s | g); ``live[g]``: the group has positive population."""

    live: np.ndarray
    prior: np.ndarray
    observed: np.ndarray
    posterior: np.ndarray
    confidence: np.ndarray
    guess: np.ndarray
    max_confidence: np.ndarray
    outcome: np.ndarray


def attack(p: np.ndarray, table: np.ndarray) -> Attack:
    """The attack on ``table`` ``(G, m, A)`` with the prior ``p`` ``(G, m)`` (joint, or
    conditional on the group: the posteriors are invariant to each group's scale)."""
    mass = p.sum(axis=1)
    live = mass > 0
    safe_mass = np.where(live, mass, 1.0)
    prior = np.where(live, p.max(axis=1) / safe_mass, 0.0)
    joint = p[:, :, None] * table  # (G, m, A): P(g, s) T_a(g, s)
    seen = joint.sum(axis=1)  # (G, A): P(g, a)
    observed = live[:, None] & (seen / safe_mass[:, None] > ZERO)
    with np.errstate(divide="ignore", invalid="ignore"):
        posterior = np.where(observed[:, None, :], joint / np.where(observed, seen, 1.0)[:, None, :], 0.0)
    posterior = np.moveaxis(posterior, 1, 2) + 0.0  # (G, A, m); + 0.0 turns a -0.0 of the table into 0.0
    guess = posterior.argmax(axis=2)
    confidence = np.take_along_axis(posterior, guess[..., None], axis=2)[..., 0]
    masked = np.where(observed, confidence, -np.inf)
    outcome = masked.argmax(axis=1)
    best = np.take_along_axis(masked, outcome[:, None], axis=1)[:, 0]
    return Attack(live, prior, observed, posterior, confidence, guess, np.where(live, best, 0.0), outcome)


# ----------------------------------------------------------------------------- fairness


def rates(w: np.ndarray, T: np.ndarray, keys: np.ndarray, n_keys: int) -> tuple[np.ndarray, np.ndarray]:
    """(rates, mass): r_k(a) = E[T_a(X) | key(X) = k] under ``w`` ``(n_keys, A)`` (NaN where
    the key has no mass) and each key's mass P(key = k). One bincount per outcome: no loop
    over records or keys."""
    mass = np.bincount(keys, weights=w, minlength=n_keys)
    num = np.stack([np.bincount(keys, weights=w * T[:, a], minlength=n_keys) for a in range(T.shape[1])], axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(mass[:, None] > 0, num / np.where(mass > 0, mass, 1.0)[:, None], np.nan)
    return r, mass


def tv(r1: np.ndarray, r2: np.ndarray) -> np.ndarray:
    """D_tv of eq. 26 along the last axis: (1/|A|) sum_a |r1(a) - r2(a)|."""
    return np.abs(r1 - r2).mean(axis=-1)


def p_rule(r1: np.ndarray, r2: np.ndarray) -> float:
    """The largest p for which Def. 11 (eq. 29) holds: min over outcomes of the smaller ratio
    of the two rates; an outcome with both rates <= ZERO is skipped, one such rate gives 0."""
    z1, z2 = r1 <= ZERO, r2 <= ZERO
    both = z1 & z2
    if np.any(z1 ^ z2):
        return 0.0
    keep = ~both
    if not keep.any():
        return 1.0
    a, b = r1[keep], r2[keep]
    return float(np.minimum(a / b, b / a).min())


def rm(p: float) -> float | None:
    """The relative-metric bias -log(p) of eq. 25 (None when p = 0: unbounded)."""
    return -math.log(p) if p > 0 else None


@dataclass(frozen=True)
class Pair:
    """The measures of one pair of protected labels (by index in the domain)."""

    z1: int
    z2: int
    sp: float
    csp: float | None  # None: no score cell has population in both groups
    p_rule: float
    rm: float | None
    cells: np.ndarray  # the score cells populated in both groups (indices, ascending)
    bias: np.ndarray  # CSP's bias in each of those cells


@dataclass(frozen=True)
class Fairness:
    """SP, CSP, p%-rule and rm of one table for every pair of populated protected labels."""

    rates: np.ndarray  # (Z, A), NaN for a label without population
    mass: np.ndarray  # (Z,)
    pairs: list[Pair]

    def overall(self) -> dict[str, float | None]:
        """The largest sp, csp, rm and the smallest p_rule over the pairs (None: no pair, or
        no pair has a value; rm is None as soon as one pair's p_rule is 0)."""
        if not self.pairs:
            return {"sp": None, "csp": None, "p_rule": None, "rm": None}
        csps = [p.csp for p in self.pairs if p.csp is not None]
        pr = min(p.p_rule for p in self.pairs)
        return {"sp": max(p.sp for p in self.pairs), "csp": max(csps) if csps else None, "p_rule": pr, "rm": rm(pr)}


def fairness(w: np.ndarray, T: np.ndarray, z: np.ndarray, n_z: int, v: np.ndarray, n_v: int) -> Fairness:
    """The measures of ``T`` ``(N, A)`` for protected codes ``z`` ``(N,)`` (``n_z`` labels)
    and score cells ``v`` ``(N,)`` (``n_v`` cells): every pair (z1 < z2) of labels with
    positive population, in domain order."""
    r, mass = rates(w, T, z, n_z)
    rv, mass_v = rates(w, T, z * n_v + v, n_z * n_v)
    rv, mass_v = rv.reshape(n_z, n_v, -1), mass_v.reshape(n_z, n_v)
    live = [k for k in range(n_z) if mass[k] > 0]
    pairs = []
    for i, z1 in enumerate(live):  # pairs of labels, not records: a handful
        for z2 in live[i + 1 :]:
            both = (mass_v[z1] > 0) & (mass_v[z2] > 0)
            cells = np.flatnonzero(both)
            bias = tv(rv[z1, cells], rv[z2, cells])
            pr = p_rule(r[z1], r[z2])
            pairs.append(
                Pair(
                    z1, z2, float(tv(r[z1], r[z2])), float(bias.max()) if cells.size else None, pr, rm(pr), cells, bias
                )
            )
    return Fairness(r, mass, pairs)


# ----------------------------------------------------------------------------- Lemma 2


def achieved_fidelity(T: np.ndarray, D: np.ndarray) -> tuple[float, float]:
    """(delta, alpha) a release ``T`` achieves against ``D`` over every cell (Def. 5-6):
    delta = 1 - max |T - D|; alpha = min over cells of min(T/D, D/T), values <= ZERO counting
    as 0, 0/0 = 1 and x/0 = 0."""
    delta = 1.0 - float(np.abs(T - D).max(initial=0.0))
    t = np.where(T <= ZERO, 0.0, T)
    d = np.where(D <= ZERO, 0.0, D)
    both_zero = (t == 0) & (d == 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(both_zero, 1.0, np.where((t == 0) | (d == 0), 0.0, np.minimum(t / d, d / t)))
    return delta, float(ratio.min(initial=1.0))


def lemma2(delta: float, alpha: float) -> tuple[float, float | None]:
    """(tv_bound, rm_bound): eq. 14's min(2 (1 - delta), 1) and -2 log(alpha) (None when
    alpha = 0: no relative bound). Not eq. 15's min(-2 log alpha, 1): see the module doc."""
    return min(2.0 * (1.0 - delta), 1.0), (-2.0 * math.log(alpha) if alpha > 0 else None)


def within(change: float | None, bound: float | None) -> bool:
    """A change within its bound, allowing rounding (relative 1e-12); no bound: True; a bound
    with an unbounded change (None): False."""
    if bound is None:
        return True
    if change is None:
        return False
    return change <= bound + 1e-12 * max(1.0, bound)
