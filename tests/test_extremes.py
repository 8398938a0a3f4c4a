"""Verification at the extremes of eps (issue 10, item 2).

Each spec is solved over a sweep of eps from 1e-12 to 1000. Every answer is either
refused with a located SpecError naming the budget (only where double precision cannot hold a
table meeting it) or checked here, independently of privopt's own verification:

* the released table is a conditional distribution (cells in [0, 1], rows summing to 1);
* the budget holds as a ratio, in log space: no positive cell beside a zero for a pure budget,
  and cond[a, y] - delta / |A| <= e^eps cond[a', y] (1 + 1e-9) for every pair;
* the objective matches an independent reference: a directly written scipy LP where e^eps is
  small enough for the naive form (eps <= 10), and known optima or brackets beyond (k-ary
  randomized response: (k - 1) / (e^eps + k - 1); the count query tends to 0, below the
  truncated geometric mechanism's value).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

import privopt
from privopt.backends.base import LinearProgram
from privopt.blocks.table import clean, verify
from privopt.errors import SpecError
from privopt.lower.mechanism import LOG_RANGE, lower_mechanism
from privopt.methods.lp import lagrangian_bound
from tests.conftest import SPECS, examples
from tests.test_shaped_noise import independent_lp

EPS_SWEEP = [1e-12, 1e-6, 0.01, 0.5, 3, 5, 10, 28, 30, 32, 35, 50, 100, 709, 710, 1000]
RATIO_RTOL = 1e-9
NAIVE_MAX_EPS = 10.0  # the naive LP (coefficients e^eps) is trustworthy up to here


# ------------------------------------------------------------------ the independent checker


def assert_conditional(table: np.ndarray) -> None:
    assert np.all(np.isfinite(table))
    assert table.min() >= 0.0 and table.max() <= 1.0
    np.testing.assert_allclose(table.sum(axis=1), 1.0, rtol=0, atol=1e-9)


def assert_budget(cond: np.ndarray, eps: float, delta: float = 0.0, pairs=None) -> None:
    """cond[a, y] - delta / |A| <= e^eps cond[a', y] (1 + 1e-9) for every pair, in log space."""
    if pairs is None:
        a1, a2 = np.nonzero(~np.eye(cond.shape[0], dtype=bool))
    else:
        a1, a2 = pairs
    num = cond[a1] - delta / cond.shape[0]
    den = cond[a2]
    positive = num > 0
    beside_zero = positive & (den <= 0)
    assert not beside_zero.any(), f"a positive cell {num[beside_zero].max():.3g} beside a zero"
    ratio = np.log(num[positive]) - np.log(den[positive])
    assert ratio.max(initial=-np.inf) <= eps + math.log1p(RATIO_RTOL), f"log ratio {ratio.max():.17g} > eps {eps}"


def solve_or_refuse(spec: str, eps: float, chain: int, backend: str = "auto"):
    """The result, or None after checking the refusal is a located SpecError naming the budget
    and only happens beyond the range that always works."""
    problem = privopt.load(SPECS / spec, params={"eps": eps})
    try:
        return problem.solve(backend=backend)
    except SpecError as e:
        assert chain * eps > LOG_RANGE, f"eps = {eps} was refused inside the range that always works"
        assert e.span is not None and e.span.line > 0
        assert problem.budgets[0].text in e.message and "eps <=" in (e.hint or "")
        return None


# ------------------------------------------------------------------ the sweep


def _count_query_lp(eps: float) -> float:
    """E|n - y| under dp over adjacent counts 0..10, uniform prior, written from scratch."""
    n = 11
    c = (np.abs(np.arange(n)[:, None] - np.arange(n)[None, :]) / n).ravel()
    rows = []
    for a in range(n):
        for b in (a - 1, a + 1):
            if 0 <= b < n:
                for y in range(n):
                    row = np.zeros(n * n)
                    row[a * n + y] = 1.0
                    row[b * n + y] = -math.exp(eps)
                    rows.append(row)
    eq = np.kron(np.eye(n), np.ones(n))
    res = linprog(
        c, A_ub=np.array(rows), b_ub=np.zeros(len(rows)), A_eq=eq, b_eq=np.ones(n), bounds=(0, 1), method="highs"
    )
    assert res.status == 0
    return res.fun


def _geometric_table(eps: float) -> np.ndarray:
    """The truncated geometric mechanism on 0..10 (eps-DP, Ghosh et al.), alpha = e^-eps."""
    n, a = 11, math.exp(-eps)
    d = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :]).astype(float)
    with np.errstate(under="ignore"):
        g = (1 - a) / (1 + a) * a**d
        g[:, 0] = a ** np.arange(n) / (1 + a)
        g[:, -1] = a ** (n - 1 - np.arange(n)) / (1 + a)
    return g


