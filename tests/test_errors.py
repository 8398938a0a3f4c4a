"""Every user error: FILE:LINE:COL, the line with a caret, what to change, exit 2, no traceback."""

import re
import textwrap

import pytest
from click.testing import CliRunner

from privopt.cli import main

BASE = textwrap.dedent(
    """\
    spec "t"
    var gender   : public  {F, M}
    var income   : private {low, mid, high}
    var decision : outcome {deny, approve}
    known P(gender, income) = counts {
             low  mid  high
        F:   12   5    3
        M:   9    7    4
    }
    known D = P(decision = approve | gender, income) = {
             low  mid  high
        F:   0    0    1
        M:   0    0.5  1
    }
    design Dt = P(decision | gender, income)
    param delta = 0.9
    subject to |Dt - D| <= 1 - delta
    minimize max_confidence(gender, decision -> income)
    """
)


def run(tmp_path, text, *args, name="spec.priv"):
    path = tmp_path / name
    path.write_text(text)
    result = CliRunner().invoke(main, ["solve", str(path), *args])
    return result, path


def expect_error(tmp_path, text, line, message, *args, code=2):
    result, path = run(tmp_path, text, *args)
    out = result.stderr if hasattr(result, "stderr") else result.output
    assert result.exit_code == code, out
    assert "Traceback" not in out
    assert re.search(message, out), out
    if line is not None:
        assert f"{path}:{line}:" in out, out
        assert "^" in out
    return out


def replace(old, new, count=1):
    assert old in BASE
    return BASE.replace(old, new, count)


INLINE_PRIOR = "= counts {\n         low  mid  high\n    F:   12   5    3\n    M:   9    7    4\n}"


def prior_from_file(path: str) -> str:
    """BASE with the prior read from a data file instead of the inline table."""
    return replace(INLINE_PRIOR, f'= counts from "{path}" column n')


def test_the_base_spec_solves(tmp_path):
    result, _ = run(tmp_path, BASE, "--json")
    assert result.exit_code == 0


# One bad input each: (id, old text, new text, line of the error, message pattern)
CASES = [
    pytest.param("design Dt = P(", "design Dt = P((", 15, "unexpected", id="malformed_syntax"),
    pytest.param("|Dt - D|", "|Dt - E|", 17, "'E' is not defined", id="unknown_name_in_constraint"),
    pytest.param("decision = approve", "decision = yes", 10, "label 'yes' is not in the domain of decision", id="shorthand_label_outside_domain"),
    pytest.param("F:   12   5    3", "F:   12   5", 7, "this row has 2 value\\(s\\) but the header has 3", id="short_row"),
    pytest.param("F:   12   5    3", "F:   12   5    3   8", 7, "this row has 4 value", id="long_row"),
    pytest.param("    M:   9    7    4\n", "", 5, "no value for \\(gender, income\\) = \\(M low\\)", id="missing_row"),
    pytest.param("F:   12   5    3", "F:   12   -5    3", 7, "negative count -5", id="negative_count"),
    pytest.param("M:   0    0.5  1", "M:   0    1.5  1", 13, "probability 1.5 is outside \\[0, 1\\]", id="probability_outside_unit_interval"),
    pytest.param("{F, M}", "{F, M, F}", 2, "label 'F' appears twice", id="duplicate_domain_label"),
    pytest.param("param delta = 0.9", "param delta = 1 - slack", 16, "'slack' is not defined", id="undefined_param_in_param"),
    pytest.param("decision -> income)", "decision -> gender)", 18, "is public|'gender' is public", id="wrong_role_after_arrow"),
    pytest.param("max_confidence(gender, decision -> income)", "max_confidence(gender, decision, income)", 18, "needs '->'", id="missing_arrow"),
    pytest.param("|Dt - D| <= 1 - delta", "Dt * Dt <= 1", 17, "product of two design terms is not linear", id="nonlinear_constraint"),
    pytest.param("|Dt - D| <= 1 - delta", "|Dt - D| >= 0.1", 17, "smaller side", id="abs_on_the_wrong_side"),
]


