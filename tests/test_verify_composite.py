"""``privopt verify`` on composite results (issues 21 and 22): every ``specs/blocks_*.priv`` result,
written by ``--json`` and by ``--out``, verifies (also where no solver can be imported);
tampering with a block's chosen eps, a block's table cell, the objective, a recorded point's
bound, the lower bound, the design choice or a joint mechanism's sensitivity fails with exit 1
naming the check; an edited block file or composite spec gives exit 2 naming it."""

from __future__ import annotations

import copy
import json
import shutil

import pytest
from click.testing import CliRunner
from conftest import COMPOSITE_SPECS, ROOT, SLOW_SPECS, Lazy, spec_params
from test_verify_nosolver import _run_blocked

from privopt.cli import main


@pytest.fixture(scope="module")
def results(composite_solved) -> Lazy:
    """Each composite spec's --json (its JSON) and --out (its folder), solved once per session
    (conftest's ``composite_solved``)."""
    return Lazy(lambda stem: {"json": json.loads(composite_solved[stem].json), "out": composite_solved[stem].out})


def _verify(result: dict, tmp_path, name: str = "r.json"):
    path = tmp_path / name
    path.write_text(json.dumps(result))
    return CliRunner().invoke(main, ["verify", str(path)])


@pytest.mark.parametrize("spec", spec_params(p.stem for p in COMPOSITE_SPECS))
def test_every_composite_result_verifies_from_json_and_out(spec, results, tmp_path):
    checked = _verify(results[spec]["json"], tmp_path)
    assert checked.exit_code == 0, checked.output
    assert checked.stdout.splitlines()[-1] == "verified: every check holds"
    assert "composition" in checked.stdout or spec == "blocks_accuracy"
    assert "objective = the blocks' weighted values" in checked.stdout
    from_out = CliRunner().invoke(main, ["verify", str(results[spec]["out"] / "result.json")])
    assert from_out.exit_code == 0, from_out.output


def test_each_block_is_checked_as_a_single_result(results, tmp_path):
    checked = _verify(results["blocks_means"]["json"], tmp_path)
    for block in ("arith", "harm"):
        assert f"block {block}: certificate dual bound (exact)" in checked.stdout
    assert "lower bound re-derived from the recorded splits" in checked.stdout


def _means(results) -> dict:
    return copy.deepcopy(results["blocks_means"]["json"])


def _more_eps(r):
    r["blocks"]["arith"]["params"]["eps"] += 0.01


def _cell(r):
    r["blocks"]["arith"]["result"]["tables"]["f"][0]["value"] = 0.25


def _objective(r):
    r["objective"] *= 0.99


def _point_bounds(r):
    """Every finite point bound of block arith raised by 1: above what its multipliers prove.
    (Lowered bounds are still proven, and the row's bound comes from the cells' multipliers.)"""
    for p in r["splits"][0]["points"][0]:
        if p[2] is not None:  # the share 0 point's value and bound are +inf (null)
            p[2] += 1.0


def _lower_bound(r):
    r["optimality"]["lower_bound"] -= 0.001


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (_more_eps, "composition 1 arith.eps + 1 harm.eps <= 1"),
        (_cell, "block arith:"),
        (_objective, "objective = the blocks' weighted values"),
        (_point_bounds, "split 1: block arith: each point's bound proven by its multipliers"),
        (_lower_bound, "lower bound re-derived from the recorded splits"),
    ],
    ids=["block-eps", "table-cell", "objective", "point-bound", "lower-bound"],
)
def test_tampering_fails_named(change, named, results, tmp_path):
    r = _means(results)
    change(r)
    checked = _verify(r, tmp_path)
    assert checked.exit_code == 1, checked.output
    assert any(line.startswith("FAIL") and named in line for line in checked.stdout.splitlines()), checked.stdout


def test_a_changed_choice_fails(results, tmp_path):
    r = copy.deepcopy(results["blocks_choice"]["json"])
    assert r["choice"] == "ordered"
    r["choice"] = "rr"
    checked = _verify(r, tmp_path)
    assert checked.exit_code == 1 and "FAIL  design choice" in checked.stdout, checked.output