def _geometric_value(eps: float) -> float:
    """E|n - y| of the truncated geometric mechanism: an upper bound on the optimum."""
    d = np.abs(np.arange(11)[:, None] - np.arange(11)[None, :])
    return float((_geometric_table(eps) * d).sum() / 11)


@pytest.mark.parametrize("eps", EPS_SWEEP)
def test_count_query_dp(eps):
    r = solve_or_refuse("count_query_dp.priv", eps, chain=10)
    if r is None:
        return
    G = r.table("G")["value"].to_numpy().reshape(11, 11)
    assert_conditional(G)
    k = np.arange(10)
    assert_budget(G, eps, pairs=(np.r_[k, k + 1], np.r_[k + 1, k]))
    if eps <= NAIVE_MAX_EPS:
        assert r.objective == pytest.approx(_count_query_lp(eps), rel=1e-7, abs=1e-9)
    else:
        # beyond e^-708 the geometric value underflows; the answer then mixes in the constant
        # mechanism at theta >= 1e-300 (docs/verification.md), E|n - y| = theta 40/11 at most
        assert -1e-12 <= r.objective <= _geometric_value(eps) * (1 + 1e-6) + 4e-300
    assert r.verification["evidence"]["gap"] <= r.verification["evidence"]["tolerance"]


@pytest.mark.parametrize("eps", EPS_SWEEP)
def test_randomized_response(eps):
    r = solve_or_refuse("randomized_response.priv", eps, chain=1)
    if r is None:
        return
    R = r.table("R")["value"].to_numpy().reshape(5, 5)
    assert_conditional(R)
    assert_budget(R, eps)
    f = math.exp(-eps)
    assert r.objective == pytest.approx(4 * f / (1 + 4 * f), rel=1e-7, abs=1e-9)  # (k-1)/(e^eps+k-1)
    achieved = r.verification["budgets_achieved"]["ldp(X -> Y) <= eps"]
    assert 0.0 <= achieved <= eps + math.log1p(RATIO_RTOL)


PXS = np.array([[0.2, 0.1, 0.5, 0.2], [0.5, 0.3, 0.1, 0.1]])  # P(X | S) of sanitize_ldp_budget.priv
PS = np.array([0.3, 0.7])


def _sanitize_lp(eps: float) -> float:
    """min tv(X, Y) over M[s, x, y] with P(y | s) = sum_x P(x | s) M[s, x, y] eps-LDP."""
    ns, nx = PXS.shape
    idx = np.arange(ns * nx * nx).reshape(ns, nx, nx)
    c = np.zeros(ns * nx * nx)
    for s in range(ns):
        for x in range(nx):
            c[idx[s, x, x]] = -PS[s] * PXS[s, x]
    rows = []
    for s, t in ((0, 1), (1, 0)):
        for y in range(nx):
            row = np.zeros(c.size)
            row[idx[s, :, y]] += PXS[s]
            row[idx[t, :, y]] -= math.exp(eps) * PXS[t]
            rows.append(row)
    eq = np.kron(np.eye(ns * nx), np.ones(nx))
    res = linprog(
        c, A_ub=np.array(rows), b_ub=np.zeros(len(rows)), A_eq=eq, b_eq=np.ones(ns * nx), bounds=(0, 1), method="highs"
    )
    assert res.status == 0
    return 1.0 + res.fun


@pytest.mark.parametrize("eps", EPS_SWEEP)
def test_sanitize_ldp_budget(eps):
    r = solve_or_refuse("sanitize_ldp_budget.priv", eps, chain=1)
    if r is None:
        return
    M = r.table("M")["value"].to_numpy().reshape(2, 4, 4)
    assert_conditional(M.reshape(8, 4))
    cond = np.einsum("sx,sxy->sy", PXS, M)
    assert_budget(cond, eps)
    # the identity is eps-LDP once eps >= log(0.5 / 0.1): the optimum is 0 from there
    ref = _sanitize_lp(eps) if eps < math.log(5.0) else 0.0
    assert r.objective == pytest.approx(ref, rel=1e-7, abs=1e-9)


