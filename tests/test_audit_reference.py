"""Acceptance tests for `privopt audit` against an independent reference (tests/audit_reference.py),
computed from Chen, Golubchik & Pal (2022) Sec. 3.2-3.3, Def. 3, Def. 5-6, Lemma 2, App. A and the
contract (audit-apply-plot.md section 1). Every number the audit reports is compared with the
reference within 1e-9; the paper's own worked numbers (Table 1 / Remark 1, Sec. 3.2, Table 4)
are checked on the reference first, so the reference itself is anchored to the paper.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import privopt
from privopt.cli import main
from tests import audit_reference as R
from tests.conftest import SPECS, examples

PRIVOPT = str(Path(sys.executable).parent / "privopt")
TOL = 1e-9


def run_audit(problem, release=None, protected=None, given=None) -> dict:
    from privopt.audit import run_audit as _run

    return _run(problem, release=release, protected=protected, given=given).to_dict()


def strict_json(text: str):
    """json.loads refusing NaN / Infinity (and any text around the one object)."""

    def refuse(token):
        raise ValueError(f"non-standard JSON token {token}")

    return json.loads(text, parse_constant=refuse)


def cli(*args, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run([PRIVOPT, *map(str, args)], capture_output=True, text=True, timeout=timeout, check=False)


def invoke(*args):
    """The CLI in this process (cheap): exit code, stdout and stderr kept apart."""
    return CliRunner().invoke(main, [str(a) for a in args])


# --------------------------------------------------------------------------- comparison


def close(got, want, what: str) -> None:
    if want is None:
        assert got is None, f"{what}: got {got!r}, reference null"
        return
    assert got is not None, f"{what}: got null, reference {want!r}"
    assert isinstance(got, (int, float)) and not isinstance(got, bool), f"{what}: {got!r} is not a number"
    assert math.isfinite(got), f"{what}: {got!r}"
    assert abs(got - want) <= TOL * max(1.0, abs(want)), f"{what}: got {got!r}, reference {want!r}"


def check_attack(got: dict, ref: dict, what: str) -> None:
    close(got["max_confidence"], ref["max_confidence"], f"{what}.max_confidence")
    keys = [g["key"] for g in got["groups"]]
    assert keys == [g["key"] for g in ref["groups"]], f"{what}: groups {keys}"
    for g, r in zip(got["groups"], ref["groups"]):
        w = f"{what}[{g['key']}]"
        close(g["prior"], r["prior"], f"{w}.prior")
        close(g["max_confidence"], r["max_confidence"], f"{w}.max_confidence")
        assert [i["outcome"] for i in g["inferences"]] == [i["outcome"] for i in r["inferences"]], w
        by_outcome = {i["outcome"]: i for i in r["inferences"]}
        # the reported inference attains the group's max
        best = by_outcome[g["outcome"]]
        close(best["posterior"][g["private"]], r["max_confidence"], f"{w} {g['outcome']} -> {g['private']}")
        for i, ri in zip(g["inferences"], r["inferences"]):
            wi = f"{w}.{i['outcome']}"
            close(i["confidence"], ri["confidence"], f"{wi}.confidence")
            assert i["private"] in ri["best"], f"{wi}: best guess {i['private']}, reference {ri['best']}"
            assert list(i["posterior"]) == list(ri["posterior"]), wi  # every private label, domain order
            for s, p in ri["posterior"].items():
                close(i["posterior"][s], p, f"{wi}.posterior[{s}]")


def check_measures(got: dict, ref: dict, what: str, rm: bool = True) -> None:
    assert list(got["rates"]) == list(ref["rates"]), f"{what}.rates: {list(got['rates'])}"
    for z, rates in ref["rates"].items():
        assert list(got["rates"][z]) == list(rates), f"{what}.rates[{z}]"
        for a, v in rates.items():
            close(got["rates"][z][a], v, f"{what}.rates[{z}][{a}]")
    for k in ("sp", "csp", "p_rule") + (("rm",) if rm else ()):
        close(got[k], ref[k], f"{what}.{k}")
    assert [p["groups"] for p in got["pairs"]] == [p["groups"] for p in ref["pairs"]], f"{what}.pairs"
    for p, r in zip(got["pairs"], ref["pairs"]):
        w = f"{what}.pairs{r['groups']}"
        for k in ("sp", "csp", "p_rule") + (("rm",) if rm else ()):
            close(p[k], r[k], f"{w}.{k}")
        assert [c["given"] for c in p["csp_cells"]] == [c["given"] for c in r["csp_cells"]], f"{w}.csp_cells"
        for c, rc in zip(p["csp_cells"], r["csp_cells"]):
            close(c["bias"], rc["bias"], f"{w}.csp_cells[{rc['given']}]")


def check_lemma2(got: dict, ref: dict, what: str = "lemma2") -> None:
    for k in ("delta", "alpha", "tv_bound", "rm_bound", "sp_change", "csp_change"):
        close(got[k], ref[k], f"{what}.{k}")
    if ref["rm_change"] is not None:  # both rm finite: the only unambiguous case
        close(got["rm_change"], ref["rm_change"], f"{what}.rm_change")
    if ref["holds"] is not None:
        assert got["holds"] is ref["holds"], f"{what}.holds: got {got['holds']!r}, reference {ref['holds']!r}"
    if "pairs" in got:  # per pair of labels (beyond the contract): the same changes pair by pair
        assert [p["groups"] for p in got["pairs"]] == [p["groups"] for p in ref["pairs"]], f"{what}.pairs"
        for p, r in zip(got["pairs"], ref["pairs"]):
            for k in ("sp_change", "csp_change"):
                close(p[k], r[k], f"{what}.pairs{r['groups']}.{k}")
            if r["rm_change"] is not None:
                close(p["rm_change"], r["rm_change"], f"{what}.pairs{r['groups']}.rm_change")


def check_audit(got: dict, ref: dict) -> None:
    assert got["public"] == ref["public"] and got["private"] == ref["private"] and got["outcome"] == ref["outcome"]
    check_attack(got["attack"]["D"], ref["attack"]["D"], "attack.D")
    check_attack(got["attack"]["release"], ref["attack"]["release"], "attack.release")
    f, rf = got["fairness"], ref["fairness"]
    assert f["protected"] == rf["protected"] and f["given"] == rf["given"], (f["protected"], f["given"])
    check_measures(f["D"], rf["D"], "fairness.D")
    check_measures(f["release"], rf["release"], "fairness.release")
    check_lemma2(f["lemma2"], rf["lemma2"], "fairness.lemma2")


# --------------------------------------------------------------------------- the specs


@pytest.fixture(scope="module")
def table1_spec(tmp_path_factory) -> Path:
    """specs/atr_table1_populations.priv, or our own copy of Table 1 with Remark 1's populations."""
    path = SPECS / "atr_table1_populations.priv"
    if path.exists():
        return path
    own = tmp_path_factory.mktemp("table1") / "atr_table1_populations.priv"
    own.write_text(R.TABLE1_SPEC)
    return own