@pytest.mark.parametrize("spec", spec_params(["blocks_joint_gaussian", "blocks_joint_mixed"]))
def test_a_joint_programs_variance_or_sensitivity_tampered_fails(spec, results, tmp_path):
    r = copy.deepcopy(results[spec]["json"])
    r["blocks"]["prefix"]["variances"]["eta"][0] *= 0.9  # less noise: a sensitivity above the ceiling
    checked = _verify(r, tmp_path)
    assert checked.exit_code == 1 and "FAIL  joint Gaussian (prefix, pairs): gaussian dp" in checked.stdout
    r = copy.deepcopy(results[spec]["json"])
    r["composition"][0]["parts"][0]["sensitivity"] *= 1.001
    checked = _verify(r, tmp_path)
    assert checked.exit_code == 1 and "FAIL  joint Gaussian (prefix, pairs): recorded sensitivity" in checked.stdout


@pytest.mark.slow  # a split with a joint group and a closed form: blocks_joint_mixed_target (conftest.SLOW_SPECS)
def test_a_block_of_a_composite_status_must_match_its_gap(results, tmp_path):
    r = copy.deepcopy(results["blocks_joint_mixed_target"]["json"])
    assert r["status"] == "optimal" and r["optimality"]["gap"] <= 1e-6  # its cells are second order (groupcells)
    r["status"] = "feasible"  # a certified gap within split.RTOL is optimal, not merely feasible
    checked = _verify(r, tmp_path)
    assert checked.exit_code == 1 and "FAIL  status" in checked.stdout
    r["status"], r["optimality"]["gap"] = "optimal", 1e-5  # and a recorded gap is the recomputed one
    checked = _verify(r, tmp_path)
    assert checked.exit_code == 1 and "FAIL  relative gap" in checked.stdout


def test_an_edited_block_file_or_composite_spec_is_exit_2(results, tmp_path):
    """blocks_means's result, its spec and block files copied to a folder of their own (the
    result's recorded path and folder moved with them: the same text, the same SHA-256)."""
    shutil.copy(ROOT / "specs" / "blocks_means.priv", tmp_path)
    shutil.copytree(ROOT / "specs" / "blocks", tmp_path / "blocks")
    r = _means(results)
    r["spec"] |= {"path": str(tmp_path / "blocks_means.priv"), "cwd": str(tmp_path)}
    (tmp_path / "r.json").write_text(json.dumps(r))
    assert CliRunner().invoke(main, ["verify", str(tmp_path / "r.json")]).exit_code == 0
    block = tmp_path / "blocks" / "harmonic_mean.priv"
    block.write_text(block.read_text() + "\n# edited\n")
    checked = CliRunner().invoke(main, ["verify", str(tmp_path / "r.json")])
    assert checked.exit_code == 2 and "harmonic_mean.priv" in checked.output and "changed" in checked.output
    block.write_text(block.read_text().removesuffix("\n# edited\n"))
    assert CliRunner().invoke(main, ["verify", str(tmp_path / "r.json")]).exit_code == 0
    spec = tmp_path / "blocks_means.priv"
    spec.write_text(spec.read_text() + "\n# edited\n")
    checked = CliRunner().invoke(main, ["verify", str(tmp_path / "r.json")])
    assert checked.exit_code == 2 and "blocks_means.priv" in checked.output and "changed" in checked.output


@pytest.mark.parametrize(
    "names",
    [
        tuple(p.stem for p in COMPOSITE_SPECS if p.stem not in SLOW_SPECS),
        pytest.param(tuple(sorted(SLOW_SPECS)), marks=pytest.mark.slow),
    ],
    ids=["default", "slow"],
)
def test_composite_results_verify_with_no_solver_importable(names, results, tmp_path):
    """Every specs/blocks_*.priv result (--json, and --out) verifies in a
    subprocess where every solver package fails to import (the slow specs' under -m slow)."""
    paths = []
    for name in names:
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(results[name]["json"]))
        paths.append(str(path))
        paths.append(str(results[name]["out"] / "result.json"))
    _run_blocked(paths)


