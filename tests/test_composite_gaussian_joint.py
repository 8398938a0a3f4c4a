"""Targets on a joint Gaussian group in the shapes users write most (privopt/composite/gaussian.py,
``target_term``, ``_target_point``, ``_least_proven``; docs/blocks.md, "Targets on a joint group"):
a target on a group beside other blocks (specs/blocks_joint_mixed_target.priv), a target bounding a
block from below, and the refusals of what stays refused (each located, exit 2, no traceback).

References are written here: the joint program with the target as a cvxpy constraint (the paper's
matrix-fractional form, tests/test_composite_gaussian_targets), randomized response's closed form
``4 / (e^eps + 4)``, and the split over the group's share minimized by scipy's bounded Brent."""

import copy
import json
import math
import re
import shutil

import cvxpy as cp
import pytest
from scipy.optimize import minimize_scalar

import privopt
from privopt.errors import SpecError
from tests.conftest import SPECS, invoke
from tests.conftest import strict_json as strict
from tests.test_composite_gaussian import PAIRS, PREFIX, _composite, analytic_bound, reference
from tests.test_composite_gaussian_targets import _private, _sigmas

SPEC = SPECS / "blocks_joint_mixed_target.priv"
TARGET = 80.0  # prefix.objective <= 80 in SPEC
RR_WEIGHT, EPS, DELTA = 1000.0, 2.5, 1e-6


