"""Accuracy first over a dp(...) row of several mechanisms, and targets on blocks a split chooses
(privopt/composite/least.py, solve.py ``_least_sum``, ``_target_term``; docs/blocks.md, "Accuracy
first over a row of mechanisms", "A target on a block the split chooses").

References are written here, none through privopt's path: the joint Gaussian pair's least eps by
bisection over cvxpy minimax programs (tests/test_composite_gaussian_targets.minimax), its value
by the cvxpy joint program; randomized response by its closed form ``4 / (e^eps + 4)``; the count
block (specs/blocks/joint_count.priv) as an LP written here and solved by scipy's HiGHS, its least
eps by scipy's brentq; splits by scipy's bounded Brent over the shares."""

import copy
import json
import math
import shutil

import numpy as np
import pytest
from scipy.optimize import brentq, linprog, minimize_scalar

import privopt
from privopt.errors import SpecError
from tests.conftest import SPECS, invoke
from tests.conftest import strict_json as strict
from tests.test_composite_gaussian import reference
from tests.test_composite_gaussian_joint import _pair_with_target
from tests.test_composite_gaussian_targets import minimax

LEAST_ROW = SPECS / "blocks_least_row.priv"
OUTSIDE = SPECS / "blocks_target_outside.priv"
RR_LEAST = math.log(4 / 0.3 - 4)  # 4 / (e^eps + 4) <= 0.3


def _rr(eps: float) -> float:
    return 4.0 / (math.exp(eps) + 4.0)


def count_lp(eps: float) -> float:
    """specs/blocks/joint_count.priv written as an LP: G = P(y | n) over n, y in 0..10, rows summing
    to 1, G[n, y] <= e^eps G[n', y] for |n - n'| = 1, minimize E[(n - y)^2] under a uniform prior."""
    k = 11
    idx = np.arange(k * k).reshape(k, k)
    cost = np.array([(n - y) ** 2 / k for n in range(k) for y in range(k)], dtype=float)
    rows = []
    for n in range(k):
        for m in (n - 1, n + 1):
            if 0 <= m < k:
                for y in range(k):
                    r = np.zeros(k * k)
                    r[idx[n, y]], r[idx[m, y]] = 1.0, -math.exp(eps)
                    rows.append(r)
    eq = np.zeros((k, k * k))
    for n in range(k):
        eq[n, idx[n]] = 1.0
    res = linprog(cost, A_ub=np.array(rows), b_ub=np.zeros(len(rows)), A_eq=eq, b_eq=np.ones(k), method="highs")
    assert res.status == 0, res.message
    return float(res.fun)


def _copy_blocks(tmp_path, names) -> None:
    (tmp_path / "blocks").mkdir(exist_ok=True)
    for name in names:
        shutil.copy(SPECS / "blocks" / f"{name}.priv", tmp_path / "blocks" / f"{name}.priv")


def _composite(tmp_path, uses: dict[str, str], text: str):
    _copy_blocks(tmp_path, set(uses.values()))
    path = tmp_path / "c.priv"
    path.write_text("".join(f'use "blocks/{f}.priv" as {n}\n' for n, f in uses.items()) + text, encoding="utf-8")
    return path


def _group_least(targets: list[float], lo: float, hi: float) -> float:
    """The least eps at which the cvxpy minimax of the pair is at most 1, by bisection."""
    assert minimax(lo, targets) > 1 >= minimax(hi, targets)
    while hi - lo > 2e-7 * hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if minimax(mid, targets) <= 1 else (mid, hi)
    return hi


# ---------------------------------------------------------------- accuracy first over a row


@pytest.fixture(scope="module")
def row(composite_solved):
    return strict(composite_solved[LEAST_ROW.stem].json)  # solve SPEC --json, once per session (conftest)


