"""The composite specs in specs/blocks_*.priv (docs/blocks.md): golden answers, the JSON keys,
explain, and each number against an independent reference (a closed form, the blocks solved
alone, a scipy LP written here)."""

import json
import math
import os
from pathlib import Path

import numpy as np
import pytest

import privopt
from tests.conftest import SPECS, Lazy, invoke, spec_params
from tests.conftest import strict_json as strict

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("PRIVOPT_UPDATE_GOLDEN") == "1"
COMPOSITES = sorted(SPECS.glob("blocks_*.priv"))
KEYS = {"status", "objective", "blocks", "accountant", "even_split", "optimality", "choice", "verification"}


@pytest.fixture(scope="module")
def answers(composite_solved):
    """stem -> the strict JSON of ``privopt solve SPEC --json`` (solved once per session: conftest)."""
    return Lazy(lambda stem: strict(composite_solved[stem].json))


def _rounded(x, digits=6):
    return None if x is None else float(f"{x:.{digits}g}")


def golden_view(data: dict) -> dict:
    return {
        "status": data["status"],
        "objective": _rounded(data["objective"]),
        "accountant": data["accountant"],
        "choice": data["choice"],
        "even_split": None if data["even_split"] is None else _rounded(data["even_split"]["objective"]),
        "blocks": {
            n: {"status": b["status"], "params": {k: _rounded(v) for k, v in b["params"].items()}}
            for n, b in data["blocks"].items()
        },
    }


@pytest.mark.parametrize("spec", spec_params(COMPOSITES))
def test_golden(spec, answers):
    path = GOLDEN / f"{spec.stem}.composite.json"
    text = json.dumps(golden_view(answers[spec.stem]), indent=1) + "\n"
    if UPDATE:
        path.write_text(text)
    assert path.exists(), f"no golden file {path.name}; run with PRIVOPT_UPDATE_GOLDEN=1 and review it"
    assert text == path.read_text(), f"{path.name} changed"


@pytest.mark.parametrize("spec", spec_params(COMPOSITES))
def test_json_keys_and_certificate(spec, answers):
    data = answers[spec.stem]
    assert KEYS <= set(data)
    assert data["verification"]["passed"]
    assert data["status"] in ("optimal", "feasible")
    bound = data["optimality"]["lower_bound"]
    assert bound <= data["objective"] and data["optimality"]["gap"] >= 0
    if data["status"] == "optimal":
        assert data["optimality"]["gap"] <= 1e-6
    for b in data["blocks"].values():
        assert set(b) >= {"params", "objective", "status", "file", "sha256"}
        assert len(b["sha256"]) == 64


@pytest.mark.parametrize("spec", COMPOSITES, ids=lambda p: p.stem)
def test_explain_json(spec):
    r = invoke("explain", spec, "--json")
    assert r.exit_code == 0, r.output
    data = strict(r.stdout)
    assert list(data) == ["class", "blocks", "plan", "canonical"]  # blocks: the budget each gets (issue 21, item 5)
    assert data["class"] == "composite" and data["canonical"] is None
    assert data["plan"] and all(set(s) == {"step", "kind", "why"} for s in data["plan"])
    assert [s["kind"] for s in data["plan"]].count("method") == 1


def test_text_shows_budgets_values_and_the_gain(composite_written):
    output, _ = composite_written["blocks_means"]  # solve SPEC --out DIR, once per run (conftest)
    assert "block arith" in output and "budget eps=" in output and "gain of the optimized split" in output


def test_means_split_against_the_blocks_alone(answers):
    """Each block solved alone at its share gives its value; the even split is the blocks at
    0.5 each; no split on a coarse grid beats the proven bound."""
    data = answers["blocks_means"]
    total = 0.0
    for name, file in (("arith", "arithmetic_mean"), ("harm", "harmonic_mean")):
        b = data["blocks"][name]
        alone = privopt.load(SPECS / "blocks" / f"{file}.priv", {"eps": b["params"]["eps"]}).solve()
        assert alone.objective == pytest.approx(b["objective"], rel=1e-9)
        total += alone.objective
    assert data["objective"] == pytest.approx(total, rel=1e-9)
    assert sum(b["params"]["eps"] for b in data["blocks"].values()) <= 1.0
    even = sum(
        privopt.load(SPECS / "blocks" / f"{f}.priv", {"eps": 0.5}).solve().objective
        for f in ("arithmetic_mean", "harmonic_mean")
    )
    assert data["even_split"]["objective"] == pytest.approx(even, rel=1e-9)
    assert data["objective"] < even
    bound = data["optimality"]["lower_bound"]
    for e in np.linspace(0.1, 0.9, 5):
        a = privopt.load(SPECS / "blocks" / "arithmetic_mean.priv", {"eps": e}).solve()
        h = privopt.load(SPECS / "blocks" / "harmonic_mean.priv", {"eps": 1 - e}).solve()
        if a.status == h.status == "optimal":
            assert a.objective + h.objective >= bound