X6 = np.arange(1.0, 7.0)  # range(1, 6) is inclusive
Y14 = np.arange(1, 15) / 2.0


def _shaped_reference(eps: float) -> float | None:
    res = independent_lp(X6, Y14, np.ones(14), 0.2, eps, 0.05)
    return res.fun if res.status == 0 else None


@pytest.mark.parametrize("eps", EPS_SWEEP)
def test_shaped_noise_eps_delta(eps):
    """(eps, delta)-DP with moment equalities: infeasible as eps -> 0 (the rows may differ by
    delta / |X| only), a bracket between the eps = 10 optimum and the no-DP optimum beyond."""
    problem = privopt.load(SPECS / "shaped_noise_sweep.priv", params={"eps": eps})
    ref = _shaped_reference(min(eps, NAIVE_MAX_EPS))
    try:
        r = problem.solve()
    except SpecError:
        assert eps > LOG_RANGE
        return
    if r.infeasible:
        assert ref is None, f"privopt calls eps = {eps} infeasible; the independent LP finds {ref}"
        return
    f = r.table("f")["value"].to_numpy().reshape(6, 14)
    assert_conditional(f)
    assert_budget(f, eps, delta=0.05)
    np.testing.assert_allclose(f @ Y14, 0.2 * X6 + 0.8 * Y14.mean(), rtol=1e-8)
    np.testing.assert_allclose(f @ (1 / Y14), 0.2 / X6 + 0.8 * (1 / Y14).mean(), rtol=1e-8)
    if eps <= NAIVE_MAX_EPS:
        assert r.objective == pytest.approx(ref, rel=1e-7)
    else:
        no_dp = independent_lp(X6, Y14, np.ones(14), 0.2, 0.0, 12.0).fun  # c - c' <= 2: no budget
        assert no_dp - 1e-7 <= r.objective <= ref + 1e-7


@pytest.mark.parametrize("eps", [100.0, 28.0, 1e-12])
def test_scipy_backend_at_the_extremes(eps):
    """scipy called eps = 100 infeasible when the rows carried e^100; a constant mechanism is
    always feasible for ldp."""
    r = solve_or_refuse("randomized_response.priv", eps, chain=1, backend="scipy")
    assert r is not None and not r.infeasible
    R = r.table("R")["value"].to_numpy().reshape(5, 5)
    assert_budget(R, eps)
    f = math.exp(-eps)
    assert r.objective == pytest.approx(4 * f / (1 + 4 * f), rel=1e-7, abs=1e-9)


# ------------------------------------------------------------------ the pieces


def test_budget_rows_have_coefficients_at_most_one():
    for eps in (0.5, 30.0, 709.0, 1000.0):
        for spec in ("count_query_dp.priv", "randomized_response.priv", "sanitize_loglift_budget.priv"):
            mlp = lower_mechanism(privopt.load(SPECS / spec, params={"eps": eps}))
            budget_rows = mlp.row_family >= len(mlp.families) - len(privopt.load(SPECS / spec).budgets)
            A = sp.csr_array(mlp.lp.A)[np.flatnonzero(budget_rows)]
            assert np.abs(A.data).max() <= 1.0


def test_a_positive_cell_beside_a_zero_is_not_verified_until_cleaned():
    """eps = 5: the issue's P(y=6 | n=0) = 1.37e-11 beside P(y=6 | n=1) = 0."""
    problem = privopt.load(SPECS / "count_query_dp.priv", params={"eps": 5})
    G = _geometric_table(5.0)
    G[:, 5] += G[:, 6]  # merging two outputs keeps eps-DP; output 6 is unused
    G[:, 6] = 0.0
    assert verify(problem, G.ravel(), None, "")["passed"]
    G[0, 6] = 1.37e-11
    G[0, 0] -= 1.37e-11
    raw = verify(problem, G.ravel(), None, "")
    assert not raw["passed"] and "does not hold" in raw["failures"][0]
    x, info = clean(problem, G.ravel())
    assert info["rounds"] >= 1 and info["max_cell_change"] < 1e-10
    k = np.arange(10)
    assert_budget(x.reshape(11, 11), 5.0, pairs=(np.r_[k, k + 1], np.r_[k + 1, k]))


