"""A joint Gaussian group beside other blocks (privopt/composite/gaussian.py, "a joint group
beside other blocks"; docs/blocks.md): the group is one mechanism of its dp(...) row, one term of
the certified split. Checked against the paper's matrix-fractional program written in cvxpy
(tests/test_composite_gaussian.reference) at the group's eps, the other blocks solved alone at
theirs, a grid of splits, and located refusals for what is not built."""

import json
import shutil

import numpy as np
import pytest

import privopt
from privopt.errors import SpecError
from tests.conftest import SPECS, invoke
from tests.test_composite_gaussian import PAIRS, PREFIX, analytic_bound, classic_bound, reference

SPEC = SPECS / "blocks_joint_mixed.priv"
COUNT = SPECS / "blocks" / "joint_count.priv"
TOTALS = np.array([[1.0, 1, 1, 1], [1, 1, 0, 0]])
PAIRS3 = np.array([[1.0, 1, 0], [0, 1, 1]])


@pytest.fixture(scope="module")
def answer(composite_solved):
    return json.loads(composite_solved[SPEC.stem].json)  # solve SPEC --json, once per session (conftest)


def _count(eps: float) -> float:
    r = privopt.solve(COUNT, params={"eps": eps})
    assert r.status == "optimal" and r.verification["passed"]
    return float(r.objective)


def _pair(eps: float, delta: float = 1e-6) -> float:
    """prefix + 2 pairs at the joint optimum, by the independent cvxpy program."""
    return reference([(PREFIX, 1.0), (PAIRS, 2.0)], analytic_bound(eps, delta), np.ones(4))


@pytest.mark.slow  # reads the solve of blocks_joint_mixed (conftest.SLOW_SPECS)
def test_the_answer_is_the_joint_pair_and_the_count_each_against_its_reference(answer):
    assert answer["method"] == "split" and answer["verification"]["passed"]
    b = answer["blocks"]
    eps_g, eps_c = b["prefix"]["params"]["eps"], b["count"]["params"]["eps"]
    assert b["pairs"]["params"]["eps"] == eps_g and b["prefix"]["params"]["delta"] == 1e-6
    assert "delta" not in b["count"]["params"]  # the count is eps-DP: the pair gets all of delta
    assert eps_g + eps_c <= 2.0 * (1 + 1e-12)
    group = b["prefix"]["objective"] + 2 * b["pairs"]["objective"]
    assert group == pytest.approx(_pair(eps_g), rel=1e-6)
    assert b["count"]["objective"] == pytest.approx(_count(eps_c), rel=1e-9)
    assert answer["objective"] == pytest.approx(group + 20 * b["count"]["objective"], rel=1e-9)


@pytest.mark.slow  # reads the solve of blocks_joint_mixed (conftest.SLOW_SPECS)
def test_no_split_on_a_grid_is_below_the_proven_bound(answer):
    """Every split of eps = 2 between the pair (delta 1e-6) and the count is feasible: none is
    below the proven bound, and the answer is within its reported gap of the best of them."""
    lower, gap = answer["optimality"]["lower_bound"], answer["optimality"]["gap"]
    assert lower <= answer["objective"] and 0 <= gap <= 1e-2
    totals = [_pair(e) + 20 * _count(2.0 - e) for e in np.linspace(0.4, 1.9, 7)]
    assert min(totals) >= lower * (1 - 1e-7)
    assert answer["objective"] <= min(totals) * (1 + gap + 1e-7)
    # the even split gives each block 2/3: the pair pools its blocks' shares (4/3)
    assert answer["even_split"]["objective"] == pytest.approx(_pair(4 / 3) + 20 * _count(2 / 3), rel=1e-6)
    assert answer["objective"] < answer["even_split"]["objective"]


