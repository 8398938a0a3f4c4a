"""The plan of a solve, the recognizers, the one driver and the certificates (issue 20, items 4,
5 and 7).

``privopt explain SPEC --json`` prints ``{"class", "plan", "canonical"}`` for every spec: one
recognizer, or one chain of reductions ending in a method and a backend; the canonical
program's census, null exactly when a recognizer answers. Every solve records a certificate
in one shape (``core.certificate.Certificate``), as the JSON key "certificate".
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import privopt
from privopt import pipeline
from privopt.classify import analyse
from privopt.cli import main
from privopt.closedform.registry import RECOGNIZERS, by_name, recognize
from privopt.core.certificate import CERTIFICATE_KINDS
from privopt.core.plan import STEP_KINDS, Chain, Recognizer, Reduction
from privopt.lower.reductions import BudgetRows, GaussianCalibration, QIDGroups
from tests.conftest import PROGRAM_SPECS, SPECS

# composites (specs/blocks_*.priv) have no single problem class: tests/test_composite_specs.py
SPEC_FILES = PROGRAM_SPECS
PKG = Path(privopt.__file__).resolve().parent


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def explain_json(*args) -> dict:
    r = invoke("explain", *args, "--json")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)  # strict JSON, alone on stdout


# ------------------------------------------------------------------ explain --json, every spec


@pytest.mark.parametrize("spec", SPEC_FILES, ids=lambda p: p.stem)
def test_explain_json_every_spec(spec):
    data = explain_json(spec)
    assert list(data) == ["class", "plan", "canonical"]
    problem = privopt.load(spec)
    assert data["class"] == analyse(problem).problem_class
    steps = data["plan"]
    assert steps and all(set(s) == {"step", "kind", "why"} and s["kind"] in STEP_KINDS and s["why"] for s in steps)
    kinds = [s["kind"] for s in steps]
    if kinds[0] == "recognizer":
        # one recognizer; Prop. 2's transport LP adds the backend it runs on
        assert kinds in (["recognizer"], ["recognizer", "backend"])
        assert steps[0]["step"] in {r.name for r in RECOGNIZERS}
        assert data["canonical"] is None
    else:
        assert "recognizer" not in kinds
        assert kinds[-1] in ("backend", "method")
        assert kinds.count("method") == 1 and kinds.index("method") >= len(kinds) - 2
        assert all(k == "reduction" for k in kinds[: kinds.index("method")])
        census = data["canonical"]
        assert census is not None and census["variables"] > 0
        cons = census["constraints"]
        if problem.design is not None and problem.objective.curvature in ("affine", "convex"):
            # LPs only zero/nonnegative sets, QPs a quadratic objective
            assert cons["soc"] == cons["psd"] == 0
            assert census["objective"] == ("quadratic" if problem.objective.curvature == "convex" else "linear")
        if "gaussian dp" in problem.sets:
            assert cons["soc"] + cons["psd"] > 0
    # the plan is the one solve runs: its method is the one the Result reports
    method = next((s["step"] for s in steps if s["kind"] == "method"), None)
    if method is None:
        method = by_name(steps[0]["step"]).method
    assert method == analyse(problem).chosen


def test_explain_json_honours_method_and_backend():
    spec = SPECS / "sanitize_nonmarkov_tv.priv"  # Prop. 1 answers by default
    assert [s["kind"] for s in explain_json(spec)["plan"]] == ["recognizer"]
    data = explain_json(spec, "--method", "lp", "--backend", "scipy")
    assert [(s["step"], s["kind"]) for s in data["plan"]] == [
        ("budget-rows", "reduction"),
        ("lp", "method"),
        ("scipy", "backend"),
    ]
    assert data["canonical"]["objective"] == "linear"
    data = explain_json(SPECS / "atr_table4.priv", "--method", "lfp")
    assert [s["step"] for s in data["plan"]] == ["qid-groups", "dinkelbach", "lfp", "highs"]
    assert [s["kind"] for s in data["plan"][:2]] == ["reduction", "reduction"]
    assert data["canonical"] is not None
    data = explain_json(SPECS / "obfuscation_symmetric.priv", "--method", "global")
    assert [s["kind"] for s in data["plan"]] == ["method"] and data["canonical"]["objective"] == "quasiconcave"


def test_explain_json_refuses_a_method_that_does_not_apply():
    r = invoke("explain", SPECS / "sanitize_nonmarkov_tv.priv", "--method", "qp", "--json")
    assert r.exit_code == 2 and r.stdout == ""
    assert "method 'qp' does not apply" in r.output


def test_text_explain_shows_the_same_plan():
    spec = SPECS / "count_query_dp.priv"
    r = invoke("explain", spec)
    assert r.exit_code == 0
    assert "method:  lp" in r.stdout  # today's lines stay
    lines = r.stdout.split("plan:\n", 1)[1].splitlines()
    plan = privopt.load(spec).explain().plan
    assert [line.strip() for line in lines] == [line.strip() for line in plan.text_lines()]
    assert "1. reduction" in lines[0] and "budget-rows" in lines[0]


def test_problem_explain_and_plan_return_the_plan():
    problem = privopt.load(SPECS / "atr_three_outcomes.priv")
    e = problem.explain()
    assert e.chosen == "lfp"  # still the analysis
    assert e.plan == pipeline.plan(problem) == problem.plan()
    assert [s.name for s in e.plan.steps] == ["qid-groups", "dinkelbach", "lfp", "highs"]
    assert problem.plan(backend="scipy").steps[-1].name == "scipy"


# ------------------------------------------------------------------ recognizers


def test_recognizers_follow_the_protocol():
    assert [r.name for r in RECOGNIZERS] == [
        "theorem-1",
        "randomized-response",
        "lemma-1",
        "prop-1",
        "prop-2",
        "corollary-2",
    ]
    for r in RECOGNIZERS:
        assert isinstance(r, Recognizer)
        assert r.method in ("closed-form", "reduced-lp") and r.cites


@pytest.mark.parametrize("spec", SPEC_FILES, ids=lambda p: p.stem)
def test_classify_reasons_come_from_the_recognizers(spec):
    """Where a recognizer is about the problem, the analysis says exactly what it says."""
    problem = privopt.load(spec)
    a = analyse(problem)
    for method in ("closed-form", "reduced-lp"):
        rec, match = recognize(problem, method)
        if rec is not None:
            assert a.applicable[method] == match.why
            assert rec.accepts(problem)
        elif match is not None:
            assert not match and a.not_applicable[method] == match.why


def test_recognizer_refuses_with_the_reason():
    rec = by_name("theorem-1")
    m = rec.accepts(privopt.load(SPECS / "atr_three_outcomes.priv"))
    assert not m and m.why == "Theorem 1 covers two outcomes; decision has 3"
    cor2 = by_name("corollary-2")
    assert not cor2.accepts(privopt.load(SPECS / "obfuscation_general.priv"))
    assert cor2.accepts(privopt.load(SPECS / "obfuscation_symmetric.priv"))


# ------------------------------------------------------------------ reductions


def test_reductions_apply_and_invert():
    mech = privopt.load(SPECS / "count_query_dp.priv")
    for r in (QIDGroups(), BudgetRows(), GaussianCalibration()):
        assert isinstance(r, Reduction)
    chain = Chain((BudgetRows(),))
    assert chain.accepts(mech)
    assert not Chain((QIDGroups(),)).accepts(mech)
    mlp, inverse = chain.apply(mech)
    x = np.arange(mlp.lp.shape[1], dtype=float)
    assert np.array_equal(chain.invert(x, inverse), x[: mech.design_size])
    noise = privopt.load(SPECS / "noise_placement.priv")
    program, inv = GaussianCalibration().apply(noise)
    values = {b.name: np.ones(b.size) for b in program.blocks}
    back = GaussianCalibration().invert(values, inv)
    assert all(np.array_equal(back[k], values[k] * program.unit) for k in values)


def test_pairwise_rows_per_backend():
    """budget -> rows: the envelope form, or every pair its own row for a backend that stalls
    on envelopes; the census counts what the backend would get."""
    problem = privopt.load(SPECS / "sanitize_ldp_budget.priv")
    envelope = pipeline.plan(problem, "lp", "highs").canonical
    from privopt.methods.canonical import canonical_program

    pairwise = canonical_program(problem, "lp", pairwise=True).census()
    assert envelope == canonical_program(problem, "lp").census()
    assert pairwise["constraints"]["nonnegative"] != envelope["constraints"]["nonnegative"]


# ------------------------------------------------------------------ certificates and the one Result


@pytest.mark.parametrize(
    "spec, kind",
    [
        ("atr_table4", "theorem"),
        ("atr_three_outcomes", "lfp-brackets"),
        ("count_query_dp", "dual-bound"),
        ("sanitize_markov_lemma1", "theorem"),
        ("sanitize_distortion", "theorem"),
        ("noise_placement", "dual-bound"),
        ("obfuscation_general", "global-bound"),
        ("obfuscation_symmetric", "theorem"),
    ],
)
def test_every_route_records_its_certificate(spec, kind):
    result = privopt.load(SPECS / f"{spec}.priv").solve()
    cert = result.to_dict(tables=False)["certificate"]
    assert cert["kind"] == kind and cert["kind"] in CERTIFICATE_KINDS and cert["claim"]
    keys = list(json.loads(result.to_json(tables=False)))
    assert keys[keys.index("verification") + 1] == "certificate"
    if kind in ("dual-bound", "global-bound", "lfp-brackets"):
        assert cert["side"] == "lower" and cert["gap"] is not None
        bound, value = cert["bound"], result.objective if kind != "lfp-brackets" else result.beta
        assert bound <= value * (1 + 1e-6) + 1e-9  # a lower bound
    if kind == "theorem":
        assert cert["data"]["theorem"]
    if kind == "lfp-brackets":
        data = cert["data"]
        assert len(data["lower"]) == len(data["upper"]) == data["groups"] == len(result.groups)
        assert cert["gap"] == max((u - lo) / u for lo, u in zip(data["lower"], data["upper"]))


def test_an_infeasible_result_has_no_certificate():
    text = (SPECS / "atr_table4.priv").read_text()
    problem = privopt.loads(text + "\nsubject to Dt >= 0.99\n", path=SPECS / "atr_table4.priv")
    result = problem.solve()
    assert result.status == "infeasible" and result.certificate is None


def test_result_is_built_in_one_function():
    """``Result(...)`` is called in pipeline/driver.py only (the dask engine calls it too)."""
    calls = []
    for path in PKG.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Result":
                calls.append(path.relative_to(PKG).as_posix())
    assert calls == ["pipeline/driver.py"]


def test_the_driver_knows_no_problem_class():
    """No ``problem.family`` and no method name in the driver's code: it reaches a block kind
    only through ``blocks.kind_of``, and a
    route only through what the plan chose."""
    tree = ast.parse((PKG / "pipeline" / "driver.py").read_text())
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "family"]
    methods = {"closed-form", "lfp", "reduced-lp", "lp", "qp", "conic", "global"}
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value in methods]
