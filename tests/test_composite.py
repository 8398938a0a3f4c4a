"""Composite specs (issue 21, docs/blocks.md): located errors of the language, and the certified
split core (privopt/composite/split.py) against closed forms."""

import math
import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import privopt
from privopt.composite.split import Term, inverse_square_split, rr_split, split
from privopt.errors import SpecError
from tests.conftest import SPECS, examples, invoke

# ------------------------------------------------------------------ the split core


def gaussian(c: float):
    """Classic calibration: the noise variance is c / eps^2 (infinite at eps = 0)."""
    return lambda y: c / y**2 if y > 0 else math.inf


def gaussian_optimum(ws, cs, budget):
    """eps_i proportional to (w_i c_i)^(1/3) (stationarity of sum w c / eps^2 on sum eps = E)."""
    r = [(w * c) ** (1 / 3) for w, c in zip(ws, cs)]
    return sum(w * c / (budget * ri / sum(r)) ** 2 for w, c, ri in zip(ws, cs, r))


@settings(max_examples=examples(25), deadline=None)
@given(
    st.lists(st.floats(0.1, 10), min_size=1, max_size=3),
    st.lists(st.floats(0.2, 5), min_size=3, max_size=3),
    st.floats(0.2, 4),
)
def test_split_matches_the_gaussian_closed_form(cs, ws, budget):
    ws = ws[: len(cs)]
    s = split([Term(lambda y, w=w, c=c: w * gaussian(c)(y)) for w, c in zip(ws, cs)], budget, max_calls=600)
    best = gaussian_optimum(ws, cs, budget)
    assert s.objective == pytest.approx(best, rel=1e-6)
    assert s.lower_bound <= best * (1 + 1e-12)
    assert sum(s.shares) <= budget * (1 + 1e-15)


@settings(max_examples=examples(40), deadline=None)
@given(st.lists(st.floats(1e-3, 1e3), min_size=1, max_size=6), st.floats(0.05, 10))
def test_the_inverse_square_closed_form(ks, budget):
    """Uncapped: eps_i proportional to k_i^(1/3); the dual bound closes the gap."""
    s = inverse_square_split(ks, [math.inf] * len(ks), budget)
    best = gaussian_optimum([1.0] * len(ks), ks, budget)
    assert s.objective == pytest.approx(best, rel=1e-9)
    assert s.lower_bound <= best * (1 + 1e-12) and s.gap <= 1e-9
    assert sum(s.shares) <= budget * (1 + 1e-15)


@settings(max_examples=examples(25), deadline=None)
@given(st.lists(st.floats(0.1, 10), min_size=2, max_size=3), st.lists(st.floats(0.05, 2), min_size=3, max_size=3))
def test_the_inverse_square_closed_form_with_caps_against_the_core(ks, caps):
    caps = caps[: len(ks)]
    exact = inverse_square_split(ks, caps, 1.0)
    core = split([Term(gaussian(k), cap) for k, cap in zip(ks, caps)], 1.0, max_calls=600)
    assert exact.objective <= core.objective * (1 + 1e-9)  # the closed form is at least as good
    assert core.lower_bound <= exact.objective * (1 + 1e-9) and exact.lower_bound <= core.objective * (1 + 1e-9)
    assert exact.gap <= 1e-9 and all(y <= cap * (1 + 1e-15) for y, cap in zip(exact.shares, caps))


def rr(k: int):
    """k-ary randomized response under a uniform prior: tv = (k - 1) / (e^eps + k - 1)."""
    return lambda y: (k - 1) / (math.exp(y) + k - 1)


def rr_optimum(ks, budget, steps=4000):
    """Dense enumeration of two blocks' split (the value is concave below ln(k - 1): corners matter)."""
    a, b = rr(ks[0]), rr(ks[1])
    return min(a(budget * j / steps) + b(budget * (1 - j / steps)) for j in range(steps + 1))