def test_a_randomized_response_closed_form_split_is_re_derived(tmp_path):
    shutil.copytree(ROOT / "specs" / "blocks", tmp_path / "blocks")
    spec = tmp_path / "two_rr.priv"
    spec.write_text(
        'spec "two randomized responses share one budget"\n'
        'use "blocks/randomized_response.priv" as a\n'
        'use "blocks/randomized_response.priv" as b\n'
        "param eps = 3.0\n"
        "subject to dp(a, b) <= eps\n"
        "minimize a.objective + 2 * b.objective\n"
    )
    solved = CliRunner().invoke(main, ["solve", str(spec), "--json"])
    assert solved.exit_code == 0, solved.output
    r = json.loads(solved.stdout)
    assert r["splits"][0]["points"] == []  # the closed form: no evaluated points
    checked = _verify(r, tmp_path)
    assert checked.exit_code == 0 and "ok    split 1 (a.eps, b.eps) lower bound" in checked.stdout, checked.output
    r["splits"][0]["lower_bound"] -= 0.01
    checked = _verify(r, tmp_path)
    assert checked.exit_code == 1 and "FAIL  split 1 (a.eps, b.eps) lower bound" in checked.stdout


def test_the_api_verifies_a_composite_result_dict(results):
    import privopt

    report = privopt.verify(copy.deepcopy(results["blocks_gaussian"]["json"]))
    assert report.passed and report.problem_class == "composite"
    assert any(c.name.startswith("block pairs: ") for c in report.checks)
    assert "split 1 (pairs.eps, totals.eps) lower bound" in [c.name for c in report.checks]


def test_the_cells_dual_bounds_are_what_the_lower_bound_is_re_derived_from(results, tmp_path):
    """blocks_means is certified to 1e-6 by its cells' LP-dual bounds (``cell_bounds``): without
    them the recorded points prove less than the recorded bound, and verify says so."""
    r = _means(results)
    (row,) = r["splits"]
    assert any(cb is not None for block in row["cell_bounds"] for cb in block)
    row["cell_bounds"] = [[None for _ in block] for block in row["cell_bounds"]]
    checked = _verify(r, tmp_path)
    assert checked.exit_code == 1 and "lower bound re-derived from the recorded splits" in checked.stdout


def _failing(checked) -> list[str]:
    return [line for line in checked.stdout.splitlines() if line.startswith("FAIL")]


def _certified_point(r: dict) -> tuple[int, int]:
    """(index in the certificates, index in the points) of block arith's middle certified point."""
    cert = r["splits"][0]["certificates"][0]
    k = len(cert["points"]) // 2
    return k, cert["points"][k]


def test_every_certified_point_and_cell_is_re_derived_with_no_note_left(results, tmp_path):
    """blocks_means: each point's bound is proven by its recorded multipliers (exactly), each
    point where the block is infeasible by its Farkas ray (exactly), each cell's pieces are
    recomputed from its ends' multipliers, and no bound is taken as recorded."""
    checked = _verify(results["blocks_means"]["json"], tmp_path)
    assert checked.exit_code == 0, checked.output
    for block in ("arith", "harm"):
        assert f"ok    split 1: block {block}: each point's bound proven by its multipliers" in checked.stdout
        assert f"ok    split 1: block {block}: each infeasible point proven by its Farkas ray" in checked.stdout
    assert "by weak duality in exact rational arithmetic" in checked.stdout
    assert "by Farkas rays in exact rational arithmetic" in checked.stdout
    assert "as recorded" not in checked.stdout


def test_a_changed_multiplier_fails_naming_the_block_and_point(results, tmp_path):
    r = _means(results)
    k, j = _certified_point(r)
    y = r["splits"][0]["certificates"][0]["y"][k]["values"]  # a sparse vector: its nonzero entries
    y[0] *= 1.5
    checked = _verify(r, tmp_path)
    assert checked.exit_code == 1, checked.output
    share = r["splits"][0]["points"][0][j][0]
    assert any("block arith" in line and repr(share) in line for line in _failing(checked)), checked.stdout


def test_blocks_means_ray_moved_to_a_feasible_point_fails(results, tmp_path):
    r = copy.deepcopy(results["blocks_means"]["json"])
    cert = r["splits"][0]["certificates"][0]
    assert cert["infeasible"] and cert["rays"]
    j = cert["infeasible"][-1] + 1  # the first point with a verified value
    cert["infeasible"][-1] = j
    checked = _verify(r, tmp_path)
    assert checked.exit_code == 1, checked.output
    share = r["splits"][0]["points"][0][j][0]
    assert any(
        "block arith" in line and f"share {share!r}" in line and "it has a verified value" in line
        for line in _failing(checked)
    ), checked.stdout


