"""``privopt verify`` needs no solver (issue 22): in a subprocess where every solver package
fails to import (a meta-path finder refuses them), the result of every single-program spec
verifies through the command line, and no solver module is loaded at the end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from conftest import PROGRAM_SPECS, ROOT

import privopt

SOLVERS = ("highspy", "cvxpy", "pyomo", "clarabel", "scs", "ecos", "osqp")

BLOCKER = textwrap.dedent(
    """
    import importlib.abc, json, sys

    SOLVERS = {solvers!r}

    class Blocked(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in SOLVERS:
                raise ImportError(f"{{name}} is blocked: privopt verify must not import a solver")
            return None

    sys.meta_path.insert(0, Blocked())
    from click.testing import CliRunner
    from privopt.cli import main

    failed = []
    for path in sys.argv[1:]:
        r = CliRunner().invoke(main, ["verify", path])
        if r.exit_code != 0:
            failed.append((path, r.exit_code, r.output[-2000:]))
    loaded = sorted({{m.split(".")[0] for m in sys.modules}} & set(SOLVERS))
    print(json.dumps({{"failed": failed, "loaded": loaded}}))
    """
).format(solvers=SOLVERS)


@pytest.mark.slow
def test_every_result_verifies_with_no_solver_importable(tmp_path):
    paths = []
    for spec in PROGRAM_SPECS:
        path = tmp_path / f"{spec.stem}.json"
        path.write_text(privopt.load(spec).solve().to_json())
        paths.append(str(path))
    _run_blocked(paths)


def test_a_result_of_each_class_verifies_with_no_solver_importable(tmp_path):
    names = (
        "atr_table4",  # theorem
        "atr_three_outcomes",  # LFP brackets
        "randomized_response",  # LP multipliers
        "shaped_noise_soft_moments",  # QP multipliers
        "sanitize_nonmarkov_tv",  # theorem (Prop. 1)
        "sanitize_distortion",  # theorem (Prop. 2) and its transport LP's potentials
        "noise_placement_correlated",  # conic dual point
        "obfuscation_bsc",  # global bound
        "obfuscation_symmetric",  # theorem (Corollary 2)
    )
    paths = []
    for name in names:
        path = tmp_path / f"{name}.json"
        path.write_text(privopt.load(ROOT / "specs" / f"{name}.priv").solve().to_json())
        paths.append(str(path))
    _run_blocked(paths)


def _run_blocked(paths: list[str]) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.run(
        [sys.executable, "-c", BLOCKER, *paths], capture_output=True, text=True, env=env, cwd=ROOT, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["failed"] == [], report["failed"]
    assert report["loaded"] == [], report["loaded"]
