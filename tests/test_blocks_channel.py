"""The obfuscation channel as a block kind (issue 20, tranche 2): ``blocks/channel.py`` (what is
designed), ``methods/obfuscation.py`` (the global method's runner) and Corollary 2's ``answer``;
no per-class pipeline module is left."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import privopt
from privopt import blocks, methods, pipeline
from privopt.blocks import channel
from privopt.closedform.obfuscation import COROLLARY_2
from privopt.core.certificate import Certificate
from privopt.core.plan import Method, Outcome
from privopt.crosscheck import run_check
from privopt.lower.obfuscation import DEFAULT_TOL, optimal_channel
from tests.conftest import SPECS

ROOT = Path(__file__).resolve().parent.parent
KIND_ATTRS = ("name", "prepare", "clean", "verify", "certificate", "fields", "routes")


def test_the_per_class_pipeline_module_is_gone():
    assert not (ROOT / "privopt" / "pipeline" / "obfuscation.py").exists()
    assert not hasattr(pipeline, "FAMILIES") and not hasattr(pipeline, "CLASSES")


def test_the_kind_is_registered_with_its_interface():
    kind = blocks.kind("obfuscation")
    assert kind is channel.KIND and kind.name == "obfuscation"
    assert all(callable(getattr(kind, a)) for a in KIND_ATTRS if a != "name")
    problem = privopt.load(SPECS / "obfuscation_general.priv")
    assert blocks.kind_of(problem) is kind and kind.prepare(problem) is None


def test_the_global_runner_is_a_method_with_a_proven_bound():
    runner = methods.runner("global")
    assert isinstance(runner, Method) and runner.name == "global"
    problem = privopt.load(SPECS / "obfuscation_general.priv")
    out = runner.run(problem, None, None, None, None, None)
    assert isinstance(out, Outcome) and out.backend == "none"
    m = problem.obfuscation
    ref = optimal_channel(m.px1, m.F_given_X, m.eps, symmetric=False, tol=DEFAULT_TOL)
    assert out.claimed == ref.q_value and out.certificate.kind == "global-bound"
    assert out.certificate.bound <= out.claimed <= out.certificate.bound + DEFAULT_TOL


def test_corollary_2_answers_with_the_theorem_checked_by_the_bisection():
    problem = privopt.load(SPECS / "obfuscation_symmetric.priv")
    match = COROLLARY_2.accepts(problem)
    assert match
    out = COROLLARY_2.answer(problem, match, None, None, None)
    assert isinstance(out.certificate, Certificate) and out.certificate.kind == "theorem"
    ref, failures = out.context
    assert failures == [] and ref.status == "optimal" and ref.symmetric
    assert out.point.lower_bound <= out.claimed <= out.point.lower_bound + DEFAULT_TOL
    assert out.point.method.startswith("corollary-2")


@pytest.mark.parametrize("spec", ["obfuscation_bsc.priv", "obfuscation_general.priv", "obfuscation_symmetric.priv"])
def test_the_driver_runs_the_block_kind_and_verifies_the_channel(spec):
    problem = privopt.load(SPECS / spec)
    r = problem.solve()
    assert r.status == "optimal" and r.verification["passed"] and r.backend == "none"
    W = r.tables[problem.obfuscation.design]["value"].to_numpy().reshape(2, 2)
    again = channel.verify(problem.obfuscation, W, claimed=r.objective)
    assert again["passed"] and again["objective"] == pytest.approx(r.objective, abs=1e-12)
    assert r.certificate["kind"] in ("theorem", "global-bound")


def test_a_tampered_channel_fails_the_kinds_verification():
    problem = privopt.load(SPECS / "obfuscation_general.priv")
    out = methods.runner("global").run(problem, None, None, None, None, None)
    bad = np.array(out.point.W) + np.array([[-1e-6, 0.0], [0.0, 0.0]])
    tampered = replace(out, point=replace(out.point, W=bad))
    with pytest.raises(privopt.errors.VerificationError, match="row"):
        channel.KIND.verify(problem, None, tampered)


def test_check_takes_the_kinds_routes():
    problem = privopt.load(SPECS / "obfuscation_symmetric.priv")
    report = run_check(problem)
    assert [p.method for p in report.paths] == ["global", "closed-form", "grid"]
    assert all(p.status == "agrees" for p in report.paths)