SPEC_MODELS = {
    "atr_table4": (R.table4_model, "Dt"),
    "atr_alpha_fidelity": (R.table4_model, "Dt"),
    "atr_min_uncertainty": (R.table4_model, "Dt"),
    "atr_census_table1": (R.census_model, "dt"),
    "atr_three_outcomes": (R.three_outcomes_model, "Dt"),
    "atr_table1_populations": (R.table1_model, "dt"),
}


def spec_path(name: str, table1_spec: Path) -> Path:
    return table1_spec if name == "atr_table1_populations" else SPECS / f"{name}.priv"


@functools.cache
def solved(path: Path, params: tuple = ()):
    """(problem, result) of `privopt solve` on the spec."""
    problem = privopt.load(path, params=dict(params))
    return problem, problem.solve(workers=1)


def reference_for(name: str, path: Path, params: tuple = (), protected=None, given=None):
    make, design = SPEC_MODELS[name]
    model = make()
    _, result = solved(path, params)
    T = R.table_from_frame(model, result.tables[design])
    return model, T, R.audit(model, T, protected, given)


# --------------------------------------------------------------------------- the reference vs the paper


def test_reference_reproduces_table1_remark1_and_sec32():
    """Remark 1: approval rates 2/150 = 1.33% (F) and 14/140 = 10% (M), SP 0.0867, CSP 0 / 0.5 / 0;
    Sec. 3.2: a female approved earns >200k with certainty; a male approved earns >200k with
    posterior 5/14 (36%), while the best guess is 100k-200k at 9/14."""
    m = R.table1_model()
    f = R.fairness(m, m.D)
    assert f["rates"]["F"]["positive"] == pytest.approx(2 / 150, abs=1e-15)
    assert f["rates"]["M"]["positive"] == pytest.approx(0.1, abs=1e-15)
    assert round(f["rates"]["F"]["positive"], 4) == 0.0133
    assert f["sp"] == pytest.approx(0.1 - 2 / 150, abs=1e-15) and round(f["sp"], 4) == 0.0867
    assert [c["bias"] for c in f["pairs"][0]["csp_cells"]] == pytest.approx([0, 0.5, 0], abs=1e-15)
    att = R.attack(m, m.D)
    F, M = att["groups"]
    pos_F = next(i for i in F["inferences"] if i["outcome"] == "positive")
    assert pos_F["posterior"][">200k"] == pytest.approx(1.0) and pos_F["best"] == {">200k"}
    pos_M = next(i for i in M["inferences"] if i["outcome"] == "positive")
    assert pos_M["posterior"][">200k"] == pytest.approx(5 / 14, abs=1e-15) and round(5 / 14, 2) == 0.36
    assert pos_M["best"] == {"100k-200k"} and pos_M["confidence"] == pytest.approx(9 / 14, abs=1e-15)
    # the census prior of Table 1: 3.5% before the report, ~36% after it (Sec. 3.2, "ten fold")
    c = R.census_model()
    pos_c = next(i for i in R.attack(c, c.D)["groups"][1]["inferences"] if i["outcome"] == "positive")
    assert (
        pos_c["posterior"][">200k"] == pytest.approx(0.035 / (0.5 * 0.123 + 0.035))
        and 0.36 < pos_c["posterior"][">200k"] < 0.37
    )


