"""privopt.verification (issue 20, item 5): one verifier per set and per objective atom, and a
point's verification as a fold over its constraints, then its objective, then its certificate.

* for every spec in specs/, the fold's verdict on the point the pipeline verified equals the
  pipeline's (passed, and the same failure texts);
* a tampered point (a cell moved by 1e-6, a budget breached, a variance lowered, a channel's
  row off) fails, with the set it leaves named by the failing check;
* privopt.verification imports, and verifies, with cvxpy, highspy and pyomo unimportable.
"""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import privopt
from privopt.blocks import channel as pobf
from privopt.blocks import report as patr
from privopt.blocks import table as pm
from privopt.core.certificate import Certificate
from privopt.core.sets import SETS, Budget, GaussianDP, Leakage, LogLift, SimplexRows
from privopt.methods import conic as pnoise
from privopt.verification import certificate as vcert
from privopt.verification import sets as vsets
from privopt.verification.checks import Check, Verdict, compare, fold
from privopt.verification.problems import verify_channel, verify_mechanism, verify_noise, verify_transparency
from tests.conftest import PROGRAM_SPECS, SPECS

ROOT = Path(__file__).resolve().parent.parent
# composites (specs/blocks_*.priv) verify block by block: tests/test_composite_specs.py
SPEC_FILES = PROGRAM_SPECS
FAMILY_MODULES = {"atr": patr, "mechanism": pm, "noise": pnoise, "obfuscation": pobf}


# ------------------------------------------------------------------ capturing the pipeline's point


class Captured:
    """The arguments and the returned dict of the first call of a family's ``verify``."""

    def __init__(self):
        self.args = None
        self.kwargs = None
        self.result = None


def _solve_capturing(spec: Path, monkeypatch) -> tuple[str, Captured]:
    problem = privopt.load(spec)
    family = problem.kind
    module = FAMILY_MODULES[family]
    seen = Captured()
    original = module.verify

    def spy(*args, **kwargs):
        out = original(*args, **kwargs)
        if seen.args is None:
            seen.args, seen.kwargs = args, kwargs
            seen.result = {"passed": out["passed"], "failures": list(out["failures"])}
        return out

    monkeypatch.setattr(module, "verify", spy)
    problem.solve()
    assert seen.args is not None, f"{spec.name}: the pipeline's verify was not called"
    return family, seen


def _fold(family: str, seen: Captured) -> Verdict:
    """The fold of privopt.verification on the point the pipeline verified."""
    a, kw = seen.args, seen.kwargs
    if family == "atr":
        problem, inst, table, beta_g, _ = a
        return verify_transparency(
            problem, inst.p, table, beta_g, patr._design_array(problem, inst, table), inst.group_key
        )
    if family == "mechanism":
        problem, x, claimed, _ = a[:4]
        evidence = a[4] if len(a) > 4 else kw.get("evidence")
        return verify_mechanism(problem, x, claimed, dict(evidence or {"kind": "none"}))
    if family == "noise":
        model, cov, program = a[:3]
        backend, duals = kw.get("backend"), kw.get("duals")
        certify = kw.get("certify", a[4] if len(a) > 4 else True)
        bound = (lambda enough: pnoise.lower_bound(program, backend, duals, enough)) if certify else None
        return verify_noise(model, cov, program, bound)
    model, W = a[:2]
    return verify_channel(model, W, kw.get("claimed", a[2] if len(a) > 2 else None))


@pytest.mark.parametrize("spec", SPEC_FILES, ids=lambda p: p.stem)
def test_the_folds_verdict_is_the_pipelines(spec, monkeypatch):
    family, seen = _solve_capturing(spec, monkeypatch)
    verdict = _fold(family, seen)
    assert verdict.passed == seen.result["passed"]
    assert verdict.failures == seen.result["failures"]
    assert verdict.checks, "a fold with no check verifies nothing"
    assert all(isinstance(c, Check) and c.name for c in verdict.checks)
    assert all(c.margin >= 0 for c in verdict.checks if c.passed)


# ------------------------------------------------------------------ tampered points


def _captured(name: str, monkeypatch) -> Captured:
    return _solve_capturing(SPECS / name, monkeypatch)[1]


def _failed_names(verdict: Verdict) -> list[str]:
    assert not verdict.passed
    return [c.name for c in verdict.failed]