def test_the_least_t_is_the_sum_of_each_mechanisms_least_eps(row):
    """t* = e_pair + e_rr + e_count, each from its own reference: the pair's by bisection over
    cvxpy minimax programs, randomized response's closed form inverted, the count's LP by brentq."""
    assert row["method"] == "least eps sum" and row["status"] == "optimal" and row["verification"]["passed"]
    pair = _group_least([150, 100], 1.2, 1.3)
    count = brentq(lambda e: count_lp(e) - 2.0, 0.1, 3.0, xtol=1e-12)
    assert row["objective"] == pytest.approx(pair + RR_LEAST + count, rel=1e-6)
    opt = row["optimality"]
    assert opt["lower_bound"] <= row["objective"] and opt["gap"] <= 1e-6
    # the references are bisections to 2e-7: the proven bound is below their sum to that
    assert opt["lower_bound"] <= (pair + RR_LEAST + count) * (1 + 1e-6)
    b = row["blocks"]
    assert b["prefix"]["params"]["eps"] == b["pairs"]["params"]["eps"] == pytest.approx(pair, rel=1e-6)
    assert b["rr"]["params"]["eps"] == pytest.approx(RR_LEAST, rel=1e-6)
    assert b["count"]["params"]["eps"] == pytest.approx(count, rel=1e-6)
    # each block at its eps meets its target, and the binding ones bind
    assert b["prefix"]["objective"] == pytest.approx(150, rel=1e-6) and b["prefix"]["objective"] <= 150
    assert b["rr"]["objective"] <= 0.3 and b["count"]["objective"] <= 2.0
    assert b["count"]["objective"] == pytest.approx(count_lp(b["count"]["params"]["eps"]), rel=1e-7)
    # the bracket: the mechanisms' ends add up to t's
    bracket = opt["bracket"]
    assert [p["blocks"] for p in bracket["parts"]] == [["prefix", "pairs"], ["rr"], ["count"]]
    assert bracket["lo"] == pytest.approx(math.fsum(p["lo"] for p in bracket["parts"]), rel=1e-12)
    assert all(p["lo"] <= p["hi"] for p in bracket["parts"])


def test_the_row_verifies_and_each_tampered_end_fails(row, tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(row))
    r = invoke("verify", path)
    assert r.exit_code == 0, r.output
    assert (
        "accuracy first over the row: count at eps" in r.output and "its target count.objective <= 2 fails" in r.output
    )
    # a count lower end moved above its least eps: its certificate there does not prove a failure
    for part, factor in (("count", 1.001), ("prefix", 1.01)):
        bad = copy.deepcopy(row)
        entry = next(p for p in bad["optimality"]["bracket"]["parts"] if p["blocks"][0] == part)
        entry["lo"] *= factor
        total = math.fsum(p["lo"] for p in bad["optimality"]["bracket"]["parts"])
        bad["optimality"]["bracket"]["lo"] = bad["optimality"]["lower_bound"] = total
        bad["optimality"]["gap"] = (bad["objective"] - total) / bad["objective"]
        path.write_text(json.dumps(bad))
        r = invoke("verify", path)
        assert r.exit_code == 1, (part, r.output)
    # a bound raised without its bracket
    bad = copy.deepcopy(row)
    bad["optimality"]["lower_bound"] = bad["objective"]
    bad["optimality"]["gap"] = 0.0
    path.write_text(json.dumps(bad))
    assert invoke("verify", path).exit_code == 1


def test_the_text_output_shows_t_as_the_mechanisms_spend_it(row):
    r = invoke("solve", LEAST_ROW)
    assert r.exit_code == 0, r.output
    assert f"t = {row['objective']:.9g}" in r.output and "method: least eps sum" in r.output


def test_a_mechanism_without_a_target_spends_nothing_where_it_is_feasible_at_zero(tmp_path):
    """The count has no target and is feasible at eps 0 (every row equal): t is the pair's least eps."""
    path = _composite(
        tmp_path,
        {"a": "joint_prefix", "b": "joint_pairs", "c": "joint_count"},
        "choose t in [0, 4]\nsubject to dp(a, b, c) <= (t, 1e-6)\nsubject to a.objective <= 100\n"
        "subject to b.objective <= 100\nminimize t\n",
    )
    r = privopt.solve(path)
    assert r.method == "least eps sum" and r.status == "optimal" and r.verification["passed"]
    assert r.blocks["c"]["params"]["eps"] == 0.0
    assert r.objective == pytest.approx(_group_least([100, 100], 1.2, 2.0), rel=1e-6)