def test_reference_reproduces_table4_worked_numbers():
    """Sec. 8 / Table 4 (delta = 0.9): D: F 1.0 (approve -> high), M 0.72 (deny -> low), beta_min
    0.6 / 0.45; the solved release: F 0.675, M 0.6378 (= 81/127, beta_0 of the closed form)."""
    m = R.table4_model()
    att = R.attack(m, m.D)
    F, M = att["groups"]
    assert (F["max_confidence"], F["prior"]) == pytest.approx((1.0, 0.6))
    assert (M["max_confidence"], M["prior"]) == pytest.approx((0.72, 0.45))
    # the closed form's release for Table 4 (Sec. 8): F low .1, mid .02, high .9; M low .1, mid .4, high .9
    T = R.binary_table([[0.1, 0.02, 0.9], [0.1, 0.4, 0.9]])
    rel = R.attack(m, T)
    assert rel["groups"][0]["max_confidence"] == pytest.approx(0.675, abs=1e-12)
    assert rel["groups"][1]["max_confidence"] == pytest.approx(0.6377952755905512, abs=1e-12)
    f_D, f_T = R.fairness(m, m.D), R.fairness(m, T)
    assert (f_D["sp"], f_D["csp"], f_D["p_rule"]) == pytest.approx((0.225, 0.5, 0.4))
    assert f_D["rm"] == pytest.approx(-math.log(0.4))
    l2 = R.lemma2(m, T, f_D, f_T)
    assert (l2["delta"], l2["alpha"], l2["tv_bound"], l2["rm_bound"]) == (
        pytest.approx(0.9),
        0.0,
        pytest.approx(0.2),
        None,
    )
    assert (l2["sp_change"], l2["csp_change"]) == pytest.approx((0.06, 0.12))
    assert l2["rm_change"] == pytest.approx(-math.log(0.4) + math.log(0.2 / 0.365)) and l2["holds"] is True


# --------------------------------------------------------------------------- privopt vs the reference


@pytest.mark.parametrize("name", list(SPEC_MODELS))
def test_api_audit_equals_reference(name, table1_spec):
    path = spec_path(name, table1_spec)
    problem, result = solved(path)
    got = run_audit(problem)
    strict_json(json.dumps(got, allow_nan=False))
    _, _, ref = reference_for(name, path)
    check_audit(got, ref)
    assert got["release_from"] == "solved"
    assert got["spec"] == result.spec  # the same spec object as solve --json (docs/outputs.md)
    # groups in the order solve lists them, keys spelt as in solve --json's groups
    solve_keys = [g["key"] for g in result.group_records()]
    assert [g["key"] for g in got["attack"]["release"]["groups"]] == solve_keys
    assert [g["key"] for g in got["attack"]["D"]["groups"]] == solve_keys


@pytest.mark.parametrize("name", list(SPEC_MODELS))
def test_release_max_confidence_is_solved_beta(name, table1_spec):
    """The release's max confidence per group is the solved beta of that group (Def. 3 on D~), and
    D's is Def. 7's C* (the c_star solve reports)."""
    path = spec_path(name, table1_spec)
    problem, result = solved(path)
    got = run_audit(problem)
    solved_groups = result.group_records()
    for g, s in zip(got["attack"]["release"]["groups"], solved_groups, strict=True):
        assert g["key"] == s["key"]
        assert g["max_confidence"] == pytest.approx(s["beta"], rel=1e-9, abs=0), (name, g["key"])
    for g, s in zip(got["attack"]["D"]["groups"], solved_groups, strict=True):
        if s.get("c_star") is not None:
            assert g["max_confidence"] == pytest.approx(s["c_star"], rel=1e-9, abs=0), (name, g["key"])
        assert g["prior"] == pytest.approx(s["beta_min"], rel=1e-9, abs=0), (name, g["key"])
    assert got["attack"]["release"]["max_confidence"] == pytest.approx(result.beta, rel=1e-9, abs=0)


