"""The LFP method at scale (issue 13): chunks of groups, workers, certification on random rules.

Three-outcome random instances (random rules, random counts with zero-mass records and groups,
ties, degenerate rows and bounds such as 0.2 - 0.19999999999999996) must all certify; sampled
groups are compared with an independent reference written here (a per-group bisection on
scipy.optimize.linprog); workers=1 and workers=2 give the same bits; chunk boundaries do not
change the answers beyond the certified tolerance."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linprog

from privopt.backends.highs import HighsBackend
from privopt.blocks.common import GAP_TOL
from privopt.methods.lfp import solve_lfp


def random_instance(G: int, m: int = 3, A: int = 3, seed: int = 0, kind: str = "random", delta: float = 0.8):
    rng = np.random.default_rng(seed)
    p = rng.integers(0, 4, size=(G, m)).astype(float)  # small counts: ties and zero-mass records
    p[rng.random(G) < 0.05] = 0.0  # zero-mass groups
    if kind == "random":
        D = rng.random((G, m, A))
    elif kind == "dirichlet":
        D = rng.dirichlet(np.full(A, 0.1), size=(G, m))  # near-degenerate rows (1e-9 entries)
    else:  # integer rules: ties, zero entries, one-hot rows
        D = rng.integers(0, 4, size=(G, m, A)).astype(float)
        D[D.sum(-1) == 0] = 1.0
    D = D / D.sum(-1, keepdims=True)
    eps = 1 - delta  # 0.19999999999999996: lower bounds of 5.6e-17 where D = 0.2
    return p, np.clip(D - eps, 0, 1), np.clip(D + eps, 0, 1), D


def reference_beta(p: np.ndarray, L: np.ndarray, U: np.ndarray, tol: float = 1e-10) -> float:
    """beta* of one group by bisection on feasibility LPs (scipy's HiGHS), no privopt code:
    feasible at b iff there is X in [L, U], rows summing to 1, with q_i X_ia <= b sum_j q_j X_ja."""
    q = p / p.sum()
    m, A = L.shape
    n = m * A
    A_eq = np.zeros((m, n))
    for i in range(m):
        A_eq[i, i * A : (i + 1) * A] = 1.0
    live = [i for i in range(m) if q[i] > 0]

    def feasible(b: float) -> bool:
        rows = []
        for a in range(A):
            for i in live:
                r = np.zeros(n)
                for j in live:
                    r[j * A + a] -= b * q[j]
                r[i * A + a] += q[i]
                rows.append(r)
        res = linprog(
            np.zeros(n),
            A_ub=np.array(rows),
            b_ub=np.zeros(len(rows)),
            A_eq=A_eq,
            b_eq=np.ones(m),
            bounds=list(zip(L.ravel(), U.ravel())),
            method="highs",
            options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10},
        )
        return res.status == 0

    lo, hi = q.max(), 1.0  # Lemma 5's floor; every table has confidence <= 1
    if feasible(lo):
        return lo
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if feasible(mid) else (mid, hi)
    return hi


def certified(sol) -> np.ndarray:
    return sol.gap <= GAP_TOL * sol.beta


@pytest.mark.parametrize("kind", ["random", "dirichlet", "integer"])
def test_random_three_outcome_instances_all_certify(kind):
    p, L, U, D = random_instance(400, kind=kind, seed=1)
    sol = solve_lfp(p, L, U, HighsBackend(), D, chunk_size=100)
    assert certified(sol).all(), np.sort(sol.gap / np.maximum(sol.beta, 1e-300))[-3:]
    assert np.all(sol.table >= L - 1e-12) and np.all(sol.table <= U + 1e-12)
    np.testing.assert_allclose(sol.table.sum(-1), 1.0, atol=1e-12)
    assert np.all(sol.beta[p.sum(1) == 0] == 0.0)


def test_the_group_that_could_not_certify_now_does():
    """Found on random Dirichlet(0.1) rules under |Dt - D| <= 0.2: the optimum keeps 1.1e-7 of an
    outcome on one record to balance a bound (beta* = 0.82034858347, solved exactly); the LP
    called 0.82034858278 feasible and no rounding of its table beat 0.820348634, so the bracket
    stayed at 1.25e-7. Capped roundings (methods.lfp._capped) reach the optimum."""
    p = np.array([[0.0, 3.0, 1.0]])
    D = np.array(
        [
            [
                [2.2470496941706997e-01, 4.1198904410590342e-04, 7.7488304153882415e-01],
                [5.2063724763965880e-01, 4.6667457517057143e-01, 1.2688177189769881e-02],
                [1.8988727708511025e-02, 9.8101119715178620e-01, 7.5139702877873087e-08],
            ]
        ]
    )
    L, U = np.clip(D - (1 - 0.8), 0, 1), np.clip(D + (1 - 0.8), 0, 1)
    sol = solve_lfp(p, L, U, HighsBackend(), D)
    assert certified(sol).all()
    assert abs(sol.beta[0] - 0.8203485834666278) <= 1e-9


def test_tiny_positive_lower_bounds_certify():
    """Equal priors, an outcome whose only lower bound is 5.6e-17 (0.2 - 0.19999999999999996):
    the optimum keeps that outcome at ratio 1/3 with mass ~1e-17, which no LP step resolves;
    the outcome-at-its-floor rounding does."""
    p = np.array([[2.0, 2.0, 2.0]])
    D = np.array([[[0.5, 0.0, 0.5], [0.2, 0.2, 0.6], [2 / 3, 0.0, 1 / 3]]])
    L, U = np.clip(D - (1 - 0.8), 0, 1), np.clip(D + (1 - 0.8), 0, 1)
    assert 0 < L[0, 1, 1] < 1e-16
    sol = solve_lfp(p, L, U, HighsBackend(), D)
    assert certified(sol).all()
    assert abs(sol.beta[0] - reference_beta(p[0], L[0], U[0])) <= 1e-6


def test_sampled_groups_equal_an_independent_reference():
    p, L, U, D = random_instance(300, kind="random", seed=2)
    sol = solve_lfp(p, L, U, HighsBackend(), D, chunk_size=64)
    assert certified(sol).all()
    rng = np.random.default_rng(3)
    live = np.flatnonzero(p.sum(1) > 0)
    for g in rng.choice(live, 12, replace=False):
        assert abs(sol.beta[g] - reference_beta(p[g], L[g], U[g])) <= 1e-6, g


def test_workers_do_not_change_a_bit(monkeypatch):
    from privopt.methods import lfp

    monkeypatch.setattr(lfp, "PARALLEL_MIN_GROUPS", 0)  # a pool even for a small instance
    p, L, U, D = random_instance(240, kind="dirichlet", seed=4)
    seen = []
    one = solve_lfp(p, L, U, HighsBackend(), D, chunk_size=60, workers=1)
    two = solve_lfp(p, L, U, HighsBackend(), D, chunk_size=60, workers=2, progress=lambda d, t: seen.append((d, t)))
    assert one.workers == 1 and two.workers == 2 and one.chunks == two.chunks >= 2
    assert (
        np.array_equal(one.beta, two.beta) and np.array_equal(one.table, two.table) and np.array_equal(one.gap, two.gap)
    )
    assert seen[-1] == (240, 240) and [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_chunk_boundaries_do_not_change_answers():
    p, L, U, D = random_instance(300, kind="integer", seed=5)
    sols = [solve_lfp(p, L, U, HighsBackend(), D, chunk_size=c) for c in (7, 100, 1000)]
    for s in sols:
        assert certified(s).all()
    for s in sols[1:]:
        # both brackets hold beta*: the values agree within the larger gap
        assert np.all(np.abs(s.beta - sols[0].beta) <= np.maximum(s.gap, sols[0].gap) + 1e-15)
    assert sols[0].chunks > sols[1].chunks > sols[2].chunks == 1


def test_progress_counts_every_group_in_process():
    p, L, U, D = random_instance(150, seed=6)
    seen = []
    solve_lfp(p, L, U, HighsBackend(), D, chunk_size=50, progress=lambda d, t: seen.append((d, t)))
    assert seen[0][1] == 150 and seen[-1] == (150, 150) and len(seen) >= 2


def test_the_time_limit_bounds_the_whole_solve():
    from privopt.errors import SolverError

    p, L, U, D = random_instance(400, seed=7)
    with pytest.raises(SolverError):
        solve_lfp(p, L, U, HighsBackend(), D, chunk_size=50, time_limit=0.0)


def test_pipeline_takes_workers(tmp_path):
    import privopt
    from privopt.errors import UsageError
    from tests.conftest import SPECS

    problem = privopt.load(SPECS / "atr_three_outcomes.priv")
    a = problem.solve(workers=1)
    b = privopt.solve(problem, workers=2)
    assert a.beta == b.beta and a.stats["chunks"] == b.stats["chunks"]
    with pytest.raises(UsageError):
        problem.solve(workers=0)
    assert privopt.solve(SPECS / "atr_table4.priv", workers=3).status == "optimal"  # closed form ignores it


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["random", "dirichlet", "integer"])
def test_ten_thousand_random_groups_certify_in_parallel(kind):
    p, L, U, D = random_instance(10_000, kind=kind, seed=8)
    sol = solve_lfp(p, L, U, HighsBackend(), D, workers=2)
    assert certified(sol).all()
    rng = np.random.default_rng(9)
    for g in rng.choice(np.flatnonzero(p.sum(1) > 0), 5, replace=False):
        assert abs(sol.beta[g] - reference_beta(p[g], L[g], U[g])) <= 1e-6, g
