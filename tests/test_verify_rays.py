"""``privopt verify`` leaves no bound of a composite "taken as recorded" (issue 22): a split's point
where its block is infeasible is proven so by a Farkas ray of the block's LP there, re-checked in
exact rational arithmetic; a design branch that is infeasible is proven so by its recorded splits;
a randomized-response term inside a general split has its points' bounds re-derived from the
theorem; a result of an unknown method fails. Tampering with a ray, or moving it to a point with a
value, fails with exit 1 naming the block and the point; the result verifies with no solver
importable. Also: the exact arithmetic in integers (``verification.exact``) is the ``Fraction``
sum, and ``methods.farkas.ray`` proves an infeasible LP and nothing for a feasible one."""

from __future__ import annotations

import copy
import json
import math
import shutil
from fractions import Fraction
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp
from click.testing import CliRunner
from conftest import ROOT
from test_verify_composite import _failing, _verify, raised_point_fails
from test_verify_nosolver import _run_blocked

from privopt.backends import get_backend
from privopt.backends.base import LinearProgram
from privopt.cli import main
from privopt.methods.farkas import ray
from privopt.verification.exact import exact_lagrangian, farkas

# randomized response beside either an ordered release (an LP: the chosen branch, where rr's
# closed form is a term of a general split) or an unbiased mean, which no table meets below
# eps ~ 0.13 (the other branch: infeasible at every split of 0.1, each point proven by a ray)
THREE = """spec "randomized response beside an ordered release or an unbiased mean"
use "blocks/randomized_response.priv" as rr
use "blocks/ordered_release.priv" as ordered
use "blocks/arithmetic_mean.priv" as arith
param eps = 0.1
choose one of ordered, arith
subject to dp(rr, ordered, arith) <= eps
minimize rr.objective + ordered.objective + arith.objective
"""