def test_cli_table4_json(tmp_path):
    """`privopt audit specs/atr_table4.priv --json`: one strict JSON object; the worked numbers."""
    r = cli("audit", SPECS / "atr_table4.priv", "--json")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    got = strict_json(r.stdout)
    _, _, ref = reference_for("atr_table4", SPECS / "atr_table4.priv")
    check_audit(got, ref)
    assert got["spec"]["title"] == "credit-card transparency report" and got["release_from"] == "solved"
    assert got["public"] == ["gender"] and got["private"] == "income" and got["outcome"] == "decision"
    D, rel = got["attack"]["D"]["groups"], got["attack"]["release"]["groups"]
    assert (D[0]["max_confidence"], D[0]["outcome"], D[0]["private"]) == (pytest.approx(1.0), "approve", "high")
    assert (D[1]["max_confidence"], D[1]["outcome"], D[1]["private"]) == (pytest.approx(0.72), "deny", "low")
    assert rel[0]["max_confidence"] == pytest.approx(0.675, abs=1e-9)
    assert rel[1]["max_confidence"] == pytest.approx(81 / 127, abs=1e-9)


def test_cli_table1_json(table1_spec):
    """Table 1 with Remark 1's populations through the CLI: Table 2's numbers and Sec. 3.2's attack."""
    r = cli("audit", table1_spec, "--json")
    assert r.returncode == 0, r.stderr
    got = strict_json(r.stdout)
    _, _, ref = reference_for("atr_table1_populations", table1_spec)
    check_audit(got, ref)
    fD = got["fairness"]["D"]
    assert fD["rates"]["F"]["positive"] == pytest.approx(2 / 150, abs=1e-9)
    assert fD["rates"]["M"]["positive"] == pytest.approx(0.1, abs=1e-9)
    assert fD["sp"] == pytest.approx(13 / 150, abs=1e-9)
    assert [c["bias"] for c in fD["pairs"][0]["csp_cells"]] == pytest.approx([0, 0.5, 0], abs=1e-9)
    assert [c["given"] for c in fD["pairs"][0]["csp_cells"]] == [
        {"income": "<100k"},
        {"income": "100k-200k"},
        {"income": ">200k"},
    ]
    F, M = got["attack"]["D"]["groups"]
    pos_F = next(i for i in F["inferences"] if i["outcome"] == "positive")
    assert (pos_F["private"], pos_F["confidence"]) == (">200k", pytest.approx(1.0, abs=1e-9))
    assert F["max_confidence"] == pytest.approx(1.0, abs=1e-9)
    pos_M = next(i for i in M["inferences"] if i["outcome"] == "positive")
    assert pos_M["posterior"][">200k"] == pytest.approx(5 / 14, abs=1e-9)
    assert (pos_M["private"], pos_M["confidence"]) == ("100k-200k", pytest.approx(9 / 14, abs=1e-9))


def test_cli_human_report_shows_numbers():
    r = cli("audit", SPECS / "atr_table4.priv")
    assert r.returncode == 0, r.stderr
    assert "0.675" in r.stdout and "Traceback" not in r.stderr


def test_set_param_changes_the_release():
    """--set / params: the release is the one solve returns with the same params (delta = 0.8)."""
    path = SPECS / "atr_table4.priv"
    params = (("delta", 0.8),)
    problem, result = solved(path, params)
    got = run_audit(problem)
    _, _T, ref = reference_for("atr_table4", path, params)
    check_audit(got, ref)
    close(got["fairness"]["lemma2"]["delta"], 0.8, "delta achieved at delta = 0.8")
    for g, s in zip(got["attack"]["release"]["groups"], result.group_records(), strict=True):
        assert g["max_confidence"] == pytest.approx(s["beta"], rel=1e-9, abs=0)
    r = invoke("audit", path, "--set", "delta=0.8", "--json")
    assert r.exit_code == 0, r.output
    check_audit(strict_json(r.stdout), ref)


@pytest.mark.parametrize(
    "protected,given_vars",
    [
        ("age", None),
        ("gender", ["income"]),
        ("age", ["gender"]),
        (None, ["age", "income"]),
        ("income", None),
        ("income", ["age"]),
    ],
)
def test_protected_and_given(protected, given_vars):
    """--protected / --given on a spec with two public variables (three outcomes)."""
    path = SPECS / "atr_three_outcomes.priv"
    problem, _ = solved(path)
    got = run_audit(problem, protected=protected, given=given_vars)
    _, _, ref = reference_for("atr_three_outcomes", path, protected=protected, given=given_vars)
    check_audit(got, ref)


def test_cli_protected_given():
    path = SPECS / "atr_three_outcomes.priv"
    r = invoke("audit", path, "--protected", "age", "--given", "gender,income", "--json")
    assert r.exit_code == 0, r.output
    _, _, ref = reference_for("atr_three_outcomes", path, protected="age", given=["gender", "income"])
    check_audit(strict_json(r.stdout), ref)


