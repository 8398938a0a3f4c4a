"""``privopt verify RESULT.json`` (issue 22): every single-program spec's result, written by
``--json`` and by ``--out``, verifies; tampering with any kind of field fails with exit 1 and
names it; a changed spec or data file, an unknown format and a single result posing as a composite give exit 2."""

from __future__ import annotations

import copy
import itertools
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import PROGRAM_SPECS, ROOT

import privopt
from privopt.cli import main
from privopt.errors import UsageError

SLOW = {"atr_credit_records", "noise_placement_classic", "shaped_noise_sweep"}  # the longest solves


def _params(spec: Path):
    marks = [pytest.mark.slow] if spec.stem in SLOW else []
    return pytest.param(spec, id=spec.stem, marks=marks)


@pytest.fixture(scope="module")
def solved() -> dict[str, dict]:
    """One --json result per spec, solved once for the module's tampering tests."""
    return {}


def _result(name: str, cache: dict) -> dict:
    if name not in cache:
        cache[name] = json.loads(privopt.load(ROOT / "specs" / f"{name}.priv").solve().to_json())
    return copy.deepcopy(cache[name])


def _verify(result: dict, tmp_path: Path, *args: str):
    path = tmp_path / "result.json"
    path.write_text(json.dumps(result))
    return CliRunner().invoke(main, ["verify", str(path), *args])


