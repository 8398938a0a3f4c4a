"""The CLI's scale options (issue 13): --workers, --engine dask, --scheduler, and the progress
bar staying off stdout."""

from __future__ import annotations

import json

from click.testing import CliRunner

from privopt.cli import main
from tests.conftest import SPECS
from tests.test_parquet_parts import write


def _json(args):
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_workers_do_not_change_the_answer():
    one = _json(["solve", str(SPECS / "atr_three_outcomes.priv"), "--json", "--workers", "1"])
    two = _json(["solve", str(SPECS / "atr_three_outcomes.priv"), "--json", "--workers", "2"])
    assert one["groups"] == two["groups"] and one["tables"] == two["tables"] and one["engine"] == "local"


def test_scheduler_needs_the_dask_engine():
    res = CliRunner().invoke(main, ["solve", str(SPECS / "atr_table4.priv"), "--scheduler", "tcp://x:1"])
    assert res.exit_code == 2 and "--engine dask" in res.output


def test_workers_must_be_positive():
    res = CliRunner().invoke(main, ["solve", str(SPECS / "atr_table4.priv"), "--workers", "0"])
    assert res.exit_code == 2


def test_dask_engine_from_the_cli_equals_local(tmp_path):
    write(tmp_path, False, "data/part-*.parquet")
    local = _json(["solve", str(tmp_path / "one.priv"), "--json"])
    dask = _json(["solve", str(tmp_path / "parts.priv"), "--json", "--engine", "dask", "--workers", "2"])
    assert dask["engine"] == "dask" and dask["status"] == "optimal"
    assert abs(dask["beta"] - local["beta"]) <= 1e-12
    assert [g["key"] for g in dask["groups"]] == [g["key"] for g in local["groups"]]
    assert all(
        abs(a["beta"] - b["beta"]) <= 1e-12 for a, b in zip(dask["groups"], local["groups"])
    )  # closed form: 1e-12
