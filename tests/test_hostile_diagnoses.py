"""Hostile battery (issue 19, items 1 and 5): errors that diagnose the real mistake.

Each case edits a copy of a spec in specs/ the way a newcomer would get it wrong and asserts the
exit code, the words that matter, the location (FILE:LINE:COL and a caret) and, for hints, that
following the hint makes the spec right. The table of functions (privopt/builder/functions.py)
is checked against docs/language.md's "Functions" table.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

import privopt
from privopt.builder import functions
from privopt.cli import main

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "specs"


def edited(tmp_path: Path, spec: str, old: str, new: str, name: str = "spec.priv") -> Path:
    """A copy of specs/SPEC with ``old`` replaced by ``new`` (which must occur), beside copies
    of the data it reads."""
    text = (SPECS / spec).read_text()
    assert old in text, (spec, old)
    path = tmp_path / name
    path.write_text(text.replace(old, new, 1))
    return path


def solve(path: Path, *args: str):
    result = CliRunner().invoke(main, ["solve", str(path), *args])
    return result.exit_code, result.stderr + result.stdout


def expect(path: Path, line: int, col: int, *words: str, args=(), absent=()) -> str:
    """``privopt solve`` refuses ``path`` with exit 2 at LINE:COL (a caret below), every one of
    ``words`` in the message, none of ``absent``, and no traceback."""
    code, out = solve(path, *args)
    assert code == 2, out
    assert "Traceback" not in out, out
    assert f"{path}:{line}:{col}: error:" in out, out
    assert "^" in out, out
    for w in words:
        assert w in out, (w, out)
    for w in absent:
        assert w not in out, (w, out)
    return out


ATR_OBJECTIVE = "minimize max_confidence(gender, decision -> income)"


# ------------------------------------------------------------------ 1. unknown and misplaced functions


@pytest.mark.parametrize("typo", ["max_confidance", "maxconfidence", "min_confidence"])
def test_misspelt_report_objective_gets_did_you_mean(tmp_path, typo):
    path = edited(tmp_path, "atr_table4.priv", ATR_OBJECTIVE, f"minimize {typo}(gender, decision -> income)")
    expect(
        path,
        20,
        10,
        f"unknown function '{typo}'",
        "did you mean 'max_confidence'?",
        absent=("release", "but decision is outcome"),
    )


def test_tv_in_a_report_says_where_it_applies(tmp_path):
    path = edited(tmp_path, "atr_table4.priv", ATR_OBJECTIVE, "minimize tv(gender, decision)")
    expect(
        path,
        20,
        10,
        "tv applies to mechanism (sanitization) and shaped-noise specs, not to a transparency report",
        "here: minimize max_confidence(gender, decision -> income)",
        absent=("role release", "unknown function"),
    )


def test_ldp_objective_in_a_report_says_where_it_applies(tmp_path):
    path = edited(tmp_path, "atr_table4.priv", ATR_OBJECTIVE, "minimize ldp(income -> decision)")
    expect(
        path,
        20,
        10,
        "ldp applies to mechanism (sanitization) and shaped-noise specs",
        absent=("unknown function", "release"),
    )


def test_ldp_constraint_in_a_report_says_where_it_applies(tmp_path):
    path = edited(
        tmp_path, "atr_table4.priv", "subject to |Dt - D| <= 1 - delta", "subject to ldp(income -> decision) <= 1"
    )
    expect(
        path,
        19,
        12,
        "ldp applies to mechanism (sanitization) and shaped-noise specs, not to a transparency report",
        "a transparency report minimizes max_confidence",
        absent=("unknown function",),
    )


def test_misspelt_mechanism_objective_keeps_did_you_mean(tmp_path):
    path = edited(tmp_path, "sanitize_ldp_budget.priv", "minimize tv(X, Y)", "minimize tvv(X, Y)")
    expect(path, 18, 10, "unknown function 'tvv'", "did you mean 'tv'?")


def test_max_confidence_in_shaped_noise_says_where_it_applies(tmp_path):
    path = edited(
        tmp_path, "shaped_noise_means.priv", "minimize sum(x, y: f * (x - y)^2)", "minimize max_confidence(x -> y)"
    )
    expect(
        path,
        17,
        10,
        "max_confidence applies to transparency-report specs, not to a mechanism spec",
        "the design f chooses P(y | ...), a release",
        absent=("unexpected expression",),
    )


def test_max_confidence_constraint_in_shaped_noise_says_where_it_applies(tmp_path):
    path = edited(
        tmp_path,
        "shaped_noise_means.priv",
        "subject to dp(x -> y) <= (eps, delta)",
        "subject to max_confidence(x -> y) <= 0.5",
    )
    expect(
        path,
        16,
        12,
        "max_confidence is the objective of a transparency-report spec",
        "max_confidence applies to transparency-report specs",
    )


def test_function_of_another_class_in_noise_placement(tmp_path):
    path = edited(tmp_path, "noise_placement.priv", "minimize E[sum((O - A @ x)^2)]", "minimize tv(x, O)")
    expect(
        path,
        13,
        10,
        "tv applies to mechanism (sanitization) and shaped-noise specs, not to a noise-placement spec",
        "minimizes E[sum((O - A @ x)^2)]",
    )


def test_misspelt_function_in_noise_placement_gets_did_you_mean(tmp_path):
    path = edited(tmp_path, "noise_placement.priv", "let O = A @ (x + eta) + xi", "let O = A @ (x + eta) + sqr(xi)")
    expect(path, 9, 25, "unknown function 'sqr'", "did you mean 'sqrt'?")


@pytest.mark.parametrize(
    "spec, old, new, line, col, close",
    [
        ("sanitize_ldp_budget.priv", "minimize tv(X, Y)", "minimize tv(X, YY)", 18, 16, "Y"),
        ("sanitize_ldp_budget.priv", "ldp(S -> Y) <= eps", "ldp(SS -> Y) <= eps", 17, 16, "S"),
        ("shaped_noise_means.priv", "dp(x -> y) <= (eps, delta)", "dp(xx -> y) <= (eps, delta)", 16, 15, "x"),
        ("noise_placement.priv", "dp(x -> O) <= (eps, delta)", "dp(xx -> O) <= (eps, delta)", 12, 15, "x"),
    ],
)
def test_misspelt_variable_in_a_dp_call_gets_did_you_mean(tmp_path, spec, old, new, line, col, close):
    path = edited(tmp_path, spec, old, new)
    expect(path, line, col, f"did you mean '{close}'?", absent=("expected a variable name",))


def test_misspelt_obfuscation_objective_gets_did_you_mean(tmp_path):
    path = edited(tmp_path, "obfuscation_bsc.priv", "minimize krcc(X, Y)", "minimize krc(X, Y)")
    expect(path, 10, 10, "unknown function 'krc'", "did you mean 'krcc'?")


def test_report_objective_in_obfuscation_names_the_class_objective(tmp_path):
    path = edited(tmp_path, "obfuscation_bsc.priv", "minimize krcc(X, Y)", "minimize max_confidence(X, Y)")
    expect(
        path,
        10,
        10,
        "max_confidence applies to transparency-report specs, not to a rank-preserving obfuscation spec",
        "here: minimize krcc(X, Y)",
    )


def test_obfuscation_constraint_functions_are_diagnosed(tmp_path):
    path = edited(
        tmp_path, "obfuscation_bsc.priv", "subject to mutual_info(Y; F) <= eps", "subject to mutualinfo(Y; F) <= eps"
    )
    expect(path, 9, 12, "unknown function 'mutualinfo'", "did you mean 'mutual_info'?")
    path = edited(
        tmp_path, "obfuscation_bsc.priv", "subject to mutual_info(Y; F) <= eps", "subject to ldp(X -> Y) <= eps"
    )
    expect(
        path,
        9,
        12,
        "ldp applies to mechanism (sanitization) and shaped-noise specs, not to a rank-preserving obfuscation spec",
    )


def test_report_objective_in_an_expression_says_it_stands_alone(tmp_path):
    path = edited(tmp_path, "atr_table4.priv", ATR_OBJECTIVE, ATR_OBJECTIVE + " + 1")
    expect(
        path,
        20,
        10,
        "a transparency report's objective is max_confidence(...) or min_uncertainty(...) alone",
        absent=("role release",),
    )


# ------------------------------------------------------------------ role hints only where they are the fix


def test_role_hint_when_the_role_is_the_mistake_and_it_fixes_the_spec(tmp_path):
    path = edited(tmp_path, "sanitize_ldp_budget.priv", "var Y : release over X", "var Y : outcome over X")
    expect(
        path,
        15,
        1,
        "the design M chooses P(Y | ...), but Y is outcome",
        "declare the published variable with role release",
    )
    fixed = path.read_text().replace("var Y : outcome over X", "var Y : release over X")
    path.write_text(fixed)
    code, out = solve(path)
    assert code == 0 and "optimal" in out, out


def test_outcome_role_hint_for_a_report_whose_decision_is_declared_release(tmp_path):
    path = edited(tmp_path, "atr_table4.priv", "var decision : outcome", "var decision : release")
    expect(path, 17, 1, "max_confidence is the objective of a transparency report", "var decision : outcome")
    path.write_text(path.read_text().replace("var decision : release", "var decision : outcome"))
    code, out = solve(path)
    assert code == 0 and "optimal" in out, out


def hint_of(out: str) -> str:
    return out.split("\nhint: ", 1)[1].strip()


def test_a_measure_missing_its_outcome_is_not_echoed_back(tmp_path):
    path = edited(tmp_path, "atr_table4.priv", ATR_OBJECTIVE, "minimize max_confidence(gender -> income)")
    out = expect(path, 20, 10, "max_confidence needs exactly one outcome variable before '->'")
    fix = hint_of(out).removeprefix("write ")
    assert fix == "max_confidence(gender, decision -> income)", out
    path.write_text(path.read_text().replace("max_confidence(gender -> income)", fix))
    code, out = solve(path)
    assert code == 0 and "max confidence: 0.675" in out, out


def test_a_design_missing_a_condition_is_told_to_add_it(tmp_path):
    design = "design Dt = P(decision | gender, income)"
    path = edited(tmp_path, "atr_table4.priv", design, "design Dt = P(decision | gender)")
    out = expect(path, 19, 18, "D has axis 'income', which the design Dt does not have")
    fix = hint_of(out).rsplit("condition the design on income: ", 1)[1]
    assert fix == design, out
    path.write_text(path.read_text().replace("design Dt = P(decision | gender)", fix))
    code, out = solve(path)
    assert code == 0 and "max confidence: 0.675" in out, out


# ------------------------------------------------------------------ 3. params outside their domain


def test_delta_outside_its_domain_is_located_at_the_param(tmp_path):
    path = edited(tmp_path, "atr_table4.priv", "param delta = 0.9", "param delta = 1.5")
    out_dir = tmp_path / "out"
    out = expect(
        path,
        18,
        15,
        "delta = 1.5 is outside its domain: delta must lie in [0, 1]",
        "line 19",
        "Chen et al. Def. 5",
        args=("--out", str(out_dir)),
        absent=("infeasible", "lower bound"),
    )
    assert "   18 | param delta = 1.5\n      |               ^^^" in out, out
    assert not out_dir.exists()


def test_delta_edges_of_the_domain_solve(tmp_path):
    for value in ("0", "1"):
        code, out = solve(SPECS / "atr_table4.priv", "--set", f"delta={value}")
        assert code == 0 and "optimal" in out, out


def test_set_value_outside_its_domain_names_the_option(tmp_path):
    code, out = solve(SPECS / "atr_table4.priv", "--set", "delta=1.5")
    assert code == 2, out
    assert "error: --set delta=1.5: delta = 1.5 is outside its domain: delta must lie in [0, 1]" in out, out
    assert "line 19" in out and "infeasible" not in out


def test_swept_value_outside_its_domain_names_the_sweep():
    result = CliRunner().invoke(main, ["sweep", str(SPECS / "count_query_dp.priv"), "eps=0.5,-1", "--json"])
    assert result.exit_code == 2, result.output
    assert "the swept value eps=-1: eps = -1 is outside its domain: eps must be >= 0" in result.stdout
    assert "--set" not in result.stdout


def test_api_value_outside_its_domain_names_params(tmp_path):
    with pytest.raises(privopt.UsageError) as e:
        privopt.load(SPECS / "atr_table4.priv", params={"delta": 1.5})
    text = str(e.value)
    assert text.startswith("params={'delta': 1.5}: delta = 1.5 is outside its domain: delta must lie in [0, 1]"), text
    assert "--set" not in text


@pytest.mark.parametrize(
    "spec, old, new, line, col, words",
    [
        (
            "atr_alpha_fidelity.priv",
            "param alpha = 0.8",
            "param alpha = 1.25",
            17,
            15,
            ("alpha = 1.25 is outside its domain: alpha must lie in [0, 1]", "line 18", "Def. 6"),
        ),
        (
            "sanitize_distortion.priv",
            "param alpha = 0.5",
            "param alpha = 1.5",
            16,
            15,
            ("alpha = 1.5 is outside its domain: alpha must lie in [0, 1]", "line 17", "eq. 3"),
        ),
        (
            "shaped_noise_means.priv",
            "param alpha = 0.1",
            "param alpha = -0.5",
            9,
            15,
            ("alpha = -0.5 is outside its domain: alpha must lie in [0, 1]", "line 14", "mixture"),
        ),
        (
            "sanitize_ldp_budget.priv",
            "param eps = 0.5",
            "param eps = -1",
            16,
            13,
            ("eps = -1 is outside its domain: eps must be >= 0", "line 17"),
        ),
        (
            "shaped_noise_means.priv",
            "param delta = 0",
            "param delta = 1",
            11,
            15,
            ("delta = 1 is outside its domain: delta must lie in [0, 1)", "line 16"),
        ),
        (
            "noise_placement.priv",
            "param eps = 1.0",
            "param eps = 0",
            10,
            13,
            ("eps = 0 is outside its domain: eps must be > 0", "line 12"),
        ),
        (
            "noise_placement.priv",
            "param delta = 1e-5",
            "param delta = 1",
            11,
            15,
            ("delta = 1 is outside its domain: delta must lie in (0, 1)", "line 12"),
        ),
        (
            "obfuscation_bsc.priv",
            "param eps = 0.2",
            "param eps = -0.1",
            8,
            13,
            ("eps = -0.1 is outside its domain: eps must be >= 0", "line 9", "bits"),
        ),
        (
            "sanitize_posterior_bound.priv",
            "param bound = 0.72",
            "param bound = 1.2",
            16,
            15,
            ("bound = 1.2 is outside its domain: bound must lie in [0, 1]", "line 17", "is a probability"),
        ),
    ],
    ids=[
        "alpha-fidelity",
        "sanitization-mixture",
        "shaped-noise-mixture",
        "ldp-eps",
        "dp-delta",
        "gaussian-eps",
        "gaussian-delta",
        "leakage",
        "posterior-bound",
    ],
)
def test_param_outside_its_domain_in_every_class(tmp_path, spec, old, new, line, col, words):
    path = edited(tmp_path, spec, old, new)
    expect(path, line, col, *words, absent=("infeasible",))


def test_param_feeding_a_builtin_table_is_located_at_the_param(tmp_path):
    path = edited(
        tmp_path, "obfuscation_bsc.priv", "known P(F | X) = bsc(0.1)", "param q = 1.1\nknown P(F | X) = bsc(q)"
    )
    expect(path, 6, 11, "q = 1.1 is outside its domain: q must lie in [0, 1]", "line 7, bsc(q)")


def test_a_param_in_no_domain_sensitive_place_is_free(tmp_path):
    # Dt <= D + slack: the bound is a table, not a number, so slack has no domain of its own
    path = edited(tmp_path, "atr_table4.priv", "subject to |Dt - D| <= 1 - delta", "subject to Dt <= D + delta")
    code, out = solve(path, "--set", "delta=2")
    assert code == 0, out


def test_param_in_a_nonlinear_bound_names_the_bound_value(tmp_path):
    path = edited(
        tmp_path, "atr_table4.priv", "subject to |Dt - D| <= 1 - delta", "subject to |Dt - D| <= exp(delta) - 1"
    )
    expect(path, 18, 15, "delta = 0.9 puts the bound exp(delta) - 1 at 1.4596, outside [0, 1]", "line 19")


def test_relative_bounds_and_written_numbers_are_not_refused(tmp_path):
    # an upper bound k * D with k > 1 is a relative bound, not alpha-fidelity; a number written
    # in place (a vacuous Dt <= 1.5) is what the user meant: neither has a param domain
    path = edited(
        tmp_path,
        "atr_table4.priv",
        "subject to |Dt - D| <= 1 - delta",
        "subject to Dt <= delta * D\nsubject to Dt <= 1.5",
    )
    code, out = solve(path, "--set", "delta=2")
    assert code == 0 and "optimal" in out, out


# ------------------------------------------------------------------ 4. API errors in API terms


def test_api_unknown_param_has_did_you_mean_in_api_words():
    with pytest.raises(privopt.UsageError) as e:
        privopt.load(SPECS / "atr_table4.priv", params={"dleta": 0.9})
    text = str(e.value)
    assert text == "params={'dleta': ...}: the spec has no param 'dleta'; did you mean 'delta'?", text


def test_cli_unknown_param_keeps_set_words_with_did_you_mean():
    code, out = solve(SPECS / "atr_table4.priv", "--set", "dleta=0.9")
    assert code == 2, out
    assert "error: --set dleta=...: the spec has no param 'dleta'; did you mean 'delta'?" in out, out


def test_api_bad_value_in_api_words():
    with pytest.raises(privopt.UsageError) as e:
        privopt.load(SPECS / "atr_table4.priv", params={"delta": "high"})
    assert str(e.value).startswith("params={'delta': 'high'}: the value must be a number"), str(e.value)


def test_api_params_not_a_dict_is_a_usage_error():
    with pytest.raises(
        privopt.UsageError, match=r"params= is a dict from param names to values, like \{'delta': 0.9\}, not str"
    ):
        privopt.load(SPECS / "atr_table4.priv", params="delta=0.9")


def test_api_path_outside_the_folder_names_the_keyword(tmp_path):
    text = (
        (SPECS / "atr_table4.priv")
        .read_text()
        .replace(
            "known P(gender, income) = counts {\n         low  mid  high\n    F:   12   5    3\n    M:   9    7    4\n}",
            'known P(gender, income) = counts from "../x.csv" column n',
        )
    )
    with pytest.raises(privopt.SpecError) as e:
        privopt.loads(text, path=tmp_path / "spec.priv")
    assert "--allow-paths (allow_paths=True in Python)" in str(e.value), str(e.value)


def test_api_unknown_method_and_backend_have_did_you_mean():
    problem = privopt.load(SPECS / "atr_table4.priv")
    with pytest.raises(privopt.UsageError, match=r"unknown method 'closed_form'.*did you mean 'closed-form'\?"):
        problem.solve(method="closed_form")
    with pytest.raises(privopt.UsageError, match=r"unknown backend 'higs'.*did you mean 'highs'\?"):
        problem.solve(method="lfp", backend="higs")


def test_api_unknown_table_has_did_you_mean():
    result = privopt.load(SPECS / "atr_table4.priv").solve()
    with pytest.raises(KeyError, match=r"no table 'Dtt'; did you mean 'Dt'\?"):
        result.table("Dtt")


# ------------------------------------------------------------------ 5. the table of functions and the docs


def _docs_function_rows() -> dict[str, tuple[str, str]]:
    """docs/language.md's Functions table: name -> (signature, classes) as written."""
    text = (ROOT / "docs" / "language.md").read_text()
    section = text.split("\n## Functions\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip()[1:-1])] if line.startswith("|") else []
        if len(cells) == 4 and cells[0].startswith("`"):
            rows[cells[0].strip("`")] = tuple(c.replace("\\|", "|") for c in cells[1:])
    return rows


def test_every_function_is_in_the_docs_table_and_matches_the_module():
    rows = _docs_function_rows()
    assert list(rows) == list(functions.FUNCTIONS), "docs/language.md's Functions table lists other names"
    for name, f in functions.FUNCTIONS.items():
        assert rows[name] == (f"`{f.signature}`", ", ".join(f.classes), f.meaning), name


def test_suggest_and_where_applies():
    assert functions.suggest("max_confidance", functions.REPORT) == "did you mean 'max_confidence'?"
    assert functions.suggest("tvv", functions.REPORT) == (
        "did you mean 'tv'? (tv applies to mechanism (sanitization) and shaped-noise specs: tv(X, Y))"
    )
    assert functions.where_applies("nosuch") is None
    assert functions.where_applies("ldp").startswith("ldp applies to mechanism (sanitization) and shaped-noise specs")
    assert re.fullmatch(r"\w+", "".join(functions.FUNCTIONS))


# ------------------------------------------------------------------ a noise-placement statement in a table spec


@pytest.mark.parametrize(
    ("stmt", "words"),
    [
        ("let z = 2", "'let' belongs to noise-placement specs"),
        ("noise e : gaussian[2]", "'noise' belongs to noise-placement specs"),
        (
            "var w : data real[2] in [0, 1]",
            "a continuous variable (real[n] in [lo, hi]) belongs to noise-placement specs",
        ),
    ],
)
def test_a_noise_placement_statement_in_a_table_spec_is_the_error_at_that_statement(tmp_path, stmt, words):
    """It was reported at line 4 (the first finite variable) as if the spec were a noise
    placement with a stray table: the statement the user added is the stray one."""
    path = edited(tmp_path, "randomized_response.priv", "design R", f"{stmt}\ndesign R")
    expect(path, 7, 1, words, "this spec designs a table (line 8)", absent=("line 4",))