def test_a_mechanism_without_a_target_takes_its_least_feasible_eps(tmp_path):
    """The arithmetic-mean block needs E[y | x] to move with x, impossible at eps 0: its least
    feasible eps is positive, and the block is infeasible at the bracket's lower end and feasible
    at its upper end (each solved alone); t adds it to randomized response's least eps."""
    _copy_blocks(tmp_path, ["arithmetic_mean"])
    path = _composite(
        tmp_path,
        {"rr": "randomized_response", "m": "arithmetic_mean"},
        "choose t in [0, 8]\nsubject to dp(rr, m) <= t\nsubject to rr.objective <= 0.3\nminimize t\n",
    )
    r = privopt.solve(path)
    assert r.status == "optimal" and r.verification["passed"], r.reasons
    (_, mean) = r.optimality["bracket"]["parts"]
    assert 0 < mean["lo"] <= mean["hi"] and mean["hi"] - mean["lo"] <= 1e-6 * mean["hi"]
    block = tmp_path / "blocks" / "arithmetic_mean.priv"
    assert privopt.solve(block, params={"eps": mean["hi"]}).status == "optimal"
    assert privopt.solve(block, params={"eps": mean["lo"]}).status == "infeasible"
    assert r.objective == pytest.approx(RR_LEAST + mean["hi"], rel=1e-6)
    out = tmp_path / "r.json"
    out.write_text(json.dumps(r.to_dict()))
    v = invoke("verify", out)
    assert v.exit_code == 0 and "infeasible there (its least feasible eps), taken as recorded" in v.output


# ---------------------------------------------------------------- a target on a block the split chooses


@pytest.fixture(scope="module")
def outside(composite_solved):
    return strict(composite_solved[OUTSIDE.stem].json)


def test_a_target_outside_the_group_against_the_joint_program_at_the_rest(outside):
    """rr (weight 0) takes its least eps ln(4 / 0.3 - 4); the pair gets the rest of 4: the cvxpy
    joint program there. No even split meets the target (4 / 3 each), so there is none."""
    ref = _pair_with_target(4.0 - RR_LEAST)
    assert outside["method"] == "split" and outside["status"] == "optimal" and outside["verification"]["passed"]
    assert outside["objective"] == pytest.approx(ref, rel=1e-6)
    assert outside["optimality"]["lower_bound"] <= ref * (1 + 1e-9)
    assert outside["blocks"]["rr"]["objective"] <= 0.3
    assert outside["blocks"]["rr"]["params"]["eps"] == pytest.approx(RR_LEAST, rel=1e-6)
    assert outside["even_split"] is None or outside["even_split"]["objective"] is None


def test_a_target_outside_the_group_verifies(outside, tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(outside))
    assert invoke("verify", path).exit_code == 0


def _count_beside_rr(tmp_path, objective: str):
    """The count with error at most 1.2 and randomized response in dp(count, rr) <= 3, solved;
    and the count's least eps e_c meeting 1.2 (brentq on the LP written here)."""
    path = _composite(
        tmp_path,
        {"count": "joint_count", "rr": "randomized_response"},
        f"subject to dp(count, rr) <= 3\nsubject to count.objective <= 1.2\nminimize {objective}\n",
    )
    return privopt.solve(path), brentq(lambda e: count_lp(e) - 1.2, 0.1, 3.0, xtol=1e-12)


