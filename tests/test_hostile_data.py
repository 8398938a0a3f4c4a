"""Hostile data files (issue 19, items 0, 3, 4 and 7): a data file is read exactly as written.

Each case asserts the exact behaviour: the exit code, the words of the message that matter, the
location (the spec's line), that nothing is written, and the right number where the spec solves.
"""

from __future__ import annotations

import json
import os
import re
import textwrap

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from privopt.cli import main
from privopt.errors import SpecError

# Table 4 (Chen, Golubchik & Pal 2022, Sec. 8): optimum 0.675 at delta = 0.9
TABLE4 = textwrap.dedent(
    """\
    spec "t"
    var gender   : public  {F, M}
    var income   : private {low, mid, high}
    var decision : outcome {deny, approve}
    known P(gender, income) = counts from "PATH" column n
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
TABLE4_COUNTS = pd.DataFrame(
    {"gender": ["F", "F", "F", "M", "M", "M"], "income": ["low", "mid", "high"] * 2, "n": [12, 5, 3, 9, 7, 4]}
)
# other counts: Table 4's answer is 0.818 with them (what a glob read by mistake gave)
DECOY_COUNTS = TABLE4_COUNTS.assign(n=[1, 1, 30, 1, 1, 30])


def solve(tmp_path, text, *args, name="spec.priv"):
    path = tmp_path / name
    path.write_text(text)
    r = CliRunner().invoke(main, ["solve", str(path), *map(str, args)])
    return r, path


def solved(tmp_path, text, *args):
    r, _ = solve(tmp_path, text, "--json", *args)
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def refused(tmp_path, text, line, message, *args):
    """Exit 2, no traceback, the message, the spec's line with a caret; nothing written to --out."""
    out_dir = tmp_path / "out"
    r, path = solve(tmp_path, text, "--out", out_dir, *args)
    out = r.stderr if hasattr(r, "stderr") else r.output
    assert r.exit_code == 2, out
    assert "Traceback" not in out
    assert re.search(message, out), out
    if line is not None:
        assert f"{path}:{line}:" in out and "^" in out, out
    assert not out_dir.exists()
    return out


def table4(path: str) -> str:
    return TABLE4.replace("PATH", path)


# ------------------------------------------------------------------ item 0: literal file names


def test_a_parquet_name_with_brackets_is_that_file_not_a_pattern(tmp_path):
    TABLE4_COUNTS.to_parquet(tmp_path / "cnt[1].parquet", index=False)
    DECOY_COUNTS.to_parquet(tmp_path / "cnt1.parquet", index=False)  # what the glob cnt[1] matches
    (tmp_path / "cnt[1]").mkdir()  # a folder beside it holding another Parquet file
    DECOY_COUNTS.to_parquet(tmp_path / "cnt[1]" / "part-0.parquet", index=False)
    data = solved(tmp_path, table4("cnt[1].parquet"))
    assert data["objective"] == pytest.approx(0.675, rel=1e-9)
    assert list(data["spec"]["data"]) == ["cnt[1].parquet"]  # the file read, and only it


def test_a_csv_name_with_brackets_is_read(tmp_path):
    TABLE4_COUNTS.to_csv(tmp_path / "survey[2024].csv", index=False)
    DECOY_COUNTS.to_csv(tmp_path / "survey2.csv", index=False)
    data = solved(tmp_path, table4("survey[2024].csv"))
    assert data["objective"] == pytest.approx(0.675, rel=1e-9)
    assert list(data["spec"]["data"]) == ["survey[2024].csv"]


def test_a_star_is_a_pattern_and_brackets_in_it_stay_literal(tmp_path):
    folder = tmp_path / "data[2024]"
    folder.mkdir()
    TABLE4_COUNTS.iloc[:3].to_parquet(folder / "part-0.parquet", index=False)
    TABLE4_COUNTS.iloc[3:].to_parquet(folder / "part-1.parquet", index=False)
    (tmp_path / "data2").mkdir()  # what data[2024] would match as a pattern
    DECOY_COUNTS.to_parquet(tmp_path / "data2" / "part-0.parquet", index=False)
    data = solved(tmp_path, table4("data[2024]/part-*.parquet"))
    assert data["objective"] == pytest.approx(0.675, rel=1e-9)
    assert sorted(data["spec"]["data"]) == ["data[2024]/part-0.parquet", "data[2024]/part-1.parquet"]


def test_a_name_that_exists_as_written_is_that_file_even_with_a_star(tmp_path):
    TABLE4_COUNTS.to_csv(tmp_path / "cnt*.csv", index=False)
    DECOY_COUNTS.to_csv(tmp_path / "cnt-old.csv", index=False)
    data = solved(tmp_path, table4("cnt*.csv"))
    assert data["objective"] == pytest.approx(0.675, rel=1e-9)
    assert list(data["spec"]["data"]) == ["cnt*.csv"]


def test_a_missing_bracketed_name_is_not_found_as_written(tmp_path):
    DECOY_COUNTS.to_csv(tmp_path / "survey2.csv", index=False)
    out = refused(tmp_path, table4("survey[2].csv"), 5, r"data file 'survey\[2\].csv' does not exist")
    assert "survey2.csv" not in out.split("error:")[1].split("\n")[0]


# ------------------------------------------------------------------ item 0: missing values, NA labels

MATRIX_SPEC = textwrap.dedent(
    """\
    spec "m"
    const A = matrix from "q.csv"
    var x : private real[3] in [0, 1]
    noise eta : gaussian[2]
    let O = A @ x + eta
    subject to dp(x -> O) <= (1, 1e-5)
    minimize E[sum((O - A @ x)^2)]
    """
)


def test_an_empty_cell_of_a_matrix_file_is_an_error_not_a_shorter_row(tmp_path):
    (tmp_path / "q.csv").write_text("1,0,1\n1,,1\n")
    refused(tmp_path, MATRIX_SPEC, 2, r"row 2, column 2 of 'q.csv' is empty \(a missing value\)")


def test_a_trailing_comma_in_a_matrix_file_is_a_missing_value(tmp_path):
    (tmp_path / "q.csv").write_text("1,0,1,\n1,1,1,\n")
    refused(tmp_path, MATRIX_SPEC, 2, r"row 1, column 4 of 'q.csv' is empty")


def test_an_empty_entry_of_an_inline_matrix_is_located(tmp_path):
    text = MATRIX_SPEC.replace('matrix from "q.csv"', "matrix {\n  1, 0, 1\n  1, , 1\n}")
    out = refused(tmp_path, text, 4, r"this entry is empty \(a missing value\)")
    assert "\n    4 |   1, , 1\n      |      ^" in out


def test_the_matrix_file_without_gaps_solves(tmp_path):
    (tmp_path / "q.csv").write_text("1,0,1\n1, 1 ,1\n")
    data = solved(tmp_path, MATRIX_SPEC)
    assert data["status"] == "optimal" and data["objective"] > 0


def test_an_empty_count_is_an_error_naming_row_and_column(tmp_path):
    (tmp_path / "c.csv").write_text("gender,income,n\nF,low,12\nF,mid,\nF,high,3\nM,low,9\nM,mid,7\nM,high,4\n")
    refused(tmp_path, table4("c.csv"), 5, r"row 2 of 'c.csv': n is empty \(an empty cell\)")


def test_an_empty_rate_is_an_error_naming_row_and_column(tmp_path):
    (tmp_path / "c.csv").write_text(TABLE4_COUNTS.to_csv(index=False))
    (tmp_path / "r.csv").write_text("gender,income,rate\nF,low,0\nF,mid,0\nF,high,1\nM,low,\nM,mid,0.5\nM,high,1\n")
    text = table4("c.csv").replace(
        "= {\n         low  mid  high\n    F:   0    0    1\n    M:   0    0.5  1\n}", 'from "r.csv" column rate'
    )
    refused(tmp_path, text, 6, r"row 4 of 'r.csv': rate is empty \(an empty cell\)")


def test_a_parquet_null_count_is_an_error_not_a_zero(tmp_path):
    df = TABLE4_COUNTS.astype({"n": "float64"})
    df.loc[4, "n"] = None
    df.to_parquet(tmp_path / "c.parquet", index=False)
    refused(tmp_path, table4("c.parquet"), 5, r"row 5 of 'c.parquet': n is empty \(a null\)")


def test_a_parquet_null_label_is_an_error_not_the_label_none(tmp_path):
    df = TABLE4_COUNTS.copy()
    df.loc[1, "income"] = None
    df.to_parquet(tmp_path / "c.parquet", index=False)
    text = table4("c.parquet").replace("{low, mid, high}", '{low, mid, high, "None"}')
    refused(tmp_path, text, 5, r"row 2 of 'c.parquet': income is empty \(a null\)")


def test_na_and_other_null_words_are_labels(tmp_path):
    """NA (North America), N/A, null, None: labels as written, in a domain read from the file
    and in the table's rows: Table 4 with its labels renamed gives Table 4's answer."""
    df = pd.DataFrame(
        {"region": ["NA"] * 3 + ["EU"] * 3, "income": ["N/A", "null", "None"] * 2, "n": [12, 5, 3, 9, 7, 4]}
    )
    (tmp_path / "c.csv").write_text(df.to_csv(index=False))
    text = (
        table4("c.csv")
        .replace("var gender   : public  {F, M}", 'var region : public from "c.csv"')
        .replace("var income   : private {low, mid, high}", 'var income : private {"N/A", null, None}')
        .replace("gender", "region")
        .replace("F:", "NA:")
        .replace("M:", "EU:")
        .replace("low  mid  high", '"N/A"  null  None')
    )
    data = solved(tmp_path, text)
    assert data["objective"] == pytest.approx(0.675, rel=1e-9)
    assert {g["key"]["region"] for g in data["groups"]} == {"NA", "EU"}


def test_a_number_column_holding_na_is_a_located_error(tmp_path):
    (tmp_path / "c.csv").write_text("gender,income,n\nF,low,12\nF,mid,5\nF,high,NA\nM,low,9\nM,mid,7\nM,high,4\n")
    out = refused(tmp_path, table4("c.csv"), 5, r"row 3 of 'c.csv': n = 'NA' is not a number")
    assert "hint: column 'n' holds finite numbers" in out


def test_an_empty_label_in_a_domain_file_is_an_error_not_a_dropped_row(tmp_path):
    (tmp_path / "c.csv").write_text("gender,income,n\nF,low,12\nF,mid,5\nF,high,3\n,low,9\nM,mid,7\nM,high,4\n")
    text = table4("c.csv").replace("public  {F, M}", 'public from "c.csv"')
    refused(tmp_path, text, 2, r"row 4 of 'c.csv': gender is empty \(an empty cell\)")


# ------------------------------------------------------------------ item 4: row numbers


def test_rows_count_data_rows_from_one(tmp_path):
    (tmp_path / "c.csv").write_text("gender,income,n\nX,low,12\n")
    refused(tmp_path, table4("c.csv"), 5, r"row 1 of 'c.csv': gender = 'X' is not in its domain")


# ------------------------------------------------------------------ item 3: file guards


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("where", ["table", "matrix", "part", "glob"])
def test_a_fifo_data_input_is_refused_at_once(tmp_path, where):
    if where == "matrix":
        os.mkfifo(tmp_path / "q.csv")
        refused(tmp_path, MATRIX_SPEC, 2, r"'q.csv' is a FIFO \(named pipe\), not a regular file")
        return
    if where == "table":
        os.mkfifo(tmp_path / "c.csv")
        refused(tmp_path, table4("c.csv"), 5, r"'c.csv' is a FIFO \(named pipe\), not a regular file")
        return
    (tmp_path / "data").mkdir()
    TABLE4_COUNTS.to_parquet(tmp_path / "data" / "part-0.parquet", index=False)
    os.mkfifo(tmp_path / "data" / "part-1.parquet")
    path = "data/" if where == "part" else "data/part-*.parquet"
    refused(tmp_path, table4(path), 5, r"'data/part-1.parquet' is a FIFO \(named pipe\), not a regular file")


def test_a_table_too_large_is_refused_before_memory_is_allocated(tmp_path):
    (tmp_path / "c.csv").write_text("a,b,c,n\n0,0,0,1\n")
    text = textwrap.dedent(
        """\
        var a : public range(0, 99999)
        var b : public range(0, 99999)
        var c : private range(0, 99999)
        var d : outcome {0, 1}
        known P(a, b, c) = counts from "c.csv" column n
        design Dt = P(d | a, b, c)
        minimize max_confidence(a, b, d -> c)
        """
    )
    refused(tmp_path, text, 5, r"a table over a, b, c has 1,000,000,000,000,000 cells, more than the 268,435,456")


def test_a_column_of_na_only_and_numbers_beside_na_are_labels(tmp_path):
    """A column whose every cell is NA (a reader guessing types would call it all-missing), and
    a column of numbers and NA: the same answer as the spec with the labels spelt otherwise."""
    (tmp_path / "c.csv").write_text("region,income,n\nNA,1,12\nNA,2,5\nNA,NA,3\n")
    one = textwrap.dedent(
        """\
        var region : public from "c.csv"
        var income : private {1, 2, NA}
        var decision : outcome {deny, approve}
        known P(region, income) = counts from "c.csv" column n
        known D = P(decision = approve | region, income) = {
                  1  2  NA
            NA:   0  0  1
        }
        design Dt = P(decision | region, income)
        param delta = 0.9
        subject to |Dt - D| <= 1 - delta
        minimize max_confidence(region, decision -> income)
        """
    )
    inline = (
        one.replace('public from "c.csv"', "public {R}")
        .replace("{1, 2, NA}", "{a, b, c}")
        .replace('counts from "c.csv" column n', "counts {\n a b c\n R: 12 5 3\n}")
        .replace("1  2  NA", "a  b  c")
        .replace("NA:", "R:")
    )
    got = solved(tmp_path, one)
    want = solved(tmp_path, inline)
    assert got["groups"][0]["key"] == {"region": "NA"}
    assert got["objective"] == pytest.approx(want["objective"], rel=1e-9)


# ------------------------------------------------------------------ item 7: records in

from tests.conftest import SPECS  # noqa: E402

RECORDS = SPECS / "data" / "credit_records.csv"
RECORD_SPEC = SPECS / "atr_credit_records.priv"


def _records_frame() -> pd.DataFrame:
    return pd.read_csv(RECORDS, dtype=str, keep_default_na=False)


def test_the_record_spec_equals_a_pandas_aggregation_whatever_rate_the_empty_cell_gets(tmp_path):
    """Independent check of specs/atr_credit_records.priv: aggregate the 1,000 records with
    pandas, write the counts and rates in long format, solve the hand-written spec; its optimum
    is the record spec's, and it stays so with 0, 1 or the pooled rate in the empty combination
    (which has no population, so no confidence depends on it)."""
    import privopt

    df = _records_frame()
    keys = ["sex", "housing", "saving"]
    full = pd.MultiIndex.from_product(
        [["female", "male"], ["free", "own", "rent"], ["NA", "little", "moderate", "quite rich", "rich"]], names=keys
    )
    n = df.groupby(keys).size().reindex(full, fill_value=0)
    good = (df["risk"] == "good").groupby([df[k] for k in keys]).mean().reindex(full)
    assert int((n == 0).sum()) == 1 and n.sum() == 1000  # one combination of 30 has no applicant
    n.rename("n").reset_index().to_csv(tmp_path / "counts.csv", index=False)
    spec = RECORD_SPEC.read_text()
    hand = (
        spec.replace('counts from "data/credit_records.csv"', 'counts from "counts.csv" column n')
        .replace(
            'P(risk = good | sex, housing, saving) from "data/credit_records.csv"',
            'P(risk = good | sex, housing, saving) from "rates.csv" column rate',
        )
        .replace('from "data/credit_records.csv"', "{female, male}", 1)
        .replace('from "data/credit_records.csv"', "{free, own, rent}", 1)
    )
    records = privopt.solve(RECORD_SPEC)
    want = records.objective
    assert [nr["cells"] for nr in records.details["no_records"]] == [
        [{"sex": "female", "housing": "free", "saving": "rich"}]
    ]
    pooled = float((df["risk"] == "good").mean())
    assert records.details["no_records"][0]["rate_used"]["good"] == pytest.approx(pooled, rel=1e-12)
    for fill in (0.0, 1.0, pooled):
        good.fillna(fill).rename("rate").reset_index().to_csv(tmp_path / "rates.csv", index=False)
        (tmp_path / "hand.priv").write_text(hand)
        for method in ("closed-form", "lfp"):
            got = privopt.solve(tmp_path / "hand.priv", method=method)
            assert got.objective == pytest.approx(want, rel=1e-9), (fill, method)
            assert not got.details.get("no_records")
    assert want == pytest.approx(0.772609819, rel=1e-8)  # the golden optimum


def test_counts_of_records_equal_value_counts(tmp_path):
    """The joint read from records is pandas' value_counts, normalized (every cell, not only the
    optimum)."""
    import privopt

    df = _records_frame()
    problem = privopt.load(RECORD_SPEC)
    prior = problem.known["P(sex, housing, saving)"]
    vc = df.value_counts(["sex", "housing", "saving"], normalize=True)
    for idx in np.ndindex(prior.data.shape):
        labels = tuple(problem.variables[a].labels[i] for a, i in zip(prior.axes, idx))
        assert prior.data[idx] == pytest.approx(vc.get(labels, 0.0), abs=1e-15)


RECORD_BASE = textwrap.dedent(
    """\
    var sex     : public  {female, male}
    var saving  : private {little, "quite rich"}
    var risk    : outcome {bad, good}
    known P(sex, saving) = counts from "r.csv"
    known D = P(risk = good | sex, saving) from "r.csv"
    design Dt = P(risk | sex, saving)
    param delta = 0.9
    subject to |Dt - D| <= 1 - delta
    minimize max_confidence(sex, risk -> saving)
    """
)


def test_labels_with_spaces_unquoted_in_the_data_and_quoted_in_the_spec(tmp_path):
    (tmp_path / "r.csv").write_text(
        "sex,saving,risk\nfemale,little,good\nfemale,quite rich,bad\nmale,little,bad\nmale,quite rich,good\nmale,little,good\n"
    )
    inline = RECORD_BASE.replace(
        'counts from "r.csv"', 'counts {\n little "quite rich"\n female: 1 1\n male: 2 1\n}'
    ).replace('from "r.csv"', '= {\n little "quite rich"\n female: 1 0\n male: 0.5 1\n}')
    got, want = solved(tmp_path, RECORD_BASE), solved(tmp_path, inline)
    assert got["objective"] == pytest.approx(want["objective"], rel=1e-12)
    assert {r["saving"] for r in got["tables"]["Dt"]} == {"little", "quite rich"}


def test_an_outcome_label_outside_the_domain_is_a_located_error(tmp_path):
    (tmp_path / "r.csv").write_text("sex,saving,risk\nfemale,little,good\nmale,little,bad\nmale,little,unknown\n")
    refused(tmp_path, RECORD_BASE, 5, r"row 3 of 'r.csv': risk = 'unknown' is not in its domain")


def test_a_record_with_an_empty_label_is_an_error_not_a_dropped_record(tmp_path):
    (tmp_path / "r.csv").write_text("sex,saving,risk\nfemale,little,good\n,little,bad\nmale,quite rich,good\n")
    refused(tmp_path, RECORD_BASE, 4, r"row 2 of 'r.csv': sex is empty \(an empty cell\)")


def test_a_combination_without_records_but_with_population_needs_a_rate(tmp_path):
    """The prior gives (male, quite rich) population, the records have none: the filled rate
    would change the answer, so it is refused at the rates' table."""
    (tmp_path / "r.csv").write_text("sex,saving,risk\nfemale,little,good\nfemale,quite rich,bad\nmale,little,bad\n")
    text = RECORD_BASE.replace('counts from "r.csv"', 'counts {\n little "quite rich"\n female: 1 1\n male: 2 1\n}')
    refused(
        tmp_path,
        text,
        9,
        r"P\(risk = good \| sex, saving\) has no record for \(sex=male, saving=quite rich\) in 'r.csv', "
        r"but the prior P\(sex, saving\) gives it probability 0.2",
    )


def test_a_combination_without_records_in_a_mechanism_is_an_error(tmp_path):
    (tmp_path / "r.csv").write_text("S,X\ns1,a\ns1,b\ns2,a\ns2,c\n")
    text = textwrap.dedent(
        """\
        var S : private {s1, s2, s3}
        var X : data    {a, b, c}
        var Y : release over X
        known P(S) = { s1: 0.3, s2: 0.5, s3: 0.2 }
        known P(X | S) from "r.csv"
        design M = P(Y | X)
        subject to P(Y | S) == P(X | S)
        minimize tv(X, Y)
        """
    )
    out = refused(
        tmp_path, text, 5, r"P\(X \| S\) has no record for \(S=s3\) in 'r.csv', so its rate there is undefined"
    )
    assert "hint: give the rates in a value column" in out


def test_records_solve_as_the_counts_they_make_in_a_mechanism(tmp_path):
    """A conditional read from records in a mechanism spec: the same optimum as its counts."""
    (tmp_path / "r.csv").write_text("S,X\ns1,a\ns1,b\ns1,b\ns2,a\ns2,c\ns2,c\ns2,c\n")
    text = textwrap.dedent(
        """\
        var S : private {s1, s2}
        var X : data    {a, b, c}
        var Y : release over X
        known P(S) = { s1: 0.3, s2: 0.7 }
        known P(X | S) from "r.csv"
        design M = P(Y | X)
        param alpha = 0.5
        subject to P(Y | S) == (1 - alpha) * P(X | S) + alpha * P(X)
        minimize tv(X, Y)
        """
    )
    counts = text.replace('from "r.csv"', "= counts {\n a b c\n s1: 1 2 0\n s2: 1 0 3\n}")
    got, want = solved(tmp_path, text), solved(tmp_path, counts)
    assert got["objective"] == pytest.approx(want["objective"], rel=1e-9, abs=1e-12)


def test_the_dask_engine_refuses_a_file_of_records(tmp_path):
    (tmp_path / "r.csv").write_text("sex,saving,risk\nfemale,little,good\nmale,quite rich,bad\n")
    r, _ = solve(tmp_path, RECORD_BASE, "--engine", "dask")
    assert r.exit_code == 2, r.output
    assert "line 4: the dask engine reads tables with a value column" in r.output and "Traceback" not in r.output


@pytest.mark.parametrize("rows, row, fields", [("F,low,1,7,8\n", 1, 5), ("F,low,12\nF,mid\nM,low,9\n", 2, 2)])
def test_a_row_with_more_or_fewer_fields_than_the_header_is_named(tmp_path, rows, row, fields):
    """Not read with its first fields as an index (every column shifted: 'gender = 1')."""
    (tmp_path / "c.csv").write_text("gender,income,n\n" + rows)
    refused(tmp_path, table4("c.csv"), 5, rf"row {row} of 'c.csv' has {fields} field\(s\), the header has 3")


def test_records_in_parquet_parts_count_as_the_csv(tmp_path):
    """A partitioned dataset of records (two parts) gives the CSV's answer."""
    df = pd.DataFrame(
        {
            "sex": ["female", "female", "male", "male", "male"],
            "saving": ["little", "quite rich", "little", "quite rich", "little"],
            "risk": ["good", "bad", "bad", "good", "good"],
        }
    )
    (tmp_path / "data").mkdir()
    df.iloc[:2].to_parquet(tmp_path / "data" / "part-0.parquet", index=False)
    df.iloc[2:].to_parquet(tmp_path / "data" / "part-1.parquet", index=False)
    df.to_csv(tmp_path / "r.csv", index=False)
    want = solved(tmp_path, RECORD_BASE)
    got = solved(tmp_path, RECORD_BASE.replace('"r.csv"', '"data/"'))
    assert got["objective"] == pytest.approx(want["objective"], rel=1e-12)
    assert sorted(got["spec"]["data"]) == ["data/part-0.parquet", "data/part-1.parquet"]


def test_a_const_table_from_a_file_needs_its_value_column(tmp_path):
    (tmp_path / "d.csv").write_text("X,Y\na,a\n")
    text = textwrap.dedent(
        """\
        var X : data {a, b}
        var Y : release over X
        known P(X) = uniform
        const d(X, Y) from "d.csv"
        design M = P(Y | X)
        subject to ldp(X -> Y) <= 1
        minimize E[d(X, Y)]
        """
    )
    refused(tmp_path, text, 4, r"a const table takes its numbers from a value column")


def test_a_conditional_prior_from_records_with_an_empty_group_points_to_the_joint(tmp_path):
    (tmp_path / "r.csv").write_text("sex,saving,risk\nfemale,little,good\nfemale,quite rich,bad\n")
    text = RECORD_BASE.replace(
        'known P(sex, saving) = counts from "r.csv"', 'known P(saving | sex) = counts from "r.csv"'
    )
    out = refused(
        tmp_path,
        text,
        4,
        r"P\(saving \| sex\) has no record for \(sex=male\) in 'r.csv'; a conditional prior needs records",
    )
    assert 'hint: read the joint prior from the records instead: known P(sex, saving) = counts from "r.csv"' in out
    joint = solved(tmp_path, RECORD_BASE)  # the joint: the group without records has no population
    assert {g["key"]["sex"]: g["beta"] for g in joint["groups"]} == {"female": pytest.approx(0.9), "male": 0.0}
    assert [c for nr in joint["no_records"] for c in nr["cells"]] == [
        {"sex": "male", "saving": "little"},
        {"sex": "male", "saving": "quite rich"},
    ]


def test_a_constraint_reading_a_missing_rate_does_not_hold_there(tmp_path):
    """(male, quite rich) has no record. Another table pins the released rate there to 0, far
    from the rate over all records (2/3): were the fidelity constraint held around that rate,
    the spec would be called infeasible. The cell is free of it, and the answer is the one with
    any rate written there that the pin allows (0)."""
    (tmp_path / "r.csv").write_text("sex,saving,risk\nfemale,little,good\nfemale,quite rich,bad\nmale,little,good\n")
    pin = 'known L = P(risk = good | sex, saving) = {\n little "quite rich"\n female: 1 0\n male: 1 0\n}\n'
    text = RECORD_BASE.replace("design Dt", pin + "design Dt").replace(
        "subject to |Dt - D| <= 1 - delta", "subject to |Dt - D| <= 1 - delta\nsubject to Dt >= L"
    )
    got = solved(tmp_path, text)
    assert got["status"] == "optimal"
    cell = {(r["sex"], r["saving"], r["risk"]): r["value"] for r in got["tables"]["Dt"]}
    assert cell[("male", "quite rich", "good")] == pytest.approx(0.0, abs=1e-12)
    assert [nr["rate_used"]["good"] for nr in got["no_records"]] == [pytest.approx(2 / 3)]
    hand = text.replace(
        'known D = P(risk = good | sex, saving) from "r.csv"',
        'known D = P(risk = good | sex, saving) = {\n little "quite rich"\n female: 1 0\n male: 1 0\n}',
    )
    assert got["objective"] == pytest.approx(solved(tmp_path, hand)["objective"], rel=1e-12)


# ------------------------------------------------------------------ labels are the text written

# A public code with number-looking labels; prior and rates from one file with two value columns.
CODES = textwrap.dedent(
    """\
    spec "codes"
    var code     : public  {LABELS}
    var income   : private {low, high}
    var decision : outcome {deny, approve}
    known P(code, income) = counts from "c.csv" column n
    known D = P(decision = approve | code, income) from "c.csv" column rate
    design Dt = P(decision | code, income)
    param delta = 0.9
    subject to |Dt - D| <= 1 - delta
    minimize max_confidence(code, decision -> income)
    """
)


def codes_spec(labels: str) -> str:
    return CODES.replace("{LABELS}", labels)


def write_codes(tmp_path, codes: list[str], n: list[int]) -> None:
    """Rows code,income,n,rate for each code with low and high income (rates 0.2 and 0.8)."""
    rows = ["code,income,n,rate"]
    for c, (lo, hi) in zip(codes, n):
        rows += [f"{c},low,{lo},0.2", f"{c},high,{hi},0.8"]
    (tmp_path / "c.csv").write_text("\n".join(rows) + "\n")


def prior(path, table: str = "P(code, income)") -> tuple[tuple[str, ...], np.ndarray]:
    import privopt

    problem = privopt.load(path)
    return problem.variables["code"].labels, problem.known[table].data


def test_01_and_1_are_two_rows_of_a_counts_file_with_a_value_column(tmp_path):
    """Both rows were read as code 1 (then refused as a duplicate row): each is its own label."""
    write_codes(tmp_path, ["1", "01"], [(1, 3), (6, 2)])
    text = codes_spec('from "c.csv"')
    labels, p = prior(_written(tmp_path, text))
    assert labels == ("01", "1")
    np.testing.assert_allclose(p, np.array([[6, 2], [1, 3]]) / 12, rtol=0, atol=1e-15)
    out = solved(tmp_path, text)
    assert {r["code"] for r in out["tables"]["Dt"]} == {"01", "1"}
    # a spec's own domain cannot hold both (its labels are numbers in expressions): refused there
    refused(tmp_path, codes_spec("{01, 1}"), 2, r"two labels of code are the same number")


def test_a_spec_label_1_does_not_match_01_in_a_counts_file(tmp_path):
    write_codes(tmp_path, ["01", "2"], [(1, 3), (6, 2)])
    refused(tmp_path, codes_spec("{1, 2}"), 5, r"row 1 of 'c.csv': code = '01' is not in its domain")


def test_a_spec_label_01_does_not_match_1_in_a_counts_file(tmp_path):
    write_codes(tmp_path, ["1", "2"], [(1, 3), (6, 2)])
    refused(tmp_path, codes_spec("{01, 2}"), 5, r"row 1 of 'c.csv': code = '1' is not in its domain")


def test_number_labels_in_the_spec_match_the_same_text_in_the_file(tmp_path):
    """var code : public {1, 2} still reads a CSV column of 1 and 2 (and -1, 10: as written)."""
    write_codes(tmp_path, ["-1", "2", "10"], [(1, 3), (6, 2), (4, 4)])
    labels, p = prior(_written(tmp_path, codes_spec("{-1, 2, 10}")))
    assert labels == ("-1", "2", "10")
    np.testing.assert_allclose(p, np.array([[1, 3], [6, 2], [4, 4]]) / 20, rtol=0, atol=1e-15)


def test_1_point_0_is_not_1(tmp_path):
    write_codes(tmp_path, ["1.0", "2"], [(1, 3), (6, 2)])
    refused(tmp_path, codes_spec("{1, 2}"), 5, r"row 1 of 'c.csv': code = '1.0' is not in its domain")


def test_surrounding_spaces_of_a_label_are_ignored_but_zeros_are_not(tmp_path):
    """The existing rule: surrounding spaces are not part of a label (' 1 ' is 1); a leading
    zero is (' 01' is not 1)."""
    write_codes(tmp_path, [" 1 ", "2 "], [(1, 3), (6, 2)])
    labels, p = prior(_written(tmp_path, codes_spec("{1, 2}")))
    np.testing.assert_allclose(p, np.array([[1, 3], [6, 2]]) / 12, rtol=0, atol=1e-15)
    write_codes(tmp_path, [" 01", "2"], [(1, 3), (6, 2)])
    refused(tmp_path, codes_spec("{1, 2}"), 5, r"row 1 of 'c.csv': code = ' 01' is not in its domain")


def test_value_columns_are_still_numbers(tmp_path):
    """Only label columns are text: a count written 012 is 12, a rate 0.20 is 0.2."""
    (tmp_path / "c.csv").write_text("code,income,n,rate\n1,low,012,0.20\n1,high,3,0.8\n2,low,6,.2\n2,high,2,8e-1\n")
    labels, p = prior(_written(tmp_path, codes_spec("{1, 2}")))
    np.testing.assert_allclose(p, np.array([[12, 3], [6, 2]]) / 23, rtol=0, atol=1e-15)


def _written(tmp_path, text: str, name: str = "s.priv"):
    (tmp_path / name).write_text(text)
    return tmp_path / name


def test_01_and_1_are_two_labels_of_a_domain_read_from_the_file(tmp_path):
    """They merged into one label 1 (the two rows then a duplicate, or with records one count);
    the domain is sorted by value, ties as text: 01 before 1, 2 before 10."""
    write_codes(tmp_path, ["10", "1", "2", "01"], [(1, 1), (2, 2), (3, 3), (4, 4)])
    text = codes_spec('from "c.csv"')
    labels, p = prior(_written(tmp_path, text))
    assert labels == ("01", "1", "2", "10")
    np.testing.assert_allclose(p[:, 0], np.array([4, 2, 3, 1]) / 20, rtol=0, atol=1e-15)


def test_1_point_0_and_1_are_two_labels_of_a_domain_read_from_the_file(tmp_path):
    write_codes(tmp_path, ["1.0", "1", "2.50"], [(1, 1), (2, 2), (3, 3)])
    text = codes_spec('from "c.csv"')
    labels, _ = prior(_written(tmp_path, text))
    assert labels == ("1", "1.0", "2.50")  # as written (it was 1, 2.5)


RECORD_CODES = textwrap.dedent(
    """\
    var code    : public  LABELS
    var saving  : private {little, rich}
    var risk    : outcome {bad, good}
    known P(code, saving) = counts from "r.csv"
    known D = P(risk = good | code, saving) from "r.csv"
    design Dt = P(risk | code, saving)
    param delta = 0.9
    subject to |Dt - D| <= 1 - delta
    minimize max_confidence(code, risk -> saving)
    """
)
RECORDS_01 = "code,saving,risk\n01,little,good\n01,rich,bad\n1,little,bad\n1,rich,good\n1,rich,good\n01,little,bad\n"


def test_01_and_1_are_counted_apart_in_a_records_file(tmp_path):
    """Records of 01 and of 1 were silently counted together as code 1: a wrong prior."""
    (tmp_path / "r.csv").write_text(RECORDS_01)
    labels, p = prior(_written(tmp_path, RECORD_CODES.replace("LABELS", 'from "r.csv"')), "P(code, saving)")
    assert labels == ("01", "1")
    np.testing.assert_allclose(p, np.array([[2, 1], [1, 2]]) / 6, rtol=0, atol=1e-15)
    (tmp_path / "r.csv").write_text(RECORDS_01.replace("\n1,", "\n2,"))
    labels, p = prior(_written(tmp_path, RECORD_CODES.replace("LABELS", "{01, 2}")), "P(code, saving)")
    np.testing.assert_allclose(p, np.array([[2, 1], [1, 2]]) / 6, rtol=0, atol=1e-15)


def test_a_records_file_with_01_is_refused_by_a_domain_of_1(tmp_path):
    (tmp_path / "r.csv").write_text(RECORDS_01)
    refused(
        tmp_path, RECORD_CODES.replace("LABELS", "{1, 2}"), 4, r"row 1 of 'r.csv': code = '01' is not in its domain"
    )


def test_a_label_column_read_first_as_numbers_is_read_again_as_text(tmp_path):
    """A column first read among the others (guessed as numbers) and then asked for as labels
    is read again, alone, as the text written; the digest unchanged, value columns numbers."""
    from privopt.language.datafiles import DataFiles
    from privopt.language.source import Source, Span

    (tmp_path / "c.csv").write_text("code,n\n01,5\n1,6\n1.0,7\n")
    files, span = DataFiles(tmp_path), Span(Source("x", None), 0, 1)
    first = files.columns("c.csv", span, ["code", "n"])
    assert first["code"].tolist() == [1, 1, 1]  # not asked for as labels: a guessed type
    digest = dict(files.digests)
    again = files.columns("c.csv", span, ["code", "n"], labels=["code"])
    assert [str(x) for x in again["code"]] == ["01", "1", "1.0"]
    assert again["n"].tolist() == [5, 6, 7] and files.digests == digest
    files = DataFiles(tmp_path)
    files.columns("c.csv", span, ["code"])
    (tmp_path / "c.csv").write_text("code,n\n01,5\n1,6\n2,7\n")  # rewritten between the two reads
    with pytest.raises(SpecError, match="changed while it was read"):
        files.columns("c.csv", span, ["code"], labels=["code"])


def test_numeric_parquet_labels_still_match_the_spec_by_value(tmp_path):
    """In Parquet a label column keeps its stored type: integers 1, 2 match spec labels 1.0, 2
    by value, as before."""
    pd.DataFrame(
        {"code": [1, 1, 2, 2], "income": ["low", "high"] * 2, "n": [1, 3, 6, 2], "rate": [0.2, 0.8] * 2}
    ).to_parquet(tmp_path / "c.parquet", index=False)
    text = codes_spec("{1.0, 2}").replace("c.csv", "c.parquet")
    labels, p = prior(_written(tmp_path, text))
    np.testing.assert_allclose(p, np.array([[1, 3], [6, 2]]) / 12, rtol=0, atol=1e-15)


def test_numeric_parquet_labels_against_a_domain_of_01_and_1(tmp_path):
    """A domain read from a CSV with labels 01 and 1 is text (they are the same number): a
    Parquet number 1 is the label written 1, never 01."""
    write_codes(tmp_path, ["01", "1"], [(1, 1), (1, 1)])  # the domain and the rates
    pd.DataFrame({"code": [1, 1], "income": ["low", "high"], "n": [1, 3]}).to_parquet(
        tmp_path / "c.parquet", index=False
    )
    text = codes_spec('from "c.csv"').replace('counts from "c.csv"', 'counts from "c.parquet"')
    import privopt

    problem = privopt.load(_written(tmp_path, text))
    assert problem.variables["code"].labels == ("01", "1") and problem.variables["code"].values is None
    np.testing.assert_allclose(problem.known["P(code, income)"].data, [[0, 0], [0.25, 0.75]], rtol=0, atol=1e-15)


def test_a_label_column_behind_a_bom_or_a_spaced_header_is_text_too(tmp_path):
    """The label columns are found by their header names as written (a UTF-8 BOM, spaces
    around a name), so they are text there too: 01 and 1 stay apart."""
    (tmp_path / "c.csv").write_text(
        "\ufeff code ,income,n,rate\n01,low,1,0.2\n01,high,3,0.8\n1,low,6,0.2\n1,high,2,0.8\n", encoding="utf-8"
    )
    labels, p = prior(_written(tmp_path, codes_spec('from "c.csv"')))
    assert labels == ("01", "1")
    np.testing.assert_allclose(p, np.array([[1, 3], [6, 2]]) / 12, rtol=0, atol=1e-15)


def test_a_tsv_and_the_pandas_fallback_read_labels_as_text_too(tmp_path, monkeypatch):
    """A TSV, and a CSV with a quoted line break across pyarrow's blocks (read by pandas): the
    label columns are the text written there too."""
    (tmp_path / "c.tsv").write_text(
        "code\tincome\tn\trate\n01\tlow\t1\t0.2\n01\thigh\t3\t0.8\n1\tlow\t6\t0.2\n1\thigh\t2\t0.8\n"
    )
    labels, p = prior(_written(tmp_path, codes_spec('from "c.tsv"').replace("c.csv", "c.tsv")))
    assert labels == ("01", "1")
    np.testing.assert_allclose(p, np.array([[1, 3], [6, 2]]) / 12, rtol=0, atol=1e-15)
    from privopt.language import datafiles

    # a column the spec does not read holds a quoted line break where pyarrow splits its blocks
    (tmp_path / "c.csv").write_text(
        'code,income,n,rate,note\n01,low,1,0.2,7\n01,high,3,0.8,"a\nb"\n1,low,6,0.2,7\n1,high,2,0.8,7\n'
    )
    monkeypatch.setattr(datafiles, "CSV_BLOCK", 48)  # two rows a block
    read_csv, fallback = pd.read_csv, []
    monkeypatch.setattr(pd, "read_csv", lambda *a, **k: fallback.append(k) or read_csv(*a, **k))
    labels, p = prior(_written(tmp_path, codes_spec('from "c.csv"')))
    assert fallback and fallback[0]["dtype"]["code"] is str  # pandas read it (once, every column used), labels as text
    assert len(fallback) == 1 and "note" not in fallback[0]["usecols"]
    assert labels == ("01", "1")
    np.testing.assert_allclose(p, np.array([[1, 3], [6, 2]]) / 12, rtol=0, atol=1e-15)