@pytest.mark.slow  # reads the solve of blocks_joint_mixed (conftest.SLOW_SPECS)
def test_the_composition_names_each_mechanism(answer):
    (row,) = answer["composition"]
    assert row["accountant"] == "basic" and row["eps"] == 2.0 and row["delta"] == 1e-6
    pair, count = row["parts"]
    assert pair["blocks"] == ["prefix", "pairs"] and pair["mechanism"] == "joint gaussian"
    assert pair["delta"] == 1e-6 and count["mechanism"] == "pure" and count["delta"] == 0
    assert pair["eps"] == answer["blocks"]["prefix"]["params"]["eps"]
    assert count["eps"] == answer["blocks"]["count"]["params"]["eps"]
    # the verified sensitivity is within the one (eps_g, 1e-6) allows (analytic, Balle & Wang)
    assert pair["sensitivity"] <= analytic_bound(pair["eps"], 1e-6) * (1 + 1e-9)
    text = invoke("solve", SPEC)
    assert text.exit_code == 0
    line = "dp(prefix, pairs, count) <= (2, 1e-06): basic composition of prefix+pairs joint gaussian ({:.6g}, 1e-06); "
    assert line.format(pair["eps"]) + "count pure ({:.6g}, 0)".format(count["eps"]) in text.output


def _composite(tmp_path, blocks: dict[str, str], text: str):
    (tmp_path / "blocks").mkdir(exist_ok=True)
    for name, source in blocks.items():
        shutil.copy(SPECS / "blocks" / source, tmp_path / "blocks" / f"{name}.priv")
    uses = "".join(f'use "blocks/{name}.priv" as {name}\n' for name in blocks)
    path = tmp_path / "c.priv"
    path.write_text(uses + text, encoding="utf-8")
    return path


def test_a_group_and_a_gaussian_block_on_another_input_share_delta_evenly(tmp_path):
    """The pair is one mechanism, the totals block (another input, classic calibration) another:
    delta = 2e-6 is split evenly between the two mechanisms, 1e-6 each."""
    path = _composite(
        tmp_path,
        {"a": "joint_prefix.priv", "b": "joint_pairs.priv", "t": "gaussian_totals.priv"},
        "subject to dp(a, b, t) <= (1, 2e-6)\nminimize a.objective + 2 * b.objective + t.objective\n",
    )
    r = privopt.solve(path)
    assert r.status in ("optimal", "feasible") and r.verification["passed"]
    (row,) = r.composition
    assert row["delta_split"] == "evenly" and [p["delta"] for p in row["parts"]] == [1e-6, 1e-6]
    assert [p["mechanism"] for p in row["parts"]] == ["joint gaussian", "gaussian"]
    eps_g, eps_t = r.blocks["a"]["params"]["eps"], r.blocks["t"]["params"]["eps"]
    assert r.blocks["t"]["params"]["delta"] == 1e-6 and eps_g + eps_t <= 1 + 1e-12
    group = r.blocks["a"]["objective"] + 2 * r.blocks["b"]["objective"]
    assert group == pytest.approx(_pair(eps_g), rel=1e-6)

    def totals(eps: float) -> float:
        return privopt.solve(SPECS / "blocks" / "gaussian_totals.priv", params={"eps": eps, "delta": 1e-6}).objective

    assert r.blocks["t"]["objective"] == pytest.approx(totals(eps_t), rel=1e-9)
    # no split on a grid is below the proven bound; the answer is within its gap of the best
    lower, gap = r.optimality["lower_bound"], r.optimality["gap"]
    assert gap <= 1e-3
    grid = [_pair(e) + totals(1 - e) for e in np.linspace(0.3, 0.9, 7)]
    assert min(grid) >= lower * (1 - 1e-7) and r.objective <= min(grid) * (1 + gap + 1e-7)
    assert "delta split evenly" in "\n".join(r.text_lines())