def _pair_with_target(eps: float, cap: float | None = None, floor: float | None = None) -> float:
    """min tr(Sigma_prefix) + 2 tr(Sigma_pairs) at (eps, 1e-6) with the target(s) on prefix as
    constraints; +inf when no noise meets them."""
    blocks = [PREFIX, PAIRS]
    sigmas = _sigmas(blocks)
    rows = [] if cap is None else [sigmas[0][1] <= cap]
    rows += [] if floor is None else [sigmas[0][1] >= floor]
    problem = cp.Problem(
        cp.Minimize(sigmas[0][1] + 2 * sigmas[1][1]), rows + _private(blocks, sigmas, analytic_bound(eps, DELTA))
    )
    problem.solve(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return float(problem.value) if problem.status == "optimal" else math.inf


def _rr(eps: float) -> float:
    return 4.0 / (math.exp(eps) + 4.0)


@pytest.fixture(scope="module")
def mixed(composite_solved):
    return json.loads(composite_solved[SPEC.stem].json)  # solve SPEC --json, once per session (conftest)


@pytest.mark.slow  # reads the solve of blocks_joint_mixed_target (conftest.SLOW_SPECS)
def test_a_target_beside_other_blocks_against_a_split_of_reference_programs(mixed):
    """The composite's optimum over the group's share y: J(y) + 1000 rr(2.5 - y), J the joint
    program with the target as a constraint, minimized by Brent on a bracket around the answer."""
    y = mixed["blocks"]["prefix"]["params"]["eps"]
    ref = minimize_scalar(
        lambda s: _pair_with_target(s, TARGET) + RR_WEIGHT * _rr(EPS - s),
        bounds=(y - 0.3, y + 0.3),
        method="bounded",
        options={"xatol": 1e-7},
    )
    assert mixed["method"] == "split" and mixed["verification"]["passed"]
    assert mixed["objective"] == pytest.approx(ref.fun, rel=1e-6)
    # the proven bound is below the true optimum, and the target binds at the answer
    assert mixed["optimality"]["lower_bound"] <= ref.fun * (1 + 1e-9)
    assert mixed["blocks"]["prefix"]["objective"] <= TARGET
    assert mixed["blocks"]["prefix"]["objective"] == pytest.approx(TARGET, rel=1e-6)
    # each block's value at the answer against its own reference
    assert _pair_with_target(y, TARGET) == pytest.approx(
        mixed["blocks"]["prefix"]["objective"] + 2 * mixed["blocks"]["pairs"]["objective"], rel=1e-6
    )
    assert mixed["blocks"]["rr"]["objective"] == pytest.approx(_rr(mixed["blocks"]["rr"]["params"]["eps"]), rel=1e-9)


@pytest.mark.slow  # reads the solve of blocks_joint_mixed_target (conftest.SLOW_SPECS)
def test_the_target_makes_the_group_costlier_than_without_it(mixed):
    """Without the target the group's split is cheaper: the target is a real constraint here."""
    free = minimize_scalar(
        lambda s: (
            reference([(PREFIX, 1.0), (PAIRS, 2.0)], analytic_bound(s, DELTA), [1.0] * 4) + RR_WEIGHT * _rr(EPS - s)
        ),
        bounds=(0.5, 2.4),
        method="bounded",
        options={"xatol": 1e-5},
    )
    assert free.fun < mixed["objective"] * (1 - 1e-4)


@pytest.mark.slow  # reads the solve of blocks_joint_mixed_target (conftest.SLOW_SPECS)
def test_a_mixed_target_result_verifies_and_a_tampered_variance_fails(mixed, tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(mixed))
    r = invoke("verify", path)
    assert r.exit_code == 0, r.output
    bad = copy.deepcopy(mixed)
    noise = next(iter(bad["blocks"]["prefix"]["variances"]))
    bad["blocks"]["prefix"]["variances"][noise] = [0.5 * v for v in bad["blocks"]["prefix"]["variances"][noise]]
    path.write_text(json.dumps(bad))
    assert invoke("verify", path).exit_code == 1


def _mixed(tmp_path, eps: float, target: str) -> object:
    (tmp_path / "blocks").mkdir(exist_ok=True)
    for name in ("joint_prefix", "joint_pairs", "randomized_response"):
        shutil.copy(SPECS / "blocks" / f"{name}.priv", tmp_path / "blocks" / f"{name}.priv")
    path = tmp_path / "c.priv"
    path.write_text(
        'use "blocks/joint_prefix.priv" as a\nuse "blocks/joint_pairs.priv" as b\n'
        'use "blocks/randomized_response.priv" as r\n'
        f"subject to dp(a, b, r) <= ({eps}, 1e-6)\n{target}\nminimize a.objective + 2 * b.objective + 10 * r.objective\n",
        encoding="utf-8",
    )
    return path


def test_a_budget_below_the_proven_least_share_is_infeasible(tmp_path):
    """prefix alone meets 80 only from eps 1.2644 on (the pairs' noise free): with a row of 1.2
    no share of it can, and the group's every point is proven infeasible, not merely unsolved."""
    r = privopt.solve(_mixed(tmp_path, 1.2, "subject to a.objective <= 80"))
    assert r.status == "infeasible" and r.objective is None
    assert any("the targets need the group's eps >=" in why for why in r.reasons), r.reasons
    assert _pair_with_target(1.2, TARGET) == math.inf  # the reference agrees: no noise meets it


def test_a_lower_target_on_a_group_beside_other_blocks(tmp_path):
    """a.objective >= 150 pushes noise onto prefix: its row is a floor of the same conic program."""
    r = privopt.solve(_mixed(tmp_path, 2.0, "subject to a.objective >= 150"))
    assert r.status in ("optimal", "feasible") and r.verification["passed"]
    y = r.blocks["a"]["params"]["eps"]
    assert r.blocks["a"]["objective"] >= 150
    assert _pair_with_target(y, floor=150) == pytest.approx(
        r.blocks["a"]["objective"] + 2 * r.blocks["b"]["objective"], rel=1e-6
    )
    assert r.optimality["lower_bound"] <= r.objective


# ---------------------------------------------------------------- a target from below, the group alone


def test_a_lower_target_is_a_row_of_the_joint_program(tmp_path):
    """prefix gets 251.52 at the joint optimum; asking at least 300 of it moves noise onto prefix
    and off pairs, at a cost the reference program with the floor as a constraint gives."""
    path = _composite(
        tmp_path,
        "subject to dp(a, b) <= (1, 1e-6)\nsubject to a.objective >= 300\nminimize a.objective + 2 * b.objective\n",
    )
    r = invoke("solve", path, "--json")
    assert r.exit_code == 0, r.output
    data = strict(r.stdout)
    ref = _pair_with_target(1.0, floor=300)
    assert data["method"] == "joint targets" and data["status"] == "optimal"
    assert data["objective"] == pytest.approx(ref, rel=1e-6)
    assert data["blocks"]["a"]["objective"] >= 300
    assert data["optimality"]["lower_bound"] <= data["objective"] and data["optimality"]["gap"] <= 1e-6
    # the floor binds: without it the joint optimum is cheaper
    assert ref > reference([(PREFIX, 1.0), (PAIRS, 2.0)], analytic_bound(1, DELTA), [1.0] * 4)
    out = tmp_path / "r.json"
    out.write_text(r.stdout)
    assert invoke("verify", out).exit_code == 0
    # a multiplier on a block without a floor proves nothing: verify fails
    bad = copy.deepcopy(data)
    bad["optimality"]["joint_dual"]["weights"]["b"] = 1.0
    out.write_text(json.dumps(bad))
    assert invoke("verify", out).exit_code == 1


# ---------------------------------------------------------------- what stays refused


@pytest.mark.parametrize(
    "text, message, fix",
    [
        (
            "choose t in [0, 4]\nsubject to dp(a, b) <= (t, 1e-6)\nsubject to a.objective <= 150\n"
            "subject to b.objective <= 100\nsubject to a.objective >= 120\nminimize t\n",
            "a target bounding block 'a' from below does not move the least t",
            "drop this target and solve for the least t",
        ),
        (
            "subject to dp(a, b) <= 1\nminimize a.objective + b.objective\n",
            "no Gaussian mechanism gives delta = 0",
            "with a delta > 0",
        ),
        (
            "choose a.eps in [0, 1]\nsubject to dp(a, b) <= (1, 1e-6)\nminimize a.objective + b.objective\n",
            "a joint group's only chosen value is the eps dp(...) sets",
            "drop that choose line",
        ),
    ],
)
def test_what_stays_refused_says_what_to_write(tmp_path, text, message, fix):
    path = _composite(tmp_path, text)
    with pytest.raises(SpecError, match=re.escape(message)) as e:
        privopt.solve(path)
    assert e.value.span is not None and fix in str(e.value)
    r = invoke("solve", path)
    assert r.exit_code == 2 and "c.priv:" in r.output and "^" in r.output and "Traceback" not in r.output


def test_a_member_delta_written_as_a_number_is_refused_with_the_fix(tmp_path):
    path = _composite(tmp_path, "subject to dp(a, b) <= (1, 1e-6)\nminimize a.objective + b.objective\n")
    block = tmp_path / "blocks" / "joint_pairs.priv"
    block.write_text(block.read_text().replace("<= (eps, delta)", "<= (eps, 1e-6)"))
    r = invoke("solve", path)
    assert r.exit_code == 2 and "c.priv:3:" in r.output and "Traceback" not in r.output
    assert "writes its delta as a number" in r.output and "param delta" in r.output


def test_a_target_on_a_block_outside_the_group_in_a_split_is_met_at_the_optimum(tmp_path):
    """Refused until the session of 2026-11-26 (fourth); now r's term is its value where r <= 0.5
    holds (eps >= ln 4) and +inf below (solve._target_term): the optimum over the pair's share y
    of J(y) + 10 rr(2 - y) with 2 - y >= ln 4, J the cvxpy joint program, by bounded Brent."""
    r = privopt.solve(_mixed(tmp_path, 2.0, "subject to r.objective <= 0.5"))
    ref = minimize_scalar(
        lambda s: _pair_with_target(s) + 10 * _rr(2.0 - s),
        bounds=(0.05, 2.0 - math.log(4.0)),
        method="bounded",
        options={"xatol": 1e-9},
    )
    assert r.status == "optimal" and r.verification["passed"]
    assert r.objective == pytest.approx(ref.fun, rel=1e-6) and r.blocks["r"]["objective"] <= 0.5
