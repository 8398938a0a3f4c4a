"""Results that say what they are: provenance (spec, params, versions) and strict JSON."""

import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

import privopt
from privopt.cli import main
from privopt.results import Result, plain
from tests.conftest import SPECS

TABLE4 = SPECS / "atr_table4.priv"


def strict_loads(text: str):
    """json.loads that refuses NaN, Infinity and -Infinity (not JSON, RFC 8259)."""

    def refuse(token):
        raise ValueError(f"non-standard JSON token {token}")

    return json.loads(text, parse_constant=refuse)


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


# ------------------------------------------------------------------ provenance


def test_json_records_spec_params_and_versions():
    r = invoke("solve", TABLE4, "--json", "--no-tables", "--set", "delta=0.95")
    assert r.exit_code == 0, r.output
    data = strict_loads(r.stdout)
    spec = data["spec"]
    assert spec["path"] == str(TABLE4)
    assert spec["title"] == "credit-card transparency report"
    assert spec["sha256"] == hashlib.sha256(TABLE4.read_bytes()).hexdigest()
    assert spec["params"] == {"delta": 0.95}
    versions = data["versions"]
    assert versions["privopt"] == privopt.__version__
    assert set(versions) >= {"python", "numpy", "scipy", "pandas", "highspy"}
    # today's keys stay
    assert set(data) >= {"status", "objective", "method", "backend", "timings", "groups", "verification", "stats"}


def test_default_param_values_are_recorded():
    data = strict_loads(invoke("solve", TABLE4, "--json", "--no-tables").stdout)
    assert data["spec"]["params"] == {"delta": 0.9}


def test_out_result_json_records_the_set_param(tmp_path):
    out = tmp_path / "run"
    r = invoke("solve", TABLE4, "--out", out, "--set", "delta=0.95")
    assert r.exit_code == 0, r.output
    data = strict_loads((out / "result.json").read_text())
    assert data["spec"]["params"] == {"delta": 0.95}
    assert data["spec"]["sha256"] == hashlib.sha256(TABLE4.read_bytes()).hexdigest()
    assert data["versions"]["privopt"] == privopt.__version__


def test_api_result_params_and_loads_provenance():
    result = privopt.load(SPECS / "randomized_response.priv", params={"eps": 2}).solve()
    assert result.params == {"eps": 2.0}
    assert result.spec["path"] == str(SPECS / "randomized_response.priv")
    text = TABLE4.read_text()
    from_text = privopt.loads(text).solve()
    assert from_text.spec["path"] is None
    assert from_text.spec["sha256"] == hashlib.sha256(text.encode()).hexdigest()
    assert from_text.to_dict(tables=False)["spec"] == from_text.spec


def test_sha256_is_of_the_text_whatever_the_byte_order_mark(tmp_path):
    spec = tmp_path / "bom.priv"
    spec.write_bytes(b"\xef\xbb\xbf" + TABLE4.read_bytes())
    assert privopt.load(spec).source_sha256 == hashlib.sha256(TABLE4.read_bytes()).hexdigest()


def test_data_files_are_recorded_with_the_sha256_of_their_bytes(tmp_path):
    """A spec that reads CSV and Parquet files records each file's SHA-256: the spec's hash
    alone does not say what was solved."""
    spec = SPECS / "atr_three_outcomes.priv"
    data = privopt.load(spec).solve().spec["data"]
    assert data == {
        name: hashlib.sha256((SPECS / name).read_bytes()).hexdigest()
        for name in ("data/loans.csv", "data/loans_rules.csv")
    }
    (tmp_path / "data").mkdir()
    pd.read_csv(SPECS / "data/loans.csv").to_parquet(tmp_path / "data/loans.parquet")
    (tmp_path / "data/loans_rules.csv").write_bytes((SPECS / "data/loans_rules.csv").read_bytes())
    text = spec.read_text().replace("data/loans.csv", "data/loans.parquet")
    (tmp_path / "p.priv").write_text(text)
    recorded = privopt.load(tmp_path / "p.priv").solve().spec["data"]
    assert recorded["data/loans.parquet"] == hashlib.sha256((tmp_path / "data/loans.parquet").read_bytes()).hexdigest()
    assert privopt.load(SPECS / "atr_table4.priv").solve().spec["data"] == {}


