"""Hostile battery for rank-preserving obfuscation at extreme params (issue 19, item 0): every
extreme leakage budget and BSC crossover is solved right (checked against an independent
computation) or refused at the param; verification tolerances are relative, and a suboptimal or
infeasible channel is refused by the verifier.

Independent references here: the leakage in 60-digit decimal arithmetic from the joint table,
Q by eq. 2's covariance and Sheppard's formula in decimal-free float (``q_ref``) or from scipy's
bivariate normal CDF, and h_b^-1 by scipy's brentq."""

from __future__ import annotations

import json
import math
from decimal import Decimal, getcontext
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import brentq

import privopt
from privopt.blocks.channel import verify
from privopt.lower.obfuscation import independence_bound, optimal_channel
from privopt.measures.obfuscation import _fingerprint, kl_excess, leakage_bits
from tests.conftest import SPECS
from tests.test_obfuscation import _cli, _q_by_cdf
from tests.test_obfuscation_math import q_ref, reference_optimum

GENERAL = SPECS / "obfuscation_general.priv"
SYMMETRIC = SPECS / "obfuscation_symmetric.priv"
F_GENERAL = np.array([[1.0, 0.0], [0.4, 0.6]])
PX_GENERAL = 0.7


def leak_decimal(px1: float, F, W) -> Decimal:
    """I(Y; F) in bits in 60-digit decimal arithmetic, for the channel with p1 = W[0][1] and
    p2 = W[1][0] (the other cells their exact complements: a float table's rows sum to 1 only
    up to rounding, which moves I by ~1e-17 absolute)."""
    getcontext().prec = 60
    px = [1 - Decimal(float(px1)), Decimal(float(px1))]
    F = [[Decimal(float(v)) for v in row] for row in F]
    p1, p2 = Decimal(float(W[0][1])), Decimal(float(W[1][0]))
    W = [[1 - p1, p1], [p2, 1 - p2]]
    J = [[sum(px[x] * F[x][f] * W[x][y] for x in (0, 1)) for y in (0, 1)] for f in (0, 1)]
    pf = [J[f][0] + J[f][1] for f in (0, 1)]
    py = [J[0][y] + J[1][y] for y in (0, 1)]
    total = sum((J[f][y] * (J[f][y] / (pf[f] * py[y])).ln() for f in (0, 1) for y in (0, 1) if J[f][y] > 0), Decimal(0))
    return total / Decimal(2).ln()


def _solve_json(spec: Path, *sets: str) -> tuple[int, dict | None, str]:
    args = ["solve", str(spec), "--json"]
    for s in sets:
        args += ["--set", s]
    p = _cli(*args)
    return p.returncode, (json.loads(p.stdout) if p.returncode == 0 else None), p.stderr


# ------------------------------------------------------------------ tiny budgets


@pytest.mark.parametrize("eps", ["1e-300", "5e-324", "1e-40"])
def test_tiny_eps_is_certified_independent(eps):
    """Was "could not close the gap" (exit 1). The feasible channels are independent up to
    |u| ~ sqrt(eps): BSC(1/2), Q = 1/4, with the analytic bound as certificate."""
    rc, out, err = _solve_json(GENERAL, f"eps={eps}")
    assert rc == 0, err
    assert out["status"] == "optimal" and out["verification"]["passed"]
    assert out["objective"] == 0.25
    assert out["channel"]["p1"] == 0.5 and out["channel"]["p2"] == 0.5
    assert out["verification"]["leakage_bits"] <= float(eps)
    assert "independent" in out["stats"]["route"]
    # independent: the leakage of the returned channel is exactly 0, and the bound is tiny
    assert leak_decimal(PX_GENERAL, F_GENERAL, [[0.5, 0.5], [0.5, 0.5]]) == 0
    assert 0.25 - out["verification"]["evidence"]["bound"] <= 1e-15


def _boundary_q(px1, F, eps, direction) -> float:
    """Q at the point where the ray from (1/2, 1/2) along ``direction`` (into p1 + p2 < 1) leaves
    {I <= eps}, by bisection on the decimal leakage (I is convex along the ray and 0 at the start)."""
    dx, dy = direction
    tmax = min(0.5 / abs(dx) if dx else math.inf, 0.5 / abs(dy) if dy else math.inf)
    at = lambda t: (0.5 + t * dx, 0.5 + t * dy)  # noqa: E731
    lo, hi = 0.0, tmax
    if leak_decimal(px1, F, [[0, at(hi)[0]], [at(hi)[1], 0]]) <= eps:
        lo = hi
    for _ in range(60):
        if hi - lo <= 1e-17:
            break
        mid = 0.5 * (lo + hi)
        p = at(mid)
        if leak_decimal(px1, F, [[0, p[0]], [p[1], 0]]) <= eps:
            lo = mid
        else:
            hi = mid
    return q_ref(px1, *at(lo))


