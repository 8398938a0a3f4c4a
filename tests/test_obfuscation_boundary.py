"""The unrestricted obfuscation optimum by the certified 1-D boundary search (issue 23, goal 5):
it equals the outer approximation (the other certified method) to 1e-8 and is never worse than a
grid, its lower bound is below every feasible value found, its interval bounds hold at every
point of the boundary, it answers eps = 1e-6 I(X; F) with a small fraction of the outer
approximation's leakage evaluations, and ``privopt check`` runs the outer approximation as a
cross-check. Feasibility is recomputed with the verifier's own formula (``verification.atoms``).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import privopt.lower.obfuscation as lo
from privopt.cli import main
from privopt.errors import UsageError
from privopt.lower.obfuscation import grid_channel, optimal_channel
from privopt.measures.obfuscation import _fingerprint, channel, max_leakage
from privopt.verification.atoms import leakage_bits, sheppard
from tests.conftest import SPECS, examples

BSC01 = [[0.9, 0.1], [0.1, 0.9]]
SKEWED_F = [[1.0, 0.0], [0.4, 0.6]]
NOISELESS_ROW = [[0.275390625, 0.724609375], [1.0, 0.0]]


def _at_floor(sol) -> bool:
    return sol.status == "gap_not_closed" and any("rounding floor" in n for n in sol.notes)


def _feasible(px1, F, sol, eps) -> bool:
    return leakage_bits(px1, channel(sol.p1, sol.p2), np.asarray(F, dtype=float)) <= eps * (1 + 1e-12)


@st.composite
def instances(draw):
    px1 = draw(st.one_of(st.sampled_from([0.5, 0.05, 0.95]), st.floats(0.02, 0.98)))
    entry = st.one_of(st.sampled_from([0.0, 1.0]), st.floats(1e-6, 1 - 1e-6))
    if draw(st.booleans()):
        q = draw(st.one_of(st.sampled_from([0.1, 0.01]), st.floats(1e-6, 0.45)))
        F = [[1 - q, q], [q, 1 - q]]
    else:
        a, b = draw(entry), draw(entry)
        F = [[1 - a, a], [b, 1 - b]]
    frac = draw(st.one_of(st.sampled_from([1e-4, 1e-2, 0.5, 0.999, 1 - 1e-6]), st.floats(0.01, 0.99)))
    return px1, F, frac


@settings(max_examples=examples(25, few=1), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_boundary_search_equals_the_outer_approximation(inst):
    px1, F, frac = inst
    imax = max_leakage(px1, F)
    eps = frac * imax
    b = optimal_channel(px1, F, eps)
    o = optimal_channel(px1, F, eps, search="outer")
    assert b.status == "optimal" or _at_floor(b)
    assert b.lower_bound <= b.q_value and b.gap == pytest.approx(b.q_value - b.lower_bound, abs=1e-15)
    assert b.gap <= (1e-9 if b.status == "optimal" else 1e-7)
    assert _feasible(px1, F, b, eps) and _feasible(px1, F, o, eps)
    # each certificate is below the other method's feasible value; both are within their gaps of Q*
    assert b.lower_bound <= o.q_value + 1e-12 and o.lower_bound <= b.q_value + 1e-12
    if b.status == o.status == "optimal":
        assert abs(b.q_value - o.q_value) <= 1e-8
    g = grid_channel(px1, F, eps, points=2001)
    assert b.lower_bound <= g.q_value + 1e-12 and b.q_value <= g.q_value + 1e-9


@pytest.mark.parametrize(
    "px1,F",
    [
        pytest.param(0.5, BSC01, marks=pytest.mark.slow),  # 9 s: the outer approximation's hundreds of cuts
        (0.9, BSC01),
        (0.7, SKEWED_F),
        (0.5, NOISELESS_ROW),
        (0.3, [[0.8, 0.2], [0.05, 0.95]]),
    ],
)
def test_tiny_eps_matches_the_outer_approximation_with_far_fewer_evaluations(px1, F):
    """eps = 1e-6 I(X; F): every boundary channel has nearly the same Q (I ~ C rho^2), the case
    that takes the outer approximation hundreds of cuts."""
    eps = 1e-6 * max_leakage(px1, F)
    b = optimal_channel(px1, F, eps)
    o = optimal_channel(px1, F, eps, search="outer")
    assert b.method == "boundary-search" and b.status == o.status == "optimal"
    assert b.gap <= 1e-9 and abs(b.q_value - o.q_value) <= 1e-8
    assert b.lower_bound <= o.q_value and o.lower_bound <= b.q_value
    assert _feasible(px1, F, b, eps)
    assert b.iterations <= 10 and b.evaluations < o.evaluations


def test_the_paper_setting_keeps_its_optimum():
    """Uniform P_X and BSC(0.1): the unrestricted optimum is the symmetric one (Fig. 5a), at
    eps = 0.2 (specs/obfuscation_bsc.priv: Q* = 0.138950634898)."""
    b = optimal_channel(0.5, BSC01, 0.2)
    s = optimal_channel(0.5, BSC01, 0.2, symmetric=True)
    assert b.status == "optimal" and round(b.q_value, 12) == 0.138950634898
    assert abs(b.q_value - s.q_value) <= 1e-9 and abs(b.p1 - 0.178755) < 1e-6 and abs(b.p2 - 0.178755) < 1e-6


@pytest.mark.parametrize("px1,F,frac", [(0.5, BSC01, 1e-6), (0.9, BSC01, 0.3), (0.7, SKEWED_F, 0.05)])
def test_interval_bounds_hold_everywhere_on_the_boundary(px1, F, frac):
    """The proof's step d: on each interval between grid points, phi* = u* / sqrt(s (1 - s)) is
    at most the interval's bound; checked at 50 points inside every interval of a coarse grid."""
    eps = frac * max_leakage(px1, F)
    pf, r = _fingerprint(px1, F)
    o = lo._Oracle(px1, pf, r)
    h = lo._Heights(o, eps)
    (sa, sca, _, _), (sb, scb, _, _) = lo._corners(o, eps, h)
    x = np.linspace(math.log(sa / sca), math.log(sb / scb), 17)
    s, sc = lo._expit(x), lo._expit(-x)
    _, hi, slope = h.solve(s, sc)
    ub = lo._interval_bounds(s, sc, hi, slope, px1)
    t = np.linspace(0.0, 1.0, 52)[1:-1]
    xs = (x[:-1, None] + (x[1:] - x[:-1])[:, None] * t[None, :]).ravel()
    low, _, _ = h.solve(lo._expit(xs), lo._expit(-xs))
    phi = (low / np.sqrt(lo._expit(xs) * lo._expit(-xs))).reshape(len(ub), -1)
    assert np.all(phi.max(axis=1) <= ub * (1 + 1e-12))
    assert np.all(ub <= phi.max(axis=1) * 1.5)  # not vacuous