@settings(max_examples=examples(20), deadline=None)
@given(st.tuples(st.integers(2, 20), st.integers(2, 20)), st.floats(0.1, 6))
def test_split_of_randomized_response_is_certified(ks, budget):
    s = split([Term(rr(k)) for k in ks], budget, max_calls=600)
    dense = rr_optimum(ks, budget)
    assert s.objective <= dense * (1 + 1e-6)  # at least as good as a dense grid
    assert s.lower_bound <= s.objective + 1e-15
    truth = min(dense, s.objective)
    assert s.lower_bound <= truth * (1 + 1e-12)  # never above the optimum


def test_the_gap_closes_with_more_oracle_calls():
    """With monotonicity alone the bound closes as the cells shrink where the objective is flat."""
    terms = [Term(gaussian(1.0)), Term(gaussian(8.0))]
    best = gaussian_optimum([1, 1], [1.0, 8.0], 1.0)
    coarse, fine = split(terms, 1.0, max_calls=200), split(terms, 1.0, max_calls=2000)
    assert fine.gap < coarse.gap / 50
    assert coarse.lower_bound <= fine.lower_bound <= best <= fine.objective <= coarse.objective
    assert fine.objective == pytest.approx(best, rel=1e-9)


def test_corners_of_randomized_response():
    """Below ln(k - 1) the value is concave: with a small budget the best split is a corner."""
    k = 50
    s = split([Term(rr(k)), Term(rr(k))], 0.5, max_calls=2000)
    corner = rr(k)(0.5) + rr(k)(0.0)
    assert s.objective == pytest.approx(corner, rel=1e-9) and s.gap <= 1e-6  # certified at a corner
    assert sorted(s.shares) == pytest.approx([0.0, 0.5])
    assert s.lower_bound <= corner


def test_an_infeasible_split_is_proven():
    s = split([Term(lambda y: math.inf), Term(rr(3))], 1.0)
    assert not s.feasible and s.lower_bound == math.inf


# ------------------------------------------------------------------ located errors


def composite(tmp_path, text: str, blocks=("randomized_response.priv",)):
    (tmp_path / "blocks").mkdir(exist_ok=True)
    for b in blocks:
        shutil.copy(SPECS / "blocks" / b, tmp_path / "blocks" / b)
    path = tmp_path / "c.priv"
    path.write_text(text)
    return path


BAD = [
    ('use "blocks/nope.priv" as a\nminimize a.objective\n', "block file 'blocks/nope.priv' does not exist", 1, 5),
    ('use "../x.priv" as a\nminimize a.objective\n', "leaves the spec's folder", 1, 5),
    ('use "blocks/randomized_response.priv" as a\nchoose b.eps\nminimize a.objective\n', "no block 'b'", 2, 8),
    (
        'choose a.eps\nuse "blocks/randomized_response.priv" as a\nminimize a.objective\n',
        "no block 'a' is declared above this line",
        1,
        8,
    ),
    (
        'use "blocks/randomized_response.priv" as a with eps = t\nchoose t in [0, 1]\nminimize t\n',
        "'t' is not declared above this line",
        1,
        55,
    ),
    ('use "blocks/randomized_response.priv" as a with epz = 1\nminimize a.objective\n', "did you mean 'eps'", 1, 49),
    (
        'use "blocks/randomized_response.priv" as a\nsubject to dp(a, a) <= 1\nminimize a.objective\n',
        "block 'a' is listed twice",
        2,
        18,
    ),
    (
        'use "blocks/randomized_response.priv" as a\nchoose a.eps\nminimize a.objective * a.objective\n',
        "linearly",
        3,
        10,
    ),
]


@pytest.mark.parametrize("text,message,line,col", BAD, ids=[b[1][:30] for b in BAD])
def test_located_errors(tmp_path, text, message, line, col):
    path = composite(tmp_path, text)
    r = invoke("solve", path)
    assert r.exit_code == 2, r.output
    assert message in r.output
    assert f"c.priv:{line}:{col}: error:" in r.output and "^" in r.output and "hint:" in r.output


def test_a_param_used_outside_the_budget_cannot_be_chosen(tmp_path):
    (tmp_path / "blocks").mkdir()
    text = (SPECS / "blocks" / "randomized_response.priv").read_text()
    (tmp_path / "blocks" / "b.priv").write_text(text.replace("minimize tv(X, Y)", "minimize tv(X, Y) + eps"))
    path = composite(tmp_path, 'use "blocks/b.priv" as b\nchoose b.eps\nsubject to b.eps <= 1\nminimize b.objective\n')
    r = invoke("solve", path)
    assert r.exit_code == 2 and "cannot be chosen: only a privacy budget can" in r.output
    assert "c.priv:2:10" in r.output


