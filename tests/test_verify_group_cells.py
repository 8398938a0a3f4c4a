"""A joint Gaussian group's term of a split bounded at second order inside its cells, and what
``privopt verify`` re-derives of it (privopt/composite/groupcells.py, closedcells.py;
privopt/certify/cells.py, ``GroupProofs``; docs/blocks.md, "How far the split's bound closes" and
"What verify re-derives for a joint program").

* the calibration's slope bounds (``groupcells.slopes``): on random (eps, delta) cells, ``s(eps) =
  mu(eps)^2`` from the calibration's own root finder lies between ``s2 - m (e2 - eps)`` and ``s1 + M
  (eps - e1)`` at many points, with a slack of second order;
* a group's cell bounds: below the exact curve ``A + P / s(eps)`` with an error that quarters when
  the cell is halved, and below the cvxpy reference program with the target as a constraint at
  random interior points (slow: each point is a conic solve);
* randomized response's closed-form cells (``closedcells.RRDual``): below the closed form, second
  order;
* verify on specs/blocks_joint_mixed_target.priv (slow: it reads that spec's solve): nothing is
  taken as recorded, and a changed price ``lam``, sensitivity bound, point bound, dual point,
  least share, cell piece or randomized response's ``k`` fails with exit 1, naming the term and
  the cell."""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import privopt
from privopt.composite import gaussian
from privopt.composite.closedcells import RRDual
from privopt.composite.groupcells import GroupDual, mu_bounds, mu_holds, slopes
from privopt.composite.split import Term, recheck, split
from privopt.measures.gaussian import max_sensitivity
from tests.conftest import SPECS, examples, invoke
from tests.test_composite_gaussian_joint import TARGET, _pair_with_target

SPEC = SPECS / "blocks_joint_mixed_target.priv"
TERM = "joint Gaussian (prefix, pairs)"


@settings(max_examples=examples(40, few=10), deadline=None)
@given(
    e1=st.floats(0.02, 6.0),
    width=st.floats(1e-4, 0.5),
    log_delta=st.floats(-25.0, -3.0),
    calibration=st.sampled_from(["analytic", "classic"]),
)
def test_the_squared_sensitivity_stays_within_its_slope_bounds(e1, width, log_delta, calibration):
    delta = math.exp(log_delta)
    e2 = e1 + width
    lo1, hi1 = mu_bounds(e1, delta, calibration)
    lo2, hi2 = mu_bounds(e2, delta, calibration)
    assert all(mu_holds(e1, delta, calibration, lo1, hi1)) and all(mu_holds(e2, delta, calibration, lo2, hi2))
    small, big = slopes(e1, e2, lo1, hi2, delta, calibration)
    assert 0 < small <= big < math.inf
    for k in range(1, 16):
        eps = e1 + width * k / 16
        s = max_sensitivity(eps, delta, calibration) ** 2  # the calibration's own root finder
        above = hi1 * hi1 + big * (eps - e1) - s
        below = hi2 * hi2 - small * (e2 - eps) - s
        rounding = 1e-12 * hi2 * hi2
        assert above >= -rounding and below >= -rounding
        # second order: the slack is the slopes' spread over the cell times the distance, plus the
        # ceilings' own 2^-40
        assert above <= (big - small) * (eps - e1) + (hi1 * hi1 - lo1 * lo1) + rounding
    # the spread closes with the width (the slopes at both ends agree in the limit)
    if width < 1e-3:
        assert big - small <= 0.05 * big


def _curve_dual(A: float, P: float, eps: float, delta: float) -> GroupDual:
    lo, hi = mu_bounds(eps, delta, "analytic")
    s1 = hi * hi
    return GroupDual(eps, delta, "analytic", A + P / s1, P / (s1 * s1), (lo, hi), {})


def _exact(A: float, P: float, eps: float, delta: float) -> float:
    return A + P / max_sensitivity(eps, delta, "analytic") ** 2


