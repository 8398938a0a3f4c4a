"""The certified split (privopt/composite/split.py) on random monotone curves against brute force,
its two lower bounds each checked alone, the primal/bound separation and ``recheck``; k-ary
randomized response as a closed form (closedform/rr.py) against the LP; composites whose blocks
are randomized response split by the closed form (issue 21, items 3 and 6)."""

import math
import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import privopt
from privopt.closedform.rr import RANDOMIZED_RESPONSE, rr_value
from privopt.composite import split as split_module
from privopt.composite.split import (
    ONE,
    RTOL,
    Split,
    Term,
    _cells,
    _dual,
    _minplus,
    inverse_square_split,
    recheck,
    split,
)
from tests.conftest import SPECS, examples, strict_json

# ------------------------------------------------------------------ random monotone curves


def convex_curve(a: float, b: float, p: float):
    """``a / (y + b)^p``: decreasing and convex."""
    return lambda y: a / (y + b) ** p


def sigmoid_curve(cs, ts, s: float):
    """``sum_j c_j / (1 + e^((y - t_j) / s))``: nonincreasing, with concave stretches (steps)."""
    return lambda y: math.fsum(c / (1.0 + math.exp(min(700.0, (y - t) / s))) for c, t in zip(cs, ts))


curves = st.one_of(
    st.builds(convex_curve, st.floats(0.1, 10), st.floats(0.05, 2), st.floats(0.5, 3)),
    st.builds(
        sigmoid_curve,
        st.lists(st.floats(0.1, 5), min_size=1, max_size=3),
        st.lists(st.floats(0.0, 3), min_size=3, max_size=3),
        st.floats(0.05, 1),
    ),
    st.builds(lambda k: lambda y: (k - 1) / (math.exp(y) + k - 1), st.integers(2, 60)),
)


def brute(fs, budget: float, steps: int = 4096) -> float:
    """The best split of two nonincreasing curves on a dense grid of the budget line (an upper
    bound on the optimum: a grid split is feasible)."""
    y = budget * np.arange(steps + 1) / steps
    f0 = np.array([fs[0](v) for v in y])
    f1 = np.array([fs[1](v) for v in y[::-1]])
    return float((f0 + f1).min())


@settings(max_examples=examples(40, few=8), deadline=None)
@given(st.tuples(curves, curves), st.floats(0.2, 5))
def test_the_split_is_bracketed_by_brute_force(fs, budget):
    """bound <= the optimum <= a dense grid's best; certified means within rtol of it."""
    s = split([Term(f) for f in fs], budget, max_calls=600)
    ref = brute(fs, budget)
    assert s.lower_bound <= ref * (1 + 1e-12) + 1e-15
    assert s.lower_bound <= s.objective and sum(s.shares) <= budget * (1 + 1e-15)
    assert s.objective == pytest.approx(math.fsum(f(y) for f, y in zip(fs, s.shares)), rel=1e-12)
    if s.gap <= RTOL:
        assert s.objective <= ref * (1 + RTOL) + 1e-15


@settings(max_examples=examples(30, few=6), deadline=None)
@given(st.tuples(curves, curves, curves), st.floats(0.2, 5))
def test_each_lower_bound_is_valid_alone(fs, budget):
    """The Lagrangian bound and the min-plus bound of the final cells are each below the optimum
    (below any feasible split: the best of the split itself and of a grid of three blocks)."""
    s = split([Term(f) for f in fs], budget, max_calls=300)
    items = [
        _cells(np.array([round(x / budget * ONE) for x, _, _ in p], dtype=np.int64), np.array([b for *_, b in p]))
        for p in s.points
    ]
    steps = 64
    grid = [
        fs[0](budget * i / steps) + fs[1](budget * j / steps) + fs[2](budget * (steps - i - j) / steps)
        for i in range(steps + 1)
        for j in range(steps + 1 - i)
    ]
    feasible = min(min(grid), s.objective)
    assert _dual(items)[1] <= feasible * (1 + 1e-12) + 1e-15
    assert _minplus(items, math.inf)[0] <= feasible * (1 + 1e-12) + 1e-15
    assert s.lower_bound <= feasible * (1 + 1e-12) + 1e-15


