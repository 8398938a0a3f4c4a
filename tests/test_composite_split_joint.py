"""specs/blocks_joint_mixed.priv certified to 1e-6 (issue 21, item 6; docs/blocks.md, "A joint
group beside other blocks"): the joint Gaussian pair's term is its exact curve from one joint
solve (``gaussian.GroupCurve``, a closed form: refined at no solve each), so the split of eps = 2
between the pair and the count closes to 1e-6. Checked against an independent reference: the pair
by the paper's matrix-fractional program in cvxpy, the count by its own solve, minimized over a
dense grid of splits and then in one dimension."""

import json

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from tests.test_composite_gaussian import PAIRS, PREFIX, analytic_bound, reference
from tests.test_composite_gaussian_mixed import SPEC, _count


@pytest.fixture(scope="module")
def answer(composite_solved):
    return json.loads(composite_solved[SPEC.stem].json)  # solve SPEC --json, once per session (conftest)


@pytest.mark.slow  # reads the solve of blocks_joint_mixed (conftest.SLOW_SPECS)
def test_the_mixed_split_is_optimal_against_a_dense_reference(answer):
    assert answer["status"] == "optimal" and answer["optimality"]["gap"] <= 1e-6
    # the pair's value at eps: the cvxpy program at eps = 1, scaled by (D(1) / D(eps))^2 (every
    # constraint is homogeneous in the noise), the scaling checked against cvxpy at two budgets
    d1 = analytic_bound(1.0, 1e-6)
    at_one = reference([(PREFIX, 1.0), (PAIRS, 2.0)], d1, np.ones(4))

    def pair(eps: float) -> float:
        return at_one * (d1 / analytic_bound(eps, 1e-6)) ** 2

    for eps in (0.6, 1.7):
        assert pair(eps) == pytest.approx(
            reference([(PREFIX, 1.0), (PAIRS, 2.0)], analytic_bound(eps, 1e-6), np.ones(4)), rel=1e-6
        )

    def total(eps: float) -> float:
        return pair(eps) + 20 * _count(2.0 - eps)

    grid = np.linspace(0.2, 1.95, 36)
    k = int(np.argmin([total(e) for e in grid]))
    best = minimize_scalar(total, bounds=(grid[max(k - 1, 0)], grid[min(k + 1, 35)]), options={"xatol": 1e-7})
    ref = min(best.fun, total(grid[k]))
    assert answer["objective"] == pytest.approx(ref, rel=1e-6)
    assert answer["optimality"]["lower_bound"] <= ref * (1 + 1e-7)