def test_infeasible_result_records_its_spec(tmp_path):
    spec = tmp_path / "infeasible.priv"
    spec.write_text(TABLE4.read_text().replace("subject to |Dt - D| <= 1 - delta", "subject to Dt == 0.3"))
    r = invoke("solve", spec, "--json", "--set", "delta=0.8")
    assert r.exit_code == 3, r.output
    data = strict_loads(r.stdout)
    assert data["status"] == "infeasible" and data["objective"] is None
    assert data["spec"]["path"] == str(spec) and data["spec"]["params"] == {"delta": 0.8}
    assert data["versions"]["privopt"] == privopt.__version__


# ------------------------------------------------------------------ strict JSON


def _nonfinite_result() -> Result:
    """A mechanism result whose measures and nested verification hold inf and nan, as numpy
    and Python floats, with an infinite group measure and table cell."""
    inf = float("inf")
    groups = pd.DataFrame({"g": ["a", "b"], "objective": [0.5, inf], "beta": [np.nan, 0.25], "case": ["beta_0", "lfp"]})
    table = pd.DataFrame({"X": ["x1", "x2"], "Y": ["y1", "y1"], "value": [1.0, inf]})
    return Result(
        status="optimal",
        termination="optimal",
        objective=np.float64(0.5),
        beta=None,
        method="lp",
        backend="highs",
        problem_class="mechanism-lp",
        objective_kind="tv",
        groups=groups,
        tables={"M": table},
        verification={
            "passed": np.bool_(True),
            "budgets_achieved": {"ldp(S -> Y) <= eps": np.float64(inf), "dp(X -> Y) <= 1": -inf},
            "per_row": np.array([0.1, np.nan, inf]),
            "counts": np.array([1, 2], dtype=np.int64),
            "failures": [],
            "nested": [{"x": np.float32(2.5)}, (np.int32(3), float("nan"))],
            "series": pd.Series([0.5, -np.inf]),
            "where": Path("specs/x.priv"),
            "names": frozenset({"eps"}),
        },
        timings={"total_s": 0.25},
        stats={"lp_rows": np.int64(60)},
        measures={"ldp(S -> Y)": inf, "I(X;Y) bits": np.float64(0.125), "largest": np.nan},
        spec={"path": None, "title": None, "sha256": None, "params": {"eps": 1e-12}},
        versions={"privopt": "0"},
    )


@pytest.mark.parametrize("indent", [2, None])
def test_to_json_is_strict_with_infinite_measures(indent):
    data = strict_loads(_nonfinite_result().to_json(indent=indent))
    assert data["measures"] == {"ldp(S -> Y)": None, "I(X;Y) bits": 0.125, "largest": None}
    v = data["verification"]
    assert v["budgets_achieved"] == {"ldp(S -> Y) <= eps": None, "dp(X -> Y) <= 1": None}
    assert v["per_row"] == [0.1, None, None] and v["counts"] == [1, 2] and v["passed"] is True
    assert v["nested"] == [{"x": 2.5}, [3, None]]
    assert v["series"] == [0.5, None] and v["where"] == "specs/x.priv" and v["names"] == ["eps"]
    assert [g["objective"] for g in data["groups"]] == [0.5, None]
    assert [g["beta"] for g in data["groups"]] == [None, 0.25]
    assert data["groups"][0]["key"] == {"g": "a"} and data["groups"][1]["case"] == "lfp"
    assert [row["value"] for row in data["tables"]["M"]] == [1.0, None]
    assert data["stats"] == {"lp_rows": 60} and data["objective"] == 0.5


def test_to_dict_is_strict_and_agrees_with_to_json():
    result = _nonfinite_result()
    as_dict = result.to_dict()
    text = json.dumps(as_dict, allow_nan=False)  # raises on any non-finite float
    assert strict_loads(text) == strict_loads(result.to_json())
    assert as_dict["tables"]["M"] == [{"X": "x1", "Y": "y1", "value": 1.0}, {"X": "x2", "Y": "y1", "value": None}]
    assert as_dict["groups"][1] == {"key": {"g": "b"}, "objective": None, "beta": 0.25, "case": "lfp"}
    assert type(as_dict["objective"]) is float and type(as_dict["stats"]["lp_rows"]) is int