def test_release_file_same_as_solved(tmp_path):
    """--release with the Dt.csv `solve --out` writes gives the solved release's numbers; the path
    is reported as given."""
    out = tmp_path / "res"
    r = invoke("solve", SPECS / "atr_table4.priv", "--out", out)
    assert r.exit_code == 0, r.output
    release = out / "Dt.csv"
    r = invoke("audit", SPECS / "atr_table4.priv", "--release", release, "--json")
    assert r.exit_code == 0, r.output
    got = strict_json(r.stdout)
    _, _, ref = reference_for("atr_table4", SPECS / "atr_table4.priv")
    check_audit(got, ref)
    assert got["release_from"] == str(release)


def test_release_file_rows_in_any_order(tmp_path):
    """A release CSV in another row and column order is the same release."""
    m = R.table4_model()
    T = R.binary_table([[0.05, 0.3, 0.95], [0.2, 0.45, 0.85]])
    original = tmp_path / "a.csv"
    R.write_release_csv(m, T, original)
    header, *rows = original.read_text().splitlines()
    shuffled = tmp_path / "b.csv"
    cols = header.split(",")
    order = [3, 2, 0, 1]  # value, decision, gender, income
    body = [",".join(row.split(",")[i] for i in order) for row in reversed(rows)]
    shuffled.write_text("\n".join([",".join(cols[i] for i in order), *body]) + "\n")
    problem = privopt.load(SPECS / "atr_table4.priv")
    ref = R.audit(m, T)
    check_audit(run_audit(problem, release=str(shuffled)), ref)


# --------------------------------------------------------------------------- Lemma 2 on random releases


@st.composite
def audit_cases(draw):
    nz = draw(st.integers(2, 3))
    nh = draw(st.integers(0, 2))  # a second public variable (0: none)
    ns = draw(st.integers(2, 3))
    na = draw(st.integers(2, 3))
    public = [("g", ["F", "M", "X"][:nz])] + ([("h", ["u", "v"][:nh])] if nh else [])
    private = ("s", [f"s{i}" for i in range(ns)])
    outcome = ("a", [f"a{i}" for i in range(na)])
    shape = tuple(len(labs) for _, labs in public) + (ns,)
    counts = np.array(
        draw(st.lists(st.integers(0, 20), min_size=int(np.prod(shape)), max_size=int(np.prod(shape)))), dtype=float
    ).reshape(shape)
    # every protected label has population in the first cell of the others (so every pair has a
    # CSP cell and both groups of every pair exist)
    first = (slice(None),) + (0,) * (len(shape) - 1)
    counts[first] = np.maximum(counts[first], 1)
    cell = st.one_of(st.just(0.0), st.just(1.0), st.just(0.5), st.floats(0.01, 1.0))
    raw = np.array(draw(st.lists(cell, min_size=int(np.prod(shape)) * na, max_size=int(np.prod(shape)) * na)))
    raw = raw.reshape(shape + (na,))
    raw[..., 0] = np.where(raw.sum(axis=-1) == 0, 1.0, raw[..., 0])  # no all-zero row
    D = raw / raw.sum(axis=-1, keepdims=True)
    other = np.array(draw(st.lists(cell, min_size=raw.size, max_size=raw.size))).reshape(raw.shape)
    other[..., 0] = np.where(other.sum(axis=-1) == 0, 1.0, other[..., 0])
    other = other / other.sum(axis=-1, keepdims=True)
    kind = draw(st.sampled_from(["delta", "alpha"]))
    if kind == "delta":
        lam = draw(st.one_of(st.just(0.0), st.floats(0.0, 1.0)))
        T = (1 - lam) * D + lam * other  # |T - D| <= lam cell by cell, rows sum to 1
        level = 1 - lam
    else:
        a = draw(st.one_of(st.just(1.0), st.floats(0.3, 1.0)))
        f = a + (1 / a - a) * np.array(draw(st.lists(st.floats(0, 1), min_size=raw.size, max_size=raw.size))).reshape(
            raw.shape
        )
        T = D * f
        T = T / T.sum(axis=-1, keepdims=True)  # T/D within [a^2, 1/a^2] cell by cell
        level = a * a
    model = R.Model(public=public, private=private, outcome=outcome, prior=counts / counts.sum(), D=D)
    return model, counts, T, kind, level


