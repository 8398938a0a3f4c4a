"""Which measures a mechanism result shows follows the problem's math, not the role a
variable is spelled with (issue 11, B): a randomized response on a ``private`` input shows the
same measures as on a ``data`` one, and the squared error sum_x E[(y - x)^2 | x] appears only
where the objective is that loss."""

import numpy as np
import pytest

import privopt
from tests.conftest import SPECS

RR = (SPECS / "randomized_response.priv").read_text()
SQUARED = "sum_x E[(Y - X)^2 | X]"


SKEWED = "known P(X) = {1: 0.4, 2: 0.3, 3: 0.15, 4: 0.1, 5: 0.05}"


def _rr(
    role: str, labels: str = "{v1, v2, v3, v4, v5}", objective: str = "tv(X, Y)", prior: str | None = None
) -> privopt.Problem:
    text = RR.replace("var X : data {v1, v2, v3, v4, v5}", f"var X : {role} {labels}")
    if prior is not None:
        text = text.replace("known P(X) = uniform", prior)
    return privopt.loads(text.replace("minimize tv(X, Y)", f"minimize {objective}"))


def _same_measures(data, private):
    assert data.objective == pytest.approx(private.objective, abs=1e-12)
    assert list(data.measures) == list(private.measures)
    for key, value in data.measures.items():
        assert private.measures[key] == pytest.approx(value, abs=1e-9), key


@pytest.mark.parametrize(
    ("labels", "prior"), [("{v1, v2, v3, v4, v5}", None), ("{1, 2, 3, 4, 5}", None), ("{1, 2, 3, 4, 5}", SKEWED)]
)
def test_randomized_response_measures_do_not_depend_on_the_role(labels, prior):
    _same_measures(_rr("data", labels, prior=prior).solve(), _rr("private", labels, prior=prior).solve())


@pytest.mark.parametrize("objective", ["E[|X - Y|]", "E[(X - Y)^2]"])
def test_distortion_measures_do_not_depend_on_the_role(objective):
    data = _rr("data", "{1, 2, 3, 4, 5}", objective).solve()
    _same_measures(data, _rr("private", "{1, 2, 3, 4, 5}", objective).solve())


def test_randomized_response_shows_utility_and_privacy_of_its_input():
    """tv, I and H for the pair (X, Y); the privacy of X through Y (its budget's eps, the
    log-lift, the largest posterior) whatever X's role."""
    r = _rr("private").solve()
    m = r.measures
    for key in (
        "tv(X, Y)",
        "I(X;Y) bits",
        "H(X) bits",
        "max |P(Y) - P(X)|",
        "ldp(X -> Y)",
        "loglift(X -> Y)",
        "max P(X | Y)",
        "max P(X)",
    ):
        assert key in m, key
    k, eps = 5, 1.0
    assert m["tv(X, Y)"] == pytest.approx(r.objective, abs=1e-12)
    assert m["tv(X, Y)"] == pytest.approx((k - 1) / (np.e**eps + k - 1), abs=1e-9)  # Kairouz et al.
    assert m["ldp(X -> Y)"] == pytest.approx(eps, abs=1e-7)
    assert m["H(X) bits"] == pytest.approx(np.log2(k), abs=1e-12)
    assert m["max P(X)"] == pytest.approx(1 / k, abs=1e-12)
    assert m["max P(X | Y)"] == pytest.approx(np.e / (np.e + k - 1), abs=1e-7)  # the diagonal of k-RR, uniform prior


@pytest.mark.parametrize("role", ["data", "private"])
def test_squared_error_is_absent_where_it_means_nothing(role):
    """Numeric labels on both sides, but the objective is a tv, an absolute error, or a squared
    error weighted by a prior that is not uniform: the unweighted sum_x E[(y - x)^2 | x] is
    not what is asked for (under a uniform prior E[(X - Y)^2] is 1/5 of it, and it shows)."""
    for objective, prior in [("tv(X, Y)", None), ("E[|X - Y|]", None), ("E[(X - Y)^2]", SKEWED)]:
        m = _rr(role, "{1, 2, 3, 4, 5}", objective, prior).solve().measures
        assert not any(k.startswith("sum_x E[") for k in m), (objective, sorted(m))
    r = _rr(role, "{1, 2, 3, 4, 5}", "E[(X - Y)^2]").solve()
    assert r.measures[SQUARED] == pytest.approx(5 * r.objective, rel=1e-9)


def test_count_query_shows_no_squared_error():
    """E[|n - y|] under a uniform prior: no squared error, and the privacy of n (the source of
    the DP budget) through y over all pairs, beside the budget's own adjacent-pairs eps."""
    m = privopt.load(SPECS / "count_query_dp.priv").solve().measures
    assert not any(k.startswith("sum_x E[") for k in m), sorted(m)
    assert "E[d(n, y)]" in m and "dp(n -> y) over adjacent pairs" in m
    assert m["ldp(n -> y)"] >= m["dp(n -> y) over adjacent pairs"] - 1e-9  # all pairs: at least the adjacent ones


@pytest.mark.parametrize(
    "spec", ["shaped_noise_means.priv", "shaped_noise_sweep.priv", "shaped_noise_soft_moments.priv"]
)
def test_squared_error_shows_where_it_is_the_objective(spec):
    """Ramon & Basu's loss: the objective (or, beside a penalty, its linear part) is
    sum(x, y: f * (x - y)^2), so the measure is the objective's squared-error part."""
    r = privopt.load(SPECS / spec).solve()
    m = r.measures
    squares = m.get("weighted squares (penalty part of the objective)", 0.0)
    assert m["sum_x E[(y - x)^2 | x]"] + squares == pytest.approx(r.objective, rel=1e-9, abs=1e-9)


def test_squared_error_shows_for_a_scaled_loss():
    """A positive multiple of the loss (a mean over x instead of a sum) is still that loss."""
    text = (
        (SPECS / "shaped_noise_means.priv")
        .read_text()
        .replace("minimize sum(x, y: f * (x - y)^2)", "minimize sum(x, y: 0.2 * f * (x - y)^2)")
    )
    r = privopt.loads(text).solve()
    assert r.measures["sum_x E[(y - x)^2 | x]"] == pytest.approx(5 * r.objective, rel=1e-9)


def test_squared_error_absent_for_another_linear_objective():
    text = (
        (SPECS / "shaped_noise_means.priv")
        .read_text()
        .replace("minimize sum(x, y: f * (x - y)^2)", "minimize sum(x, y: f * (x - y)^2 * x)")
    )
    m = privopt.loads(text).solve().measures
    assert not any(k.startswith("sum_x E[") for k in m), sorted(m)


def test_sanitization_measures_unchanged_by_the_role_rule():
    """S private, X data, Y over X: the utility of (X, Y) and the privacy of S; X is not
    protected (not private, no budget on it), so no privacy measures of X through Y."""
    m = privopt.load(SPECS / "sanitize_nonmarkov_tv.priv").solve().measures
    assert "ldp(S -> Y)" in m and "I(X;Y) bits" in m and "max P(S | Y)" in m
    assert "max P(X | Y)" not in m and "loglift(X -> Y)" not in m and "ldp(X -> Y)" not in m
