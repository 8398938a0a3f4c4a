"""Composites in every command (issue 21, items 4 and 5): check (the method against a grid, each
branch, the cube-root law and each block's own check), solve --out (a subfolder per block),
sweep (the even split and the gain; --plot draws both), explain (each block's budget)."""

import itertools
import json
import math
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

import privopt
from privopt import api, plot
from privopt.composite import Composite
from privopt.composite.check import GRID, min_plus, run_check
from tests.conftest import COMPOSITE_SPECS, SLOW_CHECKS, SPECS, invoke, spec_params
from tests.conftest import strict_json as strict

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("PRIVOPT_UPDATE_GOLDEN") == "1"


def golden(path: Path, text: str) -> None:
    if UPDATE:
        path.write_text(text)
    assert path.exists(), f"no golden file {path.name}; run with PRIVOPT_UPDATE_GOLDEN=1 and review it"
    assert text == path.read_text(), f"{path.name} changed; if intended, regenerate with PRIVOPT_UPDATE_GOLDEN=1"


def _rounded(x):
    return None if x is None else float(f"{x:.6g}")


# ---------------------------------------------------------------- check


@pytest.fixture(scope="module")
def checks(composite_checked):
    return composite_checked  # stem -> (exit code, JSON or output) of check SPEC --json, once per session


@pytest.mark.parametrize("spec", spec_params(COMPOSITE_SPECS, slow=SLOW_CHECKS))
def test_check_every_composite_agrees_golden(spec, checks):
    code, data = checks[spec.stem]
    assert code == 0, data
    assert data["verdict"] == "agree" and data["problem_class"] == "composite"
    assert data["paths"][0]["status"] == "reference" and len(data["paths"]) >= 2
    # the routes, their statuses and values (6 digits: the grid and the blocks are exact solves)
    view = {
        "method": data["reference"]["method"],
        "paths": [
            {"route": p["route"], "status": p["status"], "objective": _rounded(p["objective"])} for p in data["paths"]
        ],
    }
    golden(GOLDEN / f"{spec.stem}.check.json", json.dumps(view, indent=1) + "\n")


def test_check_grid_brackets_the_certified_split(checks):
    """The grid's splits are feasible: its value is >= the optimum >= the proven bound."""
    _, data = checks["blocks_means"]
    ref, grid = data["paths"][0], next(p for p in data["paths"] if p["route"] == "grid")
    assert ref["bound"] <= ref["objective"] and ref["bound"] <= grid["objective"]
    assert grid["objective"] >= ref["objective"] * (1 - 1e-3)  # at the method's gap (1.4e-4) at most
    assert grid["solves"] == 2 * (GRID + 1)


def test_check_cube_root_law_matches_the_classic_split(checks):
    _, data = checks["blocks_gaussian"]
    ref, law = data["paths"][0], next(p for p in data["paths"] if p["route"] == "cube-root law")
    assert law["status"] == "agrees" and law["objective"] == pytest.approx(ref["objective"], rel=1e-9)
    assert "pairs.eps=0.2088414" in law["message"] and "pairs.delta=4.92225" in law["message"]  # the (eps, delta) law


def test_check_of_a_choice_runs_every_branch(checks):
    _, data = checks["blocks_choice"]
    branches = {p["route"]: p for p in data["paths"] if p["route"].startswith("branch")}
    assert set(branches) == {"branch rr: grid", "branch ordered: grid"}
    # the method chose ordered: no branch is better
    assert min(b["objective"] for b in branches.values()) == pytest.approx(data["paths"][0]["objective"], rel=1e-9)


def test_check_of_accuracy_first_grids_t(checks):
    _, data = checks["blocks_accuracy"]
    grid = data["paths"][1]
    assert grid["route"] == "grid of 41 eps" and grid["status"] == "agrees"
    assert grid["objective"] == pytest.approx(2.25)  # the least grid eps (step 0.25) >= ln(4 / 0.3 - 4)


def test_check_of_the_joint_program_against_splits(checks):
    _, data = checks["blocks_joint_gaussian"]
    ref, grid = data["paths"]
    assert grid["route"].startswith("grid of eps splits") and ref["objective"] <= grid["objective"]


def test_check_text_and_exit_code():
    r = invoke("check", SPECS / "blocks_choice.priv")
    assert r.exit_code == 0, r.output
    assert "branch ordered: grid" in r.output and "all paths agree" in r.output


def test_check_refutes_a_bound_above_a_feasible_point(monkeypatch):
    """A method whose proven bound is wrong (above a grid split) makes the check disagree: exit 4."""
    solve = Composite.solve

    def wrong(self, **kw):
        r = solve(self, **kw)
        r.optimality["lower_bound"] = r.objective * 1.05
        r.objective *= 1.05
        return r

    monkeypatch.setattr(Composite, "solve", wrong)
    r = invoke("check", SPECS / "blocks_gaussian.priv", "--json")
    assert r.exit_code == 4, r.output
    data = strict(r.stdout)
    assert data["verdict"] == "disagree"
    assert any("proven bound" in p["message"] and p["status"] == "disagrees" for p in data["paths"])