def test_a_transparency_cell_moved_by_1e_6_fails_its_rows(monkeypatch):
    seen = _captured("atr_table4.priv", monkeypatch)
    problem, inst, table, beta_g, _ = seen.args
    bad = table.copy()
    bad.flat[int(np.argmax(bad))] -= 1e-6  # stays in [0, 1]; its row no longer sums to 1
    v = verify_transparency(problem, inst.p, bad, beta_g, patr._design_array(problem, inst, bad), inst.group_key)
    names = _failed_names(v)
    assert "simplex rows: row sums" in names
    assert any("a row sums to 1 +- 1e-06" in f for f in v.failures)
    assert not patr.verify(problem, inst, bad, beta_g, "test")["passed"]


def test_a_fidelity_bound_breached_names_the_constraint(monkeypatch):
    seen = _captured("atr_alpha_fidelity.priv", monkeypatch)
    problem, inst, table, beta_g, _ = seen.args
    dense = patr._design_array(problem, inst, table)
    c = problem.constraints[0]
    s = vsets.Fidelity(c.sense, c.text)
    assert vsets.fidelity(s, c.coef, c.const, dense).passed
    moved = dense + np.where(c.coef > 0, 1e-6, -1e-6)  # every cell toward the bound's wrong side
    v = vsets.fidelity(s, c.coef, c.const, moved)
    assert _failed_names(v) == [f"fidelity '{c.text}'"] and v.checks[0].margin < 0


def test_a_breached_budget_fails_with_the_budget_named(monkeypatch):
    seen = _captured("sanitize_ldp_budget.priv", monkeypatch)
    problem, x, claimed = seen.args[:3]
    b = problem.budgets[0]
    assert verify_mechanism(problem, x, claimed, {"kind": "none"}).passed
    M = np.zeros(problem.shape(problem.design.axes))  # P(Y | S, X): release X as it is
    M[..., np.arange(M.shape[-1]), np.arange(M.shape[-1])] = 1.0  # P(Y | S) = P(X | S): eps = log 5
    v = verify_mechanism(problem, M.ravel(), None, {"kind": "none"})
    names = _failed_names(v)
    assert f"{budget_kind(b)} '{b.text}'" in names
    assert any(f"'{b.text}' does not hold" in f for f in v.failures)
    assert v.values["budgets_achieved"][b.text] > b.eps


def budget_kind(b) -> str:
    return "loglift" if b.kind == "loglift" else "budget"


def test_a_lowered_variance_fails_the_gaussian_requirement(monkeypatch):
    seen = _captured("noise_placement.priv", monkeypatch)
    model, cov, program = seen.args[:3]
    assert verify_noise(model, cov, program).passed
    lowered = {name: S * (1 - 1e-3) for name, S in cov.items()}
    v = verify_noise(model, lowered, program)
    names = _failed_names(v)
    assert any(n.startswith("gaussian dp '") for n in names)
    assert any("does not hold" in f for f in v.failures)
    negative = {name: np.where(np.arange(S.size) == 0, -1.0, S) if S.ndim == 1 else S for name, S in cov.items()}
    assert any(n.startswith("nonnegative ") for n in _failed_names(verify_noise(model, negative, program)))


def test_a_channel_row_off_fails_its_rows(monkeypatch):
    seen = _captured("obfuscation_general.priv", monkeypatch)
    model, W = seen.args[:2]
    assert verify_channel(model, W).passed
    bad = np.array(W, dtype=float)
    bad[0, 0] -= 1e-9
    v = verify_channel(model, bad)
    assert f"simplex rows of {model.design}: row sums" in _failed_names(v)
    assert not pobf.verify(model, bad)["passed"]


def test_a_breached_leakage_names_the_leakage_set(monkeypatch):
    seen = _captured("obfuscation_general.priv", monkeypatch)
    model, W = seen.args[:2]
    v = verify_channel(model, np.eye(2))  # the identity channel leaks all of I(X; F)
    assert f"leakage '{model.leakage.text}'" in _failed_names(v)


# ------------------------------------------------------------------ checks, sets and certificates


def test_compare_fails_on_nan_and_reports_its_margin():
    assert compare("x", 1.0, 2.0, "no").margin == 1.0
    bad = compare("x", math.nan, 2.0, "fails on NaN")
    assert not bad.passed and math.isnan(bad.margin) and bad.detail == "fails on NaN"
    v = fold([compare("a", 1.0, 0.0, "a fails")], Verdict([compare("b", 0.0, 1.0, "b fails")], {"k": 1}))
    assert [c.name for c in v.checks] == ["a", "b"] and v.failures == ["a fails"] and v.values == {"k": 1}