def test_corners_lie_on_the_edges_and_on_the_curve():
    px1, F = 0.7, SKEWED_F
    eps = 0.3 * max_leakage(px1, F)
    pf, r = _fingerprint(px1, F)
    o = lo._Oracle(px1, pf, r)
    h = lo._Heights(o, eps)
    for k, (s, sc, u, (p1, p2)) in enumerate(lo._corners(o, eps, h)):
        assert (p1, p2)[k] == 0.0 and o.leak(p1, p2) <= eps
        # the coordinates (s, 1 - s, u) name the same point, to rounding
        q1, q2 = h.point(np.array(u), np.array(s), np.array(sc))
        assert (q1, q2)[k] == 0.0 and abs(q1 - p1) + abs(q2 - p2) <= 1e-15
        other = (p2 if k == 0 else p1) * (1 - 1e-9)  # a hair closer to the identity: infeasible
        assert o.leak(*((0.0, other) if k == 0 else (other, 0.0))) > eps


def test_an_edge_optimum_is_exact_and_certified():
    """The skewed instance's optimum never flips a 0 (p1 = 0): the corner is a grid point."""
    sol = optimal_channel(0.7, SKEWED_F, 0.1)
    assert sol.method == "boundary-search" and sol.status == "optimal"
    assert sol.p1 == 0.0 and 0.28 < sol.p2 < 0.281 and sol.gap <= 1e-9
    assert sol.q_value == pytest.approx(sheppard(0.7, sol.W), abs=1e-15)


def test_the_outer_approximation_answers_where_the_search_stops(monkeypatch):
    monkeypatch.setattr(lo, "BOUNDARY_ROUNDS", 1)
    eps = 1e-3 * max_leakage(0.5, BSC01)
    sol = optimal_channel(0.5, BSC01, eps)
    assert sol.status == "optimal" and sol.method == "outer-approximation" and sol.gap <= 1e-9
    assert any("boundary search stopped" in n for n in sol.notes)


def test_an_unknown_search_is_a_usage_error():
    with pytest.raises(UsageError, match="search must be one of boundary, outer"):
        optimal_channel(0.5, BSC01, 0.1, search="grid")


@pytest.mark.parametrize("spec", ["obfuscation_general", "obfuscation_bsc"])
def test_check_cross_checks_with_the_outer_approximation(spec):
    res = CliRunner().invoke(main, ["check", str(SPECS / f"{spec}.priv"), "--json"])
    assert res.exit_code == 0, res.output
    statuses = {p["method"]: p["status"] for p in json.loads(res.output)["paths"]}
    assert statuses["global"] == statuses["outer-approximation"] == "agrees"


def test_check_of_a_symmetric_spec_has_no_outer_route():
    res = CliRunner().invoke(main, ["check", str(SPECS / "obfuscation_symmetric.priv"), "--json"])
    assert res.exit_code == 0, res.output
    assert "outer-approximation" not in {p["method"] for p in json.loads(res.output)["paths"]}