def test_solved_result_dict_and_json_agree():
    result = privopt.load(TABLE4).solve()
    from_json = strict_loads(result.to_json())
    from_dict = result.to_dict()
    assert from_json.keys() == from_dict.keys()
    for a, b in zip(from_json["groups"], from_dict["groups"]):
        assert a["key"] == b["key"] and a["case"] == b["case"]
        assert a["beta"] == pytest.approx(b["beta"], rel=1e-14)
    assert [r["value"] for r in from_json["tables"]["Dt"]] == pytest.approx(
        [r["value"] for r in from_dict["tables"]["Dt"]], rel=1e-14
    )


def test_infeasible_constructor_serializes_strictly():
    from privopt.pipeline.driver import result as make_result

    result = make_result(
        status="infeasible",
        method="lfp",
        backend="highs",
        problem_class="atr-max-confidence",
        objective_kind="max_confidence",
        timings={"total_s": 0.1},
        reasons=["group gender=F: fidelity bounds cannot all hold"],
    )
    data = strict_loads(result.to_json())
    assert result.infeasible is True
    assert data["objective"] is None and data["beta"] is None and data["groups"] == [] and data["tables"] == {}
    assert data["reasons"] == ["group gender=F: fidelity bounds cannot all hold"]
    assert data["spec"] is None and result.params == {}


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**62), 2**62),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
    st.floats(allow_nan=True, allow_infinity=True).map(np.float64),
    st.integers(-(2**31), 2**31 - 1).map(np.int64),
    st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=4).map(np.array),
)
trees = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=20,
)


def _same(original, converted) -> bool:
    """``converted`` is ``original`` with non-finite floats as None and containers as lists/dicts."""
    if isinstance(original, dict):
        return converted.keys() == original.keys() and all(_same(original[k], converted[k]) for k in original)
    if isinstance(original, (list, tuple, np.ndarray)):
        return len(original) == len(converted) and all(_same(a, b) for a, b in zip(original, converted))
    if isinstance(original, (float, np.floating)) and not math.isfinite(original):
        return converted is None
    return converted == original and not isinstance(converted, np.generic)


@given(trees)
def test_plain_gives_strict_json_and_keeps_finite_values(tree):
    converted = plain(tree)
    json.dumps(converted, allow_nan=False)
    assert _same(tree, converted)


def test_api_reference_documents_every_field_and_key():
    """docs/api.md names every Result field and property, every --json key and every export."""
    import dataclasses

    from tests.conftest import ROOT

    doc = (ROOT / "docs" / "api.md").read_text()
    names = [f.name for f in dataclasses.fields(Result)] + ["infeasible", "params", "table", "to_dict", "to_json"]
    names += list(_nonfinite_result().to_dict()) + ["reasons"]
    names += [n for n in privopt.__all__ if n != "__version__"]
    missing = sorted({n for n in names if f"`{n}" not in doc})
    assert not missing, f"docs/api.md does not describe: {missing}"


def test_recorded_privopt_version_is_the_installed_one():
    import importlib.metadata

    assert privopt.__version__ == importlib.metadata.version("privopt")


floats = st.floats(allow_nan=True, allow_infinity=True)


@given(
    st.lists(st.tuples(st.text(max_size=3), floats, floats), min_size=1, max_size=6),
    st.lists(floats, min_size=1, max_size=6),
)
def test_json_and_dict_agree_on_any_groups_and_table(rows, values):
    """For any labels and any floats (inf, nan, subnormal, huge) in groups and tables, to_json
    is strict JSON and says exactly what to_dict says: non-finite -> null, every finite value
    to the last bit (a probability of 1e-10 keeps all its digits), finite stays finite."""
    result = _nonfinite_result()
    result.groups = pd.DataFrame(
        {"g": [r[0] for r in rows], "objective": [r[1] for r in rows], "beta": [r[2] for r in rows]}
    )
    result.tables = {"M": pd.DataFrame({"X": [f"x{i}" for i in range(len(values))], "value": values})}
    from_json, from_dict = strict_loads(result.to_json()), result.to_dict()
    json.dumps(from_dict, allow_nan=False)
    for a, b in zip(from_json["groups"] + from_json["tables"]["M"], from_dict["groups"] + from_dict["tables"]["M"]):
        assert a.keys() == b.keys()
        for k in a:
            assert a[k] == b[k] and type(a[k]) is type(b[k])
