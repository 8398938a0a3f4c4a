"""Chen, Golubchik & Pal (2022), Sec. 8, Table 4: the worked example, by both methods."""

import numpy as np
import pytest

import privopt
from tests.conftest import SPECS


@pytest.fixture(scope="module")
def problem():
    return privopt.load(SPECS / "atr_table4.priv")


@pytest.mark.parametrize("method", ["closed-form", "lfp"])
def test_table4_optimum(problem, method):
    r = problem.solve(method=method)
    assert r.status == "optimal"
    assert r.beta == pytest.approx(0.675, abs=1e-9)
    g = r.groups.set_index("gender")
    assert g.loc["F", "beta"] == pytest.approx(0.675, abs=1e-9)
    assert g.loc["M", "beta"] == pytest.approx(0.2025 / 0.3175, abs=1e-9)
    # the trade-off region of Sec. 8: [beta_min, C*] = [0.6, 1] (F) and [0.45, 0.72] (M)
    assert g.loc["F", "beta_min"] == pytest.approx(0.6)
    assert g.loc["F", "c_star"] == pytest.approx(1.0)
    assert g.loc["M", "beta_min"] == pytest.approx(0.45)
    assert g.loc["M", "c_star"] == pytest.approx(0.72)
    dt = r.table("Dt")
    approve = dt[dt.decision == "approve"].set_index(["gender", "income"])["value"]
    # male: the unique beta_0 solution 1 - D~_0,max' = [0.1, 0.4, 0.9]
    np.testing.assert_allclose(approve.loc["M"].loc[["low", "mid", "high"]].to_numpy(), [0.1, 0.4, 0.9], atol=1e-9)


def test_female_solution_meets_every_constraint(problem):
    """The beta_p solution is not unique: check the returned one against the definitions."""
    r = problem.solve()
    dt = r.table("Dt").set_index(["gender", "income", "decision"])["value"]
    D = {"low": 0.0, "mid": 0.0, "high": 1.0}
    p = {"low": 0.3, "mid": 0.125, "high": 0.075}
    for inc in D:
        assert abs(dt[("F", inc, "approve")] - D[inc]) <= 0.1 + 1e-12  # delta-fidelity, Def. 5
        assert dt[("F", inc, "approve")] + dt[("F", inc, "deny")] == pytest.approx(1.0)
    for a in ("deny", "approve"):
        den = sum(p[i] * dt[("F", i, a)] for i in p)
        conf = max(p[i] * dt[("F", i, a)] / den for i in p)
        assert conf <= 0.675 + 1e-9
    g = r.groups.set_index("gender")
    assert g.loc["F", "case"] == "beta_p" and g.loc["M", "case"] == "beta_0"


def test_min_uncertainty_is_minus_log_beta():
    r = privopt.load(SPECS / "atr_min_uncertainty.priv").solve()
    assert r.objective == pytest.approx(-np.log(0.675), abs=1e-12)
    assert r.beta == pytest.approx(0.675)


def test_set_overrides_param(problem):
    loose = privopt.load(SPECS / "atr_table4.priv", params={"delta": "0"}).solve()
    # with no fidelity constraint the optimum is Lemma 5's floor: max(0.6, 0.45)
    assert loose.beta == pytest.approx(0.6, abs=1e-12)
    tight = privopt.load(SPECS / "atr_table4.priv", params={"delta": 1}).solve()
    assert tight.beta == pytest.approx(1.0)  # Lemma 4: D itself, C* = 1 for F