@pytest.mark.parametrize(("old", "new", "line", "message"), CASES)
def test_bad_input(tmp_path, old, new, line, message):
    expect_error(tmp_path, replace(old, new), line, message)



def test_misspelt_keyword(tmp_path):
    out = expect_error(tmp_path, replace("subject to", "subjet to"), 17, "unknown statement 'subjet'")
    assert "did you mean 'subject'" in out


def test_unknown_variable(tmp_path):
    out = expect_error(tmp_path, replace("known P(gender, income)", "known P(gender, incom)"), 5, "unknown variable 'incom'")
    assert "did you mean 'income'" in out



def test_label_outside_domain(tmp_path):
    out = expect_error(tmp_path, replace("low  mid  high\n    F:   12", "low  mid  hig\n    F:   12"), 6, "label 'hig' is not in the domain of income")
    assert "did you mean 'high'" in out








def test_rows_not_summing_to_one(tmp_path):
    text = replace("known P(gender, income) = counts {", "known P(income | gender) = {")
    text = text.replace("F:   12   5    3", "F:   0.5  0.3  0.1").replace("M:   9    7    4", "M:   0.5  0.3  0.2")
    expect_error(tmp_path, text, 7, "the row for \\(gender=F\\) sums to 0.9, not 1")


def test_joint_not_summing_to_one(tmp_path):
    text = replace("counts {", "{").replace("F:   12   5    3", "F:   0.1  0.1  0.1").replace("M:   9    7    4", "M:   0.1  0.1  0.1")
    expect_error(tmp_path, text, 5, "sum to 0.6, not 1")


def test_duplicate_declaration(tmp_path):
    out = expect_error(tmp_path, replace("param delta = 0.9", "param delta = 0.9\nparam delta = 0.8"), 17, "'delta' is already declared \\(line 16\\)")
    assert "another name" in out



def test_no_objective(tmp_path):
    expect_error(tmp_path, replace("minimize max_confidence(gender, decision -> income)\n", ""), None, "the spec has no objective")


def test_two_objectives(tmp_path):
    text = BASE + "minimize max_confidence(gender, decision -> income)\n"
    expect_error(tmp_path, text, 19, "exactly one objective")


def test_undefined_param(tmp_path):
    out = expect_error(tmp_path, replace("1 - delta", "1 - delt"), 17, "'delt' is not defined")
    assert "did you mean 'delta'" in out



def test_set_unknown_param_is_usage_error(tmp_path):
    out = expect_error(tmp_path, BASE, None, "no param 'alpha'; its params are: delta", "--set", "alpha=1")
    assert "Traceback" not in out


def test_set_non_number(tmp_path):
    expect_error(tmp_path, BASE, None, "must be a number", "--set", "delta=high")


def test_missing_data_file(tmp_path):
    text = prior_from_file("nope.csv")
    expect_error(tmp_path, text, 5, "data file 'nope.csv' does not exist")


def test_path_leaving_the_folder(tmp_path):
    (tmp_path / "outside.csv").write_text("gender,income,n\nF,low,1\n")
    sub = tmp_path / "sub"
    sub.mkdir()
    text = prior_from_file("../outside.csv")
    out = expect_error(sub, text, 5, "this path leaves the spec's folder")
    assert "--allow-paths" in out
    result, _ = run(sub, text, "--allow-paths", "--json")
    assert result.exit_code == 0, result.output


def test_absolute_path(tmp_path):
    csv = tmp_path / "abs.csv"
    csv.write_text("gender,income,n\nF,low,1\n")
    text = prior_from_file(str(csv))
    expect_error(tmp_path, text, 5, "absolute paths are not allowed")


def test_unknown_label_in_data_file(tmp_path):
    (tmp_path / "d.csv").write_text("gender,income,n\nF,low,1\nF,huge,2\n")
    text = prior_from_file("d.csv")
    expect_error(tmp_path, text, 5, "row 3 of 'd.csv': income = 'huge' is not in its domain")


def test_wrong_role_before_arrow(tmp_path):
    out = expect_error(tmp_path, replace("max_confidence(gender, decision -> income)", "max_confidence(income, decision -> gender)"), 18, "'income' is private; before '->'")
    assert "PUBLIC" in out