def test_an_optimum_without_agreeing_evidence_is_not_verified():
    problem = privopt.load(SPECS / "randomized_response.priv", params={"eps": 1.0})
    R = np.full((5, 5), 0.2)  # the constant mechanism: feasible, tv 0.8, not optimal
    ok = verify(problem, R.ravel(), None, "", {"kind": "dual bound", "bound": 0.8, "side": "lower"})
    assert ok["passed"]
    bad = verify(problem, R.ravel(), None, "", {"kind": "dual bound", "bound": 4 / (math.e + 4), "side": "lower"})
    assert not bad["passed"] and "not certified" in bad["failures"][-1]


@settings(max_examples=examples(40))
@given(st.integers(0, 2**31 - 1), st.floats(-5, 5))
def test_lagrangian_bound_never_exceeds_the_optimum(seed, scale):
    """Weak duality: any multipliers, even wrong ones, give a lower bound."""
    rng = np.random.default_rng(seed)
    m, n = 4, 6
    A = rng.normal(size=(m, n))
    x0 = rng.uniform(size=n)
    lo = A @ x0 - rng.uniform(0, 1, m)
    hi = np.where(rng.uniform(size=m) < 0.3, np.inf, A @ x0 + rng.uniform(0, 1, m))
    c = rng.normal(size=n)
    lp = LinearProgram(c, sp.csc_array(A), lo, hi, np.zeros(n), np.ones(n))
    A_ub = np.vstack([A[np.isfinite(hi)], -A])
    b_ub = np.concatenate([hi[np.isfinite(hi)], -lo])
    res = linprog(c, A_ub=A_ub, b_ub=b_ub, bounds=(0, 1), method="highs")
    assert res.status == 0
    y = scale * rng.normal(size=m)
    assert lagrangian_bound(lp, y) <= res.fun + 1e-9
    duals = -res.ineqlin.marginals  # d objective / d b for A_ub x <= b: back onto the rows
    k = int(np.isfinite(hi).sum())
    row_dual = np.zeros(m)
    row_dual[np.isfinite(hi)] -= duals[:k]
    row_dual += duals[k:]
    assert lagrangian_bound(lp, row_dual) == pytest.approx(res.fun, abs=1e-7)


# ------------------------------------------------------------------ ATR: nonsense is never verified


def _table4():
    from privopt.lower.atr import lower_atr
    from privopt.pipeline import solve

    problem = privopt.load(SPECS / "atr_table4.priv")
    inst = lower_atr(problem)
    r = solve(problem, method="closed-form")
    table = r.table("Dt")  # (gender, income, decision) rows in the design's order
    return problem, inst, table["value"].to_numpy().reshape(2, 3, 2), np.array(r.groups["beta"])


def test_table4_counts_near_the_largest_double_give_the_same_optimum(tmp_path):
    text = (SPECS / "atr_table4.priv").read_text()
    text = text.replace("12   5    3", "12e307   5e307    3e307").replace("9    7    4", "9e307    7e307    4e307")
    path = tmp_path / "big.priv"
    path.write_text(text)
    for method in ("closed-form", "lfp"):
        r = privopt.load(path).solve(method=method)
        assert r.beta == pytest.approx(0.675, rel=1e-9)  # Table 4: max(0.675 (F), 0.6378 (M))


@pytest.mark.parametrize(
    "spoil",
    [
        lambda p, t, b: (p, t, np.zeros_like(b)),  # confidence 0 claimed for live groups
        lambda p, t, b: (p * 0.0, t, b * 0.0),  # a prior of zero mass: "max confidence 0"
        lambda p, t, b: (p * np.nan, t, b),  # a prior that overflowed
        lambda p, t, b: (p, t * np.nan, b),  # a table of NaN
        lambda p, t, b: (p, t, b * (1 + 1e-6)),  # a confidence off by a relative 1e-6
        lambda p, t, b: (p * np.inf, t, b),  # an infinite prior
        lambda p, t, b: (-p, t, b),  # a negative prior
    ],
)
def test_atr_verification_catches_nonsense(spoil):
    from dataclasses import replace

    from privopt.blocks.report import verify as verify_atr

    problem, inst, table, beta = _table4()
    G, m = inst.p.shape
    flat = table.reshape(G, m, 2)
    assert verify_atr(problem, inst, flat, beta, "")["passed"]
    p, t, b = spoil(inst.p, flat, beta)
    result = verify_atr(problem, replace(inst, p=p), t, b, "")
    assert not result["passed"] and result["failures"]