@settings(max_examples=examples(25, few=8), deadline=None)
@given(e1=st.floats(0.1, 4.0), width=st.floats(0.01, 0.2), A=st.floats(0.0, 100.0), P=st.floats(0.01, 50.0))
def test_a_group_cell_is_below_its_curve_and_second_order(e1, width, A, P):
    """The group without targets is exactly ``A + P / s(eps)`` (homogeneity): each end's line is
    below it across the cell, they meet at the cut, and halving a narrow cell about quarters the
    error."""
    delta = 1e-6

    def worst(h: float) -> float:
        left, right = _curve_dual(A, P, e1, delta), _curve_dual(A, P, e1 + h, delta)
        k = min(max(left.kink(right), e1), e1 + h)
        err = 0.0
        for j in range(1, 8):
            x = e1 + h * j / 8
            bound = left.cell(x)[0] if x <= k else right.cell(x)[0]
            truth = _exact(A, P, x, delta)
            assert bound <= truth + 1e-9 * max(1.0, truth)
            err = max(err, truth - bound)
        return err

    worst(width)  # below the curve on any cell (the assertion inside)
    # the rate where the cell is narrow beside its position: a cell wider than a quarter of its
    # lower end sees the calibration's curvature change across it (eps 0.1, width 0.2: halving
    # it keeps 0.9 of the error, the next halvings 0.45, 0.32, 0.22, tending to 1/4)
    h = min(width, e1 / 4)
    big, half = worst(h), worst(h / 2)
    assert half <= 0.4 * big + 1e-9 * (A + P)  # first order would halve it


@settings(max_examples=examples(25, few=8), deadline=None)
@given(k=st.integers(2, 20), w=st.floats(0.1, 1000.0), y=st.floats(0.0, 4.0), h=st.floats(0.01, 0.2))
def test_randomized_response_cells_are_below_the_closed_form_and_second_order(k, w, y, h):
    def worst(width: float) -> float:
        left, right = RRDual(k, w, 0.0, 1.0, y), RRDual(k, w, 0.0, 1.0, y + width)
        cut = min(max(left.kink(right), y), y + width)
        err = 0.0
        for j in range(1, 8):
            x = y + width * j / 8
            bound = left.cell(x)[0] if x <= cut else right.cell(x)[0]
            assert bound <= left.value(x) + 1e-12 * w
            err = max(err, left.value(x) - bound)
        return err

    assert worst(h / 2) <= 0.4 * worst(h) + 1e-12 * w  # first order would halve it


def test_a_changed_sensitivity_bound_does_not_hold():
    lo, hi = mu_bounds(1.5, 1e-6, "analytic")
    assert mu_holds(1.5, 1e-6, "analytic", lo, hi) == (True, True)
    assert mu_holds(1.5, 1e-6, "analytic", lo * (1 + 1e-9), hi) == (False, True)
    assert mu_holds(1.5, 1e-6, "analytic", lo, lo) == (True, False)


@pytest.mark.slow  # each example is two joint programs with the target and three cvxpy references
@settings(max_examples=examples(3, few=2), deadline=None)
@given(
    e1=st.floats(1.3, 2.2), width=st.floats(0.01, 0.3), where=st.lists(st.floats(0.05, 0.95), min_size=2, max_size=3)
)
def test_a_target_cell_is_below_the_reference_program_inside(e1, width, where):
    """The target spec's group: the certificates at ``e1`` and ``e1 + width`` (the joint program
    with prefix <= 80 as a row, solved and certified by privopt) bound the program's value inside
    the cell from below; the reference is that program written in cvxpy (the paper's matrix-
    fractional form) at each interior eps."""
    c = privopt.load(SPEC)
    group = c.group_of("prefix")
    ends = []
    for eps in (e1, e1 + width):
        at = gaussian._target_point(c, group, eps, {})
        ends.append(gaussian.point_dual(c, group, at.record, eps, at.value))
        assert ends[-1] is not None and ends[-1].bound <= at.value
    for f in where:
        x = e1 + width * f
        truth = _pair_with_target(x, TARGET)
        assert max(ends[0].cell(x)[0], ends[1].cell(x)[0]) <= truth * (1 + 1e-8)


# ---------------------------------------------------------------- verify on the spec's result


@pytest.fixture(scope="module")
def solved(composite_solved) -> dict:
    return json.loads(composite_solved[SPEC.stem].json)  # solve SPEC --json, once per session (conftest)


def _verify(result: dict, tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(result))
    return invoke("verify", path)


def _failed(checked, *words: str) -> bool:
    return checked.exit_code == 1 and any(
        line.startswith("FAIL") and all(w in line for w in words) for line in checked.stdout.splitlines()
    )


@pytest.mark.slow  # reads the solve of blocks_joint_mixed_target (conftest.SLOW_SPECS)
def test_the_spec_is_optimal_and_verifies_with_nothing_taken_as_recorded(solved, tmp_path):
    assert solved["status"] == "optimal" and solved["optimality"]["gap"] <= 1e-6
    group, rr = solved["splits"][0]["certificates"]
    assert group["kind"] == "joint" and rr["kind"] == "randomized-response"
    assert group["least"] is not None and len(group["duals"]) == len(group["points"])
    checked = _verify(solved, tmp_path)
    assert checked.exit_code == 0, checked.stdout
    assert "taken as recorded" not in checked.stdout
    assert f"{TERM}: each point's price of the sensitivity" in checked.stdout