def ordered_release_tv(eps: float, k: int = 5) -> float:
    """An independent LP (scipy): min tv = 1 - sum_n P(n) G(n | n) over row-stochastic G with
    G(y | n) <= e^eps G(y | n') for |n - n'| = 1, uniform prior."""
    from scipy.optimize import linprog

    idx = lambda n, y: n * k + y  # noqa: E731
    c = np.zeros(k * k)
    for n in range(k):
        c[idx(n, n)] = -1.0 / k
    a_ub, b_ub = [], []
    for n in range(k):
        for m in (n - 1, n + 1):
            if 0 <= m < k:
                for y in range(k):
                    row = np.zeros(k * k)
                    row[idx(n, y)], row[idx(m, y)] = 1.0, -math.exp(eps)
                    a_ub.append(row)
                    b_ub.append(0.0)
    a_eq = np.zeros((k, k * k))
    for n in range(k):
        a_eq[n, n * k : (n + 1) * k] = 1.0
    res = linprog(c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=np.ones(k), bounds=(0, 1), method="highs")
    return 1.0 + res.fun


def test_design_choice_against_closed_forms(answers):
    data = answers["blocks_choice"]
    rr = 4 / (math.e + 4)  # (k - 1) / (e^eps + k - 1), k = 5, eps = 1
    ordered = ordered_release_tv(1.0)
    assert ordered < rr
    assert data["choice"] == "ordered" and data["blocks"]["rr"]["status"] == "not chosen"
    assert data["objective"] == pytest.approx(ordered, rel=1e-6)
    assert data["blocks"]["ordered"]["params"]["eps"] == pytest.approx(1.0)


def test_accuracy_first_against_the_closed_form(answers):
    data = answers["blocks_accuracy"]
    least = math.log(4 / 0.3 - 4)  # 4 / (e^eps + 4) <= 0.3
    assert data["optimality"]["lower_bound"] <= least * (1 + 1e-9) and data["objective"] >= least * (1 - 1e-9)
    assert data["objective"] == pytest.approx(least, rel=1e-6)
    assert data["blocks"]["rr"]["objective"] <= 0.3


def test_gaussian_split_against_the_cube_root_law(answers):
    """Each classic-calibration block's error is k ln(1.25 / delta) / eps^2 (k from the block alone at
    eps = 0.5, delta = 1e-6); the (eps, delta) split is checked against scipy's minimize over both
    (docs/blocks.md, "The split of delta"), and the eps split at the recorded deltas against the
    cube-root law: eps_i in proportion to (k_i ln(1.25 / delta_i))^(1/3)."""
    from scipy.optimize import minimize

    data = answers["blocks_gaussian"]
    ks = [
        privopt.load(SPECS / "blocks" / f"gaussian_{f}.priv").solve().objective * 0.25 / math.log(1.25e6)
        for f in ("pairs", "totals")
    ]

    def value(z: np.ndarray) -> float:  # z: softmax weights of the eps split, then of the delta split
        e = 0.8 * np.exp(z[:2]) / np.exp(z[:2]).sum()
        d = 2e-6 * np.exp(z[2:]) / np.exp(z[2:]).sum()
        return float(sum(k * math.log(1.25 / di) / ei**2 for k, ei, di in zip(ks, e, d)))

    best = minimize(value, np.zeros(4), method="Nelder-Mead", options={"xatol": 1e-12, "fatol": 0.0})
    best = minimize(value, best.x, method="BFGS", options={"gtol": 1e-12})
    assert data["objective"] == pytest.approx(best.fun, rel=1e-6)
    even_delta = math.log(1.25e6) * sum(k ** (1 / 3) for k in ks) ** 3 / 0.8**2  # the cube-root law at 1e-6 each
    assert data["objective"] < even_delta * (1 - 5e-3)
    deltas = [data["blocks"][n]["params"]["delta"] for n in ("pairs", "totals")]
    assert sum(deltas) == pytest.approx(2e-6, rel=1e-12) and deltas[0] < 1e-6 < deltas[1]
    roots = [(k * math.log(1.25 / d)) ** (1 / 3) for k, d in zip(ks, deltas)]
    assert data["objective"] == pytest.approx(sum(roots) ** 3 / 0.8**2, rel=1e-6)
    for name, r in zip(("pairs", "totals"), roots):
        assert data["blocks"][name]["params"]["eps"] == pytest.approx(0.8 * r / sum(roots), rel=1e-6)
    assert data["accountant"] == "basic" and data["status"] == "optimal"
    assert data["even_split"]["objective"] == pytest.approx(sum(k * math.log(1.25e6) / 0.4**2 for k in ks), rel=1e-6)
    (row,) = data["composition"]
    assert row["delta_split"] == "optimized" and [p["delta"] for p in row["parts"]] == deltas