@pytest.mark.slow  # 3 s: test_a_priced_lp_block_with_a_target_is_optimal_at_the_reference covers the corner by default
def test_an_lp_block_with_a_target_only_takes_its_least_eps(tmp_path):
    """The count (an LP) must have error at most 1.2 and is not priced: it takes its least eps
    e_c, randomized response the rest of 3."""
    r, e_c = _count_beside_rr(tmp_path, "rr.objective")
    assert r.status == "optimal" and r.verification["passed"]
    assert r.objective == pytest.approx(_rr(3.0 - e_c), rel=1e-6)
    assert r.optimality["lower_bound"] <= _rr(3.0 - e_c) * (1 + 1e-9)
    assert r.blocks["count"]["objective"] <= 1.2
    # the term's +inf points rest on the count's least budget, recorded and re-proven by verify
    (part,) = r.optimality["bracket"]["parts"]
    assert part["blocks"] == ["count"] and part["lo"] <= e_c <= part["hi"] * (1 + 1e-9)
    out = tmp_path / "r.json"
    data = r.to_dict()
    out.write_text(json.dumps(data))
    v = invoke("verify", out)
    assert v.exit_code == 0 and "its target count.objective <= 1.2 fails" in v.output, v.output
    assert "+inf point(s) lie at or below its re-proven least budget" in v.output
    bad = copy.deepcopy(data)
    bad["optimality"]["bracket"]["parts"][0]["lo"] = part["hi"] * 1.001  # a lower end its certificate does not prove
    out.write_text(json.dumps(bad))
    assert invoke("verify", out).exit_code == 1


def test_a_priced_lp_block_with_a_target_is_optimal_at_the_reference(tmp_path):
    """count + 10 rr with count <= 1.2 over dp(count, rr) <= 3: the target binds (count at its
    least eps e_c), so the optimum is V(e_c) + 10 rr(3 - e_c) unless more budget pays, which scipy's
    bounded Brent over count's share (at least e_c) decides; privopt's bound and answer bracket it."""
    r, e_c = _count_beside_rr(tmp_path, "count.objective + 10 * rr.objective")
    ref = minimize_scalar(
        lambda e: count_lp(e) + 10 * _rr(3.0 - e), bounds=(e_c, 2.9), method="bounded", options={"xatol": 1e-9}
    )
    best = min(ref.fun, count_lp(e_c) + 10 * _rr(3.0 - e_c))
    assert r.status == "optimal" and r.verification["passed"] and r.optimality["gap"] <= 1e-6
    assert r.optimality["lower_bound"] <= best * (1 + 1e-9) and best <= r.objective * (1 + 1e-9)
    assert r.objective == pytest.approx(best, rel=1e-6)
    assert r.blocks["count"]["objective"] <= 1.2


RR3 = """spec "3-ary randomized response"
var X : data {v1, v2, v3}
var Y : release over X
known P(X) = uniform
design R = P(Y | X)
param eps = 1.0
subject to ldp(X -> Y) <= eps
minimize tv(X, Y)
"""


def test_a_randomized_response_target_term_is_second_order_and_re_derived(tmp_path):
    """5-ary randomized response with total variation at most 0.3 and no price beside 3-ary
    randomized response in dp(rr, rr3) <= 3: rr takes ln(4 / 0.3 - 4), rr3 the rest (its closed
    form 2 / (e^eps + 2)). The target term's points carry randomized response's record (its cells
    second order), re-derived by verify with its +inf points proven by the target failing there;
    a changed k, or a raised point, fails."""
    path = _composite(
        tmp_path,
        {"rr": "randomized_response"},
        "subject to dp(rr, rr3) <= 3\nsubject to rr.objective <= 0.3\nminimize rr3.objective\n",
    )
    (tmp_path / "blocks" / "rr3.priv").write_text(RR3, encoding="utf-8")
    path.write_text('use "blocks/rr3.priv" as rr3\n' + path.read_text(), encoding="utf-8")
    r = privopt.solve(path)
    ref = 2 / (math.exp(3 - RR_LEAST) + 2)
    assert r.status == "optimal" and r.verification["passed"] and r.stats["block_solves"] < 20
    assert r.objective == pytest.approx(ref, rel=1e-6) and r.optimality["lower_bound"] <= ref * (1 + 1e-12)
    data = r.to_dict()
    (cert,) = [c for c in data["splits"][0]["certificates"] if c and c["var"] == "rr.eps"]
    assert cert["kind"] == "randomized-response" and cert["k"] == 5 and cert["weight"] == 0
    points = data["splits"][0]["points"][[c["var"] for c in data["splits"][0]["certificates"]].index("rr.eps")]
    assert any(p[1] is None for p in points) and len(cert["points"]) < len(points)  # +inf: null in JSON
    out = tmp_path / "r.json"
    out.write_text(json.dumps(data))
    v = invoke("verify", out)
    assert v.exit_code == 0 and "as recorded" not in v.output, v.output
    assert "block rr: randomized response in closed form: k and weight" in v.output
    bad = copy.deepcopy(data)
    next(c for c in bad["splits"][0]["certificates"] if c and c["var"] == "rr.eps")["k"] = 4.0
    out.write_text(json.dumps(bad))
    checked = invoke("verify", out)
    assert checked.exit_code == 1 and "k and weight" in checked.output, checked.output