def test_dp_over_a_block_without_a_dp_budget(tmp_path):
    (tmp_path / "blocks").mkdir()
    shutil.copy(SPECS / "sanitize_loglift_budget.priv", tmp_path / "blocks" / "ll.priv")
    shutil.copy(SPECS / "blocks" / "randomized_response.priv", tmp_path / "blocks" / "rr.priv")
    path = tmp_path / "c.priv"
    path.write_text(
        'use "blocks/ll.priv" as ll\nuse "blocks/rr.priv" as rr\nsubject to dp(ll, rr) <= 1\n'
        "minimize ll.objective + rr.objective\n"
    )
    r = invoke("solve", path)
    assert r.exit_code == 2 and "its budget is a log-lift budget, not a DP budget" in r.output
    assert "c.priv:3:15" in r.output


def test_a_cycle_of_use_names_the_files(tmp_path):
    (tmp_path / "a.priv").write_text('use "b.priv" as b\nminimize b.objective\n')
    (tmp_path / "b.priv").write_text('use "a.priv" as a\nminimize a.objective\n')
    r = invoke("solve", tmp_path / "a.priv")
    assert r.exit_code == 2 and "a cycle of `use`: a.priv -> b.priv -> a.priv" in r.output


def test_gaussian_blocks_over_the_same_input_are_refused(tmp_path):
    (tmp_path / "blocks").mkdir()
    shutil.copy(SPECS / "noise_placement.priv", tmp_path / "blocks" / "g.priv")
    path = tmp_path / "c.priv"
    path.write_text(
        'use "blocks/g.priv" as a\nuse "blocks/g.priv" as b\nsubject to dp(a, b) <= 1\n'
        "minimize a.objective + b.objective\n"
    )
    r = invoke("solve", path)
    assert r.exit_code == 2 and "joint Gaussian accountant needs a delta > 0" in r.output and "c.priv:3:" in r.output


def test_a_block_name_outside_a_composite_is_located():
    with pytest.raises(SpecError, match="names a block"):
        privopt.loads("var X : data {a, b}\nminimize q.objective\n")


# ------------------------------------------------------------------ composites end to end


def two_blocks(tmp_path, sense_line: str):
    return composite(
        tmp_path,
        'use "blocks/randomized_response.priv" as a\nuse "blocks/ordered_release.priv" as b\n'
        f"choose a.eps, b.eps\nsubject to a.eps + b.eps <= 2\n{sense_line}\n",
        blocks=("randomized_response.priv", "ordered_release.priv"),
    )


def test_maximize_mirrors_minimize(tmp_path):
    low = privopt.load(two_blocks(tmp_path, "minimize a.objective + 2 * b.objective")).solve()
    high = privopt.load(two_blocks(tmp_path, "maximize -1 * a.objective - 2 * b.objective")).solve()
    assert high.objective == pytest.approx(-low.objective, rel=1e-12)
    assert high.optimality["upper_bound"] == pytest.approx(-low.optimality["lower_bound"], rel=1e-12)
    assert high.optimality["upper_bound"] >= high.objective
    # the corner: randomized response gets nothing (tv 0.8 = 1 - 1/5), the ordered release all of it
    assert low.blocks["a"]["params"]["eps"] == 0.0 and low.blocks["a"]["objective"] == pytest.approx(0.8)


def test_a_block_may_be_a_composite(tmp_path):
    composite(tmp_path, "", blocks=("randomized_response.priv", "ordered_release.priv"))
    shutil.copy(SPECS / "blocks_choice.priv", tmp_path / "inner.priv")
    outer = tmp_path / "outer.priv"
    outer.write_text(
        'use "inner.priv" as inner with eps = 2\nuse "blocks/randomized_response.priv" as rr with eps = 1\n'
        "minimize inner.objective + rr.objective\n"
    )
    r = privopt.load(outer).solve()
    inner = privopt.load(SPECS / "blocks_choice.priv", {"eps": 2}).solve()
    assert r.status == "optimal" and r.verification["passed"] and r.method == "evaluate"
    assert r.blocks["inner"]["objective"] == pytest.approx(inner.objective, rel=1e-12)
    assert r.objective == pytest.approx(inner.objective + 4 / (math.e + 4), rel=1e-6)


