"""The joint Gaussian accountant (privopt/composite/gaussian.py; docs/blocks.md, "Joint Gaussian
accountant"): Gaussian blocks over one input composed by dp(...) <= (eps, delta) are solved as
one conic program. Checked against a cvxpy program written here from the blocks' matrices (the
paper's matrix-fractional form over the stacked covariance), the analytic calibration computed
here from Balle & Wang's formula, the blocks solved alone (the split and the even split), and
located refusals for what is not built."""

import json
import math
import shutil

import cvxpy as cp
import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import norm

import privopt
from privopt.errors import SpecError
from tests.conftest import SPECS, invoke

SPEC = SPECS / "blocks_joint_gaussian.priv"
PREFIX = np.tril(np.ones((4, 4)))
PAIRS = np.array([[1.0, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]])


def analytic_delta(d: float, eps: float) -> float:
    """Balle & Wang (2018), Thm. 8: the delta of the Gaussian mechanism with sensitivity d / sigma."""
    return norm.cdf(d / 2 - eps / d) - math.exp(eps) * norm.cdf(-d / 2 - eps / d)


def analytic_bound(eps: float, delta: float) -> float:
    return brentq(lambda d: analytic_delta(d, eps) - delta, 1e-6, 50.0, xtol=1e-15, rtol=1e-15)


def classic_bound(eps: float, delta: float) -> float:
    return eps / math.sqrt(2 * math.log(1.25 / delta))


def reference(blocks: list[tuple[np.ndarray, float]], bound: float, widths: np.ndarray) -> float:
    """min sum_b c_b tr(Sigma_b) over diagonal noise on the inputs (G = A) and on the answers
    (G = I) of each block, s.t. w_j^2 f_j' Sigma^-1 f_j <= bound^2 for the stacked release."""
    sigmas, cost = [], 0
    for A, c in blocks:
        s_in = cp.Variable(A.shape[1], nonneg=True)
        s_out = cp.Variable(A.shape[0], nonneg=True)
        S = A @ cp.diag(s_in) @ A.T + cp.diag(s_out)
        sigmas.append(S)
        cost = cost + c * cp.trace(S)
    # block diagonal Sigma
    full = cp.bmat(
        [
            [
                sigmas[i] if i == k else np.zeros((blocks[i][0].shape[0], blocks[k][0].shape[0]))
                for k in range(len(blocks))
            ]
            for i in range(len(blocks))
        ]
    )
    F = np.vstack([A for A, _ in blocks])
    cons = [cp.matrix_frac(F[:, j], (full + full.T) / 2) <= (bound / widths[j]) ** 2 for j in range(F.shape[1])]
    problem = cp.Problem(cp.Minimize(cost), cons)
    problem.solve(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    # noise can always be made large enough, so the program is feasible; "inaccurate" at these
    # tolerances is still compared with privopt's certified answers to 1e-6
    assert problem.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE), problem.status
    return float(problem.value)


@pytest.fixture(scope="module")
def answer(composite_solved):
    return json.loads(composite_solved[SPEC.stem].json)  # solve SPEC --json, once per session (conftest)


def test_the_spec_is_one_joint_program_against_an_independent_reference(answer):
    assert answer["accountant"] == "gaussian" and answer["method"] == "joint"
    assert answer["status"] == "optimal" and answer["verification"]["passed"]
    ref = reference([(PREFIX, 1.0), (PAIRS, 2.0)], analytic_bound(1.0, 1e-6), np.ones(4))
    assert answer["objective"] == pytest.approx(ref, rel=1e-6)
    lb = answer["optimality"]["lower_bound"]
    assert lb <= answer["objective"] and answer["optimality"]["gap"] <= 1e-6
    # the blocks' values at the joint optimum add up to the objective (weights 1 and 2)
    b = answer["blocks"]
    assert b["prefix"]["objective"] + 2 * b["pairs"]["objective"] == pytest.approx(answer["objective"], rel=1e-9)


def test_joint_is_strictly_better_than_any_split(answer):
    """The best split (basic composition) is proven no better than its lower bound, which is
    above the joint optimum: the joint program is strictly better here."""
    opt = answer["optimality"]
    assert opt["split_lower_bound"] <= opt["split_objective"]
    assert answer["objective"] < opt["split_lower_bound"]
    assert any("never worse" in c["check"] and c["passed"] for c in answer["verification"]["checks"])


def test_the_split_is_the_blocks_solved_alone(answer):
    """At the split's eps (delta halved), each block solved alone gives the split's value."""
    eps = answer["optimality"]["split_eps"]
    assert sum(eps.values()) <= 1.0 + 1e-12
    total = 0.0
    for name, weight in (("prefix", 1.0), ("pairs", 2.0)):
        r = privopt.solve(SPECS / "blocks" / f"joint_{name}.priv", params={"eps": eps[name], "delta": 5e-7})
        assert r.status == "optimal"
        total += weight * r.objective
    assert answer["optimality"]["split_objective"] == pytest.approx(total, rel=1e-6)