def test_independence_bound_is_a_lower_bound_and_not_vacuous():
    """The analytic bound ``Q* >= 1/4 - deficit`` against boundary points found independently (decimal
    leakage, Sheppard's Q) on rays into the triangle, including the optimal corner (p1 = 0, p2 -> 1):
    none is below it, and the best is within a factor 4 of it (the bound is not vacuous)."""
    pf, r = _fingerprint(PX_GENERAL, F_GENERAL)
    for eps in (1e-18, 1e-10):
        deficit = independence_bound(PX_GENERAL, pf, r, eps)
        angles = np.linspace(math.pi / 2, math.pi, 9)  # from (1/2, 1/2) towards p1 = 0, p2 = 1 and round
        qs = [_boundary_q(PX_GENERAL, F_GENERAL, eps, (math.cos(a), math.sin(a) - 1e-9)) for a in angles]
        qs += [_boundary_q(PX_GENERAL, F_GENERAL, eps, (-1.0, 1.0 - 1e-7))]
        assert min(qs) >= 0.25 - deficit - 1e-15, (eps, min(qs), deficit)
        assert min(qs) <= 0.25 - deficit / 4, (eps, min(qs), deficit)
    sol = optimal_channel(PX_GENERAL, F_GENERAL, 1e-18)
    assert sol.method == "independent" and sol.gap <= 1e-9 and sol.q_value == 0.25


def test_eps_1e_12_verifies_with_relative_tolerances():
    """Was a Q mismatch of 1.07e-12 > an absolute 1e-12 (1 - p1 - p2 lost p1's digits)."""
    rc, out, err = _solve_json(GENERAL, "eps=1e-12")
    assert rc == 0, err
    assert out["verification"]["passed"]
    W = channel_of(out)
    assert float(leak_decimal(PX_GENERAL, F_GENERAL, W)) <= 1e-12 * (1 + 1e-12)
    assert out["objective"] == pytest.approx(_q_by_cdf(PX_GENERAL, W), abs=1e-12)
    ref = reference_optimum(PX_GENERAL, F_GENERAL.tolist(), 1e-12, False)
    assert out["objective"] <= ref + 1e-9
    assert out["objective"] >= out["verification"]["evidence"]["bound"]


def test_eps_1e_30_leakage_is_within_the_budget_not_an_absolute_1e_15():
    """The old verifier passed a channel leaking 6.7e-17 bits under eps = 1e-30."""
    rc, out, err = _solve_json(GENERAL, "eps=1e-30")
    assert rc == 0, err
    assert out["verification"]["leakage_bits"] <= 1e-30
    assert float(leak_decimal(PX_GENERAL, F_GENERAL, channel_of(out))) <= 1e-30


def channel_of(out: dict) -> np.ndarray:
    p1, p2 = out["channel"]["p1"], out["channel"]["p2"]
    return np.array([[1 - p1, p1], [p2, 1 - p2]])


# ------------------------------------------------------------------ eps = 0 and huge eps


def test_eps_zero_gives_bsc_half():
    rc, out, err = _solve_json(GENERAL, "eps=0")
    assert rc == 0, err
    assert out["objective"] == 0.25 and out["channel"]["p1"] == 0.5 and out["channel"]["p2"] == 0.5
    assert out["verification"]["leakage_bits"] == 0.0


@pytest.mark.parametrize("spec", [GENERAL, SYMMETRIC])
def test_huge_eps_is_inactive_and_needs_no_noise(spec):
    rc, out, err = _solve_json(spec, "eps=1e300")
    assert rc == 0, err
    assert out["objective"] == 0.0 and out["channel"]["p1"] == 0.0 and out["channel"]["p2"] == 0.0
    px, F = (PX_GENERAL, F_GENERAL) if spec == GENERAL else (0.5, [[0.9, 0.1], [0.1, 0.9]])
    assert out["verification"]["leakage_bits"] == pytest.approx(float(leak_decimal(px, F, np.eye(2))), rel=1e-14)


@pytest.mark.parametrize(
    "text, message",
    [
        ("param eps = -1e-300", "must be >= 0"),
        ("param eps = -0.5", "must be >= 0"),
    ],
)
def test_negative_eps_is_refused_at_the_param(tmp_path, text, message):
    spec = tmp_path / "neg.priv"
    src = GENERAL.read_text().replace("param eps = 0.1", text)
    spec.write_text(src)
    p = _cli("solve", str(spec), "--out", str(tmp_path / "o"))
    assert p.returncode == 2, p.stderr
    line = next(i for i, s in enumerate(src.splitlines(), 1) if s.startswith("param eps"))
    assert f"{spec.name}:{line}:" in p.stderr
    assert message in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "o").exists()


# ------------------------------------------------------------------ the bsc crossover at its ends


def _corollary2_q(eps: float, q: float) -> float:
    """Corollary 2 from scratch: h_b(p * q) = 1 - eps by brentq, Q by Sheppard (q_ref)."""
    q = min(q, 1 - q)
    hb = lambda x: -x * math.log2(x) - (1 - x) * math.log2(1 - x)  # noqa: E731
    x = brentq(lambda t: hb(t) - (1 - eps), 1e-300, 0.5, xtol=1e-300, rtol=4 * np.finfo(float).eps)
    p = (x - q) / (1 - 2 * q)
    return q_ref(0.5, p, p)


