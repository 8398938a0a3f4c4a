"""Planning by structure (issue 20, tranche 2): nothing outside result rendering branches on the
problem class. The program a spec is, the methods that apply, the reductions, the recognizers'
scope and the default backend are read from its structure: the objective's atom and curvature
(``objective.atom``, ``objective.curvature``), the sets of its constraints (``problem.sets``)
and what its canonical program needs (``planner.needs`` -> ``backends.pick``).
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

import privopt
from privopt import pipeline
from privopt.backends import pick
from privopt.builder.atoms import ATOMS
from privopt.classify import analyse
from privopt.core.plan import Chain, Reduction
from privopt.lower.reductions import BudgetRows, Dinkelbach, GaussianCalibration, QIDGroups, chain_needs
from privopt.methods.canonical import canonical_program
from privopt.model.problem import KINDS
from privopt.pipeline import planner
from tests.conftest import PROGRAM_SPECS

SPEC_FILES = PROGRAM_SPECS
PKG = Path(privopt.__file__).resolve().parent

# what classify and the default backend said for every spec before planning read structure:
# spec -> (problem class, chosen method, applicable methods in order, default (backend, solver))
TODAY = {
    "atr_alpha_fidelity": ("atr-max-confidence", "closed-form", ("lfp", "closed-form"), ("highs", None)),
    "atr_alpha_fidelity_male": ("atr-max-confidence", "closed-form", ("lfp", "closed-form"), ("highs", None)),
    "atr_census_table1": ("atr-max-confidence", "closed-form", ("lfp", "closed-form"), ("highs", None)),
    "atr_credit_records": ("atr-max-confidence", "closed-form", ("lfp", "closed-form"), ("highs", None)),
    "atr_min_uncertainty": ("atr-min-uncertainty", "closed-form", ("lfp", "closed-form"), ("highs", None)),
    "atr_table1_populations": ("atr-max-confidence", "closed-form", ("lfp", "closed-form"), ("highs", None)),
    "atr_table4": ("atr-max-confidence", "closed-form", ("lfp", "closed-form"), ("highs", None)),
    "atr_table4_male": ("atr-max-confidence", "closed-form", ("lfp", "closed-form"), ("highs", None)),
    "atr_three_outcomes": ("atr-max-confidence", "lfp", ("lfp",), ("highs", None)),
    "count_query_dp": ("mechanism-lp", "lp", ("lp",), ("highs", None)),
    "noise_placement": ("noise-placement", "conic", ("conic", "barrier"), ("cvxpy", "CLARABEL")),
    "noise_placement_classic": ("noise-placement", "conic", ("conic", "barrier"), ("cvxpy", "CLARABEL")),
    "noise_placement_correlated": ("noise-placement", "conic", ("conic",), ("cvxpy", "CLARABEL")),
    "obfuscation_bsc": ("rank-preserving-obfuscation", "global", ("global",), ("none", None)),
    "obfuscation_general": ("rank-preserving-obfuscation", "global", ("global",), ("none", None)),
    "obfuscation_symmetric": ("rank-preserving-obfuscation", "closed-form", ("closed-form", "global"), ("none", None)),
    "randomized_response": ("mechanism-lp", "closed-form", ("lp", "closed-form"), ("highs", None)),
    "sanitize_distance_table": ("sanitization-non-markov", "lp", ("lp",), ("highs", None)),
    "sanitize_distortion": ("sanitization-non-markov", "reduced-lp", ("lp", "reduced-lp"), ("highs", None)),
    "sanitize_ldp_budget": ("mechanism-lp", "lp", ("lp",), ("highs", None)),
    "sanitize_loglift_budget": ("mechanism-lp", "lp", ("lp",), ("highs", None)),
    "sanitize_markov_distortion": ("sanitization-markov", "lp", ("lp",), ("highs", None)),
    "sanitize_markov_lemma1": ("sanitization-markov", "closed-form", ("lp", "closed-form"), ("highs", None)),
    "sanitize_markov_tv": ("sanitization-markov", "lp", ("lp",), ("highs", None)),
    "sanitize_nonmarkov_tv": ("sanitization-non-markov", "closed-form", ("lp", "closed-form"), ("highs", None)),
    "sanitize_posterior_bound": ("mechanism-lp", "lp", ("lp",), ("highs", None)),
    "shaped_noise_means": ("mechanism-lp", "lp", ("lp",), ("highs", None)),
    "shaped_noise_soft_moments": ("mechanism-qp", "qp", ("qp",), ("cvxpy", "CLARABEL")),
    "shaped_noise_sweep": ("mechanism-lp", "lp", ("lp",), ("highs", None)),
}

# where the problem class may be named in a branch: rendering a result
RENDERING = {"sections.py", "results.py"}


@pytest.fixture(scope="module")
def problems():
    return {spec.stem: privopt.load(spec) for spec in SPEC_FILES}


def test_every_spec_is_recorded():
    assert set(TODAY) == {s.stem for s in SPEC_FILES}


@pytest.mark.parametrize("spec", [s.stem for s in SPEC_FILES])
def test_classify_by_structure_agrees_with_today(spec, problems):
    problem_class, chosen, applicable, _ = TODAY[spec]
    a = analyse(problems[spec])
    assert (a.problem_class, a.chosen, tuple(a.applicable)) == (problem_class, chosen, applicable)


@pytest.mark.parametrize("spec", [s.stem for s in SPEC_FILES])
def test_default_backend_is_pick_over_the_needs(spec, problems):
    """``default_backend`` is ``backends.pick`` over ``planner.needs`` (the program's canonical
    needs, read off its chain), "none" for a program no solver method applies to; it names
    today's choice for every spec."""
    problem = problems[spec]
    default = TODAY[spec][3]
    assert pipeline.default_backend(problem, None) == default
    needs = planner.needs(problem, analyse(problem))
    assert (needs is None) == (default == ("none", None))
    if needs is not None:
        assert pick(needs) == default


