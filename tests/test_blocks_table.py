"""The block kind "mechanism" (``privopt.blocks.table.KIND``): its contract with the driver
(``pipeline.driver.run_block``), the closed forms' ``answer`` and the LP/QP method's runner."""

import numpy as np
import pytest

import privopt
from privopt import blocks, methods
from privopt.backends import get_backend
from privopt.blocks import table
from privopt.closedform.sanitization import LEMMA_1, PROP_1, PROP_2
from privopt.core.plan import Method, Outcome
from privopt.errors import VerificationError
from privopt.pipeline import driver, planner
from privopt.verification.problems import budget_verdict
from tests.conftest import SPECS

KIND = table.KIND


def _problem(name):
    return privopt.load(SPECS / name)


def test_the_kind_is_registered_under_its_name_with_every_stage():
    assert blocks.kind("mechanism") is KIND and KIND.name == "mechanism"
    assert blocks.kind_of(_problem("randomized_response.priv")) is KIND
    for stage in ("prepare", "clean", "verify", "certificate", "fields", "routes"):
        assert callable(getattr(KIND, stage)), stage
    assert KIND.prepare(_problem("randomized_response.priv")) is None


def test_lp_and_qp_run_on_the_one_lp_runner():
    assert methods.runner("lp") is methods.runner("qp")
    assert isinstance(methods.runner("lp"), Method) and methods.runner("lp").name == "lp"


def test_the_lp_runner_answers_and_the_kind_certifies_by_the_dual_bound():
    problem = _problem("randomized_response.priv")
    route = planner.route(problem, "lp", get_backend("highs"))
    outcome = methods.runner("lp").run(problem, None, route, None, 1, None)
    assert isinstance(outcome, Outcome) and outcome.certificate is None and outcome.evidence["side"] == "lower"
    outcome = KIND.clean(problem, None, outcome)
    verification = KIND.verify(problem, None, outcome)
    assert verification["passed"] and "cleaning" in verification
    cert = KIND.certificate(problem, None, outcome, verification)
    assert cert.kind == "dual-bound" and cert.side == "lower" and cert.bound <= verification["objective"] + 1e-9
    fields = KIND.fields(problem, None, outcome, verification)
    assert set(fields) == {"objective", "tables", "measures"}
    assert fields["objective"] == pytest.approx(problem.solve().objective, abs=1e-9)


@pytest.mark.parametrize(
    "spec, recognizer",
    [
        ("sanitize_markov_lemma1.priv", LEMMA_1),
        ("sanitize_nonmarkov_tv.priv", PROP_1),
        ("sanitize_distortion.priv", PROP_2),
    ],
)
def test_a_closed_form_answers_with_its_theorem(spec, recognizer):
    problem = _problem(spec)
    match = recognizer.accepts(problem)
    assert match
    be = get_backend("highs") if recognizer is PROP_2 else None
    outcome = recognizer.answer(problem, match, None, be, None)
    assert outcome.certificate.kind == "theorem" and outcome.certificate.data["theorem"] == recognizer.cites
    assert outcome.backend == (None if be is None else "highs")
    outcome = KIND.clean(problem, None, outcome)
    verification = KIND.verify(problem, None, outcome)
    assert verification["passed"] and KIND.certificate(problem, None, outcome, verification) is outcome.certificate


def test_a_table_that_breaks_a_budget_fails_verification():
    """The identity channel (the truth released) breaks randomized response's ldp budget:
    the budget's own verifier says so (``verification.sets.budget``), and so does the kind."""
    problem = _problem("randomized_response.priv")
    route = planner.route(problem, "lp", get_backend("highs"))
    outcome = methods.runner("lp").run(problem, None, route, None, 1, None)
    width = int(np.prod(problem.shape(problem.design.targets)))
    truthful = np.eye(width).ravel()
    assert truthful.shape == outcome.point.shape
    assert not all(budget_verdict(b, truthful).passed for b in problem.budgets)
    assert not table._budgets_hold(problem, truthful) and table._budgets_hold(
        problem, table.clean(problem, outcome.point)[0]
    )
    outcome.point = truthful
    with pytest.raises(VerificationError, match="failed privopt's verification"):
        KIND.verify(problem, None, outcome)


@pytest.mark.parametrize(
    "spec", ["randomized_response.priv", "sanitize_nonmarkov_tv.priv", "shaped_noise_soft_moments.priv"]
)
def test_the_driver_runs_the_kind_without_a_class_object(spec):
    """``driver.run`` takes the block path for "mechanism": no class object is needed."""
    problem = _problem(spec)
    analysis, route = privopt.pipeline.resolve(problem)
    result = driver.run(problem, analysis, route, None)
    assert result.status == "optimal" and result.objective == pytest.approx(problem.solve().objective, abs=1e-12)