def test_explain_text_names_the_blocks_and_the_method():
    r = invoke("explain", SPECS / "blocks_choice.priv")
    assert r.exit_code == 0
    assert "class:   composite" in r.output and "choose one of rr, ordered" in r.output and "split (method)" in r.output


def test_weighted_composition_row_against_the_closed_form(tmp_path):
    """2 * pairs.eps + totals.eps <= 0.8: with y_1 = 2 eps_1 the values are 4 k_1 / y_1^2 and
    k_2 / y_2^2, so y_i is proportional to (4 k_1)^(1/3) and k_2^(1/3)."""
    (tmp_path / "blocks").mkdir()
    for f in ("pairs", "totals"):
        (tmp_path / "blocks" / f"gaussian_{f}.priv").write_text((SPECS / "blocks" / f"gaussian_{f}.priv").read_text())
    spec = tmp_path / "c.priv"
    spec.write_text(
        'use "blocks/gaussian_pairs.priv" as pairs\nuse "blocks/gaussian_totals.priv" as totals\n'
        "choose pairs.eps, totals.eps\nsubject to 2 * pairs.eps + totals.eps <= 0.8\n"
        "minimize pairs.objective + totals.objective\n"
    )
    r = privopt.load(spec).solve()
    k1, k2 = (
        privopt.load(SPECS / "blocks" / f"gaussian_{f}.priv").solve().objective * 0.25 for f in ("pairs", "totals")
    )
    roots = [(4 * k1) ** (1 / 3), k2 ** (1 / 3)]
    assert r.objective == pytest.approx(sum(roots) ** 3 / 0.8**2, rel=1e-6)
    assert r.blocks["pairs"]["params"]["eps"] == pytest.approx(0.8 * roots[0] / sum(roots) / 2, rel=1e-6)
    assert r.status == "optimal" and r.accountant is None


def test_an_unchosen_block_spends_no_budget(tmp_path):
    (tmp_path / "blocks").mkdir()
    for f in ("randomized_response", "ordered_release"):
        (tmp_path / "blocks" / f"{f}.priv").write_text((SPECS / "blocks" / f"{f}.priv").read_text())
    spec = tmp_path / "c.priv"
    spec.write_text(
        'use "blocks/randomized_response.priv" as rr\nuse "blocks/ordered_release.priv" as ordered\n'
        "choose rr.eps, ordered.eps\nchoose one of rr, ordered\nsubject to rr.eps + ordered.eps <= 1\n"
        "minimize rr.objective + ordered.objective\n"
    )
    r = privopt.load(spec).solve()
    assert r.choice == "ordered" and r.blocks["rr"]["status"] == "not chosen"
    assert r.blocks["ordered"]["params"]["eps"] == pytest.approx(1.0)
    assert r.objective == pytest.approx(ordered_release_tv(1.0), rel=1e-6)


def test_the_python_api_solves_a_composite():
    r = privopt.solve(SPECS / "blocks_accuracy.priv")
    assert r.status == "optimal" and r.objective == pytest.approx(math.log(4 / 0.3 - 4), rel=1e-6)
    assert strict(json.dumps(r.to_dict()))["blocks"]["rr"]["status"] == "optimal"


def test_commands_that_need_one_program_refuse_a_composite(tmp_path):
    records = tmp_path / "r.csv"
    records.write_text("X\nv1\n")
    r = invoke("apply", SPECS / "blocks_choice.priv", "--data", records, "--out", tmp_path / "o.csv")
    assert r.exit_code == 2 and "apply draws from one design" in r.output
    # --out of a joint Gaussian program is built: each block's part of the joint noise
    # (tests/test_composite_commands.py)


def test_sweep_over_a_composites_param():
    r = invoke("sweep", SPECS / "blocks_choice.priv", "eps=0.5,1", "--json")
    assert r.exit_code == 0, r.output
    rows = strict(r.stdout)
    assert [row["eps"] for row in rows] == [0.5, 1.0] and all(row["choice"] == "ordered" for row in rows)
    assert rows[1]["objective"] == pytest.approx(ordered_release_tv(1.0), rel=1e-6)
    assert rows[0]["objective"] == pytest.approx(ordered_release_tv(0.5), rel=1e-6)