def test_shorthand_on_three_values(tmp_path):
    text = replace("var decision : outcome {deny, approve}", "var decision : outcome {deny, refer, approve}")
    expect_error(tmp_path, text, 10, "needs a two-valued variable; decision has 3 values")


def test_unknown_role(tmp_path):
    out = expect_error(tmp_path, replace("public  {F, M}", "pubic  {F, M}"), 2, "unknown role 'pubic'")
    assert "did you mean 'public'" in out


def test_empty_file(tmp_path):
    result, _ = run(tmp_path, "")
    assert result.exit_code == 2
    assert "is empty" in result.output and "Traceback" not in result.output


def test_binary_file(tmp_path):
    path = tmp_path / "blob.priv"
    path.write_bytes(b"\x00\x01\x02spec")
    result = CliRunner().invoke(main, ["solve", str(path)])
    assert result.exit_code == 2
    assert "binary file" in result.output


def test_missing_spec_file(tmp_path):
    result = CliRunner().invoke(main, ["solve", str(tmp_path / "none.priv")])
    assert result.exit_code == 2
    assert "does not exist" in result.output


def test_string_with_single_quotes(tmp_path):
    out = expect_error(tmp_path, replace('spec "t"', "spec 't'"), 1, "unexpected character")
    assert "straight double quotes" in out




def test_infeasible_spec_exit_3(tmp_path):
    text = replace("subject to |Dt - D| <= 1 - delta", "subject to |Dt - D| <= 1 - delta\nsubject to Dt >= 0.6")
    result, _ = run(tmp_path, text)
    assert result.exit_code == 3
    assert "Traceback" not in result.output
    assert (
        "at gender=F, income=low, decision=approve the bounds are empty: lower bound 0.6 from line 18: "
        "'Dt >= 0.6' exceeds upper bound 0.1 from line 17: '|Dt - D| <= 1 - delta'"
    ) in result.output, result.output


def test_infeasible_json(tmp_path):
    import json

    text = replace("subject to |Dt - D| <= 1 - delta", "subject to Dt == 0.3")
    result, _ = run(tmp_path, text, "--json")
    assert result.exit_code == 3
    data = json.loads(result.stdout)
    assert data["status"] == "infeasible" and data["reasons"]
    assert "lower bounds sum to 0.6" in data["reasons"][0]


@pytest.mark.parametrize("method", ["closed", "simplex"])
def test_unknown_method_is_usage_error(tmp_path, method):
    result, _ = run(tmp_path, BASE, "--method", method)
    assert result.exit_code == 2
    assert "Invalid value for '--method'" in result.output


def test_unknown_backend_lists_available(tmp_path):
    result, _ = run(tmp_path, BASE, "--method", "lfp", "--backend", "gurobi")
    assert result.exit_code == 2
    assert "unknown backend 'gurobi'; available: highs" in result.output


def test_closed_form_on_three_outcomes_is_usage_error(tmp_path, specs_dir):
    result = CliRunner().invoke(main, ["solve", str(specs_dir / "atr_three_outcomes.priv"), "--method", "closed-form"])
    assert result.exit_code == 2
    assert "Theorem 1 covers two outcomes" in result.output


def test_two_candidate_priors(tmp_path):
    text = replace("known D =", "known P(income | gender) = {\n   low mid high\n   F: 0.2 0.3 0.5\n   M: 0.2 0.3 0.5\n}\nknown D =")
    expect_error(tmp_path, text, 10, "could take the adversary's prior from P\\(gender, income\\) or P\\(income \\| gender\\)")


def test_empty_data_file(tmp_path):
    (tmp_path / "empty.csv").write_text("")
    text = prior_from_file("empty.csv")
    expect_error(tmp_path, text, 5, "data file 'empty.csv' is empty")


def test_binary_data_file(tmp_path):
    (tmp_path / "blob.csv").write_bytes(b"gender\x00income\x00n\n\x01\x02")
    text = prior_from_file("blob.csv")
    expect_error(tmp_path, text, 5, "is binary")
