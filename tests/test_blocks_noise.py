"""The ``noise`` block kind (privopt/blocks/noise.py) and the conic method (privopt/methods/conic.py):
noise placement without a per-class pipeline module (issue 20, tranche 2), and its program
solved as the canonical program (``core.canonical``) with the certificate read off the
canonical solve's multipliers (issue 20, item 3)."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import privopt
from privopt import blocks, methods
from privopt.backends import get_backend
from privopt.classify import analyse
from privopt.core.canonical import ProgramBuilder, psd_layout
from privopt.core.plan import Outcome
from privopt.lower.noise import Block, ConicProgram, lower_noise
from privopt.methods import conic
from privopt.pipeline import planner
from privopt.verification.tolerances import CONIC_RTOL
from tests.conftest import SPECS

NOISE = ["noise_placement", "noise_placement_classic", "noise_placement_correlated"]


@pytest.fixture(scope="module")
def clarabel():
    return get_backend("cvxpy", "CLARABEL")


def test_noise_is_a_block_kind_run_by_the_conic_runner():
    problem = privopt.load(SPECS / "noise_placement.priv")
    kind = blocks.kind_of(problem)
    assert kind.name == "noise" and kind is importlib.import_module("privopt.blocks.noise").KIND
    assert methods.runner("conic") is conic.RUNNER and conic.RUNNER.name == "conic"
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("privopt.pipeline.noise")


@pytest.mark.parametrize("spec", NOISE)
def test_the_runner_returns_cleaned_verified_noise(spec, clarabel):
    """The runner applies the route's chain, solves until the certificate holds and returns the
    cleaned (co)variances in real units; the block kind then reports what the solve verified."""
    problem = privopt.load(SPECS / f"{spec}.priv")
    route = planner.route(problem, "conic", clarabel)
    out = conic.RUNNER.run(problem, None, route, None, None, None)
    assert isinstance(out, Outcome) and out.backend == "cvxpy:CLARABEL"
    program, verification = out.context["program"], out.context["verification"]
    assert verification["passed"] and verification["evidence"]["relative_gap"] <= CONIC_RTOL
    assert set(out.point) == {n.name for n in problem.noise.noises}
    again = program.clean(problem.noise, out.point)  # cleaning a clean point changes nothing
    assert all(again[name] == pytest.approx(S, rel=1e-12, abs=1e-12 * np.abs(S).max()) for name, S in out.point.items())
    kind = blocks.kind_of(problem)
    checked = kind.verify(problem, None, kind.clean(problem, None, out))
    assert checked is verification and set(checked["baselines"]) == {"input_only", "output_only"}
    cert = kind.certificate(problem, None, out, checked)
    assert cert.bound == verification["evidence"]["bound"] <= verification["objective"]


@pytest.mark.parametrize("spec", NOISE)
def test_the_canonical_solve_certifies_from_its_own_multipliers(spec, clarabel, monkeypatch):
    """The canonical program's row multipliers, mapped back (``CanonicalLayout.duals``), give a
    point of the Lagrange dual whose bound certifies the answer: the dual program is never
    solved; the loss is the conic path's within the verification tolerance, for the spec's noise
    and the answers-only baseline."""

    def refuse(self):
        raise AssertionError("the dual was solved although the canonical multipliers should suffice")

    model = privopt.load(SPECS / f"{spec}.priv").noise
    programs = [lower_noise(model, b) for b in (None, (Block("output_only", np.eye(model.F.shape[0]), False),))]
    references = [conic.solve_verified(model, program, clarabel)[2]["objective"] for program in programs]
    monkeypatch.setattr(ConicProgram, "dual_cvxpy", refuse)
    for program, reference in zip(programs, references):
        sol = conic.solve_canonical(program, clarabel)
        assert sol.ok and set(sol.values) == {b.name for b in program.blocks}
        assert np.all(sol.duals["budget"] >= -1e-9)  # mu = -d loss / d budget >= 0
        cov = program.clean(model, program.real(sol.values))
        check = conic.verify(model, cov, program, sol.objective, backend=clarabel, duals=sol.duals)
        assert check["passed"], check["failures"]
        assert check["objective"] == pytest.approx(reference, rel=CONIC_RTOL)


def test_the_layout_unpacks_a_covariance_from_its_svec():
    """A correlated block's covariance is its psd cone's columns, C[i, j] = x_k / scale_k."""
    model = privopt.load(SPECS / "noise_placement_correlated.priv").noise
    program = lower_noise(model)
    canonical, layout = program.lowered()
    x = np.zeros(canonical.shape[1])
    rng = np.random.default_rng(0)
    for b in program.blocks:
        if b.correlated:
            M = rng.normal(size=(b.size, b.size))
            C = M @ M.T
            i, j, scale = psd_layout(b.size)
            x[layout.columns[b.name]] = C[i, j] * scale
            assert layout.values(x)[b.name] == pytest.approx(C, rel=1e-14)
        else:
            x[layout.columns[b.name]] = np.arange(1, b.size + 1)
            assert layout.values(x)[b.name] == pytest.approx(program.balance[0] * np.arange(1, b.size + 1))


def test_the_layout_names_the_soc_forms_rows():
    """Equalities solved (diagonal noise reaching every input): budget and fixed rows; kept
    (correlated noise): budget and reach rows; the psd form: no multipliers to map."""
    for spec, name in (("noise_placement", "pull"), ("noise_placement_correlated", "reach")):
        program = lower_noise(privopt.load(SPECS / f"{spec}.priv").noise)
        canonical, layout = program.lowered("soc")
        n, m = program.F.shape[1], program.F.shape[0]
        row_dual = np.arange(canonical.shape[0], dtype=float)
        duals = layout.duals(row_dual)
        assert set(duals) == {"budget", name}
        assert duals["budget"].tolist() == (-np.arange(n)).tolist()  # mu = -row_dual; the budgets are the first rows
        assert duals[name].shape == ((n, m) if name == "reach" else (n, sum(b.size for b in program.blocks)))
        assert program.lowered("psd")[1].duals(row_dual) == {}


def test_check_runs_the_canonical_program_on_both_conic_solvers():
    problem = privopt.load(SPECS / "noise_placement.priv")
    routes = blocks.kind_of(problem).routes(problem, analyse(problem), 1e-7)
    canonical = [r for r in routes if r.method == "conic (canonical)"]
    assert [r.label for r in canonical] == ["cvxpy:CLARABEL", "cvxpy:SCS"]
    point, *_ = canonical[0].run(canonical[0].backend, None)
    measured = canonical[0].measure(point, canonical[0].accuracy)
    assert measured.violation == 0.0
    assert measured.objective == pytest.approx(problem.solve().objective, rel=CONIC_RTOL)


def test_generic_second_order_cones_of_several_sizes():
    """Second-order cones are passed to cvxpy one constraint per size: min t1 + t2 with
    (t1, 3, 4) and (t2, 1, 2, 2) in their cones is 5 + 3, and each cone holds its own columns."""
    b = ProgramBuilder()
    first = b.cones("soc", 1, 3, cost=[1.0, 0.0, 0.0])[0]
    second = b.cones("soc", 1, 4, cost=[1.0, 0.0, 0.0, 0.0])[0]
    fixed = np.array([3.0, 4.0, 1.0, 2.0, 2.0])
    rows = b.rows(5, fixed, fixed)
    b.terms(rows, np.concatenate([first[1:], second[1:]]), 1.0)
    sol = get_backend("cvxpy", "CLARABEL").solve(b.build())
    assert sol.ok and sol.objective == pytest.approx(8.0, rel=1e-8)
    assert sol.x[first[0]] == pytest.approx(5.0, rel=1e-8) and sol.x[second[0]] == pytest.approx(3.0, rel=1e-8)
