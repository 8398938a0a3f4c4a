"""Hostile numerics (issue 19): extreme params and data are solved right, compared with an
independent computation or a closed form, or refused at the param or range (FILE:LINE:COL, a
caret, the domain named, exit 2, nothing written); the verifier rejects a suboptimal point at
every scale; privacy budgets are checked with slack relative to the budget."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from decimal import Decimal, getcontext
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from scipy import optimize, special

from privopt import api
from privopt.backends import get_backend
from privopt.cli import main
from privopt.lower.noise import lower_noise
from privopt.methods import conic as pnoise
from tests.conftest import SPECS

PRIVOPT = str(Path(sys.executable).with_name("privopt"))

# m = 1: the optimum is classic DP on the single query, max_j (w_j a_j)^2 / Delta^2 (Ramon &
# Basu Sec. 3.2; docs/noise-placement.md): here w = 1 and max |a_j| = 2, so 4 / Delta^2
ONE_QUERY = """\
spec "one query"
const A = matrix {
    1  2  0
}
var x : private real[3] in [0, 1]
noise eta : gaussian[3]
noise xi  : gaussian[1]
let O = A @ (x + eta) + xi
param eps = EPS
param delta = DELTA
subject to dp(x -> O) <= (eps, delta)
minimize E[sum((O - A @ x)^2)]
"""


def one_query(eps: str, delta: str, calibration: str = "") -> str:
    text = ONE_QUERY.replace("EPS", eps).replace("DELTA", delta)
    return text.replace("dp(x -> O)", f"dp(x -> O, calibration: {calibration})") if calibration else text


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def expect_refusal(tmp_path, text, line, col, words, *args):
    """exit 2, FILE:LINE:COL and a caret, the words that matter, no traceback, nothing written."""
    spec = tmp_path / "s.priv"
    spec.write_text(text)
    out = tmp_path / "out"
    r = invoke("solve", spec, "--out", out, *args)
    assert r.exit_code == 2, r.output
    assert f"{spec}:{line}:{col}: error:" in r.output, r.output
    assert "^" in r.output and "Traceback" not in r.output
    for w in words:
        assert w in r.output, r.output
    assert not out.exists()
    return r.output


# ------------------------------------------------------------------ independent Gaussian math

getcontext().prec = 60


def _log_phi_tail(x: Decimal) -> Decimal:
    """log Phi(-x) for x > 5 by the continued fraction of the Mills ratio, in 60-digit decimals:
    Phi(-x) = phi(x) / (x + 1/(x + 2/(x + 3/(x + ...))))."""
    t = x
    for k in range(400, 0, -1):
        t = x + k / t
    return -x * x / 2 - (2 * Decimal(math.pi)).sqrt().ln() - t.ln()


def independent_bound(eps: float, delta: float) -> float:
    """The analytic calibration's largest sensitivity (Balle & Wang Thm. 8) for deltas whose
    tails a, b are below -5: bisection on Phi(a) - e^eps Phi(b) = delta in decimals."""
    E, target = Decimal(eps), Decimal(delta).ln()

    def log_delta(d: Decimal) -> Decimal:
        a, b = d / 2 - E / d, -d / 2 - E / d
        pa, pb = _log_phi_tail(-a).exp(), (E + _log_phi_tail(-b)).exp()
        return (pa - pb).ln()

    lo, hi = Decimal("1e-6"), Decimal(1)
    for _ in range(120):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if log_delta(mid) < target else (lo, mid)
    return float(lo)


def solve(text: str, **kw):
    return api.solve(api.loads(text), **kw)


# ------------------------------------------------------------------ item 1: delta at the bottom of the doubles


def test_subnormal_delta_is_refused_at_the_param(tmp_path):
    """delta = 1e-320 was 'optimal (verified)' at 2.8x the optimum; a subnormal delta keeps 5
    digits (9.99989e-321), and the calibration rests on log(delta): refused at its value."""
    out = expect_refusal(
        tmp_path,
        (SPECS / "noise_placement.priv").read_text().replace("1e-5", "1e-320"),
        11,
        15,
        ["below 2.225e-308", "smallest double", "use a delta in [2.225e-308, 1)"],
    )
    assert "param delta = 1e-320" in out


def test_subnormal_delta_by_set_points_at_the_requirement(tmp_path):
    expect_refusal(
        tmp_path, (SPECS / "noise_placement.priv").read_text(), 12, 32, ["below 2.225e-308"], "--set", "delta=1e-320"
    )


@pytest.mark.parametrize("delta", ["1e-300", "3e-308"])
def test_tiny_delta_is_solved_right(delta):
    """At delta = 1e-300 and 3e-308 (normal doubles; 1.25/delta and delta itself are near
    overflow and underflow) the optimum is 4 / Delta^2 with Delta computed independently."""
    r = solve(one_query("1.0", delta))
    d = independent_bound(1.0, float(delta))
    assert r.status == "optimal" and r.verification["passed"]
    assert r.objective == pytest.approx(4 / d**2, rel=1e-7)
    assert r.verification["sensitivity_bound"] == pytest.approx(d, rel=1e-9)
    assert r.verification["log_delta_achieved"] == pytest.approx(math.log(float(delta)), rel=1e-9)
    assert r.verification["delta_achieved"] > 0  # never "delta achieved 0.0"


def test_classic_calibration_at_tiny_delta():
    """classic: Delta = eps / sqrt(2 ln(1.25/delta)), from logs (1.25/delta overflows below 7e-309)."""
    r = solve(one_query("0.5", "3e-308", "classic"))
    d = 0.5 / math.sqrt(2 * (math.log(1.25) - math.log(3e-308)))
    assert r.objective == pytest.approx(4 / d**2, rel=1e-7)


def _problem(text):
    return api.loads(text).noise


def test_verifier_rejects_the_point_of_a_too_small_bound():
    """The bug's mechanism: a lowering whose sensitivity bound is too small (too much noise for
    the budget) solves and certifies its own program. The verifier now proves the calibration's
    ceiling from (eps, delta) itself and scales the bound: such a point is 'not certified'."""
    model = _problem((SPECS / "noise_placement.priv").read_text())
    right = lower_noise(model)
    small = 0.015625  # the bound the old root solve returned at delta = 1e-320
    wrong = type(right)(
        right.F, right.t, right.blocks, right.unit * (right.sensitivity_bound / small) ** 2, right.offset, small
    )
    be = get_backend("cvxpy", None)
    cov, sol = pnoise.solve(model, wrong, be)
    check = pnoise.verify(model, cov, wrong, sol.objective, backend=be, duals=sol.duals)
    assert not check["passed"]
    assert any("is not certified" in f for f in check["failures"])
    assert check["evidence"]["calibration_factor"] == pytest.approx((small / right.sensitivity_bound) ** 2, rel=1e-9)
    # the right lowering's point passes
    cov, sol = pnoise.solve(model, right, be)
    assert pnoise.verify(model, cov, right, sol.objective, backend=be, duals=sol.duals)["passed"]


@pytest.mark.parametrize("width", ["1", "1e-140", "1e140"])
def test_verifier_rejects_a_slightly_worse_point_at_every_scale(width):
    """The optimality check is relative to the loss at any scale: the optimum passes and the
    same noise 1e-4 larger (private, 1e-4 worse) fails, for losses of 1e1, 1e-279, 1e281."""
    text = (SPECS / "noise_placement.priv").read_text().replace("in [0, 1]", f"in [0, {width}]")
    model = _problem(text)
    program = lower_noise(model)
    be = get_backend("cvxpy", None)
    cov, sol = pnoise.solve(model, program, be)
    good = pnoise.verify(model, cov, program, sol.objective, backend=be, duals=sol.duals)
    assert good["passed"], good["failures"]
    assert good["objective"] == pytest.approx(37.1136330569 * float(width) ** 2, rel=1e-8)
    worse = {k: v * (1 + 1e-4) for k, v in cov.items()}
    bad = pnoise.verify(model, worse, program, None, backend=be, duals=sol.duals)
    assert not bad["passed"] and any("not certified" in f for f in bad["failures"])


# ------------------------------------------------------------------ item 2: ranges of extreme width


@pytest.mark.parametrize(
    ("rng", "words"),
    [
        ("[0, 1e200]", ["too wide", "1e+401", "divide the range by 1e200"]),
        ("[-1e200, 1e200]", ["too wide", "beyond 4e+292"]),
        ("[0, 2e-300]", ["too narrow", "1e-598", "multiply the range by 1e299"]),
        ("[0, 1e-160]", ["too narrow", "below 1e-292"]),
    ],
)
def test_extreme_ranges_are_refused_at_the_range(tmp_path, rng, words):
    """Widths of 1e200 or 2e-300 made NaN in the problem data (an internal error): the noise
    variances (w / Delta)^2 are outside the doubles' range, refused at the range, naming why."""
    text = (SPECS / "noise_placement.priv").read_text().replace("[0, 1]", rng)
    expect_refusal(tmp_path, text, 6, 17, words)  # the caret under the domain 'real[3] in [lo, hi]'


