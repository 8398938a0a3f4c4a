"""The (eps, delta) split of Gaussian blocks under the classic calibration
(privopt/composite/deltasplit.py; docs/blocks.md, "The split of delta"): the closed form against
scipy's minimize over both eps and delta, its dual bound below every feasible split, the row that
keeps the even split (a block at the calibration's eps cap), and ``privopt verify`` re-deriving
the split's bound and each block's delta."""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from privopt.composite import deltasplit
from tests.conftest import SPECS, invoke
from tests.conftest import strict_json as strict


def scipy_reference(c: list[float], eps: float, delta: float) -> float:
    """min sum_i c_i ln(1.25 / d_i) / e_i^2 over sum e_i = eps, sum d_i = delta, by scipy
    (Nelder-Mead then BFGS on a softmax of each split): independent of deltasplit's KKT."""
    n = len(c)

    def value(z: np.ndarray) -> float:
        e = eps * np.exp(z[:n] - z[:n].max()) / np.exp(z[:n] - z[:n].max()).sum()
        d = delta * np.exp(z[n:] - z[n:].max()) / np.exp(z[n:] - z[n:].max()).sum()
        return float(np.sum(np.asarray(c) * np.log(1.25 / d) / e**2))

    best = minimize(value, np.zeros(2 * n), method="Nelder-Mead", options={"xatol": 1e-12, "fatol": 0.0})
    for _ in range(3):
        best = minimize(value, best.x, method="BFGS", options={"gtol": 1e-13})
    return best.fun


@settings(max_examples=25, deadline=None)
@given(
    c=st.lists(st.floats(0.05, 50.0), min_size=2, max_size=4),
    eps=st.floats(0.1, 0.9),
    delta=st.sampled_from([1e-9, 1e-6, 1e-3, 0.05]),
)
def test_the_closed_form_matches_scipy_over_eps_and_delta(c, eps, delta):
    ln0 = [math.log(1.25e6)] * len(c)
    a = [ci * l0 for ci, l0 in zip(c, ln0)]  # the blocks' values measured at delta 1e-6
    s = deltasplit.classic_split(a, ln0, [10.0] * len(c), eps, delta)
    assert s is not None
    ref = scipy_reference(c, eps, delta)
    assert s.objective == pytest.approx(ref, rel=1e-6)
    assert s.lower_bound <= s.objective and (s.objective - s.lower_bound) <= 1e-9 * s.objective
    assert s.lower_bound <= ref * (1 + 1e-12)
    assert sum(s.shares) <= eps * (1 + 1e-12) and sum(s.deltas) <= delta * (1 + 1e-12)
    value = sum(ci * math.log(1.25 / d) / e**2 for ci, e, d in zip(c, s.shares, s.deltas))
    assert s.objective == pytest.approx(value, rel=1e-12)


@settings(max_examples=30, deadline=None)
@given(
    c=st.lists(st.floats(0.05, 50.0), min_size=2, max_size=3),
    lam=st.floats(1e-3, 1e4),
    nu=st.floats(0.0, 1e9),
    seed=st.integers(0, 2**16),
)
def test_the_dual_bound_is_below_every_feasible_split(c, lam, nu, seed):
    """Weak duality: at any (lam, nu) >= 0 the proven bound is below random feasible splits."""
    rng = np.random.default_rng(seed)
    bound = deltasplit.dual_bound(c, lam, nu, 0.8, 1e-5)
    for _ in range(50):
        e = 0.8 * rng.dirichlet(np.ones(len(c)))
        d = 1e-5 * rng.dirichlet(np.ones(len(c)))
        assert bound <= float(np.sum(np.asarray(c) * np.log(1.25 / d) / e**2)) * (1 + 1e-12)