def spec_text(model: R.Model, counts: np.ndarray, kind: str, level: float) -> str:
    pub = [n for n, _ in model.public]
    lines = ['spec "random audit"']
    for n, labels in model.public:
        lines.append(f"var {n} : public {{{', '.join(labels)}}}")
    lines.append(f"var s : private {{{', '.join(model.private[1])}}}")
    lines.append(f"var a : outcome {{{', '.join(model.outcome[1])}}}")
    pub_idx = list(itertools.product(*(range(len(labs)) for _, labs in model.public)))
    lines.append(f"known P({', '.join(pub)}, s) = counts {{")
    lines.append("    " + " ".join(model.private[1]))
    for idx in pub_idx:
        key = " ".join(labs[i] for (_, labs), i in zip(model.public, idx))
        lines.append(f"    {key}: " + " ".join(str(int(c)) for c in counts[idx]))
    lines.append("}")
    lines.append(f"known D = P(a | {', '.join(pub)}, s) = {{")
    lines.append("    " + " ".join(model.outcome[1]))
    for idx in pub_idx:
        key = " ".join(labs[i] for (_, labs), i in zip(model.public, idx))
        for k, s in enumerate(model.private[1]):
            lines.append(f"    {key} {s}: " + " ".join(repr(float(v)) for v in model.D[idx][k]))
    lines.append("}")
    lines.append(f"design Dt = P(a | {', '.join(pub)}, s)")
    if kind == "delta":
        lines.append(f"param delta = {level!r}")
        lines.append("subject to |Dt - D| <= 1 - delta")
    else:
        lines.append(f"param alpha = {max(level - 1e-9, 0.0)!r}")
        lines.append("subject to Dt >= alpha * D")
        lines.append("subject to Dt <= D / alpha")
    lines.append(f"minimize max_confidence({', '.join(pub)}, a -> s)")
    return "\n".join(lines) + "\n"


@settings(max_examples=examples(80))
@given(audit_cases())
def test_lemma2_holds_on_random_releases(case):
    """Random priors, D and delta- or alpha-fidelity releases, given as --release CSV files: every
    number equals the reference, the bounds are the achieved fidelity's, and Lemma 2 holds."""
    model, counts, T, kind, level = case
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "random.priv"
        spec.write_text(spec_text(model, counts, kind, level))
        release = Path(tmp) / "Dt.csv"
        R.write_release_csv(model, T, release)
        problem = privopt.load(spec)
        got = run_audit(problem, release=str(release))
    strict_json(json.dumps(got, allow_nan=False))
    ref = R.audit(model, T)
    check_audit(got, ref)
    l2 = got["fairness"]["lemma2"]
    assert l2["holds"] is True, l2
    assert l2["sp_change"] <= l2["tv_bound"] + 1e-12 and l2["csp_change"] <= l2["tv_bound"] + 1e-12
    if l2["rm_bound"] is not None and l2["rm_change"] is not None:
        assert l2["rm_change"] <= l2["rm_bound"] + 1e-12
    if kind == "delta":
        assert l2["delta"] >= level - 1e-12
    else:
        assert l2["alpha"] >= level - 1e-9 and l2["rm_bound"] is not None


def test_eq15_counterexample(tmp_path):
    """Contract: eq. 15's cap at 1 is false. alpha = 0.1, two one-record groups with d = 0.5,
    release 0.05 and 0.95: rm goes from 0 to log 19 = 2.944 > 1, within -2 log(alpha) = 4.605."""
    spec = tmp_path / "eq15.priv"
    spec.write_text(
        'spec "eq. 15 counterexample"\n'
        "var gender : public {F, M}\n"
        "var income : private {low, high}\n"
        "var decision : outcome {deny, approve}\n"
        "known P(gender, income) = counts {\n    low high\n    F: 1 0\n    M: 1 0\n}\n"
        "known D = P(decision = approve | gender, income) = {\n    low high\n    F: 0.5 0.5\n    M: 0.5 0.5\n}\n"
        "design Dt = P(decision | gender, income)\n"
        "param alpha = 0.1\n"
        "subject to Dt >= alpha * D\n"
        "subject to Dt <= D / alpha\n"
        "minimize max_confidence(gender, decision -> income)\n"
    )
    model = R.Model(
        public=[R.GENDER],
        private=("income", ["low", "high"]),
        outcome=("decision", ["deny", "approve"]),
        prior=np.array([[0.5, 0.0], [0.5, 0.0]]),
        D=R.binary_table([[0.5, 0.5], [0.5, 0.5]]),
    )
    T = R.binary_table([[0.05, 0.5], [0.95, 0.5]])
    release = tmp_path / "Dt.csv"
    R.write_release_csv(model, T, release)
    ref = R.audit(model, T)
    assert ref["fairness"]["lemma2"]["rm_change"] == pytest.approx(math.log(19))
    for got in (
        run_audit(privopt.load(spec), release=str(release)),
        strict_json(invoke("audit", spec, "--release", release, "--json").stdout),
    ):
        check_audit(got, ref)
        l2 = got["fairness"]["lemma2"]
        close(got["fairness"]["D"]["rm"], 0.0, "rm(D)")
        close(got["fairness"]["release"]["rm"], math.log(19), "rm(release)")
        close(l2["alpha"], 0.1, "alpha")
        close(l2["rm_bound"], -2 * math.log(0.1), "rm_bound")
        assert l2["rm_change"] > 1  # the printed eq. 15's min{-2 log alpha, 1} would be violated
        assert l2["rm_change"] <= l2["rm_bound"]
        assert l2["holds"] is True