# ------------------------------------------------------------------ the command line at the extremes


def _cli(*args):
    from click.testing import CliRunner

    from privopt.cli import main

    return CliRunner().invoke(main, [str(a) for a in args])


def test_cli_refuses_an_unrepresentable_budget_with_a_located_error(tmp_path):
    """An unbiased count query (E[y | n] == n) cannot mix in the constant mechanism, so at
    eps = 710 no table privopt can represent both meets the budget and verifies: refused at the
    budget. (The plain count query at eps = 710 is solved: see test_count_query_dp.)"""
    spec = tmp_path / "unbiased.priv"
    text = (SPECS / "count_query_dp.priv").read_text()
    spec.write_text(text.replace("minimize E[|n - y|]", "subject to E[y | n] == n\nminimize E[|n - y|]"))
    r = _cli("solve", spec, "--set", "eps=710")
    assert r.exit_code == 2, r.output
    assert "unbiased.priv:12:" in r.output and "eps <= 68" in r.output
    assert "Traceback" not in r.output and "OverflowError" not in r.output


@pytest.mark.parametrize("eps", ["5", "30", "1e-12"])
def test_cli_json_reports_the_achieved_budget_and_the_evidence(eps):
    import json

    r = _cli("solve", SPECS / "count_query_dp.priv", "--set", f"eps={eps}", "--json")
    assert r.exit_code == 0, r.output
    v = json.loads(r.stdout)["verification"]
    achieved = v["budgets_achieved"]["dp(n -> y, adjacent: |n - n'| <= 1) <= eps"]
    assert achieved <= float(eps) + math.log1p(RATIO_RTOL)
    assert v["evidence"]["kind"] in ("dual bound", "unconstrained optimum")
    assert v["evidence"]["gap"] <= v["evidence"]["tolerance"]


def test_a_nan_table_reads_as_nan_never_as_zero_error():
    """privopt check compares these fields with its tolerance: a NaN must not read as 0."""
    problem = privopt.load(SPECS / "shaped_noise_means.priv")
    v = verify(problem, np.full(problem.design_size, np.nan), None, "")
    assert not v["passed"]
    for key in ("max_constraint_violation", "max_budget_violation", "max_row_sum_error", "max_range_violation"):
        assert math.isnan(v[key]), key


@settings(max_examples=examples(60), deadline=None)
@given(
    st.floats(1e-9, 60.0),
    st.integers(0, 2**31 - 1),
    st.floats(1e-16, 1e-9),
)
def test_cleaning_restores_noisy_randomized_response(eps, seed, noise):
    """k-ary randomized response (exactly eps-LDP) with solver-like noise: cells below 1e-9 zeroed,
    others moved by a relative `noise`. Cleaning gives a table the independent checker accepts,
    within 10 * noise + 1e-9 of the original in every cell."""
    problem = privopt.load(SPECS / "randomized_response.priv", params={"eps": eps})
    f = math.exp(-eps)
    R = np.full((5, 5), f / (1 + 4 * f))
    np.fill_diagonal(R, 1 / (1 + 4 * f))
    rng = np.random.default_rng(seed)
    noisy = R * (1 + noise * rng.uniform(-1, 1, R.shape))
    noisy[(R < 1e-9) & (rng.uniform(size=R.shape) < 0.5)] = 0.0
    x, _ = clean(problem, noisy.ravel())
    C = x.reshape(5, 5)
    assert_conditional(C)
    assert_budget(C, eps)
    assert np.abs(C - R).max() <= 10 * noise + 1e-9
    assert verify(problem, x, None, "")["passed"]


def test_closed_form_certifies_a_tiny_deny_side_mass():
    """Hypothesis found it: the deny-side mass 2e-14 beside approve-side masses 1e-4 kept only
    absolute precision as 1 - D~_1 (confidence 3e-7 relative above the bound)."""
    from privopt.closedform.atr import solve_binary
    from privopt.measures.confidence import group_max_confidence

    p = np.array([[1e-4, 1.0, 1e-4]])
    lo, hi = np.array([[0.0, 1.0, 0.999999]]), np.array([[0.999999, 1.0, 1.0]])
    sol = solve_binary(p, lo, hi, np.zeros((1, 3)))
    np.testing.assert_allclose(group_max_confidence(p, sol.table), sol.beta, rtol=1e-12)
    np.testing.assert_allclose(sol.table.sum(axis=2), 1.0, atol=1e-15)
    assert np.all(sol.d1 >= lo - 1e-15) and np.all(sol.d1 <= hi + 1e-15)


