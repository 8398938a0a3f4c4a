"""A design choice as a reduction (lower/choice.py): big-M on HiGHS equals enumeration on random
LPs with a choice; enumeration of a conic program with binaries equals the best of its branches
solved separately (in cvxpy, written here); the refusals and the choice of route say why."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from privopt.backends import get_backend
from privopt.backends.base import LPSolution
from privopt.core.canonical import CanonicalProgram, Cone
from privopt.core.certificate import CERTIFICATE_KINDS
from privopt.core.plan import Reduction
from privopt.errors import InfeasibleError, SolverError, UsageError
from privopt.lower.choice import MAX_BINARIES, BigM, ChoiceProgram, Enumeration, choose
from tests.conftest import examples

HIGHS = get_backend("highs")
CLARABEL = get_backend("cvxpy", "CLARABEL")
PROPERTY = settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _solve_all(programs, backend):
    return [backend.solve(p) for p in programs]


# ------------------------------------------------------------------ LPs with a choice


@st.composite
def lp_choices(draw):
    """min c x s.t. A x <= b (b >= 0, so x = 0 is feasible in every branch), 0 <= x <= u, and a
    choice among 2-3 blocks of the columns (some columns in no block)."""
    n = draw(st.integers(2, 7))
    m = draw(st.integers(1, 4))
    coef = st.floats(-3, 3, allow_nan=False).map(lambda v: round(v, 3))
    c = draw(arrays(np.float64, n, elements=coef))
    A = draw(arrays(np.float64, (m, n), elements=coef))
    b = draw(arrays(np.float64, m, elements=st.floats(0, 4).map(lambda v: round(v, 3))))
    u = draw(arrays(np.float64, n, elements=st.floats(0.25, 3).map(lambda v: round(v, 3))))
    K = draw(st.integers(2, min(3, n)))
    owner = draw(arrays(np.int64, n, elements=st.integers(-1, K - 1)))
    owner[:K] = np.arange(K)  # every block has a column
    blocks = tuple(np.flatnonzero(owner == k) for k in range(K))
    program = CanonicalProgram(c, sp.csc_matrix(A), np.full(m, -np.inf), b, np.zeros(n), u)
    return ChoiceProgram(program, blocks)


@PROPERTY
@given(lp_choices())
def test_big_m_on_highs_equals_enumeration(target):
    milp, inverse = BigM().apply(target)
    assert milp.n_integers == len(target.blocks) and milp.needs == {"integer"}
    sol = HIGHS.solve(milp)
    assert sol.status == "optimal", sol.message
    x, active = BigM().invert(sol.x, inverse)
    for k, block in enumerate(target.blocks):  # the answer makes the choice: other blocks are 0
        if k != active:
            assert np.all(np.abs(x[block]) <= 1e-9)
    assert target.program.c @ x == pytest.approx(sol.objective, abs=1e-8)

    enum = Enumeration(takes_integers=False)
    programs, branches = enum.apply(target)
    best, cert = enum.invert(_solve_all(programs, HIGHS), branches)
    assert abs(best.objective - sol.objective) <= 1e-8
    assert cert.kind == "enumeration" and cert.bound == best.objective and len(cert.data["branches"]) == len(branches)

    # the MILP's binaries enumerated: sum pi = 1 (a row over binaries only) prunes all but K
    programs, branches = enum.apply(milp)
    assert len(programs) == len(target.blocks) and sum(b.pruned is not None for b in branches) == 2 ** len(
        programs
    ) - len(programs)
    best, _ = enum.invert(_solve_all(programs, HIGHS), branches)
    assert abs(best.objective - sol.objective) <= 1e-8


def test_both_are_reductions():
    assert isinstance(BigM(), Reduction) and isinstance(Enumeration(), Reduction)
    assert "enumeration" in CERTIFICATE_KINDS


def test_big_m_rows_and_bounds():
    """x_j - u_j pi_k <= 0 for each column of each block, sum pi = 1, pi binary."""
    p = CanonicalProgram(
        np.array([-1.0, -1.0]), sp.csc_matrix((0, 2)), np.zeros(0), np.zeros(0), np.zeros(2), np.array([2.0, 5.0])
    )
    milp, _ = BigM().apply(ChoiceProgram(p, ([0], [1])))
    assert milp.A.toarray().tolist() == [[1.0, 0.0, -2.0, 0.0], [0.0, 1.0, 0.0, -5.0], [0.0, 0.0, 1.0, 1.0]]
    assert milp.row_upper.tolist() == [0.0, 0.0, 1.0] and milp.row_lower.tolist() == [-np.inf, -np.inf, 1.0]
    assert milp.col_upper.tolist() == [2.0, 5.0, 1.0, 1.0] and milp.integrality.tolist() == [False, False, True, True]
    sol = HIGHS.solve(milp)
    assert sol.objective == pytest.approx(-5.0) and BigM().invert(sol.x, _)[1] == 1


@pytest.mark.parametrize(
    ("lower", "upper", "words"),
    [
        (0.0, np.inf, "column 1 of block 1 is unbounded above, so no M is valid"),
        (-1.0, 1.0, "big-M needs nonnegative variables: column 1 of block 1 has lower bound -1.0"),
    ],
)
def test_big_m_refuses_what_has_no_valid_m(lower, upper, words):
    p = CanonicalProgram(
        np.array([-1.0, -2.0]),
        sp.csc_matrix(np.ones((1, 2))),
        np.array([-np.inf]),
        np.array([3.0]),
        np.array([0.0, lower]),
        np.array([1.0, upper]),
    )
    target = ChoiceProgram(p, ([0], [1]))
    match = BigM().accepts(target)
    assert not match and words in match.why
    with pytest.raises(UsageError, match="M"):
        BigM().apply(target)
    d = choose(target)  # enumeration needs no M: the inactive block is fixed to 0
    assert isinstance(d.reduction, Enumeration) and d.backend == "highs" and words in d.why
    programs, branches = d.reduction.apply(target)
    best, cert = d.reduction.invert(_solve_all(programs, HIGHS), branches)
    assert cert.data["chosen"] == {"block": 1} and best.objective == pytest.approx(-6.0 if lower == 0 else -2.0)


def test_a_choice_is_checked():
    p = CanonicalProgram(np.zeros(3), sp.csc_matrix((0, 3)), np.zeros(0), np.zeros(0), np.zeros(3), np.ones(3))
    with pytest.raises(UsageError, match="at least two blocks"):
        ChoiceProgram(p, ([0, 1],))
    with pytest.raises(UsageError, match="must not share a column"):
        ChoiceProgram(p, ([0, 1], [1, 2]))
    with pytest.raises(UsageError, match="must lie in 0..2"):
        ChoiceProgram(p, ([0], [3]))


# ------------------------------------------------------------------ a conic program with binaries


@st.composite
def conic_binaries(draw):
    """min t + w z + d v s.t. (t, u) in a second-order cone, u = G z + v, -r <= v <= r, z binary
    (2-3 of them), and sum z >= 1 (a row over binaries only). Columns: t, u (dim), v (dim), z."""
    k = draw(st.integers(2, 3))
    dim = draw(st.integers(1, 3))
    val = st.floats(-2, 2, allow_nan=False).map(lambda v: round(v, 3))
    G = draw(arrays(np.float64, (dim, k), elements=val))
    w = draw(arrays(np.float64, k, elements=val))
    d = draw(arrays(np.float64, dim, elements=val))
    r = draw(st.floats(0.0, 1.0).map(lambda v: round(v, 3)))
    t, u, v, z = 0, 1 + np.arange(dim), 1 + dim + np.arange(dim), 1 + 2 * dim + np.arange(k)
    n = 1 + 2 * dim + k
    c = np.zeros(n)
    c[t], c[v], c[z] = 1.0, d, w
    A = np.zeros((dim + 1, n))
    A[np.arange(dim), u] = 1.0
    A[np.arange(dim), v] = -1.0
    A[:dim, z] = -G
    A[dim, z] = 1.0
    lo = np.concatenate([np.zeros(dim), [1.0]])
    hi = np.concatenate([np.zeros(dim), [np.inf]])
    col_lo = np.full(n, -np.inf)
    col_hi = np.full(n, np.inf)
    col_lo[v], col_hi[v] = -r, r
    col_lo[z], col_hi[z] = 0.0, 1.0
    integrality = np.zeros(n, dtype=bool)
    integrality[z] = True
    program = CanonicalProgram(
        c, sp.csc_matrix(A), lo, hi, col_lo, col_hi, cones=(Cone("soc", 0, 1 + dim),), integrality=integrality
    )
    return program, (G, w, d, r)


def _branch_by_cvxpy(G, w, d, r, z) -> float:
    """The branch with binaries z, written and solved here: min |G z + v| + w z + d v, |v| <= r."""
    import cvxpy as cp

    v = cp.Variable(G.shape[0])
    prob = cp.Problem(cp.Minimize(cp.norm(G @ z + v) + w @ z + d @ v), [cp.abs(v) <= r])
    prob.solve(solver="CLARABEL")
    assert prob.status == cp.OPTIMAL, prob.status  # v = 0 is feasible and the norm is bounded below
    return float(prob.value)


@settings(max_examples=examples(15, few=10), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conic_binaries())
def test_enumeration_of_a_conic_program_equals_the_best_branch(case):
    program, (G, w, d, r) = case
    assert program.needs == {"integer", "soc"}
    enum = Enumeration(takes_integers=CLARABEL.accepts(frozenset({"integer"})))
    assert enum.accepts(program)
    d_ = choose(program)
    assert isinstance(d_.reduction, Enumeration) and (d_.backend, d_.solver) == ("cvxpy", "CLARABEL")
    programs, branches = enum.apply(program)
    k = G.shape[1]
    assert len(branches) == 2**k and [b.pruned is not None for b in branches] == [True] + [False] * (2**k - 1)
    best, cert = enum.invert(_solve_all(programs, CLARABEL), branches)
    z_cols = np.flatnonzero(program.integrality)
    separately = {
        tuple(int(b.assignment[j]) for j in z_cols): _branch_by_cvxpy(
            G, w, d, r, np.array([b.assignment[j] for j in z_cols], dtype=float)
        )
        for b in branches
        if b.pruned is None
    }
    assert best.objective == pytest.approx(min(separately.values()), abs=1e-7)
    chosen = tuple(cert.data["chosen"][j] for j in z_cols)
    assert separately[chosen] == pytest.approx(min(separately.values()), abs=1e-7)
    assert cert.kind in CERTIFICATE_KINDS and cert.data["assignments"] == 2**k


# ------------------------------------------------------------------ refusals and proofs


def _binary_program(k: int, cones=True) -> CanonicalProgram:
    n = 3 + k
    integrality = np.zeros(n, dtype=bool)
    integrality[3:] = True
    return CanonicalProgram(
        np.ones(n),
        sp.csc_matrix((0, n)),
        np.zeros(0),
        np.zeros(0),
        np.concatenate([np.full(3, -np.inf), np.zeros(k)]),
        np.concatenate([np.full(3, np.inf), np.ones(k)]),
        cones=(Cone("soc", 0, 3),) if cones else (),
        integrality=integrality,
    )


def test_enumeration_stops_at_its_limit_and_says_why():
    program = _binary_program(MAX_BINARIES + 1)
    match = Enumeration().accepts(program)
    assert not match and "8,192 assignments, more than 4,096 (12 binaries)" in match.why
    with pytest.raises(UsageError, match="more than 4,096"):
        Enumeration().apply(program)
    assert Enumeration().accepts(_binary_program(MAX_BINARIES))


def test_enumeration_is_for_cones_or_a_backend_without_integers():
    milp = _binary_program(2, cones=False)
    assert not Enumeration(takes_integers=True).accepts(milp)
    assert Enumeration(takes_integers=False).accepts(milp)
    d = choose(milp)
    assert d.reduction is None and d.backend == "highs"
    milp.integrality[:] = False
    with pytest.raises(UsageError, match="nothing to choose"):
        choose(milp)


def test_general_integers_are_not_enumerated():
    program = _binary_program(2)
    program.col_upper[-1] = 3.0
    assert "not binary" in Enumeration().accepts(program).why


def test_many_binaries_with_cones_go_to_scip_or_say_what_to_install():
    program = _binary_program(MAX_BINARIES + 1)
    try:
        import pyscipopt  # noqa: F401
    except ImportError:
        with pytest.raises(UsageError, match="pip install pyscipopt"):
            choose(program)
    else:
        d = choose(program)
        assert d.reduction is None and (d.backend, d.solver) == ("cvxpy", "SCIP") and "more than 4,096" in d.why


def test_a_branch_without_proof_fails_and_all_infeasible_is_infeasible():
    program = _binary_program(1)
    enum = Enumeration()
    programs, branches = enum.apply(program)
    stopped = LPSolution.without_point("time_limit", "test", "no time left")
    infeasible = LPSolution("infeasible", "infeasible", None, None, 0.0, 0.0, None, "test", "")
    with pytest.raises(SolverError, match="not proven: the branch .* ended 'time_limit'"):
        enum.invert([infeasible, stopped], branches)
    with pytest.raises(InfeasibleError, match="every one of the 2 assignments is infeasible") as e:
        enum.invert([infeasible, infeasible], branches)
    assert all("test proved it infeasible" in r for r in e.value.reasons)