@pytest.mark.parametrize("width", [1e145, 1e-145, 1e-15])
def test_extreme_but_representable_ranges_are_solved(width):
    """Every variance scales with w^2: the optimum is 37.1136330569 w^2 (the [0, 1] spec's)."""
    rng = f"[1, 1 + {width!r}]" if width == 1e-15 else f"[0, {width!r}]"  # 1e-15: a width that is a difference
    r = solve((SPECS / "noise_placement.priv").read_text().replace("[0, 1]", rng))
    w = (1 + width) - 1 if width == 1e-15 else width
    assert r.verification["passed"]
    assert r.objective == pytest.approx(37.1136330569 * w**2, rel=1e-8)


def test_overflowing_matrix_never_reaches_the_solver(tmp_path):
    """A coefficient of 1e200 squares to inf: refused (located), no NaN or inf handed on."""
    text = (SPECS / "noise_placement.priv").read_text().replace("1  1  0", "1e200  1  0")
    expect_refusal(tmp_path, text, 12, 1, ["overflow a double"])


# ------------------------------------------------------------------ item 4: extreme eps and delta (noise placement)


def test_tiny_eps_matches_the_erf_limit():
    """eps = 1e-300: delta = Phi(D/2) - Phi(-D/2) = erf(D / (2 sqrt 2)) up to O(eps), so
    D = 2 sqrt(2) erfinv(delta) and the optimum is 4 / D^2."""
    r = solve(one_query("1e-300", "1e-5"))
    d = 2 * math.sqrt(2) * special.erfinv(1e-5)
    assert r.objective == pytest.approx(4 / d**2, rel=1e-9)


