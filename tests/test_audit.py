"""privopt audit: the paper's worked examples (Table 4; Table 1 with Remark 1's populations and
with census statistics), eq. 15's false cap, the text report and the command's errors.
Independent recomputation from the definitions is in tests/test_audit_reference.py."""

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

import privopt
from privopt.audit import run_audit
from privopt.cli import main
from privopt.measures import fairness as fm
from tests.conftest import SPECS


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def strict(text: str):
    def bad(c):
        raise ValueError(f"non-finite constant {c} in JSON")

    return json.loads(text, parse_constant=bad)


@pytest.fixture(scope="module")
def table4():
    return run_audit(privopt.load(SPECS / "atr_table4.priv")).to_dict()


def test_table4_attack(table4):
    """Contract worked numbers: D gives F approve -> high at 1 and M deny -> low at 0.72; the
    release gives beta* per group (0.675, 81/127 = 0.6378)."""
    D, R = table4["attack"]["D"], table4["attack"]["release"]
    F, M = D["groups"]
    assert (F["key"], F["max_confidence"], F["outcome"], F["private"]) == ({"gender": "F"}, 1.0, "approve", "high")
    assert (M["outcome"], M["private"]) == ("deny", "low") and M["max_confidence"] == pytest.approx(0.72, abs=1e-12)
    assert F["prior"] == pytest.approx(0.6) and M["prior"] == pytest.approx(0.45)
    assert D["max_confidence"] == 1.0
    assert [g["max_confidence"] for g in R["groups"]] == pytest.approx([0.675, 81 / 127], abs=1e-12)
    assert R["max_confidence"] == pytest.approx(0.675, abs=1e-12)
    deny = F["inferences"][0]
    assert deny["outcome"] == "deny" and deny["posterior"] == pytest.approx(
        {"low": 12 / 17, "mid": 5 / 17, "high": 0.0}
    )


def test_release_confidence_is_solved_beta_per_group():
    for name in ("atr_table4", "atr_three_outcomes", "atr_alpha_fidelity", "atr_min_uncertainty"):
        problem = privopt.load(SPECS / f"{name}.priv")
        result = problem.solve()
        audit = run_audit(problem, result=result).to_dict()
        solved = {tuple(sorted(g["key"].items())): g["beta"] for g in result.group_records()}
        for g in audit["attack"]["release"]["groups"]:
            assert g["max_confidence"] == pytest.approx(solved[tuple(sorted(g["key"].items()))], rel=1e-9), name


def test_table4_fairness(table4):
    f = table4["fairness"]
    assert (f["protected"], f["given"]) == ("gender", ["income"])
    D = f["D"]
    assert D["rates"]["F"] == pytest.approx({"deny": 0.85, "approve": 0.15})
    assert D["rates"]["M"] == pytest.approx({"deny": 0.625, "approve": 0.375})
    assert (D["sp"], D["csp"], D["p_rule"]) == pytest.approx((0.225, 0.5, 0.4))
    assert D["rm"] == pytest.approx(-math.log(0.4))
    assert [c["bias"] for c in D["pairs"][0]["csp_cells"]] == pytest.approx([0.0, 0.5, 0.0])
    lemma = f["lemma2"]
    assert lemma["delta"] == pytest.approx(0.9) and lemma["alpha"] == 0.0
    assert lemma["tv_bound"] == pytest.approx(0.2) and lemma["rm_bound"] is None
    assert lemma["sp_change"] == pytest.approx(0.06) and lemma["rm_change"] == pytest.approx(0.3148, abs=1e-4)
    assert lemma["holds"] is True


def test_table1_remark1():
    """Remark 1: approval rates 2/150 = 1.33% and 14/140 = 10%, SP 0.0867, CSP 0 / 0.5 / 0; Sec. 3.2:
    a female approved earns >200k surely, a male approved with posterior 5/14 = 36% (his
    best guess is 100k-200k at 9/14)."""
    a = run_audit(privopt.load(SPECS / "atr_table1_populations.priv")).to_dict()
    D = a["fairness"]["D"]
    assert D["rates"]["F"]["positive"] == pytest.approx(2 / 150) and D["rates"]["M"]["positive"] == pytest.approx(0.1)
    assert D["sp"] == pytest.approx(0.1 - 2 / 150)
    assert [c["bias"] for c in D["pairs"][0]["csp_cells"]] == pytest.approx([0.0, 0.5, 0.0])
    F, M = a["attack"]["D"]["groups"]
    pos_F = next(i for i in F["inferences"] if i["outcome"] == "positive")
    pos_M = next(i for i in M["inferences"] if i["outcome"] == "positive")
    assert pos_F["private"] == ">200k" and pos_F["confidence"] == 1.0
    assert pos_M["posterior"][">200k"] == pytest.approx(5 / 14) and pos_M["private"] == "100k-200k"
    assert pos_M["confidence"] == pytest.approx(9 / 14)


def test_census_prior_36_percent():
    """Sec. 3.2 with census statistics as the prior: P(>200k | M, positive) = 0.035 / (0.035 + 0.0615)."""
    a = run_audit(privopt.load(SPECS / "atr_census_table1.priv")).to_dict()
    M = a["attack"]["D"]["groups"][1]
    pos = next(i for i in M["inferences"] if i["outcome"] == "positive")
    assert pos["posterior"][">200k"] == pytest.approx(0.035 / 0.0965) and round(pos["posterior"][">200k"], 2) == 0.36


