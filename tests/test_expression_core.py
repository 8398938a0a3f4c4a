"""The builder's one expression type, ``model.linear.LinTable`` (issue 11, item 1): the operations
the transparency-report and noise builders need (``divide``, ``matmul``, ``columns``,
``diagonal``) checked against numpy on dense arrays, bit for bit, and the builders' use of them."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import privopt
from privopt.errors import UnsupportedError
from privopt.model.linear import LinTable
from tests.conftest import examples

FLOATS = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False, allow_subnormal=False)
NONZERO = FLOATS.filter(lambda v: abs(v) > 1e-6)


def table(axes, shape, A_dense, b) -> LinTable:
    A = sp.csr_array(A_dense)
    return LinTable(tuple(axes), tuple(shape), A, np.asarray(b, dtype=float).ravel(), A_dense.shape[1])


@st.composite
def affine(draw, rows=None, n=None):
    rows = rows if rows is not None else draw(st.integers(1, 6))
    n = n if n is not None else draw(st.integers(1, 5))
    A = draw(hnp.arrays(float, (rows, n), elements=st.one_of(st.just(0.0), FLOATS)))
    b = draw(hnp.arrays(float, (rows,), elements=FLOATS))
    return A, b


# ------------------------------------------------------------------ divide
@settings(max_examples=examples(60), deadline=None)
@given(st.data())
def test_divide_is_a_true_division(data):
    p, q = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 4))
    A, b = data.draw(affine(rows=p * q))
    c = data.draw(hnp.arrays(float, (q,), elements=NONZERO))
    t = table(("a", "b"), (p, q), A, b)
    out = t.divide(LinTable.const(("b",), (q,), c, t.n))
    cells = np.tile(c, p)  # the divisor of each cell of (a, b), C order
    with np.errstate(all="ignore"):
        want_A, want_b = A / cells[:, None], b / cells
    assert out.axes == ("a", "b") and out.shape == (p, q)
    np.testing.assert_array_equal(out.matrix().toarray(), np.where(A != 0, want_A, 0.0))
    np.testing.assert_array_equal(out.b, want_b)


def test_divide_differs_from_multiplying_by_the_reciprocal():
    x, d = 3.0, 10.0
    assert x / d != x * (1 / d)  # the case the division exists for
    t = LinTable.variable(("a",), (1,), 1).scale(LinTable.scalar(x, 1))
    assert t.divide(LinTable.scalar(d, 1)).diagonal()[0] == x / d


def test_divide_drops_coefficients_that_underflow():
    t = LinTable.variable(("a",), (2,), 2).scale(LinTable.scalar(1e-300, 2))
    out = t.divide(LinTable.scalar(1e300, 2))
    assert out.is_const and out.matrix().nnz == 0


# ------------------------------------------------------------------ matmul and columns
@settings(max_examples=examples(60), deadline=None)
@given(st.data())
def test_matmul_matches_numpy(data):
    A, b = data.draw(affine())
    k = data.draw(st.integers(1, 5))
    M = data.draw(hnp.arrays(float, (k, A.shape[0]), elements=st.one_of(st.just(0.0), FLOATS)))
    t = table(("#",), (A.shape[0],), A, b)
    dense = t.matmul(M)
    assert dense.axes == ("#",) and dense.shape == (k,) and dense.n == t.n
    np.testing.assert_array_equal(dense.matrix().toarray(), M @ A)
    np.testing.assert_array_equal(dense.b, M @ b)
    sparse = t.matmul(sp.csr_array(M))
    np.testing.assert_allclose(
        sparse.matrix().toarray(), M @ A, rtol=1e-12, atol=1e-12 * np.abs(M).max(initial=1) * np.abs(A).max(initial=1)
    )
    assert sparse.b.shape == (k,)


def test_matmul_of_a_constant_vector():
    t = LinTable.const(("#",), (2,), [1.0, 2.0], 3)
    out = t.matmul(np.array([[1.0, 1.0], [0.0, 3.0], [2.0, 0.0]]))
    assert out.A is None and out.is_const
    np.testing.assert_array_equal(out.b, [3.0, 6.0, 2.0])


@settings(max_examples=examples(40), deadline=None)
@given(st.data())
def test_columns_is_a_dense_block(data):
    A, b = data.draw(affine())
    n = A.shape[1]
    off = data.draw(st.integers(0, n - 1))
    size = data.draw(st.integers(0, n - off))
    t = table(("#",), (A.shape[0],), A, b)
    np.testing.assert_array_equal(t.columns(off, size), A[:, off : off + size])
    assert LinTable.const(("#",), (2,), [1.0, 2.0], n).columns(off, size).shape == (2, size)


def test_symbols_at_offsets_and_their_blocks():
    """The noise builder's vectors: x (3) then eta (2) in one decision vector of length 5."""
    x = LinTable.variable(("#",), (3,), 5, offset=0)
    eta = LinTable.variable(("#",), (2,), 5, offset=3)
    A = np.array([[1.0, 0.5, 0.0], [0.0, 2.0, -1.0]])
    release = x.matmul(A) + eta.scale(LinTable.scalar(3.0, 5))
    np.testing.assert_array_equal(release.columns(0, 3), A)
    np.testing.assert_array_equal(release.columns(3, 2), 3.0 * np.eye(2))
    np.testing.assert_array_equal(release.b, np.zeros(2))