# ---------------------------------------------------------------- what stays refused


@pytest.mark.parametrize(
    "text, message, fix",
    [
        (
            "choose t in [0, 4]\nsubject to dp(a, b, c) <= (t, 1e-6)\nsubject to a.objective <= 100\n"
            "subject to b.objective <= 100\nminimize t + c.objective\n",
            "minimizes 't' alone",
            "fix the budget and minimize a.objective",
        ),
        (
            "choose t in [0, 4]\nsubject to dp(a, b) <= (t, 1e-6)\nsubject to c.eps <= 1\n"
            "subject to a.objective <= 100\nsubject to b.objective <= 100\nminimize t\n",
            "another composition row is not built",
            "list every block in the one dp(...) row",
        ),
        (
            "choose t in [0, 4]\nsubject to dp(a, b, c) <= (t, 1e-6)\nsubject to b.objective <= 100\nminimize t\n",
            "block 'a' of the joint Gaussian group has no accuracy target",
            "add subject to a.objective <= a number",
        ),
        (
            "subject to dp(a, b, c) <= (2, 1e-6)\nsubject to c.objective >= 1\nminimize a.objective + b.objective\n",
            "bounds block 'c' on the side its budget does not help",
            "is given a target with <=",
        ),
    ],
)
def test_what_stays_refused_says_what_to_write(tmp_path, text, message, fix):
    path = _composite(tmp_path, {"a": "joint_prefix", "b": "joint_pairs", "c": "joint_count"}, text)
    if "c.eps" in text:
        path.write_text(path.read_text().replace("subject to dp", "choose c.eps in [0, 2]\nsubject to dp", 1))
    with pytest.raises(SpecError, match=message.replace("(", r"\(").replace(")", r"\)")) as e:
        privopt.solve(path)
    assert e.value.span is not None and fix in str(e.value)
    r = invoke("solve", path)
    assert r.exit_code == 2 and "c.priv:" in r.output and "^" in r.output and "Traceback" not in r.output


@pytest.mark.parametrize(
    "line, message",
    [
        ('use "blocks/joint_count.priv" as c with eps = t', "its params are set by t through `with`"),
        ('use "blocks/joint_count.priv" as c\nchoose c.eps in [0, 2]', "'c.eps' is chosen"),
    ],
)
def test_a_block_beside_an_accuracy_first_row_must_be_fixed(tmp_path, line, message):
    """Beside the row, a block that t sets or with a chosen param would make t move it: refused,
    at the row, saying to list it in the row or fix its params."""
    _copy_blocks(tmp_path, {"joint_prefix", "joint_pairs", "joint_count"})
    path = tmp_path / "c.priv"
    path.write_text(
        'choose t in [0, 4]\nuse "blocks/joint_prefix.priv" as a\nuse "blocks/joint_pairs.priv" as b\n'
        f"{line}\nsubject to dp(a, b) <= (t, 1e-6)\nsubject to a.objective <= 100\n"
        "subject to b.objective <= 100\nminimize t\n"
    )
    with pytest.raises(SpecError, match="block 'c' is not in the dp\\(...\\) row whose eps is t") as e:
        privopt.solve(path)
    assert (
        message in str(e.value)
        and "list c in the dp(...) row" in str(e.value)
        and "`with eps = NUMBER`" in str(e.value)
    )
    r = invoke("solve", path)
    row = len(line.splitlines()) + 4
    assert r.exit_code == 2 and f"c.priv:{row}:1" in r.output and "^" in r.output and "Traceback" not in r.output


