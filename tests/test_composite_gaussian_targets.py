"""Accuracy targets and design choices on a joint Gaussian group (privopt/composite/gaussian.py,
``least_budget`` and ``with_targets``; solve.py ``_branches``; docs/blocks.md, "Targets on a joint
group"), and the joint program's dual point re-derived by ``privopt verify``.

Checked against programs written here in cvxpy from the blocks' matrices (the paper's
matrix-fractional form over the stacked covariance, as tests/test_composite_gaussian.reference):
the least eps by bisection over separately solved joint minimax programs, the member target as a
constraint of the joint program, each branch of the choice as its own joint program."""

import copy
import json

import cvxpy as cp
import numpy as np
import pytest

import privopt
from privopt.errors import SpecError
from tests.conftest import SPECS, invoke
from tests.conftest import strict_json as strict
from tests.test_composite_gaussian import PAIRS, PREFIX, _composite, analytic_bound, reference
from tests.test_verify_nosolver import _run_blocked

HALVES = np.array([[1.0, 1, 0, 0], [0, 0, 1, 1]])


def _sigmas(blocks: list[np.ndarray]):
    """Per block: diagonal noise on the inputs and on the answers, its covariance and its trace."""
    out = []
    for A in blocks:
        s_in = cp.Variable(A.shape[1], nonneg=True)
        s_out = cp.Variable(A.shape[0], nonneg=True)
        S = A @ cp.diag(s_in) @ A.T + cp.diag(s_out)
        out.append((S, cp.trace(S)))
    return out


def _private(blocks: list[np.ndarray], sigmas, bound: float) -> list:
    """w_j^2 f_j' Sigma^-1 f_j <= bound^2 (widths 1) for the stacked release, Sigma block diagonal."""
    sizes = [A.shape[0] for A in blocks]
    full = cp.bmat(
        [
            [sigmas[i][0] if i == k else np.zeros((sizes[i], sizes[k])) for k in range(len(blocks))]
            for i in range(len(blocks))
        ]
    )
    F = np.vstack(blocks)
    return [cp.matrix_frac(F[:, j], (full + full.T) / 2) <= bound**2 for j in range(F.shape[1])]