def test_a_changed_cell_piece_fails_naming_the_block_and_cell(results, tmp_path):
    r = _means(results)
    row = r["splits"][0]
    j = next(j for j, cb in enumerate(row["cell_bounds"][0]) if cb is not None and j > 10)
    row["cell_bounds"][0][j][0][1] -= 1e-3  # a looser piece: still a bound, but not what the multipliers give
    checked = _verify(r, tmp_path)
    assert checked.exit_code == 1, checked.output
    a, b = row["points"][0][j - 1][0], row["points"][0][j][0]
    assert any(f"block arith, cell [{a!r}, {b!r}]" in line for line in _failing(checked)), checked.stdout


def test_a_raised_point_bound_fails_naming_the_block_and_point(results, tmp_path):
    """A point whose value and bound are both raised: the bound is no longer what its multipliers prove."""
    r = _means(results)
    _, j = _certified_point(r)
    raised_point_fails(r, j, "split 1: block arith: each point's bound proven", tmp_path)


def raised_point_fails(r: dict, j: int, named: str, tmp_path) -> None:
    """The first term's point ``j`` of split 1 with its value and bound raised by 1%: verify
    fails, on a check named ``named`` that names the point's share."""
    point = r["splits"][0]["points"][0][j]
    point[1] *= 1.01
    point[2] *= 1.01
    checked = _verify(r, tmp_path)
    assert checked.exit_code == 1, checked.output
    assert any(named in line and repr(point[0]) in line for line in _failing(checked)), checked.stdout


def test_cell_pieces_without_certificates_fail(results, tmp_path):
    r = _means(results)
    r["splits"][0]["certificates"] = [None, None]
    checked = _verify(r, tmp_path)
    assert checked.exit_code == 1, checked.output
    assert any("neither end has a certificate" in line for line in _failing(checked)), checked.stdout


def test_accuracy_firsts_bracket_is_re_proven(results, tmp_path):
    """blocks_accuracy: the target is proven to fail at the bracket's lower end (the theorem's
    exact value there); a lower end where the target holds, or no failing block, fails."""
    r = copy.deepcopy(results["blocks_accuracy"]["json"])
    checked = _verify(r, tmp_path)
    assert checked.exit_code == 0, checked.output
    assert "ok    accuracy first: block rr at eps = " in checked.stdout
    assert "bracket's lower end (the target fails there) is taken as recorded" not in checked.stdout
    hi = r["optimality"]["bracket"]["hi"]
    moved = copy.deepcopy(r)
    moved["optimality"]["bracket"]["lo"] = hi * (1 - 1e-8)  # above the least eps ln(4 / 0.3 - 4): the target holds
    checked = _verify(moved, tmp_path)
    assert checked.exit_code == 1, checked.output
    assert any("accuracy first: block rr at eps = " in line and "fails" in line for line in _failing(checked))
    bare = copy.deepcopy(r)
    bare["optimality"]["bracket"]["blocks"] = {}
    checked = _verify(bare, tmp_path)
    assert checked.exit_code == 1 and any("a target fails" in line for line in _failing(checked)), checked.stdout


@pytest.mark.parametrize("spec", ["blocks_choice", "blocks_joint_choice"])
def test_the_other_branches_bounds_are_re_derived(spec, results, tmp_path):
    r = copy.deepcopy(results[spec]["json"])
    checked = _verify(r, tmp_path)
    assert checked.exit_code == 0, checked.output
    (other,) = [n for n in r["optimality"]["branches"] if n != r["choice"]]
    assert f"ok    branch {other}: the composite's lower bound within this branch's" in checked.stdout
    assert "other design branches' bounds are taken as recorded" not in checked.stdout
    evidence = r["optimality"]["branches"][other]["result"]
    evidence["optimality"]["lower_bound"] -= 0.01
    checked = _verify(r, tmp_path)
    assert checked.exit_code == 1, checked.output
    assert any(line.startswith(f"FAIL  branch {other}: ") for line in _failing(checked)), checked.stdout
    del r["optimality"]["branches"][other]["result"]
    checked = _verify(r, tmp_path)
    assert checked.exit_code == 1 and f"FAIL  branch {other}" in checked.stdout, checked.stdout
