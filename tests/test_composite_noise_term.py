"""A lone noise-placement block inside a split, priced as a joint Gaussian group of one (issue 21;
docs/blocks.md, "A lone noise block in a split"; ``solve._noise_term``, ``Model.noise_group``).

The block of specs/noise_placement.priv (``A = [[1, 1, 0], [0, 1, 1]]``, x in [0, 1]^3, Gaussian
noise on the inputs and on the answers, the analytic calibration) has ``V(eps) = V1 / mu(eps)^2``
exactly: ``V1`` its noise program at sensitivity 1, written here in cvxpy
(tests/test_composite_gaussian ``reference``), and ``mu(eps)`` the analytic calibration's largest
sensitivity at (eps, delta) (Balle & Wang 2018, Thm. 8), found here by scipy's brentq on
``Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu) = delta``, not by privopt. Beside randomized
response (closed form), a count (an LP written here) and with a target on the noise block, the
reference optimum is bounded Brent over the noise block's share (``test_composite_references
.best_pair``). privopt must answer ``optimal`` within 1e-6 of it, with a lower bound at most it,
in a few block solves, and ``privopt verify`` must re-prove every point (nothing taken as
recorded); a changed certificate fails verify, naming the block."""

from __future__ import annotations

import functools
import json
import math

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import norm

import privopt
from tests.conftest import SPECS, invoke
from tests.test_composite_gaussian import reference as noise_reference
from tests.test_composite_references import best_pair, count_value, rr_value

A = np.array([[1.0, 1, 0], [0, 1, 1]])
DELTA = 1e-5
BUDGET = 2.0


def analytic_mu(eps: float, delta: float) -> float:
    """The largest sensitivity of a unit Gaussian mechanism at (eps, delta) (Balle & Wang, Thm. 8)."""

    def excess(mu: float) -> float:
        return norm.cdf(mu / 2 - eps / mu) - math.exp(eps) * norm.cdf(-mu / 2 - eps / mu) - delta

    return brentq(excess, 1e-9, 50.0, xtol=1e-15, rtol=1e-15)


@functools.cache
def _unit() -> float:
    return noise_reference([(A, 1.0)], 1.0, np.ones(3))


def noise_value(eps: float) -> float:
    return _unit() / analytic_mu(eps, DELTA) ** 2 if eps > 0 else math.inf


def _write(tmp_path, other: str | None, weight: float, target: float | None = None):
    (tmp_path / "np.priv").write_text((SPECS / "noise_placement.priv").read_text())
    lines = ['use "np.priv" as np']
    if other == "rr":
        (tmp_path / "rr.priv").write_text((SPECS / "randomized_response.priv").read_text())
    elif other == "count":
        (tmp_path / "count.priv").write_text((SPECS / "blocks" / "joint_count.priv").read_text())
    lines += [f'use "{other}.priv" as {other}', f"subject to dp(np, {other}) <= ({BUDGET}, {DELTA})"]
    if target is not None:
        lines.append(f"subject to np.objective <= {target}")
    lines.append(f"minimize np.objective + {weight} * {other}.objective")
    path = tmp_path / "mix.priv"
    path.write_text("\n".join(lines) + "\n")
    return path


def _reference(other: str, weight: float, target: float | None) -> float:
    value = {"rr": lambda e: rr_value(5, e), "count": lambda e: count_value(10, e)}[other]

    def total(e: float) -> float:
        return noise_value(e) + weight * value(BUDGET - e)

    # with a target, the noise block's least eps meeting it (its value decreases in eps)
    lo = 0.0 if target is None else brentq(lambda e: noise_value(e) - target, 1e-3, BUDGET, xtol=1e-15, rtol=1e-15)
    return best_pair(total, lo, BUDGET, points=161)


def _solve_and_verify(tmp_path, path):
    r = invoke("solve", path, "--json")
    assert r.exit_code == 0, r.output
    answer = json.loads(r.output)
    out = tmp_path / "r.json"
    out.write_text(r.output)
    return answer, out


CASES = [("rr", 100.0, None), ("count", 20.0, None), ("rr", 100.0, 15.0)]


@pytest.mark.parametrize(("other", "weight", "target"), CASES, ids=["beside-rr", "beside-count", "target"])
def test_a_noise_block_in_a_split_is_optimal_against_the_reference(tmp_path, other, weight, target):
    answer, out = _solve_and_verify(tmp_path, _write(tmp_path, other, weight, target))
    ref = _reference(other, weight, target)
    assert answer["status"] == "optimal" and answer["optimality"]["gap"] <= 1e-6, answer["optimality"]
    assert answer["objective"] == pytest.approx(ref, rel=1e-6)
    assert answer["optimality"]["lower_bound"] <= ref * (1 + 1e-9)
    # the block's term is one solve scaled (plus its answer's), not a solve per point
    assert answer["stats"]["block_solves"] <= 10 + (40 if other == "count" else 0), answer["stats"]
    cert = answer["splits"][0]["certificates"][0]
    assert cert["kind"] == "joint" and cert["var"] == "np.eps" and len(cert["duals"]) == 1
    assert (cert["least"] is not None) == (target is not None)
    # its row keeps a lone block's accountant and text
    part = answer["composition"][0]["parts"][0]
    assert part["blocks"] == ["np"] and part["mechanism"] == "gaussian"
    checked = invoke("verify", out)
    assert checked.exit_code == 0, checked.stdout
    assert "taken as recorded" not in checked.stdout
    assert "block np: each point's bound proven by its dual point" in checked.stdout


def _middle(r: dict) -> tuple[dict, int]:
    cert = r["splits"][0]["certificates"][0]
    return cert, len(cert["points"]) // 2


def _bound(r: dict) -> None:
    cert, i = _middle(r)
    cert["bound"][i] += 1e-3 * abs(cert["bound"][i])


def _weights(r: dict) -> None:
    cert, _ = _middle(r)
    cert["duals"][0]["weights"]["np"] *= 2  # the dual point re-read at another weight proves less


def _least(r: dict) -> None:
    cert, _ = _middle(r)
    cert["least"]["eps"] *= 1.5


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (_bound, ("block np", "bound proven by its dual point")),
        (_weights, ("block np",)),
        (_least, ("block np", "below the proven least share")),
    ],
    ids=["bound", "weights", "least"],
)
def test_tampering_with_the_noise_term_fails_verify_naming_the_block(tmp_path, change, words):
    _answer, out = _solve_and_verify(tmp_path, _write(tmp_path, "rr", 100.0, 15.0))
    r = json.loads(out.read_text())
    change(r)
    out.write_text(json.dumps(r))
    checked = invoke("verify", out)
    failed = [line for line in checked.stdout.splitlines() if line.startswith("FAIL")]
    assert checked.exit_code == 1, checked.stdout
    assert any(all(w in line for w in words) for line in failed), failed


def test_the_classic_calibration_keeps_its_closed_form(tmp_path):
    """A lone noise block under the classic calibration is not a group of one: its closed form
    ``k / eps^2`` prices it (``solve._curve``), as before."""
    (tmp_path / "np.priv").write_text((SPECS / "blocks" / "gaussian_pairs.priv").read_text())
    (tmp_path / "rr.priv").write_text((SPECS / "randomized_response.priv").read_text())
    path = tmp_path / "mix.priv"
    path.write_text(
        'use "np.priv" as np\nuse "rr.priv" as rr\nsubject to dp(np, rr) <= (1, 1e-5)\n'
        "minimize np.objective + 100 * rr.objective\n"
    )
    c = privopt.load(path)
    assert c.noise_group("np") is None and c.solos == ()
    assert c.solve().status == "optimal"