def test_the_lagrangian_bound_decouples_convex_blocks():
    """On convex curves the multiplier of the final bound prices the budget: each block's share
    minimizes its own ``g_i + lam y`` (``g_i'(y_i) = -lam``), so the shares' marginal values agree."""
    fs = [convex_curve(1.0, 0.1, 2.0), convex_curve(8.0, 0.1, 2.0)]
    s = split([Term(f) for f in fs], 1.0, rtol=1e-4, max_calls=2000)
    assert s.gap <= 1e-4 and s.multiplier is not None
    lam = s.multiplier * ONE  # the multiplier is per budget numerator (E = 2^52)
    slopes = [2 * a / (y + 0.1) ** 3 for a, y in zip((1.0, 8.0), s.shares)]
    assert slopes == pytest.approx([lam, lam], rel=5e-2)


# ------------------------------------------------------------------ values, bounds and their mix-ups


def test_a_cheap_terms_calls_are_not_block_solves():
    """A closed-form term (``cheap``) is refined beyond ``max_calls``, which bounds the solves of the
    other terms only: the split closes further than with both terms counted, and the exact optimum
    (``inverse_square_split``, the closed form of ``c / y^2``) stays inside its bracket."""
    counted = {"solved": 0, "cheap": 0}

    def curve(c: float, name: str):
        def g(y: float) -> float:
            counted[name] += 1
            return c / y**2 if y > 0 else math.inf

        return g

    exact = inverse_square_split([2.0, 3.0], [math.inf, math.inf], 2.0).objective
    both = split([Term(curve(2.0, "solved")), Term(curve(3.0, "solved"))], 2.0, rtol=1e-7, max_calls=60)
    counted["solved"] = 0
    cheap = split([Term(curve(2.0, "solved")), Term(curve(3.0, "cheap"), cheap=True)], 2.0, rtol=1e-7, max_calls=60)
    assert counted["solved"] <= both.calls < cheap.calls == counted["solved"] + counted["cheap"]
    assert cheap.gap < both.gap
    for s in (both, cheap):
        assert s.lower_bound <= exact * (1 + 1e-12) and exact <= s.objective * (1 + 1e-12)


@pytest.mark.slow  # two refinements to 1e-5 of three curves: about two minutes
def test_halving_only_the_slack_cells_costs_no_more_calls(monkeypatch):
    """The refinement halves the alive cells whose slack at the multiplier exceeds a share of the
    gap (``split._loose``); halving every alive cell instead reaches the same certified optimum
    with at least as many calls."""
    fs = [convex_curve(2.0, 0.1, 2.0), convex_curve(1.0, 0.3, 1.0), sigmoid_curve([1.0, 2.0], [0.5, 1.5, 2.0], 0.3)]
    slack = split([Term(f) for f in fs], 3.0, rtol=1e-5, max_calls=20000)
    monkeypatch.setattr(split_module, "_loose", lambda curves, items, owners, bound, tol: [o >= 0 for o in owners])
    every = split([Term(f) for f in fs], 3.0, rtol=1e-5, max_calls=20000)
    assert slack.gap <= 1e-5 and every.gap <= 1e-5
    assert slack.objective == pytest.approx(every.objective, rel=1e-5)
    assert slack.calls <= every.calls


def test_lower_bounds_use_proven_bounds_not_values():
    """An oracle whose verified value sits above the true optimum by 0.01 (its proven bound is
    the optimum): the split's lower bound stays below the true optimum. A bound taken from the
    values would be 0.02 above it."""
    fs = [convex_curve(1.0, 0.2, 2.0), convex_curve(3.0, 0.2, 1.0)]
    terms = [Term(lambda y, f=f: (f(y) + 0.01, f(y))) for f in fs]
    s = split(terms, 1.0, max_calls=400)
    truth = brute(fs, 1.0)
    assert s.lower_bound <= truth * (1 + 1e-12)
    assert s.objective >= truth + 0.02 - 1e-9  # the values are what is achieved
    assert s.gap >= 0.02 / s.objective * 0.99  # the gap shows the blocks' own gaps


def test_a_bound_above_its_value_is_refused():
    with pytest.raises(ValueError, match="above its verified value"):
        split([Term(lambda y: (1.0 / (1 + y), 2.0 / (1 + y))), Term(lambda y: 1.0)], 1.0)