def test_outside_its_proof_the_closed_form_gives_way():
    """A delta above 1.25 e^(-2/3) (the program is not convex there) or a share at its cap: None,
    the caller keeps the even split of delta."""
    ln0 = [math.log(1.25e6)] * 2
    assert deltasplit.classic_split([1.0, 30.0], ln0, [1.0, 1.0], 0.8, 0.7) is None
    assert deltasplit.classic_split([1.0, 30.0], ln0, [1.0, 1.0], 1.9, 2e-6) is None  # the second at eps cap 1
    with pytest.raises(ValueError):
        deltasplit.dual_bound([1.0, 2.0], 1.0, 1.0, 0.8, 0.7)


def _composite(tmp_path, bound: str) -> str:
    (tmp_path / "blocks").mkdir(exist_ok=True)
    for f in ("pairs", "totals"):
        (tmp_path / "blocks" / f"gaussian_{f}.priv").write_text((SPECS / "blocks" / f"gaussian_{f}.priv").read_text())
    spec = tmp_path / "c.priv"
    spec.write_text(
        'use "blocks/gaussian_pairs.priv" as pairs\nuse "blocks/gaussian_totals.priv" as totals\n'
        f"subject to dp(pairs, totals) <= {bound}\nminimize pairs.objective + totals.objective\n"
    )
    return str(spec)


def test_a_block_at_the_calibrations_cap_keeps_the_even_split_and_says_so(tmp_path):
    """At eps = 1.9 the cube-root law would give totals more than 1, where the classic calibration
    is not proven: eps is split with the cap, delta evenly, and the JSON and text say so."""
    spec = _composite(tmp_path, "(1.9, 2e-6)")
    data = strict(invoke("solve", spec, "--json").stdout)
    (row,) = data["composition"]
    assert row["delta_split"] == "evenly" and [p["delta"] for p in row["parts"]] == [1e-6, 1e-6]
    assert "deltas" not in data["splits"][0]
    assert data["blocks"]["totals"]["params"]["eps"] == pytest.approx(1.0)
    assert "delta split evenly" in invoke("solve", spec).stdout


def test_the_text_and_json_say_how_delta_was_split():
    r = invoke("solve", SPECS / "blocks_gaussian.priv", "--json")
    data = strict(r.stdout)
    (rec,) = data["splits"]
    assert rec["delta_budget"] == 2e-6 and sum(rec["deltas"]) == pytest.approx(2e-6, rel=1e-12)
    assert rec["delta_multiplier"] > 0
    assert [data["blocks"][n]["params"]["delta"] for n in ("pairs", "totals")] == rec["deltas"]
    text = invoke("solve", SPECS / "blocks_gaussian.priv").stdout
    assert "delta split optimized with eps" in text and "pairs gaussian (0.208841, 4.92226e-07)" in text


@pytest.fixture(scope="module")
def solved() -> dict:
    r = invoke("solve", SPECS / "blocks_gaussian.priv", "--json")
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def _verify(result: dict, tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(result))
    return invoke("verify", path)


def test_verify_re_derives_the_delta_split(solved, tmp_path):
    r = _verify(solved, tmp_path)
    assert r.exit_code == 0, r.output
    assert "composition: pairs delta share" in r.stdout and "split 1 (pairs.eps, totals.eps) lower bound" in r.stdout


@pytest.mark.parametrize(
    "change, named",
    [
        (lambda r: r["splits"][0]["deltas"].reverse(), "delta share"),  # the record's deltas swapped
        (lambda r: r["splits"][0].pop("deltas"), "delta share"),  # an even split's bound claimed
        (lambda r: r["splits"][0].__setitem__("lower_bound", r["objective"] * 1.001), "lower bound"),
        (lambda r: r["optimality"].__setitem__("lower_bound", r["objective"] * 1.001), "lower bound"),
    ],
)
def test_a_tampered_delta_split_fails_named(change, named, solved, tmp_path):
    tampered = copy.deepcopy(solved)
    change(tampered)
    r = _verify(tampered, tmp_path)
    assert r.exit_code == 1, r.output
    assert any(named in line for line in r.stdout.splitlines() if line.startswith("FAIL")), r.stdout
