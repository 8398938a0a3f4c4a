"""The LFP's lower ends proven by Farkas rays (``privopt.verification.brackets``, issue 22): the
greedy's price makes each record's Lagrangian bound the minimum over its row (checked against an
LP), every proven lower end is at most the confidence of every feasible table (random tables,
random rays, random levels), the float bound is at most the exact one, and a solve's rays prove
its recorded lower ends."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog

from privopt.backends import get_backend
from privopt.measures.confidence import group_max_confidence
from privopt.methods.lfp import solve_lfp
from privopt.verification.brackets import proven_lower, proven_lower_exact, row_price


def _instance(rng, G: int, m: int, A: int, width: float = 0.15):
    """Priors with a zero record now and then, and bounds around random rules (rows of L sum to
    at most 1, rows of U to at least 1)."""
    p = rng.integers(0, 50, size=(G, m)).astype(float)
    p[:, 0] += 1.0
    D = rng.dirichlet(np.ones(A), size=(G, m))
    return p, np.clip(D - width, 0.0, 1.0), np.clip(D + width, 0.0, 1.0), D


def _feasible_tables(rng, L, U, n: int):
    """n random tables in the box with rows summing to 1: a mix of L and U, moved onto sum 1."""
    out = []
    for _ in range(n):
        t = rng.random(L.shape)
        X = L + t * (U - L)
        # move every row onto sum 1 within its box, proportionally to its room
        excess = X.sum(-1, keepdims=True) - 1.0
        room = np.where(excess > 0, X - L, U - X)
        X = X - excess * room / room.sum(-1, keepdims=True)
        X = np.clip(X, L, U)
        assert np.abs(X.sum(-1) - 1.0).max() <= 1e-12
        out.append(X)
    return out


def test_the_greedy_price_gives_each_rows_minimum():
    rng = np.random.default_rng(1)
    for _ in range(200):
        A = int(rng.integers(2, 6))
        L = np.clip(rng.random(A) * 0.4 - 0.1, 0.0, None)
        U = np.minimum(L + rng.random(A) * 0.8, 1.0)
        if L.sum() > 1 or U.sum() < 1:
            continue
        c = rng.normal(size=A)
        mu = float(row_price(c[None], L[None], U[None])[0])
        r = c - mu
        lagrangian = mu + np.minimum(r * L, r * U).sum()
        lp = linprog(c, A_eq=np.ones((1, A)), b_eq=[1.0], bounds=list(zip(L, U)), method="highs")
        assert lp.status == 0
        assert lagrangian == pytest.approx(lp.fun, abs=1e-12)


def test_a_proven_lower_end_is_below_every_feasible_tables_confidence():
    rng = np.random.default_rng(2)
    G, m, A = 40, 4, 3
    p, L, U, _ = _instance(rng, G, m, A)
    tables = _feasible_tables(rng, L, U, 200)
    best = np.min([group_max_confidence(p, X) for X in tables], axis=0)
    proven_any = 0
    for _ in range(30):
        level = rng.random(G) * 0.8
        ray = rng.random((G, m, A)) * (rng.random((G, m, A)) < 0.4)
        bound = proven_lower(p, L, U, level, ray)
        assert np.all(bound <= best)
        proven_any += int(np.isfinite(bound).sum())
        for g in np.flatnonzero(np.isfinite(bound))[:5]:
            exact = proven_lower_exact(p[g], L[g], U[g], float(level[g]), ray[g])
            assert exact is not None and bound[g] <= exact
    assert proven_any > 0  # some random rays prove something, so the bound was exercised


def test_a_ray_with_a_negative_entry_or_no_level_proves_nothing():
    rng = np.random.default_rng(3)
    p, L, U, _ = _instance(rng, 3, 3, 3)
    ray = np.ones((3, 3, 3))
    ray[1, 0, 0] = -1.0
    bound = proven_lower(p, L, U, np.array([0.1, 0.1, np.nan]), ray)
    assert np.isneginf(bound[1]) and np.isneginf(bound[2])
    assert proven_lower_exact(p[1], L[1], U[1], 0.1, ray[1]) is None


def test_a_solves_rays_prove_its_lower_ends_within_the_gap():
    rng = np.random.default_rng(4)
    p, L, U, D = _instance(rng, 60, 5, 3, width=0.1)
    sol = solve_lfp(p, L, U, get_backend("highs"), D)
    rays = np.flatnonzero(np.isfinite(sol.level))
    assert rays.size > 0
    again = proven_lower(p[rays], L[rays], U[rays], sol.level[rays], sol.ray[rays])
    assert np.all(sol.lower[rays] <= again)
    assert np.all(sol.lower <= sol.beta) and np.all(sol.gap <= 1e-7 * sol.beta)
    for g in rays[:10]:
        assert sol.lower[g] <= proven_lower_exact(p[g], L[g], U[g], float(sol.level[g]), sol.ray[g])