COUNTER = """spec "eq. 15 counterexample"
var z : public {a, b}
var s : private {only}
var decision : outcome {no, yes}
known P(z, s) = counts {
      only
  a:  1
  b:  1
}
known D = P(decision = yes | z, s) = {
      only
  a:  0.5
  b:  0.5
}
design T = P(decision | z, s)
param alpha = 0.1
subject to T >= alpha * D
subject to alpha * T <= D
minimize max_confidence(z, decision -> s)
"""


def test_eq15_cap_is_false(tmp_path):
    """alpha = 0.1, two one-record groups with d = 0.5, released as 0.05 and 0.95: rm goes from 0
    to log 19 = 2.94 > 1, within -2 log(alpha) = 4.61 (the bound audit reports)."""
    spec = tmp_path / "counter.priv"
    spec.write_text(COUNTER)
    release = tmp_path / "T.csv"
    release.write_text("z,s,decision,value\na,only,no,0.95\na,only,yes,0.05\nb,only,no,0.05\nb,only,yes,0.95\n")
    lemma = run_audit(privopt.load(spec), release=release).to_dict()["fairness"]["lemma2"]
    assert lemma["alpha"] == pytest.approx(0.1)
    assert lemma["rm_change"] == pytest.approx(math.log(19)) and lemma["rm_change"] > 1
    assert lemma["rm_bound"] == pytest.approx(-2 * math.log(0.1))
    assert lemma["holds"] is True


def test_lemma2_bounds_are_tight_enough_to_fail():
    """``holds`` can be false: a change beyond the bound is reported as such."""
    assert fm.lemma2(0.9, 0.5) == pytest.approx((0.2, -2 * math.log(0.5)))
    assert not fm.within(0.21, 0.2) and fm.within(0.2, 0.2) and fm.within(None, None)
    assert not fm.within(None, 1.0)


def test_p_rule_zero_rates():
    assert fm.p_rule(np.array([0.0, 1.0]), np.array([0.0, 1.0])) == 1.0  # both zero: skipped
    assert fm.p_rule(np.array([0.0, 1.0]), np.array([0.5, 0.5])) == 0.0  # one zero: 0
    assert fm.rm(0.0) is None


def test_cli_text_and_json():
    r = invoke("audit", SPECS / "atr_table4.priv")
    assert r.exit_code == 0, r.output
    assert "0.675" in r.stdout and "0.637795" in r.stdout and "Lemma 2" in r.stdout
    r = invoke("audit", SPECS / "atr_table4.priv", "--json")
    assert r.exit_code == 0
    data = strict(r.stdout)
    assert set(data) == {"spec", "release_from", "public", "private", "outcome", "attack", "fairness"}
    assert data["release_from"] == "solved" and data["private"] == "income"


def test_release_from_solve_out(tmp_path):
    assert invoke("solve", SPECS / "atr_table4.priv", "--out", tmp_path / "o").exit_code == 0
    r = invoke("audit", SPECS / "atr_table4.priv", "--release", tmp_path / "o" / "Dt.csv", "--json")
    assert r.exit_code == 0, r.output
    data = strict(r.stdout)
    assert data["release_from"].endswith("Dt.csv")
    assert data["attack"]["release"]["max_confidence"] == pytest.approx(0.675, abs=1e-12)


@pytest.mark.parametrize(
    ("edit", "row"),
    [
        (lambda lines: lines[:3] + lines[4:], None),  # a missing cell: named, no row
        (lambda lines: lines + [lines[1]], "row 13"),  # a duplicate
        (lambda lines: [lines[0]] + [lines[1].rsplit(",", 1)[0] + ",abc"] + lines[2:], "row 1"),
        (lambda lines: lines[:5] + [lines[5].rsplit(",", 1)[0] + ",1.5"] + lines[6:], "row 5"),
        (lambda lines: lines[:2] + [lines[2].replace("approve", "maybe")] + lines[3:], "row 2"),
        (lambda lines: lines[:7] + [lines[7].rsplit(",", 1)[0] + ",0.5"] + lines[8:], "row 7"),  # sum 0.6
    ],
)
def test_malformed_release(tmp_path, edit, row):
    assert invoke("solve", SPECS / "atr_table4.priv", "--out", tmp_path / "o").exit_code == 0
    lines = (tmp_path / "o" / "Dt.csv").read_text().splitlines()
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(edit(lines)) + "\n")
    r = invoke("audit", SPECS / "atr_table4.priv", "--release", bad)
    assert r.exit_code == 2 and r.stdout == ""
    assert "Traceback" not in r.output and "bad.csv: error:" in r.stderr
    if row is not None:
        assert f"{row}:" in r.stderr
    else:
        assert "no row for the cell gender=F, income=mid, decision=deny" in r.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("audit", SPECS / "randomized_response.priv"), "audit needs a transparency-report (ATR) spec"),
        (("audit", SPECS / "atr_table4.priv", "--protected", "age"), "--protected age: not an input variable"),
        (("audit", SPECS / "atr_table4.priv", "--given", "gender"), "cannot also be a score variable"),
        (("audit", SPECS / "atr_census_table1.priv", "--protected", "income"), "leaves the weights of gender unknown"),
    ],
)
def test_usage_errors(args, message):
    r = invoke(*args)
    assert r.exit_code == 2 and message in r.stderr and "Traceback" not in r.output