def test_even_split_gives_each_block_half_the_squared_sensitivity(answer):
    """Each block alone at the eps whose analytic bound is Delta / sqrt(2) (same delta)."""
    target = analytic_bound(1.0, 1e-6) / math.sqrt(2)
    eps_half = brentq(lambda e: analytic_bound(e, 1e-6) - target, 0.05, 1.0, xtol=1e-14)
    total = 0.0
    for name, weight in (("prefix", 1.0), ("pairs", 2.0)):
        r = privopt.solve(SPECS / "blocks" / f"joint_{name}.priv", params={"eps": eps_half, "delta": 1e-6})
        total += weight * r.objective
    assert answer["even_split"]["objective"] == pytest.approx(total, rel=1e-6)
    assert answer["objective"] <= answer["even_split"]["objective"]


def _composite(tmp_path, text: str, calibration: str = "") -> object:
    (tmp_path / "blocks").mkdir(exist_ok=True)
    for name in ("joint_prefix", "joint_pairs"):
        src = (SPECS / "blocks" / f"{name}.priv").read_text()
        if calibration:
            src = src.replace("dp(x -> O)", f"dp(x -> O, calibration: {calibration})")
        (tmp_path / "blocks" / f"{name}.priv").write_text(src)
    path = tmp_path / "c.priv"
    path.write_text(
        'use "blocks/joint_prefix.priv" as a\nuse "blocks/joint_pairs.priv" as b\n' + text,
        encoding="utf-8",
    )
    return path


def test_classic_calibration_against_the_reference(tmp_path):
    path = _composite(
        tmp_path, "subject to dp(a, b) <= (0.6, 1e-5)\nminimize 3 * a.objective + b.objective\n", "classic"
    )
    r = privopt.solve(path)
    assert r.accountant == "gaussian" and r.status == "optimal" and r.verification["passed"]
    ref = reference([(PREFIX, 3.0), (PAIRS, 1.0)], classic_bound(0.6, 1e-5), np.ones(4))
    assert r.objective == pytest.approx(ref, rel=1e-6)
    assert r.objective <= r.optimality["split_lower_bound"]


def test_the_same_block_twice_is_one_mechanism(tmp_path):
    """Two copies of one release: by symmetry each gets the noise of one release at Delta /
    sqrt(2), i.e. the block alone at that bound (the even split is optimal)."""
    (tmp_path / "blocks").mkdir()
    shutil.copy(SPECS / "blocks" / "joint_pairs.priv", tmp_path / "blocks" / "g.priv")
    path = tmp_path / "c.priv"
    path.write_text(
        'use "blocks/g.priv" as a\nuse "blocks/g.priv" as b\nsubject to dp(a, b) <= (1, 1e-6)\n'
        "minimize a.objective + b.objective\n"
    )
    r = privopt.solve(path)
    assert r.status == "optimal"
    assert r.objective == pytest.approx(r.even_split["objective"], rel=1e-6)
    ref = reference([(PAIRS, 1.0), (PAIRS, 1.0)], analytic_bound(1.0, 1e-6), np.ones(4))
    assert r.objective == pytest.approx(ref, rel=1e-6)


@pytest.mark.parametrize(
    "text, calibration, message",
    [
        ("subject to dp(a, b) <= 1\nminimize a.objective + b.objective\n", "", "needs a delta > 0"),
        (
            "subject to dp(a, b) <= (1, 1e-6)\nsubject to a.eps <= 0.5\nminimize a.objective + b.objective\n",
            "",
            "in another constraint",
        ),
        ("subject to dp(a, b) <= (1, 1e-6)\nminimize a.objective\n", "", "not weighted by a positive number"),
        ("subject to dp(a, b) <= (1, 1e-6)\nmaximize a.objective + b.objective\n", "", "minimizes"),
        ("subject to dp(a, b) <= (10, 1e-5)\nminimize a.objective + b.objective\n", "classic", "classic calibration"),
    ],
)
def test_what_is_not_built_is_a_located_refusal(tmp_path, text, calibration, message):
    path = _composite(tmp_path, text, calibration)
    with pytest.raises(SpecError, match=message) as e:
        privopt.solve(path)
    assert e.value.span is not None


def test_different_calibrations_are_refused(tmp_path):
    path = _composite(tmp_path, "subject to dp(a, b) <= (0.5, 1e-6)\nminimize a.objective + b.objective\n")
    src = (tmp_path / "blocks" / "joint_pairs.priv").read_text()
    (tmp_path / "blocks" / "joint_pairs.priv").write_text(src.replace("dp(x -> O)", "dp(x -> O, calibration: classic)"))
    with pytest.raises(SpecError, match="different calibrations"):
        privopt.solve(path)


def test_explain_names_the_joint_program():
    r = invoke("explain", SPEC)
    assert r.exit_code == 0 and "joint (method)" in r.output
