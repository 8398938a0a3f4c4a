"""Hostile inputs to the command line's own options and files (issue 19, items 2, 3 and 6, and
the signal and streaming problems): every option is checked on every route and for every
problem class, every file the CLI reads itself is refused at once when it is not a regular
file, sizes are checked before memory is allocated, SIGTERM while output streams ends with
"terminated" and exit 143, and ``python -m privopt`` is the console script."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import privopt
from privopt.errors import UsageError
from tests.conftest import SPECS

PRIVOPT = str(Path(sys.executable).parent / "privopt")

# one spec per problem class
CLASSES = {
    "transparency-report": SPECS / "atr_table4.priv",
    "mechanism": SPECS / "count_query_dp.priv",
    "shaped-noise": SPECS / "shaped_noise_means.priv",
    "noise-placement": SPECS / "noise_placement.priv",
    "obfuscation": SPECS / "obfuscation_bsc.priv",
}
AVAILABLE = "available: highs, scipy, cvxpy, pyomo"


def run(*args, timeout=120, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([PRIVOPT, *map(str, args)], capture_output=True, text=True, timeout=timeout, **kw)


def usage_error(r: subprocess.CompletedProcess, *words: str) -> None:
    """Exit 2, nothing on stdout, no traceback, and every one of ``words`` in the message."""
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert r.stdout == "" and "Traceback" not in r.stderr, r.stderr
    for w in words:
        assert w in r.stderr, (w, r.stderr)


# ----------------------------------------------------------------- item 2: every option checked


@pytest.mark.parametrize("name", ["nosuchsolver", "gurobi"])
@pytest.mark.parametrize("cls", list(CLASSES))
def test_an_unknown_backend_is_refused_for_every_class(cls, name):
    """Before: ignored with exit 0 where a closed form answers (transparency report, obfuscation)."""
    usage_error(run("solve", CLASSES[cls], "--backend", name), f"unknown backend '{name}'", AVAILABLE)


@pytest.mark.parametrize("cls", list(CLASSES))
def test_the_api_refuses_an_unknown_backend_in_the_same_words(cls):
    with pytest.raises(UsageError, match=f"unknown backend 'nosuch'; {AVAILABLE}"):
        privopt.load(CLASSES[cls]).solve(backend="nosuch")


@pytest.mark.parametrize("cls,applies", [
    ("transparency-report", "lfp, closed-form"), ("mechanism", "lp"), ("shaped-noise", "lp"),
    ("noise-placement", "conic"), ("obfuscation", "global"),
])
def test_a_method_that_does_not_apply_says_which_do(cls, applies):
    method = "qp" if cls != "mechanism" else "global"
    r = run("solve", CLASSES[cls], "--method", method)
    usage_error(r, f"method '{method}' does not apply", f"methods that apply to this problem: {applies}")


@pytest.mark.parametrize("cls,args,words", [
    ("transparency-report", ["--solver", "SCS"], "applies to backends with inner solvers (cvxpy), not 'highs'"),
    ("transparency-report", ["--backend", "cvxpy", "--solver", "NOPE"], "backend 'cvxpy' has no solver 'NOPE'"),
    ("obfuscation", ["--solver", "SCS"], "obfuscation problems are solved without a solver"),
    ("obfuscation", ["--backend", "cvxpy", "--solver", "NOPE"], "backend 'cvxpy' has no solver 'NOPE'"),
    ("noise-placement", ["--solver", "HIGHS"], "solver 'HIGHS' takes no second-order or PSD cones"),
    ("noise-placement", ["--backend", "highs"], "backend 'highs' does not solve conic programs"),
])
def test_a_solver_that_cannot_be_used_is_refused_before_solving(cls, args, words):
    """Before: ignored (closed forms, obfuscation) or a solver failure, exit 1, after the solve."""
    usage_error(run("solve", CLASSES[cls], *args), words)
