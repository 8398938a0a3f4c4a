"""Ding, Liu & Farokhi: the linear reduction, its closed forms against the LP, and the
mechanism LP's other classics (k-ary randomized response, a count query under DP)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from privopt import api
from privopt.closedform import sanitization as cf
from privopt.crosscheck import run_check
from privopt.errors import SpecError, UnsupportedError

SPECS = Path(__file__).resolve().parent.parent / "specs"
MECHANISM_SPECS = [
    s
    for s in sorted(p.name for p in SPECS.glob("*.priv") if not p.name.startswith("atr_"))
    if not s.startswith(("noise_placement", "obfuscation", "blocks_"))
]  # their own tests: test_noise_placement.py, test_obfuscation.py, test_composite_specs.py


def _table(problem, result, name=None):
    """The design as an array over its axes."""
    name = name or problem.design.name
    df = result.table(name)
    return df["value"].to_numpy().reshape(problem.shape(problem.design.axes))


# ------------------------------------------------------------------ Example 1 (Sec. III)


def test_example1_prop1_diagonal_and_zero_pattern():
    problem = api.load(SPECS / "sanitize_nonmarkov_tv.priv")
    assert problem.explain().chosen == "closed-form"
    r = problem.solve()
    M = _table(problem, r)  # (S, X, Y)
    np.testing.assert_allclose(np.diag(M[0]), [1.0, 1.0, 0.72, 0.825], atol=1e-12)  # eq. 11a, S = s1
    px = np.array([0.41, 0.24, 0.22, 0.13])
    pxs = np.array([[0.2, 0.1, 0.5, 0.2], [0.5, 0.3, 0.1, 0.1]])
    for s in range(2):
        plus = px >= pxs[s]  # X+(s)
        minus = ~plus
        for x in np.flatnonzero(minus):  # (11b): nothing else is released as x in X-(s)
            assert np.all(np.delete(M[s, :, x], x) == 0)
        for xp in np.flatnonzero(plus):  # (11c): x' in X+(s) is released as itself
            assert M[s, xp, xp] == 1.0
        # (11e): the mass leaving x' in X-(s) goes to X+(s) and sums to alpha (1 - P(x')/P(x'|s))
        for xp in np.flatnonzero(minus):
            assert M[s, xp, plus].sum() == pytest.approx(0.5 * (1 - px[xp] / pxs[s, xp]), abs=1e-12)
    assert r.objective == pytest.approx(0.105, abs=1e-12)
    assert r.measures["tv(X, Y)"] == pytest.approx(0.105, abs=1e-12)


def test_example1_markov_lemma1_is_not_optimal_without_full_rank():
    """P(X | S) is 2 x 4: Lemma 1 meets eq. 3 (tv = alpha (1 - sum P(x)^2) = 0.3545) but the
    LP finds a Markov channel with tv 0.2178; auto must not return Lemma 1."""
    problem = api.load(SPECS / "sanitize_markov_tv.priv")
    a = problem.explain()
    assert a.chosen == "lp" and "full column rank" in a.not_applicable["closed-form"]
    px = np.array([0.41, 0.24, 0.22, 0.13])
    lemma1_tv = 0.5 * (1 - (px**2).sum())
    M1 = cf.lemma1(px, 0.5)
    pxs = np.array([[0.2, 0.1, 0.5, 0.2], [0.5, 0.3, 0.1, 0.1]])
    np.testing.assert_allclose(pxs @ M1, 0.5 * pxs + 0.5 * px, atol=1e-15)  # eq. 8
    assert 1 - (px * np.diag(M1)).sum() == pytest.approx(lemma1_tv, abs=1e-15)
    r = problem.solve()
    assert r.objective < lemma1_tv - 0.1
    assert r.objective == pytest.approx(0.217766459627, abs=1e-9)


def test_lemma1_spec_full_rank_closed_form_equals_eq7():
    problem = api.load(SPECS / "sanitize_markov_lemma1.priv")
    assert problem.explain().chosen == "closed-form"
    r = problem.solve()
    joint = problem.joint.aligned(("S", "X"))
    np.testing.assert_allclose(_table(problem, r), cf.lemma1(joint.sum(axis=0), 0.3), atol=1e-15)
    lp = problem.solve(method="lp")
    assert lp.objective == pytest.approx(r.objective, abs=1e-9)


def test_prop2_needs_a_metric():
    metric = api.load(SPECS / "sanitize_distortion.priv").explain()
    assert metric.chosen == "reduced-lp"
    table = api.load(SPECS / "sanitize_distance_table.priv").explain()
    assert table.chosen == "lp" and "triangle" in table.not_applicable["reduced-lp"]


def test_prop2_fails_without_triangle_inequality():
    """Keeping the diagonal full is not optimal for d = (x - y)^2: the LP beats Prop. 2's
    restriction, which is why privopt only uses Prop. 2 for quasi-metrics."""
    text = (SPECS / "sanitize_distortion.priv").read_text().replace("E[|X - Y|]", "E[(X - Y)^2]")
    problem = api.loads(text)
    assert problem.explain().chosen == "lp"
    lp = problem.solve()
    san, _ = cf.match(problem)
    from privopt.backends import get_backend

    M, _ = cf.prop2(san.p, san.q, san.ps, problem.objective.distance, get_backend("highs"))
    forced = float(problem.objective.expr.value(cf.to_design(problem, san, M).ravel()).reshape(()))
    assert lp.objective < forced - 1e-3


def test_paper_printed_figures_do_not_follow_from_its_definitions():
    """Sec. III prints D_TV = 0.23 (non-Markov) and 0.68 (Markov). Its own definitions give
    0.105 (Prop. 1) and alpha (1 - sum P(x)^2) = 0.3545 (Lemma 1); docs/sanitization.md."""
    r = api.load(SPECS / "sanitize_nonmarkov_tv.priv").solve()
    assert abs(r.objective - 0.23) > 0.1
    px = np.array([0.41, 0.24, 0.22, 0.13])
    assert abs(0.5 * (1 - (px**2).sum()) - 0.68) > 0.3


# ------------------------------------------------------------------ random instances


@st.composite
def reductions(draw, max_s=4, max_x=5, markov=False):
    ns = draw(st.integers(1, max_s))
    nx = draw(st.integers(2, max_x))
    w = st.one_of(st.just(0.0), st.floats(0.01, 1.0))
    ps = np.array(draw(st.lists(w, min_size=ns, max_size=ns)))
    if ps.sum() == 0:
        ps[0] = 1.0
    rows = []
    for _ in range(ns):
        row = np.array(draw(st.lists(w, min_size=nx, max_size=nx)))
        if row.sum() == 0:
            row[draw(st.integers(0, nx - 1))] = 1.0
        rows.append(row)
    alpha = draw(st.one_of(st.sampled_from([0.0, 1.0, 0.5]), st.floats(0.0, 1.0)))
    return ps, np.array(rows), alpha


def _spec(ps, counts, alpha, design="P(Y | S, X)", objective="tv(X, Y)", extra=""):
    ns, nx = counts.shape
    xs = " ".join(str(i + 1) for i in range(nx))
    lines = [
        f"var S : private {{{', '.join(f's{i}' for i in range(ns))}}}",
        f"var X : data {{{', '.join(str(i + 1) for i in range(nx))}}}",
        "var Y : release over X",
        "known P(S) = counts { " + ", ".join(f"s{i}: {float(v)!r}" for i, v in enumerate(ps)) + " }",
        "known P(X | S) = counts {",
        f"    {xs}",
        *[f"    s{i}: " + " ".join(repr(float(v)) for v in row) for i, row in enumerate(counts)],
        "}",
        f"design M = {design}",
        f"param alpha = {float(alpha)!r}",
        "subject to P(Y | S) == (1 - alpha) * P(X | S) + alpha * P(X)",
        extra,
        f"minimize {objective}",
    ]
    return api.loads("\n".join(lines))


def _joint(problem):
    return problem.joint.aligned(("S", "X"))


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reductions())
def test_prop1_equals_lp_and_reduction_invariants(inst):
    problem = _spec(*inst)
    assert problem.explain().chosen == "closed-form"
    cf_r = problem.solve()
    lp_r = problem.solve(method="lp")
    assert cf_r.objective == pytest.approx(lp_r.objective, abs=1e-8)
    alpha = inst[2]
    pj = _joint(problem)
    ps, px = pj.sum(axis=1), pj.sum(axis=0)
    live = ps > 0
    pxs = pj[live] / ps[live, None]
    for r in (cf_r, lp_r):
        M = _table(problem, r)
        pys = np.einsum("sxy,sx->sy", M, np.where(live[:, None], pj / np.where(ps > 0, ps, 1)[:, None], 0))[live]
        py = np.einsum("sxy,sx->y", M, pj)
        np.testing.assert_allclose(py, px, atol=1e-9)  # eq. 4: P(Y) = P(X) for any alpha
        np.testing.assert_allclose(np.abs(pys - py), (1 - alpha) * np.abs(pxs - px), atol=1e-9)  # Sec. II-A


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reductions())
def test_prop2_equals_lp(inst):
    problem = _spec(*inst, objective="E[|X - Y|]")
    a = problem.explain()
    assert "reduced-lp" in a.applicable
    # on two labels |x - y| is 1 - [x == y], so E[|X - Y|] is tv(X, Y) and Prop. 1's closed form applies too
    assert a.chosen == ("closed-form" if problem.variables["X"].size == 2 else "reduced-lp")
    lp = problem.solve(method="lp").objective
    assert problem.solve(method="reduced-lp").objective == pytest.approx(lp, abs=1e-8)
    assert problem.solve().objective == pytest.approx(lp, abs=1e-8)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reductions(max_s=5, max_x=3))
def test_lemma1_equals_lp_when_full_rank_and_non_markov_is_no_worse(inst):
    markov = _spec(*inst, design="P(Y | X)")
    non_markov = _spec(*inst)
    m = markov.solve(method="lp")
    assert non_markov.solve().objective <= m.objective + 1e-9  # Sec. III-B: the non-Markov optimum is no worse
    a = markov.explain()
    if a.chosen == "closed-form":
        assert markov.solve().objective == pytest.approx(m.objective, abs=1e-8)
        M = _table(markov, markov.solve())
        np.testing.assert_allclose(M, cf.lemma1(_joint(markov).sum(axis=0), inst[2]), atol=1e-12)


# ------------------------------------------------------------------ budgets


@pytest.mark.parametrize("k", [2, 3, 5, 8])
@pytest.mark.parametrize("eps", [0.1, 1.0, math.log(3)])
def test_k_ary_randomized_response_optimum(k, eps):
    """Kairouz, Oh & Viswanath: under eps-LDP with a uniform prior the least tv is
    (k - 1) / (e^eps + k - 1), attained by k-ary randomized response."""
    text = (SPECS / "randomized_response.priv").read_text()
    text = text.replace("{v1, v2, v3, v4, v5}", "{" + ", ".join(f"v{i}" for i in range(k)) + "}")
    problem = api.loads(text, {"eps": eps})
    r = problem.solve()
    assert r.objective == pytest.approx((k - 1) / (math.exp(eps) + k - 1), abs=1e-9)
    assert r.measures["ldp(X -> Y)"] <= eps + 1e-9


def _geometric_remapped(N: int, eps: float) -> float:
    """Expected |n - y| of the truncated geometric mechanism after the best remapping for a
    uniform prior (Ghosh, Roughgarden & Sundararajan): the optimum of the DP count-query LP."""
    a = math.exp(-eps)
    n = np.arange(N + 1)
    G = (1 - a) / (1 + a) * a ** np.abs(n[:, None] - n[None, :])
    G[:, 0] = a**n / (1 + a)
    G[:, N] = a ** (N - n) / (1 + a)
    loss = np.abs(n[:, None] - n[None, :])  # loss[n, y]
    # for each output z choose the y minimizing sum_n prior(n) G(z | n) loss(n, y)
    cost = (G.T[:, :, None] * loss[None, :, :]).sum(axis=1) / (N + 1)  # (z, y)
    return float(cost.min(axis=1).sum())


@pytest.mark.parametrize("eps", [0.25, 0.5, 1.0, 2.0])
def test_count_query_matches_remapped_geometric_mechanism(eps):
    problem = api.load(SPECS / "count_query_dp.priv", {"eps": eps})
    r = problem.solve()
    assert r.objective == pytest.approx(_geometric_remapped(10, eps), abs=1e-9)
    assert r.measures["dp(n -> y) over adjacent pairs"] <= eps + 1e-9


def test_budgets_hold_on_the_returned_tables():
    for name, key, eps in [
        ("sanitize_ldp_budget.priv", "ldp(S -> Y)", 0.5),
        ("sanitize_loglift_budget.priv", "loglift(S -> Y)", 0.3),
    ]:
        r = api.load(SPECS / name).solve()
        assert r.measures[key] <= eps + 1e-9
        assert r.measures[key] == pytest.approx(eps, abs=1e-7)  # the budget binds at the optimum


@pytest.mark.parametrize("bound", [0.7, 0.72, 0.8])
def test_posterior_bound_holds_and_binds(bound):
    problem = api.load(SPECS / "sanitize_posterior_bound.priv", {"bound": bound})
    r = problem.solve()
    M = _table(problem, r)
    pj = problem.joint.aligned(("S", "X"))
    psy = np.einsum("sx,sxy->sy", pj, M)
    post = psy / psy.sum(axis=0, keepdims=True)
    assert post.max() <= bound + 1e-9
    assert r.measures["max P(S | Y)"] == pytest.approx(post.max(), abs=1e-12)
    if bound == 0.7:  # the prior's largest value: Y must be independent of S's argmax
        assert r.measures["I(S;Y) bits"] < 1e-8
    loose = api.load(SPECS / "sanitize_posterior_bound.priv", {"bound": 1.0}).solve().objective
    assert r.objective >= loose - 1e-12


def test_envelope_and_pairwise_forms_agree():
    from privopt.backends import get_backend
    from privopt.lower.mechanism import lower_mechanism
    from privopt.methods.lp import solve_lp

    problem = api.load(SPECS / "sanitize_ldp_budget.priv", {"eps": 0.2})
    env, pw = lower_mechanism(problem), lower_mechanism(problem, pairwise=True)
    assert env.lp.shape[0] < pw.lp.shape[0] or problem.budgets[0].source_cells <= 2
    be = get_backend("highs")
    a = solve_lp(env, be)
    b = solve_lp(pw, be)
    assert env.objective_value(a.x) == pytest.approx(pw.objective_value(b.x), abs=1e-9)


def test_envelope_rows_are_linear_in_the_alphabet():
    text = (SPECS / "randomized_response.priv").read_text()
    text = text.replace("{v1, v2, v3, v4, v5}", "{" + ", ".join(f"v{i}" for i in range(40)) + "}")
    from privopt.lower.mechanism import lower_mechanism

    mlp = lower_mechanism(api.loads(text))
    assert mlp.lp.shape[0] == 40 + 2 * 40 * 40 + 40  # rows sum to 1, two envelopes per cell, one per y


def test_infeasible_budgets_name_the_blocking_constraints():
    text = (SPECS / "sanitize_ldp_budget.priv").read_text() + "\nsubject to P(Y | S) == 0.9 * P(X | S) + 0.1 * P(X)\n"
    r = api.loads(text, path=SPECS / "x.priv").solve()
    assert r.status == "infeasible"
    joined = " ".join(r.reasons)
    assert "ldp(S -> Y) <= eps" in joined and "0.9 * P(X | S)" in joined


# ------------------------------------------------------------------ every route agrees


@pytest.mark.parametrize("name", MECHANISM_SPECS)
def test_every_backend_agrees_on_every_spec(name):
    report = run_check(api.load(SPECS / name))
    assert report.agree, report.problems
    assert (
        sum(p.status in ("optimal", "agrees") for p in report.paths) >= 6
    )  # "agrees": check's status after issue 10, item 8


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    "line, exc, words",
    [
        ("minimize ldp(S -> Y)", UnsupportedError, "not a linear program"),
        ("minimize E[M]", UnsupportedError, "not linear"),
        ("minimize P(Y | S)", SpecError, "not a number"),
        ("subject to dp(S -> Y, adjacent: S == 1) <= 1", UnsupportedError, "not numbers"),
        ("subject to ldp(S -> Y) <= -1", SpecError, ">= 0"),
        ("subject to ldp(S -> Y) <= (1, 0.1)", SpecError, "dp only"),
        ("minimize tvv(X, Y)", SpecError, "did you mean 'tv'"),
    ],
)
def test_mechanism_errors(line, exc, words):
    text = (SPECS / "sanitize_ldp_budget.priv").read_text()
    if line.startswith("minimize"):
        text = text.replace("minimize tv(X, Y)", line)
    else:
        text += line + "\n"
    with pytest.raises(exc) as e:
        api.loads(text)
    assert words in str(e.value)
    assert e.value.span is not None


def test_a_bound_reads_the_same_from_either_side():
    """Issue 10, item 7: ``0.9 >= P(S | Y)`` means ``P(S | Y) <= 0.9`` (it used to be refused)."""
    text = (SPECS / "sanitize_ldp_budget.priv").read_text()
    left = api.loads(text + "subject to 0.9 >= P(S | Y)\n", path=SPECS / "x.priv").solve()
    right = api.loads(text + "subject to P(S | Y) <= 0.9\n", path=SPECS / "x.priv").solve()
    assert left.objective == pytest.approx(right.objective, rel=1e-9)


def test_adjacency_names_the_neighbour():
    text = (SPECS / "count_query_dp.priv").read_text().replace("|n - n'|", "|n - m'|")
    with pytest.raises(SpecError, match="neighbour here is n'"):
        api.loads(text)


def test_design_must_choose_a_release_variable():
    text = (SPECS / "sanitize_ldp_budget.priv").read_text().replace("var Y : release over X", "var Y : data over X")
    with pytest.raises(SpecError, match="role release"):
        api.loads(text)


def test_tiny_alpha_is_feasible_on_every_backend():
    """Found by Hypothesis: with alpha = 1e-8 the right-hand sides are ~1e-9 and HiGHS's presolve
    called this feasible LP infeasible at tolerance 1e-9; the backends confirm an infeasibility
    without presolve, and Prop. 2's rows are made exact before dividing by p."""
    from privopt.backends import all_backends
    from privopt.lower.mechanism import lower_mechanism

    problem = _spec(
        np.array([1.0, 1.0]), np.array([[1.0, 0, 0, 0, 0], [0, 0, 0, 1.0, 0.015625]]), 1e-8, objective="E[|X - Y|]"
    )
    mlp = lower_mechanism(problem)
    for be in all_backends():
        assert be.solve(mlp.lp, tol=1e-9).status == "optimal", be.label
    assert problem.solve().objective == pytest.approx(problem.solve(method="lp").objective, abs=1e-9)
