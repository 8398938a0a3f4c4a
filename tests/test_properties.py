"""Closed form == generic LFP on random instances, and the papers' lemmas as invariants."""

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from privopt.backends.highs import HighsBackend
from privopt.blocks.common import GAP_TOL
from privopt.closedform.atr import solve_binary
from privopt.measures.confidence import beta_min, c_star, group_max_confidence
from privopt.methods.lfp import solve_lfp
from tests.conftest import examples
from tests.strategies import binary_instances

SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _as_outcomes(lo, hi):
    return np.stack([1 - hi, lo], axis=2), np.stack([1 - lo, hi], axis=2)


@SETTINGS
@given(binary_instances())
def test_closed_form_equals_lfp(inst):
    """Where the LFP closes its bracket it equals the closed form to 1e-8; where the LP's
    tolerance stops it first, the bracket it reports still contains the exact optimum (and the
    solve pipeline then refuses to call the answer optimal: test_uncertified_lfp_is_not_optimal)."""
    p, lo, hi, D = inst
    cf = solve_binary(p, lo, hi, np.clip(D, lo, hi))
    L, U = _as_outcomes(lo, hi)
    lf = solve_lfp(p, L, U, HighsBackend())
    closed = lf.gap <= GAP_TOL * np.maximum(lf.beta, 1e-300)
    np.testing.assert_allclose(cf.beta[closed], lf.beta[closed], atol=1e-8, rtol=0)
    assert np.all(lf.beta >= cf.beta - 1e-12)
    assert np.all(lf.beta - lf.gap <= cf.beta + 1e-12)


def test_lfp_certifies_realistic_instances():
    """Bounds and priors away from 1e-6 scales: every group's bracket closes and matches."""
    rng = np.random.default_rng(20261122)
    G, m = 400, 6
    p = rng.integers(0, 50, size=(G, m)).astype(float)
    D = rng.choice([0.0, 0.25, 0.5, 0.75, 1.0], size=(G, m))
    delta = rng.choice([0.8, 0.9, 0.95], size=(G, 1))
    lo, hi = np.clip(D - (1 - delta), 0, 1), np.clip(D + (1 - delta), 0, 1)
    cf = solve_binary(p, lo, hi, D)
    L, U = _as_outcomes(lo, hi)
    lf = solve_lfp(p, L, U, HighsBackend(), np.stack([1 - D, D], axis=2))
    assert np.all(lf.gap <= GAP_TOL * np.maximum(lf.beta, 1e-300))
    np.testing.assert_allclose(cf.beta, lf.beta, atol=1e-9, rtol=0)


@SETTINGS
@given(binary_instances())
def test_closed_form_is_certified(inst):
    """The lower bound max(beta_0, beta_1, beta_p, beta_min) is attained by the returned table."""
    p, lo, hi, D = inst
    cf = solve_binary(p, lo, hi, D)
    live = p.sum(1) > 0
    assert np.all(cf.d1 >= lo - 1e-12) and np.all(cf.d1 <= hi + 1e-12)
    table = cf.table  # D~_0 stored exactly where it is tiny (1 - d1 keeps 1e-16 absolute only)
    # 1e-8 relative: when a group's masses span ~13 orders of magnitude (priors 1e-6 beside 0.5,
    # a balanced deny mass of 1e-13) double precision leaves ~2e-9 (docs/atr.md, Numerics)
    np.testing.assert_allclose(group_max_confidence(p, table)[live], cf.beta[live], atol=0, rtol=1e-8)


@SETTINGS
@given(binary_instances())
def test_lemmas_4_5_6(inst):
    """Lemma 5: beta* >= beta_min; Lemma 6: beta_min <= C*; Lemma 4: D feasible => beta* <= C*,
    and fixing D~ = D (1-fidelity) gives exactly C*."""
    p, lo, hi, D = inst
    live = p.sum(1) > 0
    Dtab = np.stack([1 - D, D], axis=2)
    cstar = c_star(p, Dtab)
    bmin = beta_min(p)
    assert np.all(bmin[live] <= cstar[live] + 1e-12)  # Lemma 6
    free = solve_binary(p, np.minimum(lo, D), np.maximum(hi, D), D)  # bounds widened to contain D
    assert np.all(free.beta[live] >= bmin[live] - 1e-12)  # Lemma 5
    assert np.all(free.beta[live] <= cstar[live] + 1e-12)  # Lemma 4 (D is feasible)
    exact = solve_binary(p, D, D, D)
    np.testing.assert_allclose(exact.beta[live], cstar[live], atol=1e-12)


@settings(max_examples=examples(40), deadline=None)
@given(st.integers(1, 6), st.integers(3, 4), st.integers(0, 2**31 - 1))
def test_lfp_multi_outcome_is_feasible_and_beats_start(m, A, seed):
    rng = np.random.default_rng(seed)
    G = 3
    p = rng.random((G, m))
    D = rng.dirichlet(np.ones(A), size=(G, m))
    L, U = np.clip(D - 0.2, 0, 1), np.clip(D + 0.2, 0, 1)
    sol = solve_lfp(p, L, U, HighsBackend(), D)
    assert np.all(sol.table >= L - 1e-9) and np.all(sol.table <= U + 1e-9)
    np.testing.assert_allclose(sol.table.sum(-1), 1.0, atol=1e-9)
    np.testing.assert_allclose(group_max_confidence(p, sol.table), sol.beta, atol=1e-12)
    assert np.all(sol.beta <= group_max_confidence(p, D) + 1e-12)
    assert np.all(sol.beta >= beta_min(p) - 1e-12)


def test_paper_theorem_without_beta_min_is_wrong():
    """Theorem 1 as printed gives 0 for a one-record group with free bounds; the optimum is 1."""
    sol = solve_binary(np.array([[0.7]]), np.array([[0.0]]), np.array([[1.0]]))
    assert sol.candidates[0, :3].max() == 0.0
    assert sol.beta[0] == 1.0


def test_uncertified_lfp_is_not_optimal(monkeypatch):
    """If the LFP leaves a group's bracket open, solve() raises instead of reporting "optimal"."""
    import dataclasses

    import privopt
    import privopt.methods.lfp as lfp
    from privopt.errors import SolverError
    from tests.conftest import SPECS

    real = lfp.solve_lfp

    def widened(*args, **kw):
        sol = real(*args, **kw)
        return dataclasses.replace(sol, gap=sol.gap + 1e-3)

    monkeypatch.setattr(lfp, "solve_lfp", widened)
    problem = privopt.load(SPECS / "atr_table4.priv")
    try:
        problem.solve(method="lfp")
    except SolverError as e:
        assert "could not certify" in str(e)
    else:
        raise AssertionError("an open bracket was reported as optimal")
