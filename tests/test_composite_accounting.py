"""Cross-checks of every composite spec's composition against peers (issue 21, item 2;
docs/blocks.md, "Cross-checks against dp-accounting and OpenDP").

For each dp(...) row of each specs/blocks_*.priv answer, the mechanisms its JSON's `composition`
reports (each part's eps, delta and, for Gaussian ones, the Mahalanobis sensitivity privopt
verified) are composed again by:

* OpenDP: each pure part as a Laplace measurement of scale 1 / eps_i on a sensitivity-1 query,
  composed by ``make_composition``: its privacy map gives the total eps (sum of eps_i).
* Google's dp-accounting, privacy loss distributions (PLD): each pure part as binary randomized
  response at eps_i (the dominating pair of every eps-DP mechanism, Kairouz, Oh & Viswanath
  2015), each Gaussian part as a Gaussian of noise multiplier 2 / Delta (replace-one neighbours
  count sensitivity 2 there): the composed eps at the row's delta is at most the row's eps.
* Balle & Wang (2018, Thm. 8), recomputed here with scipy: each Gaussian part's exact delta at
  its eps is at most its share of delta (the joint Gaussian accountant's one mechanism included).

The tolerances scale with the PLD's discretization (1e-4 per composed event) and with the eps."""

import json
import math

import pytest

from tests.conftest import SPECS, spec_params
from tests.test_composite_gaussian import analytic_delta

dpa = pytest.importorskip("dp_accounting")
dp = pytest.importorskip("opendp.prelude")

COMPOSED = [p for p in sorted(SPECS.glob("blocks_*.priv")) if "subject to dp(" in p.read_text()]
INTERVAL = 1e-4  # the PLD's value discretization (its default): its eps is pessimistic by at most about this per event


@pytest.mark.parametrize("spec", spec_params(COMPOSED))
def test_the_composition_against_dp_accounting_opendp_and_the_analytic_gaussian(spec, composite_solved):
    data = json.loads(composite_solved[spec.stem].json)  # solve SPEC --json, once per session (conftest)
    assert data["verification"]["passed"] and data["composition"]
    for row in data["composition"]:
        parts = [p for p in row["parts"] if p["eps"] is not None]  # a block not chosen releases nothing
        _reported(row, parts)
        _opendp(row, parts)
        _dp_accounting(row, parts)
        _analytic(parts)


def _reported(row: dict, parts: list[dict]) -> None:
    assert parts and row["accountant"] in ("pure", "basic", "gaussian")
    assert math.fsum(p["eps"] for p in parts) <= row["eps"] * (1 + 1e-12)
    assert math.fsum(p["delta"] for p in parts) <= row["delta"] * (1 + 1e-12)
    for p in parts:
        assert ("sensitivity" in p) == (p["mechanism"] in ("gaussian", "joint gaussian"))


def _opendp(row: dict, parts: list[dict]) -> None:
    """OpenDP composes the pure parts to their total (the row's eps when every part is pure)."""
    dp.enable_features("contrib")
    pure = [p for p in parts if p["mechanism"] == "pure"]
    if not pure:
        return
    space = dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float)
    composed = dp.c.make_composition([dp.m.make_laplace(*space, scale=1.0 / p["eps"]) for p in pure])
    assert composed.map(1.0) == pytest.approx(math.fsum(p["eps"] for p in pure), rel=1e-12)
    if len(pure) == len(parts):
        assert composed.map(1.0) <= row["eps"] * (1 + 1e-12)


def _dp_accounting(row: dict, parts: list[dict]) -> None:
    """The PLD accountant's eps at the row's delta is within the row's eps (pure rows: at delta
    0 it is the sum of the eps_i, pure composition being tight there)."""
    from dp_accounting.pld.pld_privacy_accountant import PLDAccountant

    accountant = PLDAccountant(dpa.NeighboringRelation.REPLACE_ONE, value_discretization_interval=INTERVAL)
    for p in parts:
        if "sensitivity" in p:
            accountant.compose(dpa.GaussianDpEvent(2.0 / p["sensitivity"]))
        else:
            assert p["delta"] == 0, "only pure parts and Gaussian parts are composed here"
            accountant.compose(dpa.RandomizedResponseDpEvent(2.0 / (math.exp(p["eps"]) + 1.0), 2))
    tol = len(parts) * INTERVAL + 1e-9 * row["eps"]
    if row["delta"] == 0:
        assert accountant.get_epsilon(0.0) == pytest.approx(math.fsum(p["eps"] for p in parts), abs=tol)
    assert accountant.get_epsilon(row["delta"]) <= row["eps"] + tol


def _analytic(parts: list[dict]) -> None:
    """Balle & Wang's exact delta of each Gaussian part at its eps and verified sensitivity is
    within its share of delta (the joint Gaussian accountant's group is one such part)."""
    for p in parts:
        if "sensitivity" in p:
            assert analytic_delta(p["sensitivity"], p["eps"]) <= p["delta"] * (1 + 1e-6)
