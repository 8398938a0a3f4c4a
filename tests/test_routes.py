"""The route interface between the pipeline families and ``privopt check`` (issue 11, A):
each family lists its routes (``routes(problem, analysis, tol)``), each route says how to run
and how to measure it, and crosscheck.py knows nothing else about a family."""

import ast
import types
from pathlib import Path

import numpy as np
import pytest

import privopt
import privopt.crosscheck as cc
from privopt import blocks
from privopt.blocks import report
from privopt.blocks.common import Measured, Route
from privopt.classify import analyse
from privopt.errors import UsageError
from tests.conftest import SPECS

CROSSCHECK = Path(cc.__file__)


def test_crosscheck_imports_no_family_internals():
    """No import from a family module, and no underscore name from anywhere in the pipeline."""
    tree = ast.parse(CROSSCHECK.read_text())
    families = {f"blocks.{m.split('.')[-1]}" for m in blocks.MODULES.values()}
    families |= {"blocks.routes_report", "blocks.routes_table"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(("pipeline", "blocks")):
            assert node.module not in families, node.module
            assert not any(a.name.startswith("_") for a in node.names), [a.name for a in node.names]


@pytest.mark.parametrize("spec", ["atr_table4.priv", "sanitize_nonmarkov_tv.priv", "randomized_response.priv"])
def test_every_family_lists_routes_that_run_and_measure(spec):
    problem = privopt.load(SPECS / spec)
    routes = blocks.kind_of(problem).routes(problem, analyse(problem), 1e-7)
    assert routes and all(isinstance(r, Route) for r in routes)
    first = routes[0]
    assert first.backend is None or first.backend.available()[0]
    point, *_ = first.run(first.backend, None)
    m = first.measure(point, first.accuracy)
    assert isinstance(m, Measured) and np.isfinite(m.objective) and m.violation <= first.accuracy.cells
    assert m.objective == pytest.approx(problem.solve().objective, abs=1e-7)


def test_the_osqp_lp_route_is_opt_in_and_the_pairwise_route_is_fixed():
    problem = privopt.load(SPECS / "randomized_response.priv")
    routes = blocks.kind("mechanism").routes(problem, analyse(problem), 1e-7)
    osqp = next(r for r in routes if r.label == "cvxpy:OSQP")
    assert osqp.unnamed and "OSQP" in osqp.unnamed
    pairwise = next(r for r in routes if r.method == "pairwise")
    assert pairwise.label == "highs" and not pairwise.selectable
    report = cc.run_check(problem, ["scipy"])
    # randomized response is a registered closed form: check compares it with the chosen LP backend and the pairwise LP
    assert {(p.method, p.backend) for p in report.paths} == {
        ("closed-form", None),
        ("lp", "scipy"),
        ("pairwise", "highs"),
    }


def test_a_family_without_routes_is_a_usage_error(monkeypatch):
    problem = privopt.load(SPECS / "atr_table4.priv")
    monkeypatch.setattr(report, "KIND", types.SimpleNamespace())
    with pytest.raises(UsageError, match="does not cover atr problems"):
        cc.run_check(problem)