@pytest.mark.parametrize("spec", [s.stem for s in SPEC_FILES])
def test_a_chains_needs_are_its_canonical_programs(spec, problems):
    """What the planner reads off a chain's reductions is what the canonical program the chain
    ends in needs (``methods.canonical``), without building it."""
    problem = problems[spec]
    for method in analyse(problem).applicable:
        if method not in planner.SOLVER_METHODS:
            continue
        program = canonical_program(problem, method)
        needs = chain_needs(planner.chain(problem, method))
        assert needs == program.needs, (method, needs, program.needs)


@pytest.mark.parametrize("spec", [s.stem for s in SPEC_FILES])
def test_the_objective_names_its_atom_and_curvature(spec, problems):
    """The objective's curvature is its atom's (builder/atoms/) where the objective is one."""
    o = problems[spec].objective
    assert o.curvature in ("ratio", "affine", "convex", "nonconvex")
    if o.atom is not None:
        assert o.atom in ATOMS
        if o.curvature != "convex":  # squares added to an atom make it convex
            assert ATOMS[o.atom].curvature == o.curvature, (o.atom, o.curvature)


def test_the_kind_is_declared_not_inferred(problems):
    """``Problem.kind`` is a field each builder sets; an unknown word is refused."""
    assert {p.kind for p in problems.values()} == set(KINDS)
    assert "kind" in {f.name for f in dataclasses.fields(problems["atr_table4"])}
    with pytest.raises(ValueError, match="unknown block kind 'report'"):
        dataclasses.replace(problems["atr_table4"], kind="report")


def test_the_sets_a_program_holds(problems):
    assert problems["atr_table4"].sets == {"simplex rows", "fidelity"}
    assert {"budget", "simplex rows"} <= problems["count_query_dp"].sets
    assert "loglift" in problems["sanitize_loglift_budget"].sets
    assert problems["noise_placement"].sets == {"gaussian dp"}
    assert problems["obfuscation_symmetric"].sets == {"simplex rows", "leakage", "zero"}


def test_dinkelbach_is_a_reduction(problems):
    """The ratio program -> one block per QID group -> a sequence of LPs; both inverses are the
    identity on the (G, m, A) table."""
    atr, mech = problems["atr_three_outcomes"], problems["count_query_dp"]
    assert isinstance(Dinkelbach(), Reduction)
    chain = Chain((QIDGroups(), Dinkelbach()))
    assert chain.accepts(atr) and not chain.accepts(mech)
    inst, inverse = chain.apply(atr)
    assert inst.p.shape[0] == inst.n_groups and chain.invert("table", inverse) == "table"
    assert not Dinkelbach().accepts(atr)  # it takes the per-group blocks, not the spec's program
    assert planner.chain(atr, "lfp").reductions[1].name == "dinkelbach"


def test_the_reductions_read_structure(problems):
    cases = {
        "atr_table4": (True, False, False),
        "count_query_dp": (False, True, False),
        "shaped_noise_soft_moments": (False, True, False),
        "noise_placement": (False, False, True),
        "obfuscation_general": (False, False, False),
    }
    for spec, expected in cases.items():
        p = problems[spec]
        got = tuple(bool(r.accepts(p)) for r in (QIDGroups(), BudgetRows(), GaussianCalibration()))
        assert got == expected, spec
    assert BudgetRows(quadratic=True).needs == {"quadratic"} and not BudgetRows().needs
    assert GaussianCalibration().needs == {"soc"} and GaussianCalibration(True).needs == {"soc", "psd"}


# ------------------------------------------------------------------ no branch on the problem class


def _class_branches(tree: ast.AST) -> list[str]:
    """Comparisons (and match cases) against a block kind's name, ``.family``, and isinstance
    tests on an objective's class: the ways code picks a problem class."""
    objectives = {"Objective", "MechanismObjective", "NoiseObjective", "RankObjective"}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            if any(isinstance(c, ast.Constant) and c.value in KINDS for c in ast.walk(node)):
                found.append(ast.unparse(node))
        elif isinstance(node, ast.MatchValue) and isinstance(node.value, ast.Constant) and node.value.value in KINDS:
            found.append(f"case {node.value.value!r}")
        elif isinstance(node, ast.Attribute) and node.attr == "family":
            found.append(ast.unparse(node))
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance" and len(node.args) == 2:
            names = {getattr(n, "id", None) or getattr(n, "attr", None) for n in ast.walk(node.args[1])}
            if names & objectives:
                found.append(ast.unparse(node))
    return found


def test_nothing_outside_rendering_branches_on_the_problem_class():
    branches = {}
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG).as_posix()
        if rel in RENDERING:
            continue
        found = _class_branches(ast.parse(path.read_text()))
        if found:
            branches[rel] = found
    assert not branches, branches


def test_the_scan_sees_a_class_branch():
    tree = ast.parse(
        'if problem.kind == "noise": pass\n'
        "x = problem.family\n"
        "if isinstance(problem.objective, MechanismObjective): pass\n"
        'match k:\n    case "atr": pass\n'
    )
    assert len(_class_branches(tree)) == 4
