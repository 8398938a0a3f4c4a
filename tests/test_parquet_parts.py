"""Partitioned Parquet (issue 13, item 4): a folder or a glob of parts is one long table for the
default engine; one group's rows may lie in several parts; errors are located."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import privopt
from privopt.errors import SpecError

SPEC = """spec "parts"
var g : public {{F, M, X}}
var h : public {{p, q}}
var s : private {{low, mid, high}}
var decision : outcome {{{outcomes}}}
known P(g, h, s) = counts from "{prior}" column n
{rule}
design Dt = P(decision | g, h, s)
subject to |Dt - D| <= 0.2
minimize max_confidence(g, h, decision -> s)
"""
BINARY = ("deny, approve", 'known D = P(decision = approve | g, h, s) from "{path}" column rate')
THREE = ("deny, review, approve", 'known D = P(decision | g, h, s) from "{path}" column rate')


def records(three: bool, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for g in "FMX":
        for h in "pq":
            for s in ("low", "mid", "high"):
                n = int(rng.integers(1, 50))
                if three:
                    d = rng.dirichlet([1, 1, 1])
                    rows += [
                        {"g": g, "h": h, "s": s, "decision": o, "n": n, "rate": float(r)}
                        for o, r in zip(("deny", "review", "approve"), d)
                    ]
                else:
                    rows.append({"g": g, "h": h, "s": s, "n": n, "rate": float(rng.choice([0.0, 0.25, 0.5, 0.9, 1.0]))})
    return pd.DataFrame(rows)


def write(tmp_path, three: bool, path: str, parts: int = 3) -> None:
    """The records once as a CSV and as ``parts`` Parquet parts, rows dealt round-robin so every
    group's rows lie in several parts."""
    df = records(three)
    df.to_csv(tmp_path / "all.csv", index=False)
    (tmp_path / "data").mkdir()
    for k in range(parts):
        df.iloc[k::parts].to_parquet(tmp_path / "data" / f"part-{k}.parquet", index=False)
    outcomes, rule = THREE if three else BINARY
    prior = "prior.csv" if three else None  # three outcomes: one row per (record, outcome), the prior beside
    if three:
        df.drop_duplicates(["g", "h", "s"])[["g", "h", "s", "n"]].to_csv(tmp_path / "prior.csv", index=False)
    (tmp_path / "one.priv").write_text(
        SPEC.format(outcomes=outcomes, rule=rule.format(path="all.csv"), prior=prior or "all.csv")
    )
    (tmp_path / "parts.priv").write_text(
        SPEC.format(outcomes=outcomes, rule=rule.format(path=path), prior=prior or path)
    )


def same(a, b, tol):
    assert a.status == b.status == "optimal"
    assert a.method == b.method
    np.testing.assert_allclose(b.groups["beta"], a.groups["beta"], rtol=0, atol=tol)
    pd.testing.assert_frame_equal(
        a.groups.drop(columns=["objective", "beta", "beta_min", "c_star"]).astype(str),
        b.groups.drop(columns=["objective", "beta", "beta_min", "c_star"]).astype(str),
    )
    ta, tb = a.table("Dt"), b.table("Dt")
    assert (ta.drop(columns="value").astype(str).to_numpy() == tb.drop(columns="value").astype(str).to_numpy()).all()


@pytest.mark.parametrize("three", [False, True], ids=["binary", "three-outcomes"])
@pytest.mark.parametrize("path", ["data/", "data", "data/part-*.parquet"])
def test_parts_equal_one_csv(tmp_path, three, path):
    write(tmp_path, three, path)
    one = privopt.solve(tmp_path / "one.priv")
    parts = privopt.solve(tmp_path / "parts.priv")
    same(one, parts, 1e-12 if not three else 1e-7)
    assert parts.engine == "local"
    names = sorted(n for n in parts.spec["data"] if n != "prior.csv")
    assert names == [f"data/part-{k}.parquet" for k in range(3)]  # one digest per part


def test_part_digest_is_the_file_sha256(tmp_path):
    import hashlib

    write(tmp_path, False, "data/")
    res = privopt.solve(tmp_path / "parts.priv")
    for name, digest in res.spec["data"].items():
        assert digest == hashlib.sha256((tmp_path / name).read_bytes()).hexdigest()


def error(tmp_path, path: str) -> str:
    (tmp_path / "x.priv").write_text(SPEC.format(outcomes=BINARY[0], rule=BINARY[1].format(path=path), prior=path))
    with pytest.raises(SpecError) as e:
        privopt.load(tmp_path / "x.priv")
    text = str(e.value)
    assert text.startswith("x.priv:6:") or ":6:" in text.splitlines()[0]
    assert "^" in text
    return text


def test_no_part_matches(tmp_path):
    write(tmp_path, False, "data/")
    assert "no file matches 'data/nope-*.parquet'" in error(tmp_path, "data/nope-*.parquet")
    (tmp_path / "empty").mkdir()
    assert "'empty' is a folder with no .parquet files" in error(tmp_path, "empty/")


def test_mixed_schemas(tmp_path):
    write(tmp_path, False, "data/")
    df = records(False).rename(columns={"rate": "rate2"})
    df.to_parquet(tmp_path / "data" / "part-9.parquet", index=False)
    assert "the parts of 'data/' have different columns" in error(tmp_path, "data/")


def test_mixed_types(tmp_path):
    write(tmp_path, False, "data/")
    df = records(False)
    df["n"] = df["n"].astype(str)
    df.to_parquet(tmp_path / "data" / "part-9.parquet", index=False)
    assert "column 'n' holds" in error(tmp_path, "data/")


def test_part_not_parquet(tmp_path):
    write(tmp_path, False, "data/")
    (tmp_path / "data" / "part-5.parquet").write_text("g,h,s,n,rate\nF,p,low,1,0.5\n")
    assert "'data/part-5.parquet' (a part of 'data/'): not a Parquet file" in error(tmp_path, "data/")
    (tmp_path / "data" / "part-5.parquet").unlink()
    (tmp_path / "data" / "notes.txt").write_text("hello")
    assert "'data/notes.txt' (matched by 'data/*') is not a Parquet file" in error(tmp_path, "data/*")


def test_glob_leaving_the_folder(tmp_path):
    write(tmp_path, False, "data/")
    assert "this path leaves the spec's folder" in error(tmp_path, "../*.parquet")


def test_row_errors_name_the_part(tmp_path):
    write(tmp_path, False, "data/")
    df = pd.read_parquet(tmp_path / "data" / "part-1.parquet")
    df.loc[df.index[2], "g"] = "Z"
    df.to_parquet(tmp_path / "data" / "part-1.parquet", index=False)
    assert "row 3 of 'data/part-1.parquet': g = 'Z' is not in its domain" in error(tmp_path, "data/")


def test_only_needed_columns_are_read(tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    write(tmp_path, False, "data/")
    for k in range(3):
        df = pd.read_parquet(tmp_path / "data" / f"part-{k}.parquet")
        df["unused"] = "x" * 100
        df.to_parquet(tmp_path / "data" / f"part-{k}.parquet", index=False)
    asked = []
    real = pq.ParquetFile.read

    def spy(self, columns=None, **kw):
        asked.append(columns)
        return real(self, columns=columns, **kw)

    monkeypatch.setattr(pq.ParquetFile, "read", spy)
    privopt.load(tmp_path / "parts.priv")
    assert asked and all(c is not None and "unused" not in c for c in asked)
