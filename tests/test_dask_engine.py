"""The Dask engine (issue 13, item 4): partitioned data solved per group block on a local
cluster equals the local engine, for a binary (closed form) and a three-outcome (LFP) spec."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import privopt
from privopt.errors import SpecError, UsageError
from tests.test_parquet_parts import same, write

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None)
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


@pytest.mark.parametrize("three", [False, True], ids=["binary-closed-form", "three-outcomes-lfp"])
def test_dask_equals_local(tmp_path, client, three):
    write(tmp_path, three, "data/")
    local = privopt.solve(tmp_path / "one.priv")
    local_parts = privopt.solve(tmp_path / "parts.priv")
    res = privopt.solve(tmp_path / "parts.priv", engine="dask", scheduler=client)
    assert res.engine == "dask" and local.engine == "local"
    assert res.to_dict(tables=False)["engine"] == "dask"
    assert res.method == ("lfp" if three else "closed-form")
    same(local, res, 1e-7 if three else 1e-12)  # LFP: within its certified gap (GAP_TOL 1e-7)
    same(local_parts, res, 1e-7 if three else 1e-12)
    assert abs(res.beta - local.beta) <= (1e-7 if three else 1e-12)
    if not three:  # the LFP's optimal tables are not unique; its betas are compared above
        np.testing.assert_allclose(res.table("Dt")["value"], local.table("Dt")["value"], rtol=0, atol=1e-12)
    assert res.verification["passed"]
    assert res.spec["data"] == local_parts.spec["data"]
    assert res.stats["dask"]["blocks"] >= 2
    if not three:
        assert res.stats["binding_case_groups"] == local.stats["binding_case_groups"]


@pytest.mark.parametrize("processes", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["threads", "processes"])
def test_dask_without_a_cluster_runs_in_this_process(tmp_path, processes):
    """No scheduler: dask's threaded (or multiprocessing) scheduler, no cluster started."""
    write(tmp_path, False, "data/part-*.parquet")
    res = privopt.solve(tmp_path / "parts.priv", engine="dask", workers=2, processes=processes)
    same(privopt.solve(tmp_path / "one.priv"), res, 1e-12)
    assert res.engine == "dask" and res.verification["passed"] and res.stats["dask"]["workers"] == 2


JOINT = """spec "domains and a joint from the parts"
var g : public from "data/"
var h : public from "data/"
var s : private {low, mid, high}
var decision : outcome {deny, approve}
known P(g, h, s) from "data/" column p
known D = P(decision = approve | g, h, s) from "data/" column rate
design Dt = P(decision | g, h, s)
subject to |Dt - D| <= 0.2
minimize max_confidence(g, h, decision -> s)
"""


@pytest.mark.parametrize("scale", [1.0, 1.5], ids=["sums-to-1", "sums-to-1.5"])
def test_dask_reads_domains_and_a_joint_from_the_parts(tmp_path, client, scale):
    """The domains of g and h and the joint prior's sum come from one pass over every part
    (the labels of all parts, the sum of all rows); a joint whose sum is not 1 is refused at its
    path, as the local engine refuses it."""
    write(tmp_path, False, "data/")
    df = pd.concat([pd.read_parquet(p) for p in sorted((tmp_path / "data").glob("*.parquet"))])
    for part in sorted((tmp_path / "data").glob("*.parquet")):
        rows = pd.read_parquet(part)
        rows["p"] = scale * rows["n"] / df["n"].sum()
        rows.to_parquet(part, index=False)
    (tmp_path / "joint.priv").write_text(JOINT)
    if scale != 1.0:
        for kw in ({}, {"engine": "dask", "scheduler": client}, {"engine": "dask", "workers": 2}):
            with pytest.raises(SpecError, match="sum to 1.5, not 1") as e:
                privopt.solve(tmp_path / "joint.priv", **kw)
            assert "joint.priv:6:" in str(e.value)
        return
    local = privopt.solve(tmp_path / "joint.priv")
    for kw in ({"scheduler": client}, {"workers": 2}):
        res = privopt.solve(tmp_path / "joint.priv", engine="dask", **kw)
        same(local, res, 1e-12)
        assert res.stats["dask"]["block_variables"] == ["g", "h"] and list(res.groups["g"].cat.categories) == [
            "F",
            "M",
            "X",
        ]


def test_dask_errors_are_located(tmp_path, client):
    write(tmp_path, False, "data/")
    text = (tmp_path / "parts.priv").read_text()
    (tmp_path / "bad.priv").write_text(text.replace('"data/"', '"nodata/"', 1))
    with pytest.raises(SpecError) as e:
        privopt.solve(tmp_path / "bad.priv", engine="dask", scheduler=client)
    assert "bad.priv:6:" in str(e.value) and "^" in str(e.value)
    with pytest.raises(UsageError, match="unknown engine"):
        privopt.solve(tmp_path / "parts.priv", engine="spark")
    with pytest.raises(UsageError, match="pass the spec's path"):
        privopt.solve(privopt.load(tmp_path / "parts.priv"), engine="dask", scheduler=client)


@pytest.mark.parametrize(
    "call, engine, absent",
    [
        ("privopt.load(SPEC).solve()", "local", ("dask", "distributed")),
        # dask's scheduler named by its get function: dask does not import distributed (2-3 s) to look for a client
        ("privopt.solve(SPEC, engine='dask', workers=2)", "dask", ("distributed",)),
    ],
    ids=["local", "dask-without-a-cluster"],
)
def test_a_solve_imports_only_what_it_runs_on(tmp_path, call, engine, absent):
    write(tmp_path, False, "data/")
    code = (
        "import sys, privopt\n"
        f"r = {call.replace('SPEC', repr(str(tmp_path / 'parts.priv')))}\n"
        f"assert r.engine == {engine!r} and r.status == 'optimal'\n"
        f"assert not [m for m in sys.modules if m.split('.')[0] in {absent!r}], [m for m in sys.modules if 'dask' in m]\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