def test_check_fails_a_method_whose_answer_did_not_verify(monkeypatch):
    solve = Composite.solve

    def unverified(self, **kw):
        r = solve(self, **kw)
        r.verification = {"passed": False, "checks": [{"check": "block rr verified", "passed": False}]}
        return r

    monkeypatch.setattr(Composite, "solve", unverified)
    report = run_check(api.load(SPECS / "blocks_accuracy.priv"))
    assert report.verdict == "disagree" and report.paths[0].status == "failed"


def test_check_on_one_backend_only():
    r = invoke("check", SPECS / "blocks_accuracy.priv", "--backends", "highs,scipy")
    assert r.exit_code == 2 and "one backend" in r.output


@pytest.mark.parametrize("seed", range(20))
def test_min_plus_is_the_best_split_of_the_grid(seed):
    rng = np.random.default_rng(seed)
    n, steps = int(rng.integers(1, 4)), int(rng.integers(0, 7))
    curves = [list(rng.normal(size=steps + 1)) for _ in range(n)]
    if seed % 3 == 0:
        curves[0][0] = math.inf  # a block infeasible at no budget
    value, picks = min_plus(curves, steps)
    best = min(
        (sum(c[j] for c, j in zip(curves, js)), js)
        for js in itertools.product(range(steps + 1), repeat=n)
        if sum(js) <= steps
    )
    assert value == pytest.approx(best[0]) and sum(picks) <= steps
    assert sum(c[j] for c, j in zip(curves, picks)) == pytest.approx(value)


# ---------------------------------------------------------------- solve --out


def test_out_writes_the_composite_and_each_block(tmp_path, composite_written):
    output, written = composite_written["blocks_means"]  # solve SPEC --out DIR, once per run (conftest)
    files = ["arith/f.csv", "arith/result.json", "harm/f.csv", "harm/result.json", "result.json"]
    assert (written / ".privopt-files").read_text().split() == files
    assert f"wrote 5 files to {written}: {', '.join(files)} (and .privopt-files" in output
    top = strict((written / "result.json").read_text())
    for name in ("arith", "harm"):
        block = strict((written / name / "result.json").read_text())
        assert block["spec"]["params"]["eps"] == pytest.approx(top["blocks"][name]["params"]["eps"], rel=1e-15)
        assert block["objective"] == pytest.approx(top["blocks"][name]["objective"], rel=1e-12)
        assert block["verification"]["passed"]
    # an earlier composite result is replaced; a block not chosen writes no folder
    out = tmp_path / "res"
    shutil.copytree(written, out)
    r = invoke("solve", SPECS / "blocks_choice.priv", "--out", out)
    assert r.exit_code == 0, r.output
    assert sorted(p.name for p in out.iterdir()) == [".privopt-files", "ordered", "result.json"]


def test_out_of_a_joint_program_writes_each_blocks_part_of_the_noise(composite_solved):
    """A composite that is one joint Gaussian program: result.json (which verify re-checks from
    the folder) and per block its part of the joint noise, the variances result.json records and
    the block's value recomputed from them (its noiseless part is 0: E[sum((O - F x)^2)] = tr(G'
    G Sigma), G the identity on the answers' noise and F on the inputs')."""
    import csv

    written = composite_solved["blocks_joint_gaussian"].out
    files = ["pairs/noise.csv", "prefix/noise.csv", "result.json"]
    assert (written / ".privopt-files").read_text().split() == files
    top = strict((written / "result.json").read_text())
    maps = {"prefix": np.tril(np.ones((4, 4))), "pairs": np.array([[1.0, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]])}
    for name, F in maps.items():
        with (written / name / "noise.csv").open() as fh:
            rows = list(csv.DictReader(fh))
        got: dict[str, list[float]] = {}
        for row in rows:
            got.setdefault(row["noise"], []).append(float(row["variance"]))
            assert int(row["i"]) == len(got[row["noise"]])
        assert got == top["blocks"][name]["variances"]  # exactly: floats round-trip
        value = float(np.sum(np.diag(F @ np.diag(got["eta"]) @ F.T)) + sum(got["xi"]))
        assert value == pytest.approx(top["blocks"][name]["objective"], rel=1e-9)
    r = invoke("verify", written / "result.json")
    assert r.exit_code == 0 and r.stdout.splitlines()[-1] == "verified: every check holds", r.output


