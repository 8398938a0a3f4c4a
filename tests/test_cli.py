"""The command line: JSON contract, --out, explain, exit codes."""

import json

import pytest
from click.testing import CliRunner

from privopt.cli import main
from tests.conftest import COMPOSITE_SPECS, PROGRAM_SPECS, SPECS, spec_params


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.mark.parametrize("method", ["auto", "closed-form", "lfp"])
def test_json_contract(method):
    r = invoke("solve", SPECS / "atr_table4.priv", "--json", "--method", method)
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    for key in ("status", "objective", "method", "backend", "timings", "groups", "tables", "verification"):
        assert key in data
    assert data["status"] == "optimal"
    assert data["objective"] == pytest.approx(0.675, abs=1e-9)
    assert data["method"] == ("closed-form" if method == "auto" else method)
    assert set(data["timings"]) >= {"parse_s", "solve_s", "total_s"}
    assert {g["key"]["gender"] for g in data["groups"]} == {"F", "M"}
    for g in data["groups"]:
        assert set(g) >= {"key", "objective", "beta_min", "c_star"}
    rows = data["tables"]["Dt"]
    assert len(rows) == 12 and set(rows[0]) == {"gender", "income", "decision", "value"}
    assert data["verification"]["passed"] is True


def test_no_tables():
    r = invoke("solve", SPECS / "atr_table4.priv", "--json", "--no-tables")
    assert "tables" not in json.loads(r.stdout)


def test_set_param():
    r = invoke("solve", SPECS / "atr_table4.priv", "--json", "--set", "delta=0")
    assert json.loads(r.stdout)["objective"] == pytest.approx(0.6)


def test_out_dir(tmp_path):
    out = tmp_path / "res"
    r = invoke("solve", SPECS / "atr_table4.priv", "--out", out)
    assert r.exit_code == 0, r.output
    assert json.loads((out / "result.json").read_text())["status"] == "optimal"
    csv = (out / "Dt.csv").read_text().splitlines()
    assert csv[0] == "gender,income,decision,value" and len(csv) == 13
    assert (out / "groups.csv").exists()
    assert not any(p.name.startswith(".privopt-") for p in tmp_path.iterdir())


def test_out_dir_untouched_on_error(tmp_path):
    bad = tmp_path / "bad.priv"
    bad.write_text((SPECS / "atr_table4.priv").read_text().replace("minimize", "minimise"))
    out = tmp_path / "res"
    r = invoke("solve", bad, "--out", out)
    assert r.exit_code == 2
    assert not out.exists()


def test_human_summary():
    r = invoke("solve", SPECS / "atr_table4.priv")
    assert r.exit_code == 0
    assert "optimal" in r.stdout and "0.675" in r.stdout and "beta_p" in r.stdout


def test_explain():
    r = invoke("explain", SPECS / "atr_table4.priv")
    assert r.exit_code == 0
    assert "method:  closed-form" in r.stdout
    assert "groups 2, records per group 3, outcomes 2" in r.stdout
    r = invoke("explain", SPECS / "atr_three_outcomes.priv")
    assert "method:  lfp" in r.stdout and "cannot use closed-form" in r.stdout


@pytest.mark.parametrize("spec", spec_params(PROGRAM_SPECS))
def test_every_spec_solves(spec):
    """One case per spec, so the test processes share them (one loop was the suite's longest test)."""
    r = invoke("solve", spec, "--json", "--no-tables")
    assert r.exit_code == 0, (spec, r.output)
    assert json.loads(r.stdout)["verification"]["passed"]


@pytest.mark.parametrize("spec", spec_params(COMPOSITE_SPECS))
def test_every_composite_solves(spec, composite_solved):
    """``solve --json`` of a composite, the session's one solve of it (conftest), which other
    tests read too."""
    assert json.loads(composite_solved[spec.stem].json)["verification"]["passed"]


def test_three_outcome_spec_matches_definitions():
    r = invoke("solve", SPECS / "atr_three_outcomes.priv", "--json")
    data = json.loads(r.stdout)
    assert data["method"] == "lfp" and data["backend"] == "highs"
    assert data["stats"]["max_relative_gap"] <= 1e-8
    # each group's beta is at least Lemma 5's floor and at most C*
    for g in data["groups"]:
        assert g["beta_min"] - 1e-12 <= g["beta"] <= g["c_star"] + 1e-12


def test_time_limit_stops_with_a_clear_error():
    r = invoke("solve", SPECS / "atr_three_outcomes.priv", "--method", "lfp", "--time-limit", "0.000001")
    assert r.exit_code == 1
    assert "time_limit" in r.output and "no answer is reported" in r.output and "Traceback" not in r.output


@pytest.mark.parametrize("backend", ["scipy", "pyomo", "cvxpy"])
def test_solve_on_other_backends(backend):
    r = invoke(
        "solve", SPECS / "atr_three_outcomes.priv", "--method", "lfp", "--backend", backend, "--json", "--no-tables"
    )
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["objective"] == pytest.approx(0.7262569832402234, abs=1e-9)
    assert data["backend"] == ("cvxpy:CLARABEL" if backend == "cvxpy" else backend)
