"""Slow end-to-end checks against independent references (``pytest -m slow``; tens of seconds).

A large random three-outcome ATR spec (data from CSV files, 3,000 QID groups) goes through the
whole path: load -> lfp -> verification -> Result. The answer is then checked without privopt's
code: the released table is measured with plain numpy (Chen et al. Def. 3: a group's max
confidence is max over outcomes a and private values s of p_s D~[s, a] / sum_s' p_s' D~[s', a]),
and for a random sample of groups the optimum is recomputed by a per-group bisection on beta
whose feasibility question, "is there a table in the fidelity box with
p_s D~[s, a] <= beta sum_s' p_s' D~[s', a] for every s and a?", is one small LP (scipy's
``linprog``, one group at a time, a formulation privopt does not use).
"""

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import linprog

import privopt

pytestmark = pytest.mark.slow

DECISIONS = ("deny", "refer", "approve")
# rows of the true decision mapping D, each summing to 1 exactly in decimal
D_ROWS = np.array([[1, 0, 0], [0.8, 0.2, 0], [0.5, 0.25, 0.25], [0, 0.5, 0.5], [0.2, 0.3, 0.5], [0, 0, 1]])
DELTA = 0.85
SIZES = (20, 15, 10)  # public a, b, c: 3,000 QID groups


def _write_instance(folder, rng, sizes=SIZES, private=4):
    """A spec over public a, b, c (prod(sizes) groups), private income, three decisions."""
    axes = [np.arange(n) for n in sizes] + [np.arange(private)]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 4)
    cols = {
        "a": [f"a{i}" for i in grid[:, 0]],
        "b": [f"b{i}" for i in grid[:, 1]],
        "c": [f"c{i}" for i in grid[:, 2]],
        "income": [f"i{i}" for i in grid[:, 3]],
    }
    counts = rng.integers(0, 60, size=len(grid))
    pd.DataFrame(cols | {"population": counts}).to_csv(folder / "people.csv", index=False)
    D = D_ROWS[rng.integers(0, len(D_ROWS), size=len(grid))]
    rules = pd.DataFrame({k: np.repeat(v, 3) for k, v in cols.items()})
    rules["decision"] = np.tile(DECISIONS, len(grid))
    rules["rate"] = D.ravel()
    rules.to_csv(folder / "rules.csv", index=False)
    labels = lambda prefix, n: ", ".join(f"{prefix}{i}" for i in range(n))  # noqa: E731
    (folder / "big.priv").write_text(
        f"""spec "random three-outcome report"
var a : public {{{labels("a", sizes[0])}}}
var b : public {{{labels("b", sizes[1])}}}
var c : public {{{labels("c", sizes[2])}}}
var income : private {{{labels("i", private)}}}
var decision : outcome {{{", ".join(DECISIONS)}}}
known P(a, b, c, income) = counts from "people.csv" column population
known D = P(decision | a, b, c, income) from "rules.csv" column rate
design Dt = P(decision | a, b, c, income)
param delta = {DELTA}
subject to |Dt - D| <= 1 - delta
minimize max_confidence(a, b, c, decision -> income)
"""
    )
    groups = int(np.prod(sizes))
    return counts.reshape(groups, private).astype(float), D.reshape(groups, private, 3)


def _reference_beta(p, lo, hi, tol=1e-9):
    """min over tables d in [lo, hi] with rows summing to 1 of max_{s,a} p_s d[s,a] / (p . d[:, a]),
    by bisection on beta; each step is the LP feasibility of p_s d[s,a] - beta p . d[:, a] <= 0."""
    m, k = lo.shape
    q = p / p.sum()
    rows_sum = np.kron(np.eye(m), np.ones(k))  # sum over a of d[s, a] = 1
    bounds = list(zip(lo.ravel(), hi.ravel()))
    options = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}

    def feasible(beta):
        # row (s, a): q_s d[s, a] - beta sum_s' q_s' d[s', a] <= 0, d flattened as (s, a)
        A = np.zeros((m * k, m * k))
        for a in range(k):
            cols = np.arange(m) * k + a
            A[np.ix_(cols, cols)] = np.diag(q) - beta * q[None, :]
        res = linprog(
            np.zeros(m * k),
            A_ub=A,
            b_ub=np.zeros(m * k),
            A_eq=rows_sum,
            b_eq=np.ones(m),
            bounds=bounds,
            method="highs",
            options=options,
        )
        return res.status == 0

    low, high = 0.0, 1.0  # beta = 1 is always feasible
    while high - low > tol:
        mid = 0.5 * (low + high)
        low, high = (low, mid) if feasible(mid) else (mid, high)
    return high


def _group_index(frame):
    """The generator's group number of each row, from its labels a<i>, b<j>, c<l>."""
    number = lambda col: frame[col].astype(str).str[1:].astype(int).to_numpy()  # noqa: E731
    return (number("a") * SIZES[1] + number("b")) * SIZES[2] + number("c")


def test_large_random_three_outcome_report_against_independent_references(tmp_path):
    rng = np.random.default_rng(20261124)
    p, D = _write_instance(tmp_path, rng)
    result = privopt.load(tmp_path / "big.priv").solve(method="lfp")
    assert result.status == "optimal" and result.verification["passed"] is True
    G, m, k = D.shape
    assert len(result.groups) == G
    beta = np.full(G, np.nan)
    beta[_group_index(result.groups)] = result.groups["beta"].to_numpy()

    # the released table, measured with numpy alone (labels map back to the generator's indices)
    t = result.table("Dt")
    idx = _group_index(t)
    s = t["income"].str[1:].astype(int).to_numpy()
    a = t["decision"].map({d: i for i, d in enumerate(DECISIONS)}).to_numpy()
    Dt = np.full((G, m, k), np.nan)
    Dt[idx, s, a] = t["value"].to_numpy()
    assert not np.isnan(Dt).any()
    lo, hi = np.clip(D - (1 - DELTA), 0, 1), np.clip(D + (1 - DELTA), 0, 1)
    assert np.all(Dt >= lo - 1e-9) and np.all(Dt <= hi + 1e-9)
    np.testing.assert_allclose(Dt.sum(2), 1, atol=1e-9)
    live = p.sum(1) > 0
    mass = p[:, :, None] * Dt  # (G, m, k)
    with np.errstate(divide="ignore", invalid="ignore"):
        conf = np.where(mass.sum(1, keepdims=True) > 0, mass / mass.sum(1, keepdims=True), 0)
    measured = conf.max(axis=(1, 2))
    np.testing.assert_allclose(measured[live], beta[live], rtol=1e-8, atol=0)
    assert result.beta == pytest.approx(measured[live].max(), rel=1e-12)

    # the optimum, recomputed group by group for a sample of live groups
    sample = rng.choice(np.flatnonzero(live), size=100, replace=False)
    reference = np.array([_reference_beta(p[g], lo[g], hi[g]) for g in sample])
    np.testing.assert_allclose(beta[sample], reference, rtol=1e-7, atol=0)