# ------------------------------------------------------------------ the objective's scale


SCALED_DISTANCE = """spec "non-metric distortion under LDP, costs times a scale"
var S : private {{s1, s2}}
var X : data    {{a, b, c, d}}
var Y : release over X
known P(S) = {{ s1: 0.3, s2: 0.7 }}
known P(X | S) = {{
          a    b    c    d
    s1:  0.2  0.1  0.5  0.2
    s2:  0.5  0.3  0.1  0.1
}}
const dist(X, Y) = {{
        a   b   c   d
    a:  0   {d1}   {d5}   {d2}
    b:  {d1}   0   {d1}   {d2}
    c:  {d5}   {d1}   0   {d2}
    d:  {d2}   {d2}   {d2}   0
}}
design M = P(Y | S, X)
subject to ldp(S -> Y) <= 0.5
minimize E[dist(X, Y)]
"""


@pytest.mark.parametrize("scale", [1e-12, 1e-9, 1e-3, 1e6])
def test_scaling_the_costs_scales_the_verified_optimum(scale):
    """Costs of 1e-9 once stopped HiGHS at its first basis (its reduced-cost tolerance is
    absolute), and the evidence check, absolute 1e-7 below 1, certified an answer 8.5 times the
    optimum. The lowering divides the costs by their scale, and the evidence is held to 1e-7 of
    max(|objective|, cost scale): the verified optimum scales exactly with the costs."""
    unit = privopt.loads(SCALED_DISTANCE.format(**{f"d{k}": k for k in (1, 2, 5)})).solve()
    r = privopt.loads(SCALED_DISTANCE.format(**{f"d{k}": repr(k * scale) for k in (1, 2, 5)})).solve()
    assert unit.objective == pytest.approx(0.142056322715, rel=1e-9)
    assert r.objective == pytest.approx(scale * unit.objective, rel=1e-9)
    ev = r.verification["evidence"]
    assert ev["gap"] <= ev["tolerance"] <= 1e-7 * max(abs(r.objective), ev["scale"])


# ------------------------------------------------------------------ Markov designs under LDP

MARKOV_LDP = """spec "Markov design under an LDP budget"
var S : private {s0, s1}
var X : data {x0, x1, x2, x3}
var Y : release over X
known P(S) = { s0: 0.819, s1: 0.181 }
known P(X | S) = {
      x0     x1     x2     x3
  s0: 0.4239 0.2451 0      0.331
  s1: 0.7317 0.2614 0.0069 0
}
design M = P(Y | X)
param eps = 1
subject to ldp(S -> Y) <= eps
minimize tv(X, Y)
"""


@pytest.mark.parametrize("eps", [0.5, 3, 10, 25, 60, 700])
def test_markov_design_under_ldp_at_large_eps(eps):
    """P(y | s) = sum_x P(x | s) M[x, y]: every design cell feeds every conditional cell, so
    floors cannot be raised cell by cell. At eps = 25 and 60 HiGHS returned the identity (the
    scaled row e^-eps cond - cond' <= 0 is met within its tolerance), which is not eps-LDP, and
    privopt failed it (exit 1), at 700 blamed double precision; a constant mechanism is always
    feasible. Now the least amount of the constant mechanism is mixed in, and the answer is
    checked here independently in log space and against a direct LP where that LP is sound."""
    r = privopt.loads(MARKOV_LDP, params={"eps": eps}).solve()
    M = r.table("M")["value"].to_numpy().reshape(4, 4)
    assert_conditional(M)
    pxs = np.array([[0.4239, 0.2451, 0, 0.331], [0.7317, 0.2614, 0.0069, 0]])
    assert_budget(pxs @ M, eps)
    assert r.verification["evidence"]["gap"] <= r.verification["evidence"]["tolerance"]
    if eps >= 25:
        assert r.objective <= 1e-9  # the identity, up to the mixed-in constant mechanism