def test_the_spec_of_a_pair_beside_a_fixed_count(composite_solved):
    """specs/blocks_least_beside.priv: the least t is the pair's alone (bisection over cvxpy minimax
    programs), the count the LP at its fixed eps 1.5 (scipy), within its target."""
    data = strict(composite_solved["blocks_least_beside"].json)
    assert data["method"] == "least eps sum" and data["status"] == "optimal" and data["verification"]["passed"]
    pair = _group_least([150, 100], 1.2, 1.3)
    assert data["objective"] == pytest.approx(pair, rel=1e-6)
    assert data["optimality"]["lower_bound"] <= pair * (1 + 1e-6)
    count = data["blocks"]["count"]
    assert count["params"] == {"eps": 1.5} and count["objective"] == pytest.approx(count_lp(1.5), rel=1e-7)
    assert count["objective"] <= 2
    assert [p["blocks"] for p in data["optimality"]["bracket"]["parts"]] == [["prefix", "pairs"]]


def test_a_fixed_block_beside_an_accuracy_first_row(tmp_path):
    """The count at its own eps (1.5, set by a number) beside dp(rr) <= t: t does not move it, so
    the least t is randomized response's alone (its closed form's inverse), the count is the LP at
    1.5 (scipy), and its target decides feasibility only: at eps 0.05 it misses 2 (infeasible, exit 3)."""
    text = (
        "choose t in [0, 10]\nsubject to dp(rr) <= t\nsubject to rr.objective <= 0.3\n"
        "subject to count.objective <= 2\nminimize t\n"
    )
    path = _composite(tmp_path, {"rr": "randomized_response", "count": "joint_count"}, text)
    path.write_text(path.read_text().replace("as count\n", "as count with eps = 1.5\n"))
    r = privopt.solve(path)
    assert r.status == "optimal" and r.method == "least eps sum" and r.verification["passed"]
    assert r.objective == pytest.approx(RR_LEAST, rel=1e-6)
    assert r.optimality["lower_bound"] <= RR_LEAST * (1 + 1e-9)
    assert r.blocks["count"]["params"]["eps"] == 1.5
    assert r.blocks["count"]["objective"] == pytest.approx(count_lp(1.5), rel=1e-6)
    out = tmp_path / "r.json"
    out.write_text(json.dumps(r.to_dict()))
    v = invoke("verify", out)
    assert v.exit_code == 0, v.output
    assert any(line.startswith("ok") and "count.objective <= 2" in line for line in v.output.splitlines()), v.output
    checked = invoke("check", path, "--json")
    assert checked.exit_code == 0, checked.output
    path.write_text(path.read_text().replace("with eps = 1.5", "with eps = 0.05"))
    assert count_lp(0.05) > 2
    missed = invoke("solve", path)
    assert missed.exit_code == 3 and "block count (beside the row, fixed): its target count.objective <= 2 fails" in (
        missed.output
    )


# ---------------------------------------------------------------- a design choice