def test_large_eps_matches_an_independent_tail():
    """eps = 1e6: e^eps Phi(b) = phi(a) M(-b) exactly (b^2/2 = a^2/2 + eps; M the Mills ratio,
    by its asymptotic series), so delta = Phi(a) - phi(a) M(-b): solved independently."""
    eps, delta = 1e6, 1e-5

    def mills(x):
        return (1 - 1 / x**2 + 3 / x**4 - 15 / x**6) / x

    def f(d):
        a, b = d / 2 - eps / d, -d / 2 - eps / d
        return special.ndtr(a) - math.exp(-a * a / 2) / math.sqrt(2 * math.pi) * mills(-b) - delta

    d = optimize.brentq(f, 1000, 2000, xtol=1e-13, rtol=1e-15)
    r = solve(one_query("1e6", "1e-5"))
    assert r.objective == pytest.approx(4 / d**2, rel=1e-8)


@pytest.mark.parametrize("eps", ["1e20", "1.7e308"])
def test_eps_too_large_to_verify_is_refused_at_the_param(tmp_path, eps):
    """Past ~4e11 (delta = 1e-5) one rounding of the sensitivity moves delta by more than the
    1e-9 privopt verifies at: no double computation can say the noise is private. The old code
    looped for ever at eps = 1.7e308 and called 1e20 verified with 'delta achieved 0'."""
    text = (SPECS / "noise_placement.priv").read_text().replace("param eps = 1.0", f"param eps = {eps}")
    expect_refusal(tmp_path, text, 10, 13, ["too large to verify in doubles", "use an eps up to about 4.4e+11"])