def test_two_groups_in_one_row_and_the_classic_cap(tmp_path):
    """Two joint groups (four values; three values under the classic calibration) split one
    budget; the classic group's eps stays below 1, where its calibration is proven."""
    path = _composite(
        tmp_path,
        {"a": "joint_prefix.priv", "b": "joint_pairs.priv", "g": "gaussian_pairs.priv", "h": "gaussian_pairs.priv"},
        "subject to dp(a, b, g, h) <= (3, 2e-6)\nminimize a.objective + b.objective + g.objective + h.objective\n",
    )
    r = privopt.solve(path)
    assert r.status in ("optimal", "feasible") and r.verification["passed"] and r.optimality["gap"] <= 1e-3
    eps_1, eps_2 = r.blocks["a"]["params"]["eps"], r.blocks["g"]["params"]["eps"]
    assert r.blocks["h"]["params"]["eps"] == eps_2 <= 1.0 and eps_1 + eps_2 <= 3 + 1e-12
    assert r.blocks["a"]["params"]["delta"] == r.blocks["g"]["params"]["delta"] == 1e-6
    first = r.blocks["a"]["objective"] + r.blocks["b"]["objective"]
    assert first == pytest.approx(
        reference([(PREFIX, 1.0), (PAIRS, 1.0)], analytic_bound(eps_1, 1e-6), np.ones(4)), rel=1e-6
    )
    second = r.blocks["g"]["objective"] + r.blocks["h"]["objective"]
    ref = reference([(PAIRS3, 1.0), (PAIRS3, 1.0)], classic_bound(eps_2, 1e-6), np.ones(3))
    assert second == pytest.approx(ref, rel=1e-6)


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "subject to dp(a, b, c) <= (2, 1e-6)\nmaximize c.objective - a.objective + b.objective\n",
            "block 'b' is not weighted by a positive number",
        ),
    ],
)
def test_what_is_not_built_beside_other_blocks_is_a_located_refusal(tmp_path, text, message):
    path = _composite(tmp_path, {"a": "joint_prefix.priv", "b": "joint_pairs.priv", "c": "joint_count.priv"}, text)
    with pytest.raises(SpecError, match=message) as e:
        privopt.solve(path)
    assert e.value.span is not None
    r = invoke("solve", path)
    assert r.exit_code == 2 and "c.priv:" in r.output


def test_explain_names_the_joint_group_and_the_split():
    r = invoke("explain", SPEC)
    assert r.exit_code == 0
    assert "block pairs (block): blocks/joint_pairs.priv: solved with prefix + pairs as one joint Gaussian" in r.output
    assert "block count (block): blocks/joint_count.priv: solved by its own route" in r.output
    assert "split (method)" in r.output


def test_a_classic_group_is_searched_where_its_calibration_is_proven(tmp_path):
    """Under the classic calibration the group's eps stays at most 1; the even split would give
    it 10 (two of three blocks' shares of 15), where the classic calibration does not give
    (10, 1e-5)-DP: that point is infeasible, and the even split is reported as none."""
    path = _composite(
        tmp_path,
        {"a": "joint_prefix.priv", "b": "joint_pairs.priv", "c": "joint_count.priv"},
        "subject to dp(a, b, c) <= (15, 1e-5)\nminimize a.objective + b.objective + c.objective\n",
    )
    for name in ("a", "b"):
        block = tmp_path / "blocks" / f"{name}.priv"
        block.write_text(block.read_text().replace("dp(x -> O)", "dp(x -> O, calibration: classic)"))
    r = privopt.solve(path)
    assert r.verification["passed"] and r.even_split["objective"] is None
    eps_g = r.blocks["a"]["params"]["eps"]
    assert eps_g <= 1.0
    group = r.blocks["a"]["objective"] + r.blocks["b"]["objective"]
    ref = reference([(PREFIX, 1.0), (PAIRS, 1.0)], classic_bound(eps_g, 1e-5), np.ones(4))
    assert group == pytest.approx(ref, rel=1e-6)


def test_a_joint_row_beside_another_row(tmp_path):
    """Two rows: the pair alone in its dp(...) (the whole budget is the group's: the joint program
    of specs/blocks_joint_gaussian.priv, 533.503 by the cvxpy program), the count in its own."""
    path = _composite(
        tmp_path,
        {"a": "joint_prefix.priv", "b": "joint_pairs.priv", "c": "joint_count.priv"},
        "subject to dp(a, b) <= (1, 1e-6)\nsubject to dp(c) <= 1\nminimize a.objective + 2 * b.objective + c.objective\n",
    )
    r = privopt.solve(path)
    assert r.status == "optimal" and r.verification["passed"] and r.method == "split"
    assert [row["accountant"] for row in r.composition] == ["gaussian", "pure"]
    assert r.blocks["a"]["params"]["eps"] == 1.0 and r.blocks["c"]["params"]["eps"] == 1.0
    group = r.blocks["a"]["objective"] + 2 * r.blocks["b"]["objective"]
    assert group == pytest.approx(_pair(1.0), rel=1e-6)
    assert r.objective == pytest.approx(group + _count(1.0), rel=1e-9)
