"""The canonical program (core/canonical.py): the program each method solves for every spec
(methods/canonical.py) and its census; the noise program's canonical form, solved generically,
against the conic path it mirrors; the default backend by a program's needs."""

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from privopt.api import load
from privopt.backends import get_backend, pick
from privopt.classify import analyse
from privopt.core.canonical import CanonicalProgram, Cone, ProgramBuilder, psd_layout
from privopt.errors import UsageError
from privopt.lower.noise import lower_noise
from privopt.methods.canonical import canonical_program

SPECS = sorted((Path(__file__).parent.parent / "specs").glob("*.priv"))
SPECS = [s for s in SPECS if not s.name.startswith("blocks_")]  # composites: tests/test_composite_specs.py
NOISE = [s for s in SPECS if s.name.startswith("noise_placement")]
QPS = {"shaped_noise_soft_moments.priv"}


@pytest.fixture(scope="module")
def problems():
    return {spec.name: load(spec) for spec in SPECS}


def _programs(problem):
    """(method, canonical program) for every method that applies and solves one."""
    out = []
    for method in analyse(problem).applicable:
        program = canonical_program(problem, method)
        if program is not None:
            out.append((method, program))
    return out


@pytest.mark.parametrize("spec", [s.name for s in SPECS])
def test_census_of_every_spec(spec, problems):
    """LPs show only zero and nonnegative sets and a linear objective; the shaped-noise QP a
    quadratic objective; noise placement second-order cones. No spec has integers yet."""
    problem = problems[spec]
    programs = _programs(problem)
    if problem.kind == "obfuscation":  # Corollary 2 and the global method solve no canonical program
        assert programs == []
        return
    assert programs, f"{spec}: no method solves a canonical program"
    for method, program in programs:
        census = program.census()
        cons = census["constraints"]
        assert census["variables"] == program.shape[1] > 0 and census["integers"] == 0, (spec, method)
        assert set(cons) == {"zero", "nonnegative", "soc", "psd"}
        if problem.kind == "noise":
            assert cons["soc"] > 0 and census["objective"] == "linear", (spec, method, census)
        else:
            assert cons["soc"] == cons["psd"] == 0 and cons["zero"] + cons["nonnegative"] > 0, (spec, method, census)
            assert census["objective"] == ("quadratic" if spec in QPS else "linear"), (spec, method, census)


@pytest.mark.parametrize("spec", [s.name for s in SPECS])
def test_pick_agrees_with_the_pipelines_default(spec, problems):
    """backends.pick over a program's needs names today's pipeline.default_backend choice."""
    from privopt.pipeline import default_backend

    problem = problems[spec]
    for method, program in _programs(problem):
        assert pick(program.needs) == default_backend(problem, None), (spec, method)
        assert pick(program.needs, "SCS")[1] == default_backend(problem, "SCS")[1], (spec, method)


@pytest.mark.parametrize("spec", [s.name for s in NOISE])
def test_noise_psd_form_census(spec, problems):
    program = lower_noise(problems[spec].noise).canonical("psd")
    census = program.census()
    assert census["constraints"]["psd"] > 0 and census["constraints"]["soc"] == 0


@pytest.mark.parametrize("form", ["soc", "psd"])
@pytest.mark.parametrize("spec", [s.name for s in NOISE])
def test_noise_canonical_solve_matches_the_conic_path(spec, form, problems):
    """The canonical program solved generically (cvxpy: x, rows, cp.SOC on slices, PSD through
    a symmetric variable) has the optimum of ``to_cvxpy(form)`` solved by the conic path, for
    the spec's noise and both one-sided baselines. Each is solved at the pipeline's first
    tolerance, or its looser ones where the solver calls that one inaccurate (as
    methods/conic.py does: Clarabel stalls at 1e-9 on the classic spec's psd baseline)."""
    from privopt.lower.noise import Block
    from privopt.methods.conic import CONIC_LOOSER, CONIC_TOLS

    def first_ok(solve):
        for tol in (CONIC_TOLS[0],) + CONIC_LOOSER:
            if (sol := solve(tol)).ok:
                return sol
        return sol

    model = problems[spec].noise
    m = model.F.shape[0]
    be = get_backend("cvxpy", "CLARABEL")
    for blocks in (None, (Block("input_only", model.F, False),), (Block("output_only", np.eye(m), False),)):
        program = lower_noise(model, blocks)
        reference = first_ok(lambda tol, program=program: be.solve_conic(program, form=form, tol=tol))
        canonical = program.canonical(form)
        assert canonical.needs == frozenset({form} | ({"psd"} if any(b.correlated for b in program.blocks) else set()))
        sol = first_ok(lambda tol, canonical=canonical: be.solve(canonical, tol=tol))
        assert reference.ok and sol.ok, (reference, sol)
        assert sol.objective == pytest.approx(reference.objective, rel=1e-7)
        assert canonical.offset == 0.0  # scaled units, as to_cvxpy: the loss is offset + unit * optimum