@pytest.mark.parametrize(
    ("old", "new", "line", "col", "words"),
    [
        # the param-domain check (builder/params.py) refuses these at the param before calibration
        (
            "param delta = 1e-5",
            "param delta = 0",
            11,
            15,
            ["delta = 0 is outside its domain: delta must lie in (0, 1)"],
        ),
        (
            "param delta = 1e-5",
            "param delta = 1",
            11,
            15,
            ["delta = 1 is outside its domain: delta must lie in (0, 1)"],
        ),
        ("param eps = 1.0", "param eps = 0", 10, 13, ["eps = 0 is outside its domain: eps must be > 0"]),
    ],
)
def test_budget_outside_its_domain_is_refused_at_the_param(tmp_path, old, new, line, col, words):
    text = (SPECS / "noise_placement.priv").read_text().replace(old, new)
    expect_refusal(tmp_path, text, line, col, words)


def test_subnormal_delta_cli_exit_code(tmp_path):
    """The real command: exit 2, no traceback, strict JSON untouched (nothing on stdout)."""
    spec = tmp_path / "s.priv"
    spec.write_text((SPECS / "noise_placement.priv").read_text().replace("1e-5", "1e-320"))
    p = subprocess.run([PRIVOPT, "solve", str(spec), "--json"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and p.stdout == "" and "Traceback" not in p.stderr
    assert f"{spec}:11:15: error: delta = 9.99989e-321 is below 2.225e-308" in p.stderr


# ------------------------------------------------------------------ item 3: budgets checked relative to the budget


def _rr_table(k: int, eps: float) -> np.ndarray:
    """k-ary randomized response at eps: e^eps on the diagonal, 1 elsewhere, rows normalized."""
    R = np.ones((k, k))
    np.fill_diagonal(R, math.exp(eps))
    return (R / R.sum(axis=1, keepdims=True)).ravel()


def test_ldp_slack_is_relative_to_the_budget():
    """ldp(X -> Y) <= 1e-12 was called verified at 1.0019e-12 (an absolute 1e-9 log slack). A
    table achieving 1.002e-12 now fails; one achieving the budget passes; the allowed excess is
    max(1e-9 eps, 8 ulps) = 1.8e-15 here."""
    from privopt.blocks import table as pm
    from privopt.blocks.common import budget_slack

    problem = api.load(SPECS / "randomized_response.priv", params={"eps": "1e-12"})
    over = pm.verify(problem, _rr_table(5, 1.002e-12), None, "a test table")
    assert not over["passed"]
    assert any("'ldp(X -> Y) <= eps' does not hold" in f for f in over["failures"])
    assert 1.002e-12 - 1e-12 < 1e-9  # the old slack would have let it pass
    assert pm.verify(problem, _rr_table(5, 1e-12), None, "a test table")["passed"]
    assert budget_slack(1e-12) == pytest.approx(8 * 2.0**-52) and budget_slack(0.5) == pytest.approx(5e-10)


@pytest.mark.parametrize("eps", [1e-12, 1e-300, 0.0])
def test_tiny_ldp_budget_solves_to_the_closed_form(eps):
    """Kairouz, Oh & Viswanath: with a uniform prior the least tv is (k - 1) / (e^eps + k - 1)."""
    r = api.solve(api.load(SPECS / "randomized_response.priv", params={"eps": repr(eps)}))
    assert r.status == "optimal"
    assert r.objective == pytest.approx(4 / (math.exp(eps) + 4), rel=1e-12)
    achieved = r.verification["budgets_achieved"]["ldp(X -> Y) <= eps"]
    assert achieved <= eps + max(1e-9 * eps, 8 * 2.0**-52)


def _loglift_lp_at_zero() -> float:
    """specs/sanitize_loglift_budget.priv at eps = 0 (Y independent of S) as an LP of its own
    (scipy's HiGHS): design M[s, x, y], rows sum to 1, P(y | s1) = P(y | s2), min E|X - Y|."""
    ps = np.array([0.3, 0.7])
    pxs = np.array([[0.2, 0.1, 0.5, 0.2], [0.5, 0.3, 0.1, 0.1]])
    n = 2 * 4 * 4
    idx = np.arange(n).reshape(2, 4, 4)
    dist = np.abs(np.arange(4)[:, None] - np.arange(4)[None, :])
    c = (ps[:, None, None] * pxs[:, :, None] * dist[None]).ravel()
    A, b = [], []
    for s in range(2):
        for x in range(4):
            row = np.zeros(n)
            row[idx[s, x]] = 1
            A.append(row)
            b.append(1.0)
    for y in range(4):
        row = np.zeros(n)
        row[idx[0, :, y]] = pxs[0]
        row[idx[1, :, y]] = -pxs[1]
        A.append(row)
        b.append(0.0)
    res = optimize.linprog(c, A_eq=np.array(A), b_eq=b, bounds=(0, 1), method="highs")
    assert res.status == 0
    return float(res.fun)


def test_loglift_budget_finer_than_the_solver_tolerance_still_verifies():
    """At eps = 1e-12 the LP's rows hold to ~1e-9 only, so its table broke the budget by 2e-11
    and the repair mixed in the constant mechanism (objective 1.195 instead of 0.27: not
    verified). The conditionals are now pooled by proportional fitting: optimal, the budget
    met to the relative slack, and the optimum equal to the eps = 0 LP's within 1e-9."""
    r = api.solve(api.load(SPECS / "sanitize_loglift_budget.priv", params={"eps": "1e-12"}))
    assert r.status == "optimal" and r.verification["cleaning"]["pooled"]
    assert r.verification["budgets_achieved"]["loglift(S -> Y) <= eps"] <= 1e-12 * (1 + 1e-9)
    assert r.objective == pytest.approx(_loglift_lp_at_zero(), abs=1e-9)


# ------------------------------------------------------------------ item 4: extreme params in the other classes


@pytest.mark.parametrize("alpha", [0.0, 1e-300, 0.5, 1.0])
@pytest.mark.parametrize("method", ["auto", "lp"])
def test_sanitization_alpha_at_its_ends(alpha, method):
    """Lemma 1 (Ding et al., eq. 7) on specs/sanitize_markov_lemma1.priv: the one feasible
    channel has tv = alpha (1 - sum_x P(x)^2) with P(X) = (0.36, 0.385, 0.255): 0.65715 alpha,
    at alpha = 0 (Y = X), 1e-300 and 1 (Y independent of S), by the closed form and by the LP."""
    r = api.solve(api.load(SPECS / "sanitize_markov_lemma1.priv", params={"alpha": repr(alpha)}), method=method)
    px = np.array([0.36, 0.385, 0.255])
    assert r.status == "optimal"
    assert r.objective == pytest.approx(alpha * (1 - px @ px), rel=1e-9, abs=1e-15)


def test_shaped_noise_with_eps_beyond_any_ratio_is_the_unconstrained_lp():
    """eps = 1e300 (e^eps overflows; the rows use e^-eps = 0): the budget constrains nothing the
    moment constraints allow, so the optimum is the spec's without the dp line (14.3901893939)."""
    text = (SPECS / "shaped_noise_means.priv").read_text()
    free = api.solve(api.loads(text.replace("subject to dp(x -> y) <= (eps, delta)\n", "")))
    r = api.solve(api.loads(text, params={"eps": "1e300"}))
    assert r.status == "optimal" and free.status == "optimal"
    assert r.objective == pytest.approx(free.objective, rel=1e-9)


@pytest.mark.parametrize("eps", ["1e-12", "1e-300"])
def test_shaped_noise_with_tiny_eps_is_infeasible(eps):
    """E[y | x] = alpha x + ... differs by 0.4 between x = 1 and x = 5, while eps = 1e-12 lets
    P(y | x) differ by a factor e^1e-12 only (means within ~6e-12): no table exists (exit 3)."""
    r = invoke("solve", SPECS / "shaped_noise_means.priv", "--set", f"eps={eps}", "--json")
    assert r.exit_code == 3, r.output
    assert json.loads(r.stdout)["status"] == "infeasible"


def test_ldp_at_the_largest_eps_is_the_identity():
    """eps = 1e300: (k - 1) / (e^eps + k - 1) = 0, Y = X, verified in log space (no e^eps)."""
    r = api.solve(api.load(SPECS / "randomized_response.priv", params={"eps": "1e300"}))
    assert r.status == "optimal" and r.objective == pytest.approx(0.0, abs=1e-12)


def _table4_closed_form(delta: str):
    from privopt.closedform.atr import solve_binary
    from privopt.lower.atr import lower_atr

    problem = api.load(SPECS / "atr_table4.priv", params={"delta": delta})
    inst = lower_atr(problem)
    lo, hi = inst.binary_bounds()
    return problem, inst, solve_binary(inst.p, lo, hi, inst.reference[..., 1]).table


def test_fidelity_bound_is_checked_relative_to_its_terms():
    """|Dt - D| <= 1 - delta at delta = 1 - 1e-12: a table 1e-10 outside the bound passed
    (1e-9, absolute for terms below 1: a hundred times the bound); now 'not verified'."""
    from privopt.blocks import report as patr
    from privopt.measures.confidence import group_max_confidence

    problem, inst, table = _table4_closed_form("0.999999999999")
    beta = group_max_confidence(inst.p, table)
    assert patr.verify(problem, inst, table, beta, "test")["passed"]
    bad = table.copy()
    row = np.unravel_index(int(np.argmax(bad[..., 1] < 1 - 1e-9)), bad.shape[:-1])
    bad[row + (1,)] += 1e-10  # one approve cell 1e-10 above its bound, its row still summing to 1
    bad[row + (0,)] -= 1e-10
    check = patr.verify(problem, inst, bad, group_max_confidence(inst.p, bad), "test")
    assert not check["passed"]
    assert any("'|Dt - D| <= 1 - delta' is violated" in f for f in check["failures"])


@pytest.mark.parametrize("method", ["closed-form", "lfp"])
def test_alpha_fidelity_near_one_lands_on_its_bounds(method):
    """alpha = 1 - 1e-12 fixes every cell (Dt = D); Theorem 1's formula left a cell 1e-12 above
    its bound of 0 (verified as 'violation 1e-12'). The table is moved onto its bounds: exact."""
    r = api.solve(api.load(SPECS / "atr_alpha_fidelity.priv", params={"alpha": "0.999999999999"}), method=method)
    assert r.status == "optimal" and r.objective == 1.0
    assert r.verification["max_constraint_violation"] == 0.0


def test_a_row_off_its_sum_by_more_than_rounding_is_not_verified():
    """Probability sums: a row of randomized response summing to 1 + 1e-12 passed the former
    absolute 1e-9; now a row may be off by its rounding only (4 ulps per cell: 4.4e-15 here)."""
    from privopt.blocks import table as pm

    problem = api.load(SPECS / "randomized_response.priv")
    table = _rr_table(5, 0.5).reshape(5, 5)
    assert pm.verify(problem, table.ravel(), None, "a test table")["passed"]
    table[2] *= 1 + 1e-12
    check = pm.verify(problem, table.ravel(), None, "a test table")
    assert not check["passed"] and any("a row sums to 1 +- 1e-12" in f for f in check["failures"])


def test_noise_too_large_for_a_tiny_budget_is_refused_with_both_ways_out(tmp_path):
    """eps = delta = 1e-300 allows a sensitivity of 3.6e-300: variances of 1e599 for a range of
    width 1. Refused at the range (exit 2), naming the rescaling and the budget as the ways out."""
    text = (SPECS / "noise_placement.priv").read_text().replace("param eps = 1.0", "param eps = 1e-300")
    text = text.replace("param delta = 1e-5", "param delta = 1e-300")
    expect_refusal(tmp_path, text, 6, 17, ["1e+599", "divide the range by 1e299", "or allow a larger eps or delta"])