def test_rm_null_when_a_rate_is_zero(tmp_path):
    """One group's rate 0 and the other's positive: p_rule 0, rm null (not Infinity)."""
    m = R.table4_model()
    T = R.binary_table([[0.0, 0.0, 0.0], [0.0, 0.5, 1.0]])  # F never approved
    release = tmp_path / "Dt.csv"
    R.write_release_csv(m, T, release)
    r = invoke("audit", SPECS / "atr_table4.priv", "--release", release, "--json")
    assert r.exit_code == 0, r.output
    got = strict_json(r.stdout)
    ref = R.audit(m, T)
    check_audit(got, ref)
    assert got["fairness"]["release"]["p_rule"] == 0 and got["fairness"]["release"]["rm"] is None


# --------------------------------------------------------------------------- malformed releases


def _table4_release(tmp_path) -> list[str]:
    m = R.table4_model()
    path = tmp_path / "ok.csv"
    R.write_release_csv(m, R.binary_table([[0.1, 0.02, 0.9], [0.1, 0.4, 0.9]]), path)
    return path.read_text().splitlines()


def _bad(tmp_path, lines: list[str]) -> Path:
    path = tmp_path / "bad.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


# rows (1-based, header not counted) of the table4 release: 1 F low deny, 2 F low approve,
# 3 F mid deny, 4 F mid approve, 5 F high deny, 6 F high approve, 7 M low deny, ...
def _edit(lines, row, text):
    out = list(lines)
    out[row] = text
    return out