def test_noise_canonical_refused_where_no_cones():
    """A backend without cones refuses the canonical noise program, naming who takes it."""
    problem = load(NOISE[0])
    sol = get_backend("highs").solve(lower_noise(problem.noise).canonical())
    assert sol.termination == "unsupported"
    assert "this program has second-order cones; backends that take it: cvxpy:CLARABEL, cvxpy:SCS" in sol.message


def test_psd_layout_packs_with_the_trace_inner_product():
    rng = np.random.default_rng(1)
    n = 4
    X, Y = (M + M.T for M in rng.normal(size=(2, n, n)))
    i, j, scale = psd_layout(n)
    assert i.size == n * (n + 1) // 2 and np.all(i >= j)
    assert list(zip(i[:n], j[:n])) == [(k, 0) for k in range(n)]  # by column
    x, y = scale * X[i, j], scale * Y[i, j]
    assert x @ y == pytest.approx(np.trace(X @ Y))
    assert Cone("psd", 0, i.size).order == n


def test_generic_psd_cone():
    """min tr(M X) s.t. tr(X) = 1, X PSD: the smallest eigenvalue of M."""
    M = np.array([[2.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 4.0]])
    i, j, scale = psd_layout(3)
    b = ProgramBuilder()
    x = b.cones("psd", 1, i.size, cost=M[i, j] * scale)[0]
    row = b.rows(1, 1.0, 1.0)
    b.terms(row, x[i == j], 1.0)
    program = b.build()
    assert program.needs == frozenset({"psd"})
    assert program.census()["constraints"] == {"zero": 1, "nonnegative": 0, "soc": 0, "psd": 1}
    sol = get_backend("cvxpy", "CLARABEL").solve(program)
    assert sol.ok and sol.objective == pytest.approx(np.linalg.eigvalsh(M)[0], abs=1e-7)


def test_generic_soc_with_rows_and_duals():
    """min t s.t. (t, u) in a second-order cone, u1 + u2 = 2: t = sqrt 2 at u = (1, 1)."""
    program = CanonicalProgram(
        np.array([1.0, 0, 0]),
        sp.csc_matrix([[0.0, 1, 1]]),
        np.array([2.0]),
        np.array([2.0]),
        np.full(3, -np.inf),
        np.full(3, np.inf),
        cones=(Cone("soc", 0, 3),),
    )
    sol = get_backend("cvxpy", "CLARABEL").solve(program)
    assert sol.ok and sol.objective == pytest.approx(np.sqrt(2), abs=1e-7)
    np.testing.assert_allclose(sol.x, [np.sqrt(2), 1, 1], atol=1e-7)
    assert sol.row_dual[0] == pytest.approx(1 / np.sqrt(2), abs=1e-6)  # d objective / d (u1 + u2)


def test_reduced_lp_is_props_transport_lp(problems):
    """The reduced-lp program is the transport LP Prop. 2 solves: the same optimum."""
    from privopt.closedform import sanitization as cf

    problem = problems["sanitize_distortion.priv"]
    program = canonical_program(problem, "reduced-lp")
    san, _ = cf.match(problem)
    _, sol = cf.prop2(san.p, san.q, san.ps, problem.objective.distance, get_backend("highs"))
    assert get_backend("highs").solve(program).objective == pytest.approx(sol.objective, abs=1e-12)


def test_lfp_program_is_one_step_over_the_groups(problems):
    """The lfp program: one t column per group of positive mass, minimizing their sum."""
    from privopt.lower.atr import lower_atr

    problem = problems["atr_three_outcomes.priv"]
    inst = lower_atr(problem)
    program = canonical_program(problem, "lfp")
    groups = int(np.count_nonzero(inst.p.sum(axis=1) > 0))
    assert np.count_nonzero(program.c) == groups and np.all(program.c[-groups:] == 1)
    sol = get_backend("highs").solve(program)
    assert sol.ok


def test_pairwise_and_method_errors(problems):
    from privopt.lower.mechanism import lower_mechanism

    problem = problems["sanitize_ldp_budget.priv"]
    assert canonical_program(problem, "lp", pairwise=True).shape == lower_mechanism(problem, pairwise=True).lp.shape
    assert canonical_program(problem, "closed-form") is None and canonical_program(problem, "global") is None
    with pytest.raises(UsageError, match="unknown method 'simplex'"):
        canonical_program(problem, "simplex")
    with pytest.raises(UsageError, match="method 'conic' solves noise problems, not mechanism ones"):
        canonical_program(problem, "conic")