def _solve(problem: cp.Problem) -> float:
    problem.solve(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    assert problem.status == "optimal", problem.status
    return float(problem.value)


def minimax(eps: float, targets: list[float]) -> float:
    """min over the joint noise at (eps, 1e-6) of max_b tr(Sigma_b) / T_b (prefix, pairs)."""
    blocks = [PREFIX, PAIRS]
    sigmas = _sigmas(blocks)
    r = cp.Variable()
    rows = [tr <= r * T for (_, tr), T in zip(sigmas, targets)]
    return _solve(cp.Problem(cp.Minimize(r), rows + _private(blocks, sigmas, analytic_bound(eps, 1e-6))))


# ---------------------------------------------------------------- accuracy first


@pytest.fixture(scope="module")
def least():
    r = invoke("solve", SPECS / "blocks_joint_target.priv", "--json")
    assert r.exit_code == 0, r.output
    return strict(r.stdout)


def test_the_least_eps_against_bisection_over_separate_joint_programs(least):
    """Bisection on eps, each step a joint minimax program solved here: the targets (150, 100)
    are met at eps iff its value is at most 1."""
    assert least["method"] == "joint least eps" and least["status"] == "optimal" and least["verification"]["passed"]
    lo, hi = 1.0, 1.5
    assert minimax(lo, [150, 100]) > 1 >= minimax(hi, [150, 100])
    while hi - lo > 2e-7 * hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if minimax(mid, [150, 100]) <= 1 else (mid, hi)
    assert least["objective"] == pytest.approx(hi, rel=1e-6)
    bound, gap = least["optimality"]["lower_bound"], least["optimality"]["gap"]
    assert bound <= least["objective"] and gap <= 1e-6 and bound == pytest.approx(hi, rel=1e-6)
    b = least["blocks"]
    assert b["prefix"]["params"]["eps"] == b["pairs"]["params"]["eps"] == least["objective"]
    assert b["prefix"]["objective"] <= 150 and b["pairs"]["objective"] <= 100
    # both targets bind at the least eps (the minimax equalizes them)
    assert b["prefix"]["objective"] == pytest.approx(150, rel=1e-6)
    assert b["pairs"]["objective"] == pytest.approx(100, rel=1e-6)


def test_accuracy_first_verifies_and_tampering_fails(least, tmp_path):
    assert _verify(least, tmp_path).exit_code == 0
    bad = copy.deepcopy(least)
    bad["optimality"]["lower_bound"] *= 1.01  # a bound the dual point does not prove
    bad["optimality"]["gap"] = 0.0
    r = _verify(bad, tmp_path)
    assert r.exit_code == 1 and "re-derived from the joint program's recorded dual point" in r.output


# ---------------------------------------------------------------- a target on a member


@pytest.fixture(scope="module")
def member(composite_solved):
    return strict(composite_solved["blocks_joint_member"].json)  # solve SPEC --json, once per session (conftest)


def test_a_member_target_is_a_row_of_the_joint_program(member):
    """The joint program with tr(Sigma_prefix) <= 200 as a constraint, written here."""
    blocks = [PREFIX, PAIRS]
    sigmas = _sigmas(blocks)
    cost = sigmas[0][1] + 2 * sigmas[1][1]
    ref = _solve(
        cp.Problem(cp.Minimize(cost), [sigmas[0][1] <= 200] + _private(blocks, sigmas, analytic_bound(1, 1e-6)))
    )
    assert member["method"] == "joint targets" and member["status"] == "optimal"
    assert member["objective"] == pytest.approx(ref, rel=1e-6)
    assert member["blocks"]["prefix"]["objective"] <= 200
    # the target binds: the unconstrained joint optimum gives prefix 251.52 and costs less
    assert member["objective"] > reference([(PREFIX, 1.0), (PAIRS, 2.0)], analytic_bound(1, 1e-6), np.ones(4))
    assert member["optimality"]["lower_bound"] <= member["objective"] and member["optimality"]["gap"] <= 1e-6


def test_a_member_target_verifies_and_a_tampered_dual_point_fails(member, tmp_path):
    assert _verify(member, tmp_path).exit_code == 0
    bad = copy.deepcopy(member)
    bad["optimality"]["joint_dual"]["Y"][0] = [y + 1.0 for y in bad["optimality"]["joint_dual"]["Y"][0]]
    r = _verify(bad, tmp_path)
    assert r.exit_code == 1 and "re-derived from the joint program's recorded dual point" in r.output
    # weights below the objective's are a negative multiplier: nothing is proven
    bad = copy.deepcopy(member)
    bad["optimality"]["joint_dual"]["weights"]["prefix"] = 0.5
    assert _verify(bad, tmp_path).exit_code == 1
    bad = copy.deepcopy(member)
    del bad["optimality"]["joint_dual"]
    r = _verify(bad, tmp_path)
    assert r.exit_code == 1 and "records no dual point" in r.output


def test_a_member_target_no_noise_meets_is_infeasible(tmp_path):
    """prefix alone at (1, 1e-6) has error 123.522: no joint noise gives it 100."""
    path = _composite(
        tmp_path,
        "subject to dp(a, b) <= (1, 1e-6)\nsubject to a.objective <= 100\nminimize a.objective + b.objective\n",
    )
    r = privopt.solve(path)
    assert r.status == "infeasible" and r.objective is None and "infeasible" in r.reasons[0]


# ---------------------------------------------------------------- the joint program's dual point


def test_the_joint_program_records_its_dual_point_and_verify_re_derives_the_bound(tmp_path):
    r = invoke("solve", SPECS / "blocks_joint_gaussian.priv", "--json")
    data = strict(r.stdout)
    record = data["optimality"]["joint_dual"]
    assert set(record) == {"eps", "delta", "weights", "Y", "mu"} and record["weights"] == {"prefix": 1.0, "pairs": 2.0}
    checked = _verify(data, tmp_path)
    assert (
        checked.exit_code == 0
        and "lower bound re-derived from the joint program's recorded dual point" in checked.stdout
    )
    assert "not recorded" not in checked.stdout
    # (Y, mu) scaled together proves the same bound (the dual point is rescaled optimally); moved, less
    bad = copy.deepcopy(data)
    bad["optimality"]["joint_dual"]["Y"][0] = [y + 1.0 for y in record["Y"][0]]
    assert _verify(bad, tmp_path).exit_code == 1


def test_the_joint_bounds_are_re_derived_with_no_solver_importable(least, member, tmp_path):
    paths = []
    for name, data in (("least", least), ("member", member)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(data))
        paths.append(str(path))
    _run_blocked(paths)


# ---------------------------------------------------------------- a design choice


def test_the_choice_is_each_branch_its_own_joint_program(composite_solved):
    data = strict(composite_solved["blocks_joint_choice"].json)  # solve SPEC --json, once per session (conftest)
    bound = analytic_bound(1, 1e-6)
    pairs = reference([(PREFIX, 1.0), (PAIRS, 2.0)], bound, np.ones(4))
    halves = reference([(PREFIX, 1.0), (HALVES, 3.0)], bound, np.ones(4))
    branches = data["optimality"]["branches"]
    assert branches["pairs"]["objective"] == pytest.approx(pairs, rel=1e-6)
    assert branches["halves"]["objective"] == pytest.approx(halves, rel=1e-6)
    assert data["choice"] == ("halves" if halves < pairs else "pairs")
    assert data["objective"] == pytest.approx(min(pairs, halves), rel=1e-6)
    unchosen = "pairs" if data["choice"] == "halves" else "halves"
    assert data["blocks"][unchosen]["status"] == "not chosen"
    lower = min(b["lower_bound"] for b in branches.values())
    assert data["optimality"]["lower_bound"] == lower <= data["objective"] and data["status"] == "optimal"


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "choose t in [0, 4]\nsubject to dp(a, b) <= (t, 1e-6)\nsubject to a.objective <= 150\nminimize t\n",
            "block 'b' of the joint Gaussian group has no accuracy target",
        ),
        (
            "choose t in [0, 4]\nsubject to dp(a, b) <= (t, 1e-6)\nsubject to a.objective <= 150\n"
            "subject to b.objective <= 100\nminimize t + a.objective\n",
            "minimizes 't' alone",
        ),
        (
            "choose t in [0, 4]\nsubject to dp(a, b) <= (2 * t, 1e-6)\nsubject to a.objective <= 150\n"
            "subject to b.objective <= 100\nminimize t\n",
            "a chosen variable t of the composite alone",
        ),
        (
            "subject to dp(a, b) <= (a.objective, 1e-6)\nminimize a.objective + b.objective\n",
            "a chosen variable t of the composite alone",
        ),
    ],
)
def test_what_is_not_built_is_a_located_refusal(tmp_path, text, message):
    path = _composite(tmp_path, text)
    with pytest.raises(SpecError, match=message) as e:
        privopt.load(path).solve()
    assert e.value.span is not None


def _verify(result: dict, tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(result))
    return invoke("verify", path)