def test_recheck_recomputes_the_bound_from_the_points():
    fs = [convex_curve(1.0, 0.1, 2.0), lambda y: (4 - 1) / (math.exp(y) + 4 - 1)]
    widths = [math.inf, 0.7]
    s = split([Term(f, w) for f, w in zip(fs, widths)], 1.0, max_calls=400)
    assert recheck(s, widths, 1.0) == pytest.approx(s.lower_bound, rel=1e-12)
    assert s.points[1][-1][0] == 0.7  # the top point last


def test_recheck_catches_tampered_points():
    fs = [convex_curve(1.0, 0.1, 2.0), convex_curve(2.0, 0.1, 2.0)]
    s = split([Term(f) for f in fs], 1.0, max_calls=200)
    no_top = Split(s.shares, s.values, s.objective, s.lower_bound, s.calls, (s.points[0], s.points[1][:-1]))
    with pytest.raises(ValueError, match="from 0 to its top"):
        recheck(no_top, [math.inf, math.inf], 1.0)
    x, v, _ = s.points[0][3]
    swapped = list(s.points[0])
    swapped[3] = (x, v, v + 1.0)  # a primal value posing as a bound above it
    bad = Split(s.shares, s.values, s.objective, s.lower_bound, s.calls, (tuple(swapped), s.points[1]))
    with pytest.raises(ValueError, match="above its verified value"):
        recheck(bad, [math.inf, math.inf], 1.0)


# ------------------------------------------------------------------ randomized response, closed form

RR = """spec "rr"
var X : data {{{labels}}}
var Y : release over X
known P(X) = uniform
design R = P(Y | X)
param eps = {eps}
subject to {call}(X -> Y) <= eps
minimize tv(X, Y)
"""


def rr_spec(k: int, eps: float, call: str = "ldp") -> str:
    return RR.format(labels=", ".join(f"v{i}" for i in range(k)), eps=repr(eps), call=call)


@settings(max_examples=examples(25), deadline=None)
@given(st.integers(2, 8), st.floats(0.0, 6.0), st.sampled_from(["ldp", "dp"]))
def test_randomized_response_closed_form_against_the_lp(k, eps, call):
    """The recognizer's table, verified by the table kind (budgets, rows), has the LP's optimum."""
    from privopt.blocks.table import KIND

    problem = privopt.loads(rr_spec(k, eps, call))
    match = RANDOMIZED_RESPONSE.accepts(problem)
    assert match and RANDOMIZED_RESPONSE.in_scope(problem)
    outcome = KIND.clean(problem, None, RANDOMIZED_RESPONSE.answer(problem, match))
    verification = KIND.verify(problem, None, outcome)
    assert verification["passed"] and outcome.certificate.kind == "theorem"
    lp = problem.solve(method="lp")
    assert lp.status == "optimal"
    assert verification["objective"] == pytest.approx(lp.objective, rel=1e-8, abs=1e-10)
    assert outcome.claimed == pytest.approx(rr_value(k, eps), rel=1e-12, abs=1e-15)
    assert lp.objective == pytest.approx(rr_value(k, eps), rel=1e-8, abs=1e-10)


@pytest.mark.parametrize(
    "edit, why",
    [
        (lambda t: t.replace("known P(X) = uniform", "known P(X) = { v0: 0.5, v1: 0.3, v2: 0.2 }"), "uniform prior"),
        (
            lambda t: t.replace("{v0, v1, v2}", "range(0, 2)").replace(
                "ldp(X -> Y)", "dp(X -> Y, adjacent: |X - X'| <= 1)"
            ),
            "every pair",
        ),
        (lambda t: t.replace("minimize tv", "subject to tv(X, Y) <= 0.99\nminimize tv"), "other constraints"),
        (lambda t: t.replace("minimize tv", "subject to ldp(X -> Y) <= 2 * eps\nminimize tv"), "exactly one"),
    ],
)
def test_randomized_response_conditions_are_checked(edit, why):
    problem = privopt.loads(edit(rr_spec(3, 1.0)))
    match = RANDOMIZED_RESPONSE.accepts(problem)
    assert not match and why in match.why