@pytest.mark.parametrize("q", ["0", "1"])
def test_bsc_at_zero_and_one_is_f_equals_x(q):
    """q = 0: F = X; q = 1: F = 1 - X (a relabelling): the same optimum."""
    rc, out, err = _solve_json(SYMMETRIC, f"q={q}")
    assert rc == 0, err
    assert out["objective"] == pytest.approx(_corollary2_q(0.2, float(q)), abs=1e-9)
    # the closed form lands on I = eps to the last bits: within the relative tolerance, no more
    assert out["verification"]["leakage_bits"] <= 0.2 * (1 + 1e-12)
    F = [[1, 0], [0, 1]] if q == "0" else [[0, 1], [1, 0]]
    assert float(leak_decimal(0.5, F, channel_of(out))) == pytest.approx(0.2, rel=1e-12)


def test_bsc_at_half_leaks_nothing_even_at_eps_zero():
    """q = 1/2: F is independent of X, every channel leaks 0: the identity, Q = 0."""
    rc, out, err = _solve_json(SYMMETRIC, "q=0.5", "eps=0")
    assert rc == 0, err
    assert out["objective"] == 0.0 and out["channel"]["p1"] == 0.0
    assert leak_decimal(0.5, [[0.5, 0.5], [0.5, 0.5]], np.eye(2)) == 0


def test_bsc_outside_its_domain_is_refused_at_the_value(tmp_path):
    spec = tmp_path / "q.priv"
    src = SYMMETRIC.read_text().replace("param q = 0.1", "param q = 1.5")
    spec.write_text(src)
    p = _cli("solve", str(spec))
    assert p.returncode == 2 and "Traceback" not in p.stderr
    line = next(i for i, s in enumerate(src.splitlines(), 1) if s.startswith("param q"))
    assert f"{spec.name}:{line}:" in p.stderr and "[0, 1]" in p.stderr


# ------------------------------------------------------------------ the verifier refuses bad points


def _model(*sets: str):
    params = dict(s.split("=") for s in sets)
    return privopt.load(GENERAL, params=params).obfuscation


def test_verifier_refuses_a_suboptimal_perturbation():
    """A solved channel moved into the feasible region (Q larger by ~1e-10) still meets the
    leakage bound, but its Q is no longer the certified one: refused."""
    model = _model("eps=0.1")
    sol = optimal_channel(model.px1, model.F_given_X, model.eps)
    assert verify(model, sol.W, claimed=sol.q_value)["passed"]
    W = sol.W.copy()
    W[1, 0] += 1e-9  # p2 up: towards the independent line, feasible and worse
    W[1, 1] -= 1e-9
    v = verify(model, W, claimed=sol.q_value)
    assert leakage_bits(model.px1, W, model.F_given_X) <= model.eps
    assert not v["passed"] and any("Q recomputed" in f for f in v["failures"])
    assert v["objective"] > sol.q_value


def test_verifier_refuses_an_infeasible_perturbation_at_every_scale():
    """Moving the solved channel the other way breaks the bound; at eps = 1e-300 a channel with
    u = 2^-40 ~ 1e-12 (leakage ~1e-25 bits, below the old absolute 1e-15 slack) is refused too."""
    model = _model("eps=0.1")
    sol = optimal_channel(model.px1, model.F_given_X, model.eps)
    W = sol.W.copy()
    W[1, 0] -= 1e-9
    W[1, 1] += 1e-9
    v = verify(model, W)
    assert not v["passed"] and any("does not hold" in f for f in v["failures"])
    tiny = _model("eps=1e-300")
    W = np.array([[0.5, 0.5], [0.5 - 2.0**-40, 0.5 + 2.0**-40]])  # exact complements
    leak = float(leak_decimal(tiny.px1, tiny.F_given_X, W))
    assert 1e-30 < leak < 1e-15
    v = verify(tiny, W)
    assert not v["passed"] and v["leakage_bits"] == pytest.approx(leak, rel=1e-12)


def test_leakage_keeps_its_relative_accuracy_at_tiny_scales():
    """kl_excess and the leakage against 60-digit decimals, down to I ~ 1e-33 (u = 2^-53)."""
    getcontext().prec = 60
    for x in (1e-100, -3e-9, 0.04, -0.06, 0.7, -0.999, 30.0):
        X = Decimal(x)
        ref = (1 + X) * (1 + X).ln() - X
        assert kl_excess(x) == pytest.approx(float(ref), rel=1e-14)
    assert kl_excess(-1.0) == 1.0
    for u in (2.0**-53, 2.0**-40, 2.0**-27):  # ~1e-16, 1e-12, 1e-8 (I ~ 1e-33 .. 1e-17), exact complements
        W = np.array([[0.5, 0.5], [0.5 - u, 0.5 + u]])
        assert leakage_bits(PX_GENERAL, W, F_GENERAL) == pytest.approx(
            float(leak_decimal(PX_GENERAL, F_GENERAL, W)), rel=1e-12
        )
