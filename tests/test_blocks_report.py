"""The block kind "atr" (``privopt.blocks.report.KIND``): its contract with the driver
(``pipeline.driver.run_block``), the closed form's ``answer`` and the LFP method's runner."""

import numpy as np
import pytest

import privopt
from privopt import blocks, methods
from privopt.backends import get_backend
from privopt.blocks import report
from privopt.blocks.common import GAP_TOL
from privopt.closedform.atr import THEOREM_1
from privopt.core.certificate import Certificate
from privopt.core.plan import Method, Outcome
from privopt.errors import VerificationError
from privopt.lower.atr import ATRInstance
from privopt.pipeline import driver, planner
from tests.conftest import SPECS

KIND = report.KIND


def _problem(name="atr_table4.priv"):
    return privopt.load(SPECS / name)


def test_the_kind_is_registered_under_its_name_with_every_stage():
    assert blocks.kind("atr") is KIND and KIND.name == "atr"
    assert blocks.kind_of(_problem()) is KIND
    for stage in ("prepare", "clean", "verify", "certificate", "fields", "routes"):
        assert callable(getattr(KIND, stage)), stage


def test_theorem_1_answers_in_the_kinds_form_and_the_kind_finishes_it():
    problem = _problem()
    inst = KIND.prepare(problem)
    assert isinstance(inst, ATRInstance)
    match = THEOREM_1.accepts(problem)
    outcome = THEOREM_1.answer(problem, match, inst, None, None)
    assert isinstance(outcome, Outcome) and outcome.backend is None
    table, beta_g, case = outcome.point
    assert table.shape == inst.lower.shape and beta_g.shape == (inst.n_groups,) and case.shape == beta_g.shape
    assert outcome.certificate.kind == "theorem" and sum(outcome.stats["binding_case_groups"].values()) > 0
    outcome = KIND.clean(problem, inst, outcome)
    verification = KIND.verify(problem, inst, outcome)
    assert verification["passed"] and verification["evidence"]["kind"] == "closed-form lower bound"
    assert KIND.certificate(problem, inst, outcome, verification) is outcome.certificate
    fields = KIND.fields(problem, inst, outcome, verification)
    assert set(fields) >= {"objective", "beta", "groups", "tables", "details"}
    assert fields["beta"] == pytest.approx(problem.solve().beta, rel=1e-12)
    assert {"beta", "beta_min", "c_star", "case"} <= set(fields["groups"].columns)


def test_the_lfp_runner_is_methods_lfp_and_certifies_by_brackets():
    problem = _problem()
    runner = methods.runner("lfp")
    assert isinstance(runner, Method) and runner.name == "lfp"
    route = planner.route(problem, "lfp", get_backend("highs"))
    outcome = runner.run(problem, KIND.prepare(problem), route, None, 1, None)
    assert isinstance(outcome.certificate, Certificate) and outcome.certificate.kind == "lfp-brackets"
    assert outcome.certificate.gap <= GAP_TOL
    assert outcome.point[2] is None and outcome.backend == "highs"


def test_a_table_off_its_rows_fails_verification():
    problem = _problem()
    inst = KIND.prepare(problem)
    outcome = THEOREM_1.answer(problem, THEOREM_1.accepts(problem), inst, None, None)
    table, beta_g, case = outcome.point
    outcome.point = (table * 0.5, beta_g, case)  # rows sum to 1/2: not a report
    with pytest.raises(VerificationError, match="failed privopt's verification"):
        KIND.verify(problem, inst, outcome)


@pytest.mark.parametrize("method", ["closed-form", "lfp"])
def test_the_driver_runs_the_kind_without_a_class_object(method):
    """``driver.run`` takes the block path for "atr": no class object is needed."""
    problem = _problem()
    analysis, route = privopt.pipeline.resolve(problem, method)
    result = driver.run(problem, analysis, route, None, workers=1)
    assert result.status == "optimal" and result.objective == pytest.approx(0.675, abs=1e-9)
    assert result.certificate["kind"] == ("theorem" if method == "closed-form" else "lfp-brackets")


def test_the_routes_of_privopt_check_come_from_the_kind():
    problem = _problem()
    routes = KIND.routes(problem, problem.explain(), 1e-7)
    assert [r.method for r in routes][:2] == ["closed-form", "lfp"]
    assert {"dqcp", "bisection"} <= {r.method for r in routes}
    point, *_ = routes[0].run(routes[0].backend, None)
    assert np.isfinite(routes[0].measure(point, routes[0].accuracy).objective)
