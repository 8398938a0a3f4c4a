"""The Dask engine (issue 13, item 4): partitioned data solved per group block on a local
cluster equals the local engine, for a binary (closed form) and a three-outcome (LFP) spec."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
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


def test_dask_with_own_local_cluster(tmp_path):
    write(tmp_path, False, "data/part-*.parquet")
    res = privopt.solve(tmp_path / "parts.priv", engine="dask", workers=2, processes=False)
    same(privopt.solve(tmp_path / "one.priv"), res, 1e-12)


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


def test_local_solve_does_not_import_dask(tmp_path):
    write(tmp_path, False, "data/")
    code = (
        "import sys, privopt\n"
        f"r = privopt.load({str(tmp_path / 'parts.priv')!r}).solve()\n"
        "assert r.engine == 'local'\n"
        "assert 'dask' not in sys.modules and 'distributed' not in sys.modules, [m for m in sys.modules if 'dask' in m]\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