def test_accuracy_first_over_a_row_with_a_design_choice_takes_the_least_branch(tmp_path):
    """choose one of rr, count: each branch's least t is its own mechanism's least eps (the
    closed form's inverse, brentq on the count's LP); the least wins, and verify re-checks both."""
    path = _composite(
        tmp_path,
        {"rr": "randomized_response", "count": "joint_count"},
        "choose t in [0, 8]\nchoose one of rr, count\nsubject to dp(rr, count) <= t\nsubject to rr.objective <= 0.3\n"
        "subject to count.objective <= 2\nminimize t\n",
    )
    r = privopt.solve(path)
    count = brentq(lambda e: count_lp(e) - 2.0, 0.1, 3.0, xtol=1e-12)
    assert r.choice == "count" and r.status == "optimal" and r.verification["passed"]
    assert r.objective == pytest.approx(count, rel=1e-6)
    branches = r.optimality["branches"]
    assert branches["rr"]["objective"] == pytest.approx(RR_LEAST, rel=1e-6)
    assert r.blocks["rr"]["status"] == "not chosen"
    out = tmp_path / "r.json"
    out.write_text(json.dumps(r.to_dict()))
    assert invoke("verify", out).exit_code == 0


def test_a_design_choice_builds_each_branch_result_once(monkeypatch):
    """The chosen branch's record is the answer itself (its bound is the least here): two branches,
    two results built, not three."""
    from privopt.composite import solve as composite_solve

    built = []
    original = composite_solve.CompositeResult.build

    def counting(*args, **kwargs):
        built.append(kwargs.get("choice"))
        return original(*args, **kwargs)

    monkeypatch.setattr(composite_solve.CompositeResult, "build", counting)
    r = privopt.solve(SPECS / "blocks_choice.priv")
    assert sorted(built) == sorted(r.optimality["branches"]) and len(built) == 2
    chosen = r.optimality["branches"][r.choice]
    assert chosen["objective"] == r.objective and chosen["lower_bound"] == r.optimality["lower_bound"]


def test_a_target_out_of_reach_of_t_range_is_infeasible_with_the_reason(tmp_path):
    """rr <= 0.3 needs eps 2.2336, beyond t's range [0, 2]: no answer, and the reason names it."""
    path = _composite(
        tmp_path,
        {"rr": "randomized_response", "count": "joint_count"},
        "choose t in [0, 2]\nsubject to dp(rr, count) <= t\nsubject to rr.objective <= 0.3\nminimize t\n",
    )
    r = privopt.solve(path)
    assert r.status == "infeasible" and r.objective is None
    assert any("block rr: its targets are not met at the top of the range" in why for why in r.reasons), r.reasons


def test_a_gaussian_block_of_another_input_beside_the_pair(tmp_path):
    """The totals block (another input in [-2, 3], classic calibration) beside the pair, delta split
    evenly (1e-6 each). Its noise program is homogeneous: at the sensitivity bound D its value is
    (5 / D)^2 V1, V1 the cvxpy program written here at bound 1 and unit widths (well scaled), and
    D = eps / sqrt(2 ln(1.25 / delta)), so its least eps meeting 5000 is sqrt(25 V1 2 ln(1.25e6) /
    5000); verify re-proves its lower end from the block's dual point."""
    path = _composite(
        tmp_path,
        {"prefix": "joint_prefix", "pairs": "joint_pairs", "tot": "gaussian_totals"},
        "choose t in [0, 4]\nsubject to dp(prefix, pairs, tot) <= (t, 2e-6)\nsubject to prefix.objective <= 150\n"
        "subject to pairs.objective <= 100\nsubject to tot.objective <= 5000\nminimize t\n",
    )
    r = privopt.solve(path)
    totals = np.array([[1.0, 1, 1, 1], [1, 1, 0, 0]])
    least = math.sqrt(25 * reference([(totals, 1.0)], 1.0, np.ones(4)) * 2 * math.log(1.25e6) / 5000)
    assert r.status == "optimal" and r.verification["passed"]
    assert r.blocks["tot"]["params"]["eps"] == pytest.approx(least, rel=1e-6)
    assert r.objective == pytest.approx(_group_least([150, 100], 1.2, 1.3) + least, rel=1e-6)
    out = tmp_path / "r.json"
    out.write_text(json.dumps(r.to_dict()))
    v = invoke("verify", out)
    assert v.exit_code == 0 and "its target tot.objective <= 5000 fails" in v.output, v.output