@pytest.mark.parametrize("spec", [_params(s) for s in PROGRAM_SPECS])
def test_every_spec_verifies_from_json_and_out(spec, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    runner = CliRunner()
    rel = str(spec.relative_to(ROOT))
    solved = runner.invoke(main, ["solve", rel, "--json"])
    assert solved.exit_code == 0, solved.output
    (tmp_path / "r.json").write_text(solved.stdout)
    out = runner.invoke(main, ["solve", rel, "--out", str(tmp_path / "out")])
    assert out.exit_code == 0, out.output
    monkeypatch.chdir(tmp_path)  # the recorded cwd finds the spec, not the working folder
    for path in (tmp_path / "r.json", tmp_path / "out" / "result.json"):
        checked = runner.invoke(main, ["verify", str(path), "--json"])
        assert checked.exit_code == 0, checked.output
        report = json.loads(checked.stdout)
        assert report["passed"] and report["checks"] and not report["failures"]
        assert any(c["name"].startswith("certificate") for c in report["checks"])


# (spec, how the result is tampered with, what the failure names)
def _objective(r):
    r["objective"] *= 1.01


def _no_objective(r):
    r["objective"] = None


def _cell(r):
    name = next(iter(r["tables"]))
    row = next(row for row in r["tables"][name] if 0.1 < row["value"] < 0.9)
    row["value"] += 1e-3


def _variance(r):
    name = next(iter(r["noise"]))
    r["noise"][name][0] *= 0.9


def _bound(r):
    r["certificate"]["bound"] *= 0.999


def _param(r):
    name = next(iter(r["spec"]["params"]))
    r["spec"]["params"][name] = r["spec"]["params"][name] * 1.1


def _multiplier(r):
    values = r["certificate"]["data"]["multipliers"]["values"]
    values[0] *= 1.5


def _theorem(r):
    r["certificate"]["data"]["theorem"] = "Ding, Liu & Farokhi, Lemma 1 (eq. 7)"


def _dual_point(r):
    r["certificate"]["data"]["dual_point"]["mu"][0] *= 3.0


def _bracket(r):
    r["certificate"]["data"]["upper"][0] *= 1.01


def _label(r):
    name = next(iter(r["tables"]))
    row = r["tables"][name][0]
    key = next(k for k in row if k != "value")
    row[key] = "no such label"


TAMPERING = [
    ("randomized_response", _objective, "objective"),
    ("randomized_response", _no_objective, "objective"),
    ("obfuscation_general", _no_objective, "objective"),
    ("randomized_response", _cell, "budget"),
    ("sanitize_distortion", _cell, ""),
    ("randomized_response", _theorem, "certificate theorem"),
    ("randomized_response", _param, "certificate theorem's optimum"),
    ("count_query_dp", _bound, "certificate bound"),
    ("count_query_dp", _multiplier, "certificate"),
    ("sanitize_distance_table", _param, ""),
    ("noise_placement", _variance, ""),
    ("noise_placement", _objective, "objective"),
    ("noise_placement_correlated", _dual_point, "certificate"),
    ("noise_placement", _bound, "certificate bound"),
    ("atr_table4", _cell, ""),
    ("atr_table4", _objective, "objective"),
    ("atr_three_outcomes", _bracket, "certificate brackets"),
    ("atr_three_outcomes", _bound, "certificate bound"),
    ("obfuscation_bsc", _objective, "objective"),
    ("obfuscation_bsc", _bound, "certificate global bound"),
    ("obfuscation_bsc", _cell, ""),
    ("obfuscation_symmetric", _objective, ""),
    ("sanitize_markov_lemma1", _param, ""),
    ("count_query_dp", _label, "released point"),
]


@pytest.mark.parametrize(
    "name, tamper, named", TAMPERING, ids=[f"{n}-{t.__name__.strip('_')}" for n, t, _ in TAMPERING]
)
def test_tampering_is_caught_and_named(name, tamper, named, solved, tmp_path):
    result = _result(name, solved)
    assert _verify(result, tmp_path).exit_code == 0
    tamper(result)
    checked = _verify(result, tmp_path, "--json")
    assert checked.exit_code == 1, checked.output
    report = json.loads(checked.stdout)
    assert not report["passed"] and report["failures"]
    assert any(f.startswith(named) for f in report["failures"]), report["failures"]
    failed = [c for c in report["checks"] if not c["passed"]]
    assert all(c["margin"] is None or c["margin"] < 0 for c in failed)


def test_a_multiplier_that_no_longer_proves_the_bound_is_named(solved, tmp_path):
    result = _result("count_query_dp", solved)
    _multiplier(result)
    checked = _verify(result, tmp_path)
    assert checked.exit_code == 1
    assert "certificate bound" in checked.output and "is not the one proven" in checked.output


def test_an_edited_spec_is_exit_2_naming_it(tmp_path, monkeypatch):
    spec = tmp_path / "rr.priv"
    shutil.copy(ROOT / "specs" / "randomized_response.priv", spec)
    monkeypatch.chdir(tmp_path)
    result = json.loads(privopt.load("rr.priv").solve().to_json())
    assert _verify(result, tmp_path).exit_code == 0
    spec.write_text(spec.read_text() + "\n# edited\n")
    checked = _verify(result, tmp_path)
    assert checked.exit_code == 2
    assert "rr.priv" in checked.output and "changed since it was solved" in checked.output
    with pytest.raises(UsageError, match="changed since"):
        privopt.verify(result)


def test_spec_option_and_recorded_text(solved, tmp_path):
    result = _result("randomized_response", solved)
    result["spec"]["path"] = str(tmp_path / "gone.priv")  # not on disk: the recorded text is used
    report = privopt.verify(result)
    assert report.passed and report.spec_from == "recorded text"
    other = tmp_path / "other.priv"
    other.write_text((ROOT / "specs" / "randomized_response.priv").read_text())
    assert privopt.verify(result, spec=other).spec_from == "--spec"
    other.write_text(other.read_text().replace("eps", "eps ", 1))
    checked = _verify(result, tmp_path, "--spec", str(other))
    assert checked.exit_code == 2 and "other.priv" in checked.output
    result["spec"]["text"] += " "
    with pytest.raises(UsageError, match="recorded SHA-256"):
        privopt.verify(result)


def test_a_changed_data_file_is_exit_2_naming_it(tmp_path, monkeypatch):
    shutil.copytree(ROOT / "specs" / "data", tmp_path / "data")
    shutil.copy(ROOT / "specs" / "atr_credit_records.priv", tmp_path / "credit.priv")
    monkeypatch.chdir(tmp_path)
    result = json.loads(privopt.load("credit.priv").solve().to_json())
    assert _verify(result, tmp_path).exit_code == 0
    data = next(iter(result["spec"]["data"]))
    path = tmp_path / data
    path.write_text(path.read_text() + "\n")
    checked = _verify(result, tmp_path)
    assert checked.exit_code == 2 and Path(data).name in checked.output and "data file changed" in checked.output


@pytest.mark.parametrize(
    "change, says",
    [
        (lambda r: r.pop("format"), "no format"),
        (lambda r: r.update(format=99), "format 99"),
        (lambda r: r.update(blocks={}), "is not a composite spec"),
        (lambda r: r.pop("spec"), "records no spec"),
    ],
    ids=["no-format", "unknown-format", "composite", "no-spec"],
)
def test_unknown_or_composite_results_are_exit_2(change, says, solved, tmp_path):
    result = _result("randomized_response", solved)
    change(result)
    checked = _verify(result, tmp_path)
    assert checked.exit_code == 2 and says in checked.output


def test_unreadable_result_is_exit_2(tmp_path):
    path = tmp_path / "r.json"
    path.write_text("{not json")
    checked = CliRunner().invoke(main, ["verify", str(path)])
    assert checked.exit_code == 2 and "not a result" in checked.output
    checked = CliRunner().invoke(main, ["verify", str(tmp_path / "missing.json")])
    assert checked.exit_code == 2 and "cannot read" in checked.output


@pytest.mark.slow  # its own solve of blocks_means (8 s); test_verify_composite verifies the run's one solve of it
def test_a_composite_result_verifies(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    solved = CliRunner().invoke(main, ["solve", "specs/blocks_means.priv", "--json"])
    assert solved.exit_code == 0, solved.output
    (tmp_path / "c.json").write_text(solved.stdout)
    checked = CliRunner().invoke(main, ["verify", str(tmp_path / "c.json")])
    assert checked.exit_code == 0 and "block arith: certificate" in checked.output, checked.output


def test_text_output_lists_every_check_with_its_margin(solved, tmp_path):
    result = _result("count_query_dp", solved)
    checked = _verify(result, tmp_path)
    assert checked.exit_code == 0
    lines = checked.stdout.splitlines()
    assert lines[-1] == "verified: every check holds"
    assert any(line.startswith("ok") and "margin" in line and "certificate" in line for line in lines)
    assert any("exact rational arithmetic" in line for line in lines)
    assert any("floats" in line and "tolerance" in line for line in lines)


def test_a_tampered_csv_of_an_out_folder_is_caught(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    out = tmp_path / "out"
    assert CliRunner().invoke(main, ["solve", "specs/randomized_response.priv", "--out", str(out)]).exit_code == 0
    assert privopt.verify(out / "result.json").passed
    csv = out / "R.csv"
    lines = csv.read_text().splitlines()
    head, _, value = lines[1].rpartition(",")
    lines[1] = f"{head},{float(value) + 1e-6!r}"
    csv.write_text("\n".join(lines) + "\n")
    report = privopt.verify(out / "result.json")
    assert not report.passed and any(c.name.startswith("simplex rows") for c in report.failed)
    lines[1] = f"{head},not a number"
    csv.write_text("\n".join(lines) + "\n")
    report = privopt.verify(out / "result.json")
    assert not report.passed and any(c.name == "finite point" for c in report.failed)
    csv.unlink()
    report = privopt.verify(out / "result.json")
    assert not report.passed and "R.csv" in report.failed[0].detail


# ------------------------------------------------------------------ the LFP's lower ends and Prop. 2's transport LP

RAYS_SPEC = """spec "three outcomes, rules from a formula"
var g1 : public {a, b, c}
var g2 : public {u, v, w}
var inc : private {i1, i2, i3, i4}
var dec : outcome {o1, o2, o3}
known P(g1, g2, inc) = counts from "pop.csv" column population
known D = P(dec | g1, g2, inc) from "rules.csv" column rate
design Dt = P(dec | g1, g2, inc)
param delta = 0.9
subject to |Dt - D| <= 1 - delta
minimize max_confidence(g1, g2, dec -> inc)
"""


@pytest.fixture(scope="module")
def lfp_result(tmp_path_factory) -> dict:
    """An LFP result where Theorem 1's closed-form bound does not close every group, so some
    lower ends are proven by a step's Farkas ray (9 QID groups, 4 private values, 3 outcomes)."""
    folder = tmp_path_factory.mktemp("rays")
    pop, rules = ["g1,g2,inc,population"], ["g1,g2,inc,dec,rate"]
    for j, (a, b, c) in enumerate(itertools.product("abc", "uvw", ("i1", "i2", "i3", "i4"))):
        pop.append(f"{a},{b},{c},{(37 * j + 11) % 89 + 1}")
        w = [((j * 31 + k * 17) % 11 + 1) ** 2 for k in range(3)]
        rates = [round(x / sum(w), 3) for x in w[:2]]
        rules += [f"{a},{b},{c},{o},{r}" for o, r in zip(("o1", "o2", "o3"), [*rates, round(1 - sum(rates), 3)])]
    (folder / "pop.csv").write_text("\n".join(pop) + "\n")
    (folder / "rules.csv").write_text("\n".join(rules) + "\n")
    (folder / "rays.priv").write_text(RAYS_SPEC)
    result = json.loads(privopt.load(folder / "rays.priv").solve().to_json())
    assert result["method"] == "lfp" and result["certificate"]["kind"] == "lfp-brackets"
    return result


def _ray_groups(result: dict) -> list[int]:
    return [g for g, level in enumerate(result["certificate"]["data"]["level"]) if level is not None]


def _group_name(result: dict, g: int) -> str:
    key = result["groups"][g]["key"]
    return f"g1 = {key['g1']}, g2 = {key['g2']}"


@pytest.mark.parametrize("exact", [True, False], ids=["exact", "floats"])
def test_lfp_lower_ends_are_re_derived_from_their_rays(lfp_result, exact, tmp_path, monkeypatch):
    if not exact:
        monkeypatch.setattr("privopt.certify.proofs.EXACT_MAX_CELLS", 0)
    rays = _ray_groups(lfp_result)
    assert 0 < len(rays) < len(lfp_result["groups"])  # some by a ray, the others by the closed-form bound
    checked = _verify(lfp_result, tmp_path, "--json")
    assert checked.exit_code == 0, checked.output
    report = json.loads(checked.stdout)
    names = {c["name"]: c for c in report["checks"]}
    assert f"{len(rays)} group(s) proven by a Farkas ray" in names["certificate rays"]["detail"]
    assert names["certificate brackets' lower ends"]["passed"]
    kind = "exact rational arithmetic" if exact else "in floats"
    assert any("Farkas rays" in n and kind in n for n in report["notes"]), report["notes"]


def _halve_largest(row):
    i, a = max(((i, a) for i in range(len(row)) for a in range(len(row[0]))), key=lambda ia: row[ia[0]][ia[1]])
    row[i][a] *= 0.5


@pytest.mark.parametrize(
    "tamper, named",
    [
        (lambda data, g: _halve_largest(data["ray"][g]), "certificate brackets' lower ends"),
        (lambda data, g: data["ray"][g][0].__setitem__(0, -0.1), "certificate rays"),
        (lambda data, g: data["level"].__setitem__(g, None), "certificate brackets' lower ends"),
        (lambda data, g: data["lower"].__setitem__(g, data["lower"][g] + 1e-9), "certificate brackets' lower ends"),
    ],
    ids=["ray-halved", "ray-negative", "ray-dropped", "lower-end-raised"],
)
@pytest.mark.parametrize("exact", [True, False], ids=["exact", "floats"])
def test_a_changed_ray_or_lower_end_is_exit_1_naming_the_group(lfp_result, tamper, named, exact, tmp_path, monkeypatch):
    if not exact:
        monkeypatch.setattr("privopt.certify.proofs.EXACT_MAX_CELLS", 0)
    result = copy.deepcopy(lfp_result)
    g = _ray_groups(result)[0]
    tamper(result["certificate"]["data"], g)
    checked = _verify(result, tmp_path, "--json")
    assert checked.exit_code == 1, checked.output
    failures = json.loads(checked.stdout)["failures"]
    assert any(f.startswith(f"{named}: QID group {_group_name(result, g)}:") for f in failures), failures


def test_lfp_rays_prove_each_lower_end_below_its_beta(lfp_result):
    """The recorded lower ends are what the rays prove (the gap closes to the LFP's tolerance), and
    never above the group's beta (a bound above an achieved confidence would be a false proof)."""
    data = lfp_result["certificate"]["data"]
    for g in _ray_groups(lfp_result):
        assert data["lower"][g] <= data["upper"][g]
        assert (data["upper"][g] - data["lower"][g]) <= 1e-7 * data["upper"][g]


def _potential(r):
    u = r["certificate"]["data"]["transport"]["u"]
    s, x = next((s, x) for s in range(len(u)) for x in range(len(u[0])) if u[s][x] != 0)
    u[s][x] += 0.25


def _transport_value(r):
    r["certificate"]["data"]["transport"]["value"] *= 0.99


def _no_potentials(r):
    r["certificate"]["data"]["transport"]["v"] = None


@pytest.mark.parametrize(
    "tamper, named",
    [
        (_potential, "certificate transport potentials: at S = "),
        (_transport_value, "certificate transport dual value"),
        (_no_potentials, "certificate transport potentials"),
        (_objective, "certificate transport gap"),
    ],
    ids=["potential", "value", "no-potentials", "objective"],
)
def test_prop2_transport_potentials_are_re_proven(tamper, named, solved, tmp_path):
    result = _result("sanitize_distortion", solved)
    assert result["method"] == "reduced-lp"
    checked = _verify(result, tmp_path, "--json")
    assert checked.exit_code == 0, checked.output
    report = json.loads(checked.stdout)
    names = {c["name"] for c in report["checks"]}
    assert {"certificate transport potentials", "certificate transport gap"} <= names
    assert any("transport dual value: exact rational arithmetic" in n for n in report["notes"])
    tamper(result)
    checked = _verify(result, tmp_path, "--json")
    assert checked.exit_code == 1, checked.output
    failures = json.loads(checked.stdout)["failures"]
    assert any(f.startswith(named) for f in failures), failures