MALFORMED = {
    # a duplicated cell (value 0, so no record's sum is off): row 3
    "duplicate": (lambda L: L[:3] + ["F,low,approve,0.0"] + L[3:], {3}),
    # F mid deny 1.02 / approve -0.02: the sum is 1, the value is not in [0, 1]
    "above_one": (lambda L: _edit(_edit(L, 3, "F,mid,deny,1.02"), 4, "F,mid,approve,-0.02"), {3}),
    # F mid deny -0.02 / approve 1.02: a negative value first, row 3
    "negative": (lambda L: _edit(_edit(L, 3, "F,mid,deny,-0.02"), 4, "F,mid,approve,1.02"), {3}),
    # F high sums to 0.9: either of its rows (5, 6) names the record
    "sum": (lambda L: _edit(L, 6, "F,high,approve,0.8"), {5, 6}),
    "sum_small_excess": (lambda L: _edit(L, 6, "F,high,approve,0.90001"), {5, 6}),
    # a label outside the domain: row 7
    "label": (lambda L: _edit(L, 7, "X,low,deny,0.9"), {7}),
    "outcome_label": (lambda L: _edit(L, 8, "M,low,maybe,0.1"), {8}),
    # a non-numeric value: row 8
    "non_numeric": (lambda L: _edit(L, 8, "M,low,approve,abc"), {8}),
    "nan": (lambda L: _edit(L, 8, "M,low,approve,nan"), {8}),
    "inf": (lambda L: _edit(L, 2, "F,low,approve,inf"), {2}),
    "empty_value": (lambda L: _edit(L, 10, "M,mid,approve,"), {10}),
    # two bad rows of different kinds: the first one in the file is named, whatever its kind
    "value_then_label": (lambda L: _edit(_edit(L, 2, "F,low,approve,abc"), 5, "X,high,deny,0.1"), {2}),
    "label_then_value": (lambda L: _edit(_edit(L, 2, "F,lo,approve,0.1"), 5, "F,high,deny,abc"), {2}),
    "range_then_duplicate": (
        lambda L: _edit(_edit(L, 1, "F,low,deny,-0.1"), 2, "F,low,approve,1.1") + ["F,low,deny,0.0"],
        {1},
    ),
    "duplicate_then_range": (
        lambda L: _edit(_edit(L[:3] + ["F,low,approve,0.0"] + L[3:], 8, "M,low,deny,1.1"), 9, "M,low,approve,-0.1"),
        {3},
    ),
    "duplicate_then_label": (lambda L: L[:3] + ["F,low,approve,0.0"] + L[3:6] + ["F,middle,deny,0.5"], {3}),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_release_names_first_bad_row(tmp_path, case):
    edit, rows = MALFORMED[case]
    path = _bad(tmp_path, edit(_table4_release(tmp_path)))
    r = invoke("audit", SPECS / "atr_table4.priv", "--release", path, "--json")
    assert r.exit_code == 2, (r.exit_code, r.output, r.exception)
    assert isinstance(r.exception, SystemExit) or r.exception is None, repr(r.exception)
    assert r.stdout == "", r.stdout
    assert "Traceback" not in r.stderr
    named = [int(n) for n in re.findall(r"\brow (\d+)\b", r.stderr)]
    assert named and named[0] in rows, f"{case}: expected row {sorted(rows)} first in: {r.stderr!r}"


def test_sum_within_tolerance_is_accepted(tmp_path):
    """A record summing to 1 within 1e-6 is fine (1 + 1e-7)."""
    lines = _edit(_table4_release(tmp_path), 6, "F,high,approve,0.9000001")
    r = invoke("audit", SPECS / "atr_table4.priv", "--release", _bad(tmp_path, lines), "--json")
    assert r.exit_code == 0, r.output


def test_missing_cell(tmp_path):
    """A missing cell: exit 2, no traceback, nothing on stdout; the message points at the cell
    (its record's row, M mid approve's partner row 9, or the cell's labels)."""
    lines = _table4_release(tmp_path)
    del lines[10]  # M,mid,approve
    r = invoke("audit", SPECS / "atr_table4.priv", "--release", _bad(tmp_path, lines), "--json")
    assert r.exit_code == 2, r.output
    assert isinstance(r.exception, SystemExit) or r.exception is None, repr(r.exception)
    assert r.stdout == "" and "Traceback" not in r.stderr
    assert "row 9" in r.stderr or ("M" in r.stderr and "mid" in r.stderr and "approve" in r.stderr), r.stderr


def test_missing_record(tmp_path):
    """A whole record missing (both rows of M mid): exit 2 naming the missing cell."""
    lines = _table4_release(tmp_path)
    del lines[9:11]
    r = invoke("audit", SPECS / "atr_table4.priv", "--release", _bad(tmp_path, lines), "--json")
    assert r.exit_code == 2, r.output
    assert r.stdout == "" and "Traceback" not in r.stderr
    assert "mid" in r.stderr, r.stderr


def test_missing_column(tmp_path):
    lines = [",".join(p for k, p in enumerate(line.split(",")) if k != 1) for line in _table4_release(tmp_path)]
    r = invoke("audit", SPECS / "atr_table4.priv", "--release", _bad(tmp_path, lines), "--json")
    assert r.exit_code == 2, r.output
    assert isinstance(r.exception, SystemExit) or r.exception is None, repr(r.exception)
    assert r.stdout == "" and "Traceback" not in r.stderr
    assert "income" in r.stderr, r.stderr


def test_malformed_release_through_the_installed_cli(tmp_path):
    """The same through the installed script: exit 2, `row 7`, no traceback, stdout empty."""
    path = _bad(tmp_path, MALFORMED["label"][0](_table4_release(tmp_path)))
    r = cli("audit", SPECS / "atr_table4.priv", "--release", path, "--json")
    assert r.returncode == 2, r.stderr
    assert "row 7" in r.stderr and "Traceback" not in r.stderr and r.stdout == ""


def test_non_atr_spec_refused():
    r = cli("audit", SPECS / "randomized_response.priv", "--json")
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert r.stdout == "" and "Traceback" not in r.stderr
    low = r.stderr.lower()
    assert "atr" in low or "transparency" in low, r.stderr


def test_protected_not_a_variable():
    r = invoke("audit", SPECS / "atr_table4.priv", "--protected", "colour", "--json")
    assert r.exit_code == 2, r.output
    assert isinstance(r.exception, SystemExit) or r.exception is None, repr(r.exception)
    assert r.stdout == "" and "colour" in r.stderr


def test_protected_income_with_a_conditional_prior_is_refused():
    """atr_census_table1 knows P(income | gender) only: rates per income need P(gender), which the
    spec does not give, so --protected income cannot be computed (not a silent guess)."""
    r = invoke("audit", SPECS / "atr_census_table1.priv", "--protected", "income", "--json")
    assert r.exit_code == 2, r.output
    assert isinstance(r.exception, SystemExit) or r.exception is None, repr(r.exception)
    assert r.stdout == "" and "Traceback" not in r.stderr


def test_protected_private_variable_table4():
    """--protected income on Table 4 (a joint prior): fairness across income bands, CSP given gender."""
    problem, _ = solved(SPECS / "atr_table4.priv")
    _, _, ref = reference_for("atr_table4", SPECS / "atr_table4.priv", protected="income")
    check_audit(run_audit(problem, protected="income"), ref)
    assert len(ref["fairness"]["D"]["pairs"]) == 3  # (low, mid), (low, high), (mid, high)