def _middle(r) -> tuple[dict, int, int]:
    """The group term's certificates, a certified point's position among them, and its index."""
    cert = r["splits"][0]["certificates"][0]
    i = len(cert["points"]) // 2
    return cert, i, cert["points"][i]


def _lam(r):
    cert, i, _ = _middle(r)
    cert["lam"][i] *= 1.001


def _mu_hi(r):
    cert, i, _ = _middle(r)
    cert["mu"][i][1] = cert["mu"][i][0]  # the root itself: private, not a ceiling


def _mu_lo(r):
    cert, i, _ = _middle(r)
    cert["mu"][i][0] = cert["mu"][i][1] * (1 + 1e-6)


def _point_bound(r):
    _cert, _i, j = _middle(r)
    p = r["splits"][0]["points"][0][j]
    p[2] += 1e-3 * abs(p[2])


def _cert_bound(r):
    cert, i, _ = _middle(r)
    cert["bound"][i] += 1e-3 * abs(cert["bound"][i])


def _dual_point(r):
    cert, i, _ = _middle(r)
    record = cert["duals"][cert["dual"][i]]
    record["Y"][0] = [-y for y in record["Y"][0]]  # (scaling Y or mu keeps the bound: dual_bound rescales)


def _least(r):
    cert = r["splits"][0]["certificates"][0]
    cert["least"]["eps"] *= 1.5


def _piece(r):
    cert, i, j = _middle(r)
    r["splits"][0]["cell_bounds"][0][j][0][3] += 1.0


def _rr_k(r):
    r["splits"][0]["certificates"][1]["k"] += 1


@pytest.mark.slow  # reads the solve of blocks_joint_mixed_target (conftest.SLOW_SPECS)
@pytest.mark.parametrize(
    ("change", "words"),
    [
        (_lam, (TERM, "price", "cells [")),
        (_mu_hi, (TERM, "sensitivity bounds", "mu_hi", "cells [")),
        (_mu_lo, (TERM, "sensitivity bounds", "mu_lo", "cells [")),
        (_point_bound, (TERM, "bound proven by its dual point", "cells [")),
        (_cert_bound, (TERM, "bound proven by its dual point", "cells [")),
        (_dual_point, ("split 1",)),
        (_least, (TERM, "below the proven least share")),
        (_piece, ("split 1", TERM, "cell [")),
        (_rr_k, ("block rr", "k and weight")),
    ],
    ids=["lam", "mu-hi", "mu-lo", "point-bound", "cert-bound", "dual-point", "least-share", "piece", "rr-k"],
)
def test_tampering_with_a_group_cell_fails_named(change, words, solved, tmp_path):
    r = copy.deepcopy(solved)
    change(r)
    checked = _verify(r, tmp_path)
    assert _failed(checked, *words), checked.stdout


@pytest.mark.parametrize(("budget", "ks"), [(1.5, (5, 8)), (2.5, (5, 5)), (3.0, (3, 9))])
def test_a_split_of_concave_closed_forms_closes_by_branching(budget, ks):
    """Two randomized-response terms where they are concave (below ln(k - 1)): the Lagrangian keeps
    a duality gap there, the branch and bound over the shares (``split._branch``) closes it with
    their second-order cells; against a dense enumeration of the closed forms, and re-derived by
    ``recheck`` from the recorded points and pieces."""
    weights = (1000.0, 600.0)

    def term(k: int, w: float) -> Term:
        def oracle(y: float) -> tuple:
            d = RRDual(k, w, 0.0, 1.0, y)
            return d.value(y), d.value(y), d

        return Term(oracle, budget)

    s = split([term(k, w) for k, w in zip(ks, weights)], budget, rtol=1e-6, max_calls=4000)
    grid = np.linspace(0.0, budget, 200_001)
    values = sum(w * (k - 1) / (np.exp(y) + k - 1) for k, w, y in zip(ks, weights, (grid, budget - grid)))
    ref = float(values.min())
    assert s.gap <= 1e-6
    assert s.objective == pytest.approx(ref, rel=1e-6) and s.lower_bound <= ref * (1 + 1e-12)
    assert recheck(s, [budget, budget], budget) == pytest.approx(s.lower_bound, rel=1e-12)