def test_every_privacy_set_names_its_bridges():
    assert [b.name for b in Budget().bridges] == ["envelope rows", "pairwise rows"]
    assert [b.name for b in GaussianDP().bridges] == ["soc", "psd"]
    assert not Leakage().bridges and "global method" in Leakage().describe()["unbridged"]
    for s in SETS:
        d = s().describe()
        assert d["canonical"] or d["bridges"] or d.get("unbridged"), s.__name__
        assert all(set(b["into"]) <= {"zero", "nonnegative", "soc", "psd"} for b in d["bridges"])
    with pytest.raises(TypeError, match="no verifier"):
        vsets.verify_set(vsets.Nonnegative(), np.zeros(1))


def test_a_pairwise_budget_is_checked_in_log_space():
    cond = np.array([[1 / (1 + math.e), math.e / (1 + math.e)], [math.e / (1 + math.e), 1 / (1 + math.e)]])
    live = np.ones(2, bool)
    assert vsets.budget(Budget("ldp", 1.0, text="ldp(X -> Y) <= 1"), cond, live).passed
    v = vsets.budget(Budget("ldp", 1.0 - 1e-6, text="ldp(X -> Y) <= 0.999999"), cond, live)
    assert not v.passed and v.values["achieved"] == pytest.approx(1.0)
    zero_beside = np.array([[0.0, 1.0], [1e-300, 1 - 1e-300]])
    assert vsets.budget(Budget("ldp", 700.0, text="t"), zero_beside, live).values["achieved"] == math.inf
    lift = vsets.budget(LogLift(0.5, "loglift(X -> Y) <= 0.5"), cond, live, weights=np.array([0.5, 0.5]))
    assert not lift.passed and lift.checks[0].name == "loglift 'loglift(X -> Y) <= 0.5'"


def test_simplex_rows_are_exact_on_cells_and_rounding_on_rows():
    assert vsets.simplex_rows(SimplexRows(width=2), np.array([[0.25, 0.75]])).passed
    v = vsets.simplex_rows(SimplexRows(width=2), np.array([[-1e-300, 1.0]]))
    assert [c.name for c in v.failed] == ["simplex rows: cells in [0, 1]"]


def test_a_certificate_is_rechecked_by_weak_duality():
    value = 0.5
    good = Certificate("dual-bound", "a dual point bounds the LP", bound=0.5 - 1e-12, side="lower")
    assert vcert.certificate(good, value, 1e-9).passed
    better_than_bound = Certificate("dual-bound", "claim", bound=0.6, side="lower")
    assert not vcert.certificate(better_than_bound, value, 1e-9).passed
    assert vcert.certificate(Certificate("theorem", "Theorem 1 applies"), value, 1e-9).passed
    ev = {"kind": "dual bound", "bound": 0.4, "side": "lower"}
    v = vcert.dual_bound(value, ev, 1e-7)
    assert not v.passed and ev["gap"] == pytest.approx(0.1) and "is not certified" in v.failures[0]


# ------------------------------------------------------------------ no solver


BLOCKER = textwrap.dedent(
    """
    import importlib.abc, sys

    BLOCKED = ("cvxpy", "highspy", "pyomo")

    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ImportError(f"{name} is blocked in this test")
            return None

    sys.meta_path.insert(0, Block())
    """
)


def test_verification_runs_with_no_solver_importable():
    code = BLOCKER + textwrap.dedent(
        """
        import pkgutil, importlib
        import numpy as np
        import privopt.verification as v
        for m in pkgutil.iter_modules(v.__path__):
            importlib.import_module(f"privopt.verification.{m.name}")
        import privopt.core.sets
        from privopt.core.sets import SimplexRows, Leakage
        from privopt.verification import sets
        W = np.array([[0.9, 0.1], [0.2, 0.8]])
        assert sets.simplex_rows(SimplexRows(width=2, atol=1e-15, table="W"), W).passed
        leak = sets.leakage(Leakage(1e-9, "mutual_info(Y; F) <= 1e-9"), 0.5, W, np.array([[0.9, 0.1], [0.1, 0.9]]))
        assert not leak.passed
        try:
            import cvxpy  # noqa: F401
        except ImportError:
            pass
        else:
            raise SystemExit("the blocker let cvxpy in")
        assert not any(k.split(".")[0] in BLOCKED for k in sys.modules), sorted(sys.modules)
        print("ok")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