def test_a_composite_of_randomized_response_blocks_is_split_in_closed_form(tmp_path):
    """Two RR blocks (k = 5 and 30) share eps = 2: the split is ``rr_split``'s, no block is solved
    for the split, and the answer matches a dense enumeration of the closed forms."""
    (tmp_path / "blocks").mkdir()
    shutil.copy(SPECS / "blocks" / "randomized_response.priv", tmp_path / "blocks" / "rr5.priv")
    (tmp_path / "blocks" / "rr30.priv").write_text(rr_spec(30, 1.0))
    spec = tmp_path / "c.priv"
    spec.write_text(
        'spec "two rr"\nuse "blocks/rr5.priv" as a\nuse "blocks/rr30.priv" as b\nparam eps = 2.0\n'
        "subject to dp(a, b) <= eps\nminimize a.objective + b.objective\n"
    )
    r = privopt.load(spec).solve()
    ys = np.linspace(0.0, 2.0, 40001)
    dense = min(rr_value(5, y) + rr_value(30, 2.0 - y) for y in ys)
    assert r.status == "optimal" and r.stats["block_solves"] <= 4  # each block at its share and at the even split
    assert r.objective <= dense * (1 + 1e-9) and r.optimality["lower_bound"] <= dense
    for name, k in (("a", 5), ("b", 30)):  # each block solved (by its LP) at its share
        b = r.blocks[name]
        assert b["objective"] == pytest.approx(rr_value(k, b["params"]["eps"]), rel=1e-8, abs=1e-12)


def test_randomized_response_beside_an_lp_block_uses_its_curve(tmp_path):
    """RR beside the ordered-release LP block: the RR block's value comes from its closed form
    (every block solve is the LP block's, plus the RR block once at its share)."""
    (tmp_path / "blocks").mkdir()
    for b in ("randomized_response.priv", "ordered_release.priv"):
        shutil.copy(SPECS / "blocks" / b, tmp_path / "blocks" / b)
    spec = tmp_path / "c.priv"
    spec.write_text(
        'spec "rr and ordered"\nuse "blocks/randomized_response.priv" as rr\nuse "blocks/ordered_release.priv" as o\n'
        "param eps = 2.0\nsubject to dp(rr, o) <= eps\nminimize rr.objective + o.objective\n"
    )
    r = privopt.load(spec).solve()
    rr = r.blocks["rr"]
    assert rr["objective"] == pytest.approx(rr_value(5, rr["params"]["eps"]), rel=1e-8)
    assert r.optimality["lower_bound"] <= r.objective


# ------------------------------------------------------------------ blocks_means against its value curves


def test_blocks_means_against_dense_value_curves(composite_solved):
    """The two blocks' value curves solved on a grid of eps (a feasible split at each grid pair
    with eps_a + eps_h = 1): the certified bound is below every grid split and the split found is
    at least as good as the best of them."""
    r = strict_json(composite_solved["blocks_means"].json)  # the run's one solve of it (conftest)
    grid = np.linspace(0.30, 0.80, 11)

    def value(file, e):
        return privopt.load(SPECS / "blocks" / f"{file}.priv", {"eps": float(e)}).solve().objective

    pairs = [(value("arithmetic_mean", e), value("harmonic_mean", 1.0 - e)) for e in grid]
    totals = [a + h for a, h in pairs if a is not None and h is not None]  # None: no release at that eps
    assert len(totals) >= 5
    assert r["optimality"]["lower_bound"] <= min(totals)
    assert r["objective"] <= min(totals) * (1 + 1e-12)
    assert r["optimality"]["gap"] <= 2e-4


def test_warm_block_programs_equal_fresh_loads():
    """A mechanism block's program built once and re-budgeted (``solve._Warm``) solves exactly as
    the block loaded at that budget; a block whose param is not only its budget is loaded anew."""
    from privopt.composite.solve import _Oracle

    c = privopt.load(SPECS / "blocks_means.priv")
    oracle = _Oracle(c, {})
    for name in ("arith", "harm"):
        for x in (0.3, 0.55, 0.9):
            warm = oracle._load(name, {"eps": x})
            fresh = c.load_block(c.blocks[name].spec, {"eps": x})
            assert [b.eps for b in warm.budgets] == [b.eps for b in fresh.budgets] == [x]
            a, b = warm.solve(), fresh.solve()
            assert a.objective == b.objective and a.certificate["bound"] == b.certificate["bound"]
        assert oracle.warm[name] is not None
    g = privopt.load(SPECS / "blocks_gaussian.priv")
    noise = _Oracle(g, {})
    name = next(iter(g.blocks))
    noise._load(name, dict(g.blocks[name].fixed) | {g.blocks[name].budget.eps: 0.5})
    assert noise.warm[name] is None  # a noise block: its budget enters the calibration, built each time
