"""privopt check: every path on every spec, failures and disagreements reported, JSON contract."""

import json

import pytest
from click.testing import CliRunner

import privopt
from privopt.backends.base import LPSolution
from privopt.backends.scipy import ScipyBackend
from privopt.cli import main
from privopt.crosscheck import run_check
from tests.conftest import SPECS

SPEC_FILES = sorted(SPECS.glob("atr_*.priv"))  # mechanism specs: tests/test_sanitization.py


@pytest.mark.parametrize("spec", SPEC_FILES, ids=lambda p: p.stem)
def test_every_spec_agrees_on_every_path(spec):
    report = run_check(privopt.load(spec))
    assert report.agree, report.problems
    methods = {(p.method, p.backend) for p in report.paths}
    assert ("dqcp", "cvxpy:HIGHS") in methods and ("bisection", "pyomo") in methods
    assert {b for m, b in methods if m == "lfp"} == {
        "highs", "scipy", "cvxpy:CLARABEL", "cvxpy:HIGHS", "cvxpy:SCS", "cvxpy:OSQP", "pyomo",
    }
    for p in report.paths:
        assert p.status == "optimal" and p.abs_diff <= 1e-7 and p.max_violation <= 1e-7


def test_failing_backend_is_reported_and_others_run(monkeypatch):
    def broken(self, lp, **kw):
        return LPSolution("numerical_trouble", "unknown", None, None, 0.0, 0.0, None, "scipy", "x", "forced failure")

    monkeypatch.setattr(ScipyBackend, "solve", broken)
    r = CliRunner().invoke(main, ["check", str(SPECS / "atr_table4.priv"), "--backends", "highs,scipy", "--json"])
    assert r.exit_code == 4
    data = json.loads(r.stdout)
    assert data["agree"] is False
    status = {(p["method"], p["backend"]): p["status"] for p in data["paths"]}
    assert status[("lfp", "scipy")] == "failed"
    assert status[("lfp", "highs")] == "optimal" and status[("closed-form", None)] == "optimal"
    assert any("lfp on scipy failed" in line and "numerical_trouble" in line for line in data["problems"])


def test_wrong_answer_is_caught(monkeypatch):
    """A path returning a feasible but suboptimal table is a disagreement naming the group."""
    import privopt.crosscheck as cc

    real = cc._lfp

    def suboptimal(inst, backend, time_limit):
        table, b, s, note = real(inst, backend, time_limit)
        if backend.label == "scipy":
            table = cc.feasible_start(inst.lower, inst.upper, inst.reference)  # the true D: C* = 1
        return table, b, s, note

    monkeypatch.setattr(cc, "_lfp", suboptimal)
    report = run_check(privopt.load(SPECS / "atr_table4.priv"), ["highs", "scipy"])
    assert not report.agree
    assert any("lfp on scipy differs from the reference by 0.325" in p and "'gender': 'F'" in p for p in report.problems)


def test_json_contract_and_table_output():
    r = CliRunner().invoke(main, ["check", str(SPECS / "atr_table4.priv"), "--backends", "highs", "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["agree"] is True and data["reference"] == {"method": "closed-form", "backend": None}
    for p in data["paths"]:
        assert set(p) >= {"method", "backend", "status", "objective", "abs_diff", "max_violation", "solve_s"}
    r = CliRunner().invoke(main, ["check", str(SPECS / "atr_table4.priv"), "--backends", "highs"])
    assert "all paths agree" in r.stdout and "reference: closed-form" in r.stdout


def test_unknown_backend_is_usage_error():
    r = CliRunner().invoke(main, ["check", str(SPECS / "atr_table4.priv"), "--backends", "gurobi"])
    assert r.exit_code == 2 and "unknown backend 'gurobi'" in r.output


def test_infeasible_spec_exits_3(tmp_path):
    text = (SPECS / "atr_table4.priv").read_text().replace("param delta = 0.9", "param delta = 0.9\nsubject to Dt == 0.3")
    (tmp_path / "s.priv").write_text(text)
    r = CliRunner().invoke(main, ["check", str(tmp_path / "s.priv")])
    assert r.exit_code == 3 and "the bounds are empty: lower bound 0.9 from line 20" in r.output


def test_dqcp_route_rejects_non_optimal_status(monkeypatch):
    """cvxpy's DQCP can end at user_limit with a value far from the optimum (1.0 vs 0.675 on
    Table 4 with its default solver): such a status is a failed path, never an answer."""
    import cvxpy as cp

    def stops_early(self, *args, **kwargs):
        self._status = "user_limit"
        return 1.0

    monkeypatch.setattr(cp.Problem, "solve", stops_early)
    report = run_check(privopt.load(SPECS / "atr_table4.priv"), ["highs", "cvxpy:HIGHS"])
    dqcp = next(p for p in report.paths if p.method == "dqcp")
    assert dqcp.status == "failed" and "user_limit" in dqcp.message
    assert not report.agree