def test_a_block_infeasible_at_a_point_does_not_stop_the_run():
    """The arithmetic-mean block has no answer at a tiny budget; the split still solves."""
    assert privopt.load(SPECS / "blocks" / "arithmetic_mean.priv", {"eps": 1e-6}).solve().status == "infeasible"
    r = privopt.load(SPECS / "blocks_choice.priv", {"eps": 0.25}).solve()
    assert r.status == "optimal" and r.objective is not None


COMPOSITE_TEXTS = {p.name: p.read_text() for p in sorted(SPECS.glob("blocks_*.priv"))}
INSERTS = ["use", "choose", "one of", "with", "as", ".", ",", "dp(", "objective", "eps", "(", ")", "[", "]", '"', "<="]


@st.composite
def mutated(draw):
    name = draw(st.sampled_from(sorted(COMPOSITE_TEXTS)))
    words = COMPOSITE_TEXTS[name].split(" ")
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(words) - 1))
        if draw(st.booleans()):
            del words[i]
        else:
            words.insert(i, draw(st.sampled_from(INSERTS)))
    return name, " ".join(words)


@settings(max_examples=examples(60), deadline=None)
@given(mutated())
def test_mutated_composites_load_or_give_located_errors(case):
    """A mutated composite loads and explains, or is refused by a PrivoptError (never a crash)."""
    name, text = case
    try:
        problem = privopt.loads(text, path=SPECS / name)
    except privopt.PrivoptError:
        return
    problem.explain_text(as_json=True)


@settings(max_examples=examples(25, few=2), deadline=None)
@given(
    st.lists(st.tuples(st.integers(2, 20), st.floats(0.2, 3.0)), min_size=2, max_size=3),
    st.floats(0.1, 6),
)
def test_randomized_response_closed_form_equals_the_generic_split(blocks, budget):
    """``rr_split`` (Lagrangian dual bound, primal from the inner minima) against the generic split
    over evaluated oracles: never worse, the bounds agree, and equal to 1e-6 when certified."""
    ks, ws = [k for k, _ in blocks], [w for _, w in blocks]
    closed = rr_split(ks, ws, [math.inf] * len(ks), budget)
    generic = split([Term(lambda y, k=k, w=w: w * rr(k)(y)) for k, w in blocks], budget, max_calls=4000)
    assert sum(closed.shares) <= budget * (1 + 1e-12)
    assert closed.objective == pytest.approx(math.fsum(w * rr(k)(y) for (k, w), y in zip(blocks, closed.shares)))
    assert closed.objective <= generic.objective * (1 + 1e-6)
    assert closed.lower_bound <= generic.objective * (1 + 1e-12)
    assert generic.lower_bound <= closed.objective * (1 + 1e-12)
    if closed.gap <= 1e-6:
        assert closed.objective == pytest.approx(generic.objective, rel=1e-6)


def test_randomized_response_closed_form_at_scale():
    """1,000 blocks split without a solve each; the gap is at most one block's nonconvexity."""
    rng = np.random.default_rng(7)
    ks = rng.integers(2, 30, 1000)
    s = rr_split(ks, np.ones(1000), np.full(1000, math.inf), 800.0)
    assert s.calls == 0 and sum(s.shares) <= 800.0 * (1 + 1e-12)
    assert s.lower_bound <= s.objective and s.gap <= 1e-3


def test_randomized_response_closed_form_takes_the_corner():
    """Below ln(k - 1) the value is concave: the closed form certifies the corner, as the generic split does."""
    s = rr_split([50, 50], [1.0, 1.0], [math.inf, math.inf], 0.5)
    corner = rr(50)(0.5) + rr(50)(0.0)
    assert s.objective == pytest.approx(corner, rel=1e-12) and s.gap <= 1e-6
    assert sorted(s.shares) == pytest.approx([0.0, 0.5])