# ------------------------------------------------------------------ diagonal
@settings(max_examples=examples(40), deadline=None)
@given(st.data())
def test_diagonal_of_elementwise_tables(data):
    """ATR's tables: the design times constant tables over some of its axes, plus constants."""
    p, q = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 4))
    X = LinTable.variable(("a", "b"), (p, q), p * q)
    c = data.draw(hnp.arrays(float, (q,), elements=NONZERO))
    d = data.draw(hnp.arrays(float, (p,), elements=FLOATS))
    f = LinTable.const(("b",), (q,), c, p * q)
    g = LinTable.const(("a",), (p,), d, p * q)
    t = (g + X.scale(f)).divide(f)  # (d + c x) / c, cell by cell; axes (a, b)
    t = t.align(("a", "b"), (p, q))
    np.testing.assert_array_equal(t.diagonal(), np.ones((p, q)))
    np.testing.assert_array_equal(t.array(), (d[:, None] + np.zeros(q)) / c)


def test_diagonal_refuses_a_mixing_table():
    X = LinTable.variable(("a",), (3,), 3)
    with pytest.raises(AssertionError):
        X.sum_over(["a"]).align(("a",), (3,)).diagonal()


# ------------------------------------------------------------------ the builders
ATR = """\
var gender   : public  {F, M}
var income   : private {low, high}
var decision : outcome {deny, approve}
known P(gender, income) = counts {
         low  high
    F:   12   3
    M:   9    4
}
design Dt = P(decision | gender, income)
subject to 3 * Dt / 10 <= 2 + P(gender, income) / 10
minimize max_confidence(gender, decision -> income)
"""


def test_atr_division_is_exact():
    """``3 * Dt / 10``: the coefficient is ``3 / 10``, not ``3 * (1 / 10)``."""
    problem = privopt.loads(ATR)
    (c,) = problem.constraints
    assert c.coef.shape == (2, 2, 2) and c.const.shape == (2, 2, 2)
    assert np.all(c.coef == 3.0 / 10.0) and 3.0 / 10.0 != 3.0 * (1 / 10.0)
    prior = next(iter(problem.known.values())).data  # over (gender, income)
    np.testing.assert_array_equal(c.const, np.broadcast_to((-(2 + prior / 10))[:, :, None], (2, 2, 2)))


def test_atr_table_with_an_axis_the_design_lacks():
    bad = (
        ATR.replace("var decision", "var region : public {n, s}\nvar decision")
        .replace("design Dt", "known P(region) = { n: 0.5, s: 0.5 }\ndesign Dt")
        .replace("<= 2 + P(gender, income) / 10", "<= P(region)")
    )
    with pytest.raises(UnsupportedError, match="has axis 'region', which the design Dt does not have"):
        privopt.loads(bad)


def test_noise_blocks_are_the_release_coefficients():
    text = """\
const A = matrix {
    1  0.5  0
    0  2   -1
}
var x : private real[3] in [0, 1]
noise eta : gaussian[3]
noise xi  : gaussian[2]
let O = A @ (x + eta) / 0.3 + 2 * xi
subject to dp(x -> O) <= (1, 1e-5)
minimize E[sum((O - A @ x / 0.3)^2)]
"""
    nm = privopt.loads(text).noise
    A = np.array([[1, 0.5, 0], [0, 2, -1]])
    np.testing.assert_array_equal(nm.F, (A @ np.eye(3)) * (1.0 / 0.3))
    G = {n.name: n.G for n in nm.noises}
    np.testing.assert_array_equal(G["eta"], (A @ np.eye(3)) * (1.0 / 0.3))
    np.testing.assert_array_equal(G["xi"], 2 * np.eye(2))