def test_out_refuses_a_composite_folder_with_extra_files(tmp_path):
    out = tmp_path / "res"
    assert invoke("solve", SPECS / "blocks_choice.priv", "--out", out).exit_code == 0
    (out / "ordered" / "notes.txt").write_text("mine")
    r = invoke("solve", SPECS / "blocks_choice.priv", "--out", out)
    assert r.exit_code == 2 and (out / "ordered" / "notes.txt").read_text() == "mine"
    (out / "ordered" / "notes.txt").unlink()
    (out / "empty").mkdir()  # an empty folder privopt never writes
    r = invoke("solve", SPECS / "blocks_choice.priv", "--out", out)
    assert r.exit_code == 2 and (out / "empty").is_dir()


# ---------------------------------------------------------------- sweep


def test_sweep_shows_the_even_split_and_the_gain():
    r = invoke("sweep", SPECS / "blocks_gaussian.priv", "eps=0.4,0.8")
    assert r.exit_code == 0, r.output
    header = next(line for line in r.output.splitlines() if "objective" in line)
    assert "even split" in header and "gain" in header
    r = invoke("sweep", SPECS / "blocks_gaussian.priv", "eps=0.4,0.8", "--json")
    rows = strict(r.stdout)
    for row in rows:
        even = row["even_split"]
        assert even["gain"] == pytest.approx(even["objective"] - row["objective"], rel=1e-12) and even["gain"] > 0
    # classic Gaussian blocks: k / eps^2, so halving the total budget multiplies both by 4
    assert rows[0]["objective"] == pytest.approx(4 * rows[1]["objective"], rel=1e-9)
    assert rows[0]["even_split"]["objective"] == pytest.approx(4 * rows[1]["even_split"]["objective"], rel=1e-9)


def test_sweep_plot_draws_optimized_against_even(tmp_path, monkeypatch):
    drawn = []
    original = plot.sweep_figure

    def spy(*args, **kwargs):
        drawn.append((args, kwargs))
        return original(*args, **kwargs)

    monkeypatch.setattr(plot, "sweep_figure", spy)
    out = tmp_path / "s.svg"
    r = invoke("sweep", SPECS / "blocks_gaussian.priv", "eps=0.4,0.8", "--plot", out)
    assert r.exit_code == 0, r.output
    ((args, kwargs),) = drawn
    assert kwargs["even"][0] > args[3][0] and kwargs["even"][1] > args[3][1]  # above the optimized curve
    text = out.read_text()
    assert "even split" in text and "optimized (within its certified gap)" in text


def test_sweep_figure_even_curve_breaks_where_a_value_failed(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    out = tmp_path / "e.png"
    plot.sweep_figure(
        out,
        "eps",
        [1, 2, 3],
        [3.0, None, 1.0],
        ["optimal", "failed", "feasible"],
        "y",
        "t",
        even=[4.0, None, 2.0],
        solved=("optimal", "feasible"),
        label="optimized",
    )
    assert out.stat().st_size > 0
    with pytest.raises(ValueError, match="differ in length"):
        plot.sweep_figure(out, "eps", [1, 2], [3.0, 1.0], ["optimal"] * 2, "y", "t", even=[1.0])


# ---------------------------------------------------------------- explain


@pytest.mark.parametrize("spec", COMPOSITE_SPECS, ids=lambda p: p.stem)
def test_explain_every_composite_golden(spec, monkeypatch):
    """explain reads the model: no block is solved."""

    def refuse(*_a, **_k):
        raise AssertionError("explain solved a block")

    monkeypatch.setattr(api.Problem, "solve", refuse)
    monkeypatch.chdir(SPECS.parent)  # the spec's path as the golden file shows it
    r = invoke("explain", spec.relative_to(SPECS.parent))
    assert r.exit_code == 0, r.output
    golden(GOLDEN / f"{spec.stem}.explain.txt", r.stdout)
    data = strict(invoke("explain", spec, "--json").stdout)
    assert list(data) == ["class", "blocks", "plan", "canonical"]
    assert [b["block"] for b in data["blocks"]] == list(privopt.load(spec).blocks)


def test_explain_joint_lists_the_shared_budget():
    data = strict(invoke("explain", SPECS / "blocks_joint_gaussian.priv", "--json").stdout)
    assert [(b["block"], b["fixed"]) for b in data["blocks"]] == [
        ("prefix", {"delta": 1e-6, "eps": 1.0}),
        ("pairs", {"delta": 1e-6, "eps": 1.0}),
    ]
    assert all("joint Gaussian program" in b["how"] for b in data["blocks"])


def test_explain_split_lists_the_chosen_range_and_its_row():
    data = strict(invoke("explain", SPECS / "blocks_gaussian.priv", "--json").stdout)
    pairs = data["blocks"][0]
    assert pairs["chosen"] == {"eps": [0.0, None], "delta": [0.0, 2e-6]} and pairs["fixed"] == {}  # delta with eps
    assert pairs["how"] == (
        "chosen by the split of dp(pairs, totals) <= (eps, delta), delta with eps (classic calibration; evenly if "
        "a block's eps reaches 1)"
    )
