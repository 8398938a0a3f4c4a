"""Backend conformance: canonical LPs with known optima and duals. Every backend (and every
inner solver of a modelling layer) runs every case; a new backend joins by being registered.

Dual convention: d objective / d (the active row bound); reduced costs likewise per column.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from privopt.backends import BACKENDS, all_backends, get_backend, pick
from privopt.backends.base import CAPABILITIES, CanonicalProgram, LinearProgram
from privopt.errors import UsageError

INF = np.inf
BACKEND_LIST = all_backends()
IDS = [b.label for b in BACKEND_LIST]
# first-order methods are accurate to their tolerance, not to a vertex
LOOSE = {"cvxpy:SCS", "cvxpy:OSQP"}


def lp(c, A, row_lo, row_hi, col_lo, col_hi):
    return LinearProgram(
        np.asarray(c, float),
        sp.csc_matrix(np.asarray(A, float)),
        np.asarray(row_lo, float),
        np.asarray(row_hi, float),
        np.asarray(col_lo, float),
        np.asarray(col_hi, float),
    )


def tol(backend):
    return 1e-5 if backend.label in LOOSE else 1e-7


@pytest.fixture(params=BACKEND_LIST, ids=IDS)
def backend(request):
    b = request.param
    ok, why = b.available()
    if not ok:
        pytest.skip(f"{b.label} unavailable: {why}")
    return b


def test_upper_row_with_duals(backend):
    # min -x - 2y  s.t. x + y <= 1.5,  0 <= x, y <= 1   ->  x = (0.5, 1), obj -2.5
    sol = backend.solve(lp([-1, -2], [[1, 1]], [-INF], [1.5], [0, 0], [1, 1]))
    assert sol.ok, sol
    assert sol.objective == pytest.approx(-2.5, abs=tol(backend))
    np.testing.assert_allclose(sol.x, [0.5, 1.0], atol=tol(backend))
    if sol.row_dual is not None:
        np.testing.assert_allclose(sol.row_dual, [-1.0], atol=1e-5)
    if sol.col_dual is not None:
        np.testing.assert_allclose(sol.col_dual, [0.0, -1.0], atol=1e-5)


def test_lower_row_with_dual(backend):
    # min x  s.t. x + y >= 2,  0 <= x <= 10, 0 <= y <= 1   ->  x = 1, y = 1, obj 1, d obj / d lo = 1
    sol = backend.solve(lp([1, 0], [[1, 1]], [2], [INF], [0, 0], [10, 1]))
    assert sol.ok, sol
    assert sol.objective == pytest.approx(1.0, abs=tol(backend))
    if sol.row_dual is not None:
        np.testing.assert_allclose(sol.row_dual, [1.0], atol=1e-5)


def test_equality_and_ranged_rows(backend):
    # min x + y  s.t.  1 <= x - y <= 2,  x + y == 3,  x, y free   ->  obj 3; eq dual 1, ranged 0
    sol = backend.solve(lp([1, 1], [[1, -1], [1, 1]], [1, 3], [2, 3], [-INF, -INF], [INF, INF]))
    assert sol.ok, sol
    assert sol.objective == pytest.approx(3.0, abs=tol(backend))
    x = sol.x
    assert 1 - tol(backend) <= x[0] - x[1] <= 2 + tol(backend)
    assert x.sum() == pytest.approx(3.0, abs=tol(backend))
    if sol.row_dual is not None:
        np.testing.assert_allclose(sol.row_dual, [0.0, 1.0], atol=1e-5)


def test_a_column_in_no_row_and_not_in_the_objective(backend):
    # min -x  s.t. x <= 1,  0 <= x, z <= 2 with z in no row and cost 0 (an LP restricted to
    # some families, as infeasibility diagnosis builds): any z in [0, 2] is optimal
    sol = backend.solve(lp([-1, 0], [[1, 0]], [-INF], [1], [0, 0], [2, 2]))
    assert sol.ok, sol
    assert sol.objective == pytest.approx(-1.0, abs=tol(backend))
    assert sol.x[0] == pytest.approx(1.0, abs=tol(backend)) and 0 <= sol.x[1] <= 2


def test_infeasible_is_never_optimal(backend):
    sol = backend.solve(lp([1, 1], [[1, 1]], [3], [INF], [0, 0], [1, 1]))
    assert not sol.ok and sol.x is None
    assert sol.status in ("infeasible", "unknown")
    assert sol.termination in ("infeasible", "infeasible_or_unbounded", "inaccurate", "error")


def test_unbounded_is_never_optimal(backend):
    sol = backend.solve(lp([-1, 0], [[1, -1]], [-INF], [0], [0, 0], [INF, INF]))
    assert not sol.ok and sol.x is None
    assert sol.termination in ("unbounded", "infeasible_or_unbounded", "inaccurate", "error")


def test_result_reports_solver_and_times(backend):
    sol = backend.solve(lp([-1, -2], [[1, 1]], [-INF], [1.5], [0, 0], [1, 1]))
    assert sol.solver and sol.version
    assert sol.build_s >= 0 and sol.solve_s >= 0


def test_atr_step_lp_agrees_across_backends(backend):
    """One step of the LFP method on Table 4 (delta = 0.9) at beta = 0.7: same optimum everywhere."""
    from privopt.methods.lfp import _block_lp

    p = np.array([[0.3, 0.125, 0.075], [0.225, 0.175, 0.1]])
    q = p / p.sum(1, keepdims=True)
    D1 = np.array([[0, 0, 1], [0, 0.5, 1.0]])
    D = np.stack([1 - D1, D1], 2)
    L, U = np.clip(D - 0.1, 0, 1), np.clip(D + 0.1, 0, 1)
    step = _block_lp(q, np.array([0.7, 0.7]), np.ones((2, 2)), L, U)
    reference = get_backend("highs").solve(step)
    sol = backend.solve(step)
    assert sol.ok, sol
    assert sol.objective == pytest.approx(reference.objective, abs=10 * tol(backend))


def test_registry_errors():
    with pytest.raises(UsageError, match="unknown backend 'gurobi'; available: highs, scipy, cvxpy, pyomo"):
        get_backend("gurobi")
    with pytest.raises(UsageError, match="no solver 'MOSEK'; choose: CLARABEL, HIGHS, SCS, OSQP"):
        get_backend("cvxpy", "MOSEK")
    with pytest.raises(
        UsageError, match=r"an inner solver \(--solver, solver=\) applies to backends with inner solvers"
    ):
        get_backend("highs", "CLARABEL")


def test_missing_package_reports_unavailable(monkeypatch):
    """A backend whose package cannot be imported says so, with the reason."""
    import importlib

    real = importlib.import_module

    def broken(name, *a, **k):
        if name.startswith("cvxpy"):
            raise ImportError("simulated: no module named cvxpy")
        return real(name, *a, **k)

    monkeypatch.setattr(importlib, "import_module", broken)
    ok, why = BACKENDS["cvxpy"]("CLARABEL").available()
    assert not ok and "simulated" in why
    with pytest.raises(UsageError, match="unavailable here: cvxpy cannot be imported"):
        get_backend("cvxpy")


def test_time_limit_is_a_failure_not_an_answer(backend):
    """A solve cut short by --time-limit is reported (time_limit / user_limit / inaccurate) and
    never used; a fresh solver per call means a limit does not leak into the next solve."""
    from privopt.methods.lfp import _block_lp

    rng = np.random.default_rng(0)
    G, m, A = 400, 5, 3
    p = rng.integers(1, 100, size=(G, m)).astype(float)
    D = rng.dirichlet(np.ones(A), size=(G, m))
    L, U = np.clip(D - 0.1, 0, 1), np.clip(D + 0.1, 0, 1)
    step = _block_lp(p / p.sum(1, keepdims=True), np.full(G, 0.5), np.ones((G, A)), L, U)
    cut = backend.solve(step, time_limit=1e-6)
    assert not cut.ok and cut.x is None
    assert cut.termination in ("time_limit", "user_limit", "inaccurate", "iteration_limit")
    again = backend.solve(lp([-1, -2], [[1, 1]], [-INF], [1.5], [0, 0], [1, 1]), time_limit=60)
    assert again.ok


def qp(c, Q, A, row_lo, row_hi, col_lo, col_hi):
    base = lp(c, A, row_lo, row_hi, col_lo, col_hi)
    return LinearProgram(
        base.c,
        base.A,
        base.row_lower,
        base.row_upper,
        base.col_lower,
        base.col_upper,
        sp.csc_matrix(np.asarray(Q, float)),
    )


def test_qp_with_row_dual(backend):
    # min (x-1)^2 + (y-2)^2 - 5 = 1/2 x'(2I)x - 2x - 4y  s.t. x + y <= 2  ->  (0.5, 1.5), obj -4.5, dual -1
    sol = backend.solve(qp([-2, -4], [[2, 0], [0, 2]], [[1, 1]], [-INF], [2], [-INF, -INF], [INF, INF]))
    if not backend.supports_qp:
        assert sol.termination == "unsupported" and not sol.ok and "LPs only" in sol.message
        return
    assert sol.ok, sol
    assert sol.objective == pytest.approx(-4.5, abs=1e-6)
    np.testing.assert_allclose(sol.x, [0.5, 1.5], atol=1e-6)
    if sol.row_dual is not None:
        np.testing.assert_allclose(sol.row_dual, [-1.0], atol=1e-5)


def test_qp_with_active_bound(backend):
    # min (x-2)^2 - 4 = x^2 - 4x  with x <= 1 (a column bound) and a slack row  ->  x = 1, obj -3
    sol = backend.solve(qp([-4, 0], [[2, 0], [0, 0]], [[1, 1]], [-INF], [10], [0, 0], [1, 1]))
    if not backend.supports_qp:
        assert sol.termination == "unsupported"
        return
    assert sol.ok, sol
    assert sol.objective == pytest.approx(-3.0, abs=1e-6)
    assert sol.x[0] == pytest.approx(1.0, abs=1e-6)
    if sol.col_dual is not None:
        assert sol.col_dual[0] == pytest.approx(-2.0, abs=1e-5)


# ------------------------------------------------------------------ capabilities and MILPs


def milp(c, A, row_lo, row_hi, col_lo, col_hi, integer):
    """A canonical program with integer columns where ``integer`` is True."""
    base = lp(c, A, row_lo, row_hi, col_lo, col_hi)
    return CanonicalProgram(
        base.c,
        base.A,
        base.row_lower,
        base.row_upper,
        base.col_lower,
        base.col_upper,
        integrality=np.asarray(integer, bool),
    )


def test_linear_program_is_the_canonical_program():
    """LinearProgram is an alias: every LP route builds a CanonicalProgram with the same fields."""
    assert LinearProgram is CanonicalProgram
    p = lp([-1, -2], [[1, 1]], [-INF], [1.5], [0, 0], [1, 1])
    assert p.needs == frozenset() and p.shape == (1, 2) and not p.is_qp


def test_capabilities_give_the_old_flags():
    for cls in BACKENDS.values():
        assert cls.capabilities <= set(CAPABILITIES)
        assert cls.supports_qp == ("quadratic" in cls.capabilities)
        assert cls.supports_conic == bool(cls.capabilities & {"soc", "psd"})
    assert BACKENDS["highs"].supports_qp and not BACKENDS["highs"].supports_conic
    assert not BACKENDS["scipy"].supports_qp and BACKENDS["cvxpy"].supports_conic
    highs = get_backend("highs")
    assert highs.accepts(frozenset({"integer"})) and not highs.accepts(frozenset({"integer", "quadratic"}))
    assert not BACKENDS["cvxpy"]("OSQP").accepts(frozenset({"soc"}))


KNAPSACK = dict(  # max 10a + 13b + 7c + 8d, weights 3 4 2 3 <= 7, binary: {a, b} = 23; LP relaxation 23.5
    c=[-10, -13, -7, -8],
    A=[[3, 4, 2, 3]],
    row_lo=[-INF],
    row_hi=[7],
    col_lo=[0] * 4,
    col_hi=[1] * 4,
    integer=[True] * 4,
)
ASSIGNMENT_COST = np.array([[4, 1, 3], [2, 0, 5], [3, 2, 2]], float)  # optimum 5: 0->1, 1->0, 2->2


def _assignment():
    n = 3
    rows = np.zeros((2 * n, n * n))
    for i in range(n):
        rows[i, i * n : (i + 1) * n] = 1  # each worker once
        rows[n + i, i::n] = 1  # each task once
    return milp(ASSIGNMENT_COST.ravel(), rows, [1] * 6, [1] * 6, [0] * 9, [1] * 9, [True] * 9)


def _integer_backend(backend):
    if not backend.accepts(frozenset({"integer"})):
        pytest.skip(f"{backend.label} takes no integers (test_milp_is_refused_without_integers)")
    return backend


def test_milp_knapsack(backend):
    sol = _integer_backend(backend).solve(milp(**KNAPSACK))
    assert sol.ok, sol
    assert sol.objective == pytest.approx(-23.0, abs=1e-7)
    np.testing.assert_allclose(sol.x, [1, 1, 0, 0], atol=1e-7)
    assert sol.row_dual is None and sol.col_dual is None  # a MILP has no duals
    relaxed = get_backend("highs").solve(lp(*(KNAPSACK[k] for k in ("c", "A", "row_lo", "row_hi", "col_lo", "col_hi"))))
    assert relaxed.objective == pytest.approx(-23.5, abs=1e-9)  # the relaxation's optimum is not the integer one


def test_milp_assignment(backend):
    sol = _integer_backend(backend).solve(_assignment())
    assert sol.ok, sol
    assert sol.objective == pytest.approx(5.0, abs=1e-7)
    np.testing.assert_allclose(sol.x.reshape(3, 3), [[0, 1, 0], [1, 0, 0], [0, 0, 1]], atol=1e-7)


def test_milp_mixed_columns_differ_from_the_relaxation(backend):
    # min -(x + y), 2x <= 3, x integer in [0, 5], y continuous in [0, 0.3]: x = 1, y = 0.3 (the LP: x = 1.5)
    sol = _integer_backend(backend).solve(milp([-1, -1], [[2, 0]], [-INF], [3], [0, 0], [5, 0.3], [True, False]))
    assert sol.ok, sol
    assert sol.objective == pytest.approx(-1.3, abs=1e-7)
    np.testing.assert_allclose(sol.x, [1.0, 0.3], atol=1e-7)


def test_milp_infeasible_though_its_relaxation_is_not(backend):
    # 2x == 1 with x integer: no integer point (x = 0.5 solves the LP)
    sol = _integer_backend(backend).solve(milp([1], [[2]], [1], [1], [0], [5], [True]))
    assert not sol.ok and sol.x is None
    assert sol.status in ("infeasible", "unknown")
    assert sol.termination in ("infeasible", "infeasible_or_unbounded", "error")


def test_milp_is_refused_without_integers(backend):
    if backend.accepts(frozenset({"integer"})):
        pytest.skip(f"{backend.label} takes integers")
    sol = backend.solve(milp(**KNAPSACK))
    assert sol.termination == "unsupported" and not sol.ok and sol.x is None
    assert f"backend '{backend.label}' solves" in sol.message and "this program has integer columns" in sol.message
    assert "backends that take it: highs, scipy, cvxpy:HIGHS" in sol.message


def test_refusal_names_what_is_missing_together():
    """HiGHS takes a quadratic objective and integers, not both: the message says so."""
    program = milp([-1, 0], [[1, 1]], [-INF], [2], [0, 0], [1, 1], [True, False])
    program = CanonicalProgram(
        program.c,
        program.A,
        program.row_lower,
        program.row_upper,
        program.col_lower,
        program.col_upper,
        sp.csc_matrix(np.eye(2)),
        integrality=program.integrality,
    )
    sol = get_backend("highs").solve(program)
    assert sol.termination == "unsupported"
    assert sol.message.startswith(
        "backend 'highs' solves LPs, QPs and MILPs only; this program has a quadratic "
        "objective and integer columns together; "
    )


def test_pick_by_needs():
    """The default backend per program form; today's default_backend choices (LP: highs, QP and
    cones: cvxpy with CLARABEL) are what pick returns (tests/test_canonical.py checks every spec)."""
    assert pick(frozenset()) == ("highs", None)
    assert pick(frozenset({"integer"})) == ("highs", None)
    assert pick(frozenset({"quadratic"})) == ("cvxpy", "CLARABEL")
    assert pick(frozenset({"soc"}), "SCS") == ("cvxpy", "SCS")
    assert pick(frozenset({"psd", "quadratic"})) == ("cvxpy", "CLARABEL")
    with pytest.raises(UsageError, match="no backend here solves PSD cones with integers"):
        pick(frozenset({"integer", "psd"}))


def test_pick_integers_with_cones(monkeypatch):
    """Integers with cones: cvxpy with SCIP where pyscipopt imports, else why not and what to install."""
    import builtins

    real = builtins.__import__

    def no_scip(name, *a, **k):
        if name == "pyscipopt":
            raise ImportError("simulated: no module named pyscipopt")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_scip)
    with pytest.raises(
        UsageError,
        match=r"integer columns and second-order cones: HiGHS takes integers but no cones.*"
        r"pip install pyscipopt",
    ):
        pick(frozenset({"integer", "soc"}))
    monkeypatch.setattr(builtins, "__import__", real)
    pytest.importorskip("pyscipopt")
    assert pick(frozenset({"integer", "soc"})) == ("cvxpy", "SCIP")


def test_scip_solves_integers_with_a_cone():
    """min -x0 - x1 with |(x0, x1)| <= 1.5 (a second-order cone over (t, x0, x1), t = 1.5) and
    x integer: (1, 1), -2 (the continuous optimum is -1.5 sqrt 2 = -2.12)."""
    from privopt.core.canonical import Cone

    be = BACKENDS["cvxpy"]("SCIP")
    if not be.available()[0]:
        pytest.skip("pyscipopt is not installed")
    program = CanonicalProgram(
        np.array([0.0, -1, -1]),
        sp.csc_matrix((0, 3)),
        np.zeros(0),
        np.zeros(0),
        np.array([1.5, -5, -5]),
        np.array([1.5, 5, 5]),
        cones=(Cone("soc", 0, 3),),
        integrality=np.array([False, True, True]),
    )
    sol = be.solve(program)
    assert sol.ok, sol
    assert sol.objective == pytest.approx(-2.0, abs=1e-6)
    np.testing.assert_allclose(sol.x[1:], [1, 1], atol=1e-6)