@pytest.fixture(scope="module")
def three(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("three")
    (folder / "blocks").mkdir()
    for name in ("randomized_response", "ordered_release", "arithmetic_mean"):
        shutil.copy(ROOT / "specs" / "blocks" / f"{name}.priv", folder / "blocks")
    (folder / "three.priv").write_text(THREE)
    solved = CliRunner().invoke(main, ["solve", str(folder / "three.priv"), "--json"])
    assert solved.exit_code == 0, solved.output
    return json.loads(solved.stdout)


def _arith_rays(r: dict) -> dict:
    """The infeasible branch's certificates of block arith (its points' rays)."""
    evidence = r["optimality"]["branches"]["arith"]["result"]
    (cert,) = [c for c in evidence["splits"][0]["certificates"] if c and c["var"] == "arith.eps"]
    return cert


def test_an_infeasible_branch_and_a_closed_form_term_are_proven(three, tmp_path):
    checked = _verify(three, tmp_path)
    assert checked.exit_code == 0, checked.output
    out = checked.stdout
    assert "as recorded" not in out
    assert "ok    branch arith: infeasible, proven by its recorded splits" in out
    assert "ok    branch arith: split 1: block arith: each infeasible point proven by its Farkas ray" in out
    assert "ok    split 1: block rr: randomized response in closed form: each point's bound its exact value" in out
    cert = _arith_rays(three)
    points = three["optimality"]["branches"]["arith"]["result"]["splits"][0]["points"][1]
    assert cert["infeasible"] == list(range(len(points))) and cert["points"] == []  # every point, none feasible


@pytest.mark.parametrize(
    "change",
    [
        lambda v: v.__setitem__(0, -v[0]),  # one entry's sign
        lambda v: v.__setitem__(0, 1000 * v[0]),  # one entry scaled
        lambda v: v.__setitem__(slice(None), [-x for x in v]),  # the whole ray negated: never a proof
    ],
    ids=["sign", "scaled", "negated"],
)
def test_a_changed_ray_fails_naming_the_block_and_point(change, three, tmp_path):
    """The top point's ray: the others prove every budget below theirs infeasible (monotonicity),
    the top point's alone proves the branch's whole range infeasible."""
    r = copy.deepcopy(three)
    cert = _arith_rays(r)
    k = len(cert["infeasible"]) - 1
    change(cert["rays"][k]["values"])
    checked = _verify(r, tmp_path)
    assert checked.exit_code == 1, checked.output
    share = r["optimality"]["branches"]["arith"]["result"]["splits"][0]["points"][1][cert["infeasible"][k]][0]
    assert any(
        "block arith: each infeasible point proven by its Farkas ray" in line and f"share {share!r}" in line
        for line in _failing(checked)
    ), checked.stdout
    assert any("branch arith: infeasible, proven by its recorded splits" in line for line in _failing(checked))


def test_an_infeasible_branch_without_rays_is_not_proven(three, tmp_path):
    r = copy.deepcopy(three)
    cert = _arith_rays(r)
    cert["infeasible"], cert["rays"] = [], []
    checked = _verify(r, tmp_path)
    assert checked.exit_code == 1, checked.output
    assert any("branch arith: infeasible, proven by its recorded splits" in line for line in _failing(checked))


def test_a_raised_closed_form_point_fails_naming_it(three, tmp_path):
    raised_point_fails(
        copy.deepcopy(three),
        3,
        "block rr: randomized response in closed form: each point's bound its exact value",
        tmp_path,
    )


def test_an_unknown_method_fails(three, tmp_path):
    r = copy.deepcopy(three)
    r["method"] = "guess"
    checked = _verify(r, tmp_path)
    assert checked.exit_code == 1, checked.output
    assert any("method 'guess'" in line for line in _failing(checked)), checked.stdout


def test_the_rays_verify_with_no_solver_importable(three, tmp_path):
    path = tmp_path / "three.json"
    path.write_text(json.dumps(three))
    _run_blocked([str(path)])


def _fraction_lagrangian(lp, y) -> Fraction | None:
    """The reference: ``lagrangian_bound`` with a ``Fraction`` per entry."""
    y = np.asarray(y, dtype=float).copy()
    y[~np.isfinite(y) | ((y > 0) & ~np.isfinite(lp.row_lower)) | ((y < 0) & ~np.isfinite(lp.row_upper))] = 0.0
    total = Fraction(0)
    for i in np.flatnonzero(y).tolist():
        total += Fraction(float(y[i])) * Fraction(float(lp.row_lower[i] if y[i] > 0 else lp.row_upper[i]))
    A = sp.csc_array(lp.A)
    for j in range(A.shape[1]):
        r = Fraction(float(lp.c[j]))
        for k in range(A.indptr[j], A.indptr[j + 1]):
            r -= Fraction(float(A.data[k])) * Fraction(float(y[A.indices[k]]))
        if r:
            end = lp.col_lower[j] if r > 0 else lp.col_upper[j]
            if not math.isfinite(end):
                return None
            total += r * Fraction(float(end))
    return total


def test_exact_lagrangian_is_the_fraction_sum():
    """Random LPs whose floats span 600 orders of magnitude (subnormals included), with infinite
    sides and columns: the integer computation is the ``Fraction`` one, to the last bit."""
    rng = np.random.default_rng(7)
    for trial in range(200):
        m, n = (int(v) for v in rng.integers(1, 10, 2))
        A = sp.random(m, n, density=0.6, random_state=rng, format="csr")
        A.data *= 10.0 ** rng.integers(-300, 300, A.data.size) * rng.choice([-1, 1], A.data.size)
        lo = rng.normal(size=m) * 10.0 ** rng.integers(-20, 20, m)
        hi = lo + np.abs(rng.normal(size=m))
        lo[rng.random(m) < 0.2], hi[rng.random(m) < 0.2] = -np.inf, np.inf
        cu = np.abs(rng.normal(size=n))
        cu[rng.random(n) < 0.1] = np.inf
        c = rng.normal(size=n) * 10.0 ** rng.integers(-30, 30, n)
        if trial % 4 == 0:
            c = 5e-324 * rng.integers(-3, 3, n)  # subnormal
        y = rng.normal(size=m) * 10.0 ** rng.integers(-300, 300, m)
        y[rng.random(m) < 0.3] = 0.0
        lp = SimpleNamespace(c=c, A=A, row_lower=lo, row_upper=hi, col_lower=-np.abs(rng.normal(size=n)), col_upper=cu)
        assert exact_lagrangian(lp, y) == _fraction_lagrangian(lp, y), trial


def test_a_farkas_ray_proves_an_infeasible_lp_and_nothing_else():
    """x1 + x2 = 1 with x1 >= 0.7 and x2 >= 0.5 in [0, 1]^2 is infeasible by 0.2: the phase-1 duals
    prove it exactly; with x1 >= 0.3 it is feasible and no ray is returned."""
    A = sp.csc_array(np.array([[1.0, 1.0], [1.0, 0.0], [0.0, 1.0]]))

    def lp(low: float) -> LinearProgram:
        return LinearProgram(
            np.zeros(2), A, np.array([1.0, low, 0.5]), np.array([1.0, np.inf, np.inf]), np.zeros(2), np.ones(2)
        )

    y = ray(lp(0.7), get_backend("highs"))
    assert y is not None and farkas(lp(0.7), y) > 0
    assert abs(float(farkas(lp(0.7), y)) - 0.2) < 1e-12  # the phase-1 optimum: the least total violation
    assert farkas(lp(0.3), y) <= 0  # the same multipliers prove nothing once it is feasible
    assert ray(lp(0.3), get_backend("highs")) is None
