"""The barrier method for noise placement (privopt/methods/barrier.py, issue 23 item 3): it equals
the conic program where both apply, its bound never exceeds the conic optimum, a tampered dual
point is not certified, and the planner chooses it by size."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import privopt
from privopt.backends import get_backend
from privopt.classify import BARRIER_MIN_CONES, analyse, barrier_chosen
from privopt.errors import SolverError
from privopt.lower.noise import Block, ConicProgram, lower_noise
from privopt.methods import barrier, conic
from privopt.verification.tolerances import CONIC_RTOL
from tests.conftest import SPECS, examples, invoke
from tests.test_noise_placement import _spec


@pytest.fixture(scope="module")
def clarabel():
    return get_backend("cvxpy", "CLARABEL")


def _model(A, **kw):
    return privopt.loads(_spec(A, **kw)).noise


@settings(max_examples=examples(20, few=10), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.integers(1, 6),
    st.integers(1, 6),
    st.sampled_from(["analytic", "classic"]),
    st.sampled_from([0.3, 1.0, 3.0]),
    st.integers(0, 2**31 - 1),
)
def test_the_barrier_method_equals_the_conic_program(m, n, calibration, eps, seed):
    """On random instances (shapes, both calibrations, widths and eps): the same loss to 1e-6
    relative, both verified, and the barrier's proven bound below the conic optimum (and the
    conic bound below the barrier's loss: each certificate bounds the other's answer)."""
    if calibration == "classic":
        eps = min(eps, 0.9)  # the classic calibration is proven for eps < 1 only
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(m, n)).round(3)
    model = _model(A, lo=-1.0, hi=float(rng.uniform(0.5, 3.0)), eps=eps, calibration=calibration)
    program = lower_noise(model)
    be = get_backend("cvxpy", "CLARABEL")
    ref = conic.solve_verified(model, program, be)[2]
    cov, sol, check = barrier.solve_verified(model, program)
    assert check["passed"], check["failures"]
    assert ref["passed"], ref["failures"]
    assert check["objective"] == pytest.approx(ref["objective"], rel=1e-6)
    assert check["evidence"]["relative_gap"] <= CONIC_RTOL
    assert check["evidence"]["bound"] <= ref["objective"] * (1 + 1e-12)
    assert ref["evidence"]["bound"] <= check["objective"] * (1 + 1e-12)
    assert set(cov) == {b.name for b in program.blocks} and all(np.all(v >= 0) for v in cov.values())


def test_the_answers_only_program_too(clarabel):
    """G = I alone (the answers-only baseline's program): Sigma is diagonal."""
    A = np.random.default_rng(5).normal(size=(12, 7))
    model = _model(A)
    program = lower_noise(model, (Block("output_only", np.eye(12), False),))
    ref = conic.solve_verified(model, program, clarabel)[2]
    _, _, check = barrier.solve_verified(model, program)
    assert check["passed"] and check["objective"] == pytest.approx(ref["objective"], rel=1e-6)


def test_a_tampered_dual_point_fails_certification():
    """The certificate is the dual point's value: shrink mu's share of one input's budget and
    scale Y away from the centre, and the verification reports the bound short of the loss."""
    A = np.random.default_rng(2).normal(size=(8, 6))
    model = _model(A)
    program = lower_noise(model)
    cov, sol, check = barrier.solve_verified(model, program)
    assert check["passed"]
    mu = sol.mu.copy()
    mu[0] *= 0.5
    tampered = conic.verify(
        model, cov, program, sol.objective, bound=lambda enough: (program.dual_bound(sol.Y, mu), (sol.Y, mu))
    )
    assert not tampered["passed"]
    assert any("bound" in f for f in tampered["failures"]), tampered["failures"]
    assert tampered["evidence"]["relative_gap"] > CONIC_RTOL
    Y = sol.Y.copy()
    Y[:, 0] += 0.3 * np.abs(Y).max()
    tampered = conic.verify(
        model, cov, program, sol.objective, bound=lambda enough: (program.dual_bound(Y, sol.mu), (Y, sol.mu))
    )
    assert not tampered["passed"]


def test_an_untouched_dual_point_certifies_without_solving_the_dual(monkeypatch):
    """Nothing but the dual point the barrier carries makes the certificate: no conic solve."""

    def refuse(self):
        raise AssertionError("the dual was solved")

    monkeypatch.setattr(ConicProgram, "dual_cvxpy", refuse)
    A = np.random.default_rng(9).normal(size=(15, 10))
    r = privopt.loads(_spec(A)).solve(method="barrier")
    assert r.status == "optimal" and r.method == "barrier" and r.backend == "none"
    assert r.verification["passed"] and r.verification["evidence"]["relative_gap"] <= CONIC_RTOL
    assert r.certificate["bound"] <= r.objective
    assert r.stats["newton_steps"] > 0 and r.stats["form"] == "barrier"
    out = r.verification["baselines"]["output_only"]
    assert out["passed"] and out["evidence"]["relative_gap"] <= CONIC_RTOL


@pytest.mark.parametrize("spec", ["noise_placement", "noise_placement_classic"])
def test_the_specs_keep_their_answer_under_the_barrier(spec):
    problem = privopt.load(SPECS / f"{spec}.priv")
    reference = problem.solve()
    r = problem.solve(method="barrier")
    assert reference.method == "conic" and r.method == "barrier"
    assert r.objective == pytest.approx(reference.objective, rel=1e-6)
    for name in ("input_only", "output_only"):
        assert r.details["baselines"][name] == pytest.approx(reference.details["baselines"][name], rel=1e-6)


def test_the_planner_chooses_by_size_and_explain_says_why():
    small = analyse(privopt.loads(_spec(np.ones((4, 3)))))
    assert small.chosen == "conic" and "barrier" in small.applicable
    assert f"below the {BARRIER_MIN_CONES:,}" in small.why
    n, m = 30, 60  # 30 x 90 = 2,700 rotated cones
    assert barrier_chosen(n, n + m) and not barrier_chosen(3, 7)
    large = analyse(privopt.loads(_spec(np.random.default_rng(1).normal(size=(m, n)))))
    assert large.chosen == "barrier" and "2,700 rotated cones" in large.why
    plan = privopt.loads(_spec(np.random.default_rng(1).normal(size=(m, n)))).explain().plan
    assert [s.name for s in plan.steps] == ["gaussian-calibration", "barrier"]
    assert plan.canonical["constraints"]["convex"] == n and plan.canonical["variables"] == n + m


def test_where_the_barrier_method_does_not_apply():
    correlated = analyse(privopt.load(SPECS / "noise_placement_correlated.priv"))
    assert "diagonal noise only" in correlated.not_applicable["barrier"]
    text = _spec(np.ones((3, 2))).replace("noise xi : gaussian[3]\n", "").replace(" + xi", "")
    inputs_only = analyse(privopt.loads(text))
    assert "no noise enters every answer by itself" in inputs_only.not_applicable["barrier"]
    assert inputs_only.chosen == "conic"


def test_the_time_limit_stops_it():
    A = np.random.default_rng(4).normal(size=(20, 20))
    model = _model(A)
    with pytest.raises(SolverError, match="time limit"):
        barrier.solve_barrier(lower_noise(model), time_limit=0.0)


def test_check_compares_it_with_the_conic_program():
    """``privopt check`` runs the barrier method beside the conic forms; all agree. For
    correlated noise the barrier route is listed as skipped, with the reason."""
    from privopt.crosscheck import run_check

    report = run_check(privopt.load(SPECS / "noise_placement.priv"))
    paths = {p.method: p for p in report.paths}
    assert report.agree and paths["barrier"].status == "agrees" and paths["barrier"].backend is None
    skipped = {p.method: p for p in run_check(privopt.load(SPECS / "noise_placement_correlated.priv")).paths}
    assert skipped["barrier"].status == "skipped" and "diagonal noise only" in skipped["barrier"].message


def test_no_input_moves_the_release():
    """A zero column of A: that input needs no noise; all zero: no noise at all, loss 0."""
    r = privopt.loads(_spec(np.zeros((3, 2)))).solve(method="barrier")
    assert r.status == "optimal" and r.objective == 0.0
    A = np.array([[1.0, 0.0], [2.0, 0.0], [0.5, 0.0]])
    r, ref = (privopt.loads(_spec(A)).solve(method=m) for m in ("barrier", "conic"))
    assert r.objective == pytest.approx(ref.objective, rel=1e-6)


def test_an_automatic_barrier_solve_imports_no_solver_and_names_none(tmp_path):
    """The barrier method is numpy and LAPACK: chosen automatically, it runs (with both
    baselines) without importing cvxpy, and the text says so instead of 'on none'."""
    import subprocess
    import sys

    spec = tmp_path / "large.priv"
    spec.write_text(_spec(np.random.default_rng(1).normal(size=(60, 30)).round(3)))
    code = (
        "import sys, privopt\n"
        f"r = privopt.load({str(spec)!r}).solve()\n"
        "assert r.method == 'barrier' and r.status == 'optimal', (r.method, r.status)\n"
        "print(sorted(m for m in ('cvxpy', 'clarabel', 'pyomo') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
    res = invoke("solve", spec)
    assert res.exit_code == 0, res.output
    assert "method: barrier (Newton's method on the log barrier" in res.output and "on none" not in res.output


def test_the_barrier_path_computes_no_null_space(monkeypatch):
    """G's null space serves the conic program's solved equalities only: the barrier route
    (lowering, solve, baselines, verification) never computes it; the balance's least-norm
    solve is shared with the conic path (one SVD solve, the same numbers)."""
    import scipy.linalg

    def refuse(*args, **kw):
        raise AssertionError("a null space was computed")

    A = np.random.default_rng(3).normal(size=(40, 20))
    reference = privopt.loads(_spec(A)).solve(method="conic")
    monkeypatch.setattr(scipy.linalg, "null_space", refuse)
    r = privopt.loads(_spec(A)).solve(method="barrier")
    assert r.status == "optimal" and r.objective == pytest.approx(reference.objective, rel=1e-6)
    program = lower_noise(privopt.loads(_spec(A)).noise)
    assert program.balance[0] == float(np.max(np.sum(program.least_norm**2, axis=0) / program.t))


@pytest.mark.parametrize("load, threads", [(0.0, 2), (0.4, 2), (0.6, 1), (1.7, 1), (16.0, 1)])
def test_blas_threads_are_the_idle_cores(monkeypatch, load, threads):
    """Two cores: both when the machine is idle, one from a load of about one core up (on a
    loaded machine OpenBLAS's threads wait on each other)."""
    import os

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    assert barrier.blas_threads() == threads


@pytest.mark.slow
def test_a_constraint_pushed_to_its_boundary_recovers_in_few_steps():
    """The answers-only program of a 600 x 600 Gaussian release (benchmarks/bench_noise_placement
    at n = m = 600): a centring drives one input's slack to 1e-9, where primal Newton steps
    only doubled it per step (175 steps in all); the primal-dual steps (``_centre``) take 69.
    The bound stays within the method's own gap."""
    A = np.random.default_rng(0).normal(size=(600, 600))
    program = ConicProgram(A, np.ones(600), (Block("output_only", np.eye(600), False),), 1.0, 0.0, 1.0)
    sol = barrier.solve_barrier(program)
    assert sol.iterations <= 100, sol.iterations
    assert sol.objective - sol.bound <= barrier.BARRIER_RTOL * sol.objective
