"""``privopt apply`` (issue 14, part 2): draw each record's target from the solved design table.

* the draw: conditional frequencies per cell match the table (chi-square, 200,000 records) on
  an ATR spec and a mechanism spec; joint draws for two targets; a zero-probability label is
  never drawn; the inverse-CDF rule at its boundaries;
* the file: every byte of RECORDS.csv kept (``007``, ``12.50``, ``NA``, empty and quoted fields,
  quoted line breaks, CRLF, CR, a BOM, no last line ending, header only), the target appended
  last and quoted when its label needs it;
* reproducibility: the same seed gives the same bytes (whatever the chunk size), another seed
  another draw; without --seed one is printed and reproduces the file;
* errors: exit 2 naming the row, column and value, no traceback, nothing written and no temp
  file left; exit 3 for an infeasible spec; a noise-placement spec refused.
"""

from __future__ import annotations

import csv
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from scipy import stats

from privopt import api
from privopt import apply as applying
from privopt.cli import main
from privopt.errors import UsageError
from tests.conftest import SPECS

ATR = SPECS / "atr_table4.priv"
RR = SPECS / "randomized_response.priv"
PRIVOPT = str(Path(sys.executable).parent / "privopt")


def invoke(*args):
    r = CliRunner().invoke(main, [str(a) for a in args])
    return r, r.stdout, r.stderr


@pytest.fixture(scope="module")
def atr():
    problem = api.load(ATR)
    return problem, problem.solve()


@pytest.fixture(scope="module")
def rr():
    problem = api.load(RR)
    return problem, problem.solve()


@pytest.fixture(params=["default", "tiny"])
def blocks(request, monkeypatch):
    """Run a test with the parser's default blocks and with tiny ones (7 bytes, 2 records), so
    that quotes, CRLF endings and records straddle the block edges."""
    if request.param == "tiny":
        monkeypatch.setattr(applying, "BLOCK", 7)
        monkeypatch.setattr(applying, "ROWS", 2)
    return request.param


def apply_lib(problem, result, data: Path, out: Path, seed: int = 7):
    records = applying.read_records(problem, data)
    return applying.write_release(problem, result, records, out, seed)


def table_of(problem, result) -> dict[tuple, np.ndarray]:
    """The design as {conditioning labels: probabilities over the target's labels}."""
    d = problem.design
    df = result.tables[d.name]
    out = {}
    for key, part in df.groupby(list(d.given), observed=True, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        order = {lab: i for i, lab in enumerate(problem.variables[d.targets[0]].labels)}
        probs = np.zeros(len(order))
        for lab, v in zip(part[d.targets[0]].astype(str), part["value"]):
            probs[order[lab]] = v
        out[tuple(str(k) for k in key)] = probs
    return out


def check_frequencies(problem, result, released: pd.DataFrame) -> int:
    """Chi-square per conditioning cell of the released target against the table's row; a
    label of probability 0 never drawn. Returns the number of cells tested."""
    d = problem.design
    target = d.targets[0]
    labels = list(problem.variables[target].labels)
    tested = 0
    for key, probs in table_of(problem, result).items():
        mask = np.ones(len(released), dtype=bool)
        for var, lab in zip(d.given, key):
            mask &= released[var].to_numpy() == lab
        drawn = released.loc[mask, target]
        n = int(mask.sum())
        assert n > 1000, (key, n)
        observed = np.array([(drawn == lab).sum() for lab in labels])
        assert observed.sum() == n  # every drawn value is a label
        zero = probs <= 1e-12
        assert observed[zero].sum() == 0, (key, probs, observed)
        if (~zero).sum() >= 2:
            expected = probs[~zero] / probs[~zero].sum() * n
            p = stats.chisquare(observed[~zero], expected).pvalue
            assert p > 1e-6, (key, observed, expected, p)
        tested += 1
    return tested


def read_text_csv(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, dtype=str, keep_default_na=False)


# ---------------------------------------------------------------- the draw


def test_atr_frequencies_match_dt(atr, tmp_path):
    problem, result = atr
    rng = np.random.default_rng(12345)
    prior = np.array([[12, 5, 3], [9, 7, 4]], dtype=float).ravel() / 40
    n = 200_000
    cell = rng.choice(6, size=n, p=prior)
    gender = np.array(["F", "M"])[cell // 3]
    income = np.array(["low", "mid", "high"])[cell % 3]
    data = tmp_path / "records.csv"
    pd.DataFrame({"id": np.arange(n), "gender": gender, "income": income}).to_csv(data, index=False)
    report = apply_lib(problem, result, data, tmp_path / "release.csv", seed=7)
    assert (report.records, report.target, report.table) == (n, "decision", "Dt")
    released = read_text_csv(tmp_path / "release.csv")
    assert list(released.columns) == ["id", "gender", "income", "decision"]
    assert (released["gender"].to_numpy() == gender).all() and (released["income"].to_numpy() == income).all()
    assert check_frequencies(problem, result, released) == 6


def test_mechanism_frequencies_match_r(rr, tmp_path):
    problem, result = rr
    n = 200_000
    x = np.array([f"v{i}" for i in range(1, 6)])[np.random.default_rng(1).integers(0, 5, n)]
    data = tmp_path / "records.csv"
    pd.DataFrame({"X": x}).to_csv(data, index=False)
    report = apply_lib(problem, result, data, tmp_path / "release.csv", seed=11)
    assert (report.records, report.target, report.table) == (n, "Y", "R")
    released = read_text_csv(tmp_path / "release.csv")
    assert list(released.columns) == ["X", "Y"]
    assert check_frequencies(problem, result, released) == 5
    # k-ary randomized response: the true value with e^eps / (e^eps + k - 1)
    keep = (released["X"] == released["Y"]).mean()
    assert keep == pytest.approx(np.e / (np.e + 4), abs=0.005)


@pytest.mark.parametrize(
    "spec, given", [("sanitize_distance_table.priv", ("S", "X")), ("obfuscation_bsc.priv", ("X",))]
)
def test_other_families_draw_from_their_table(spec, given, tmp_path):
    problem = api.load(SPECS / spec)
    result = problem.solve()
    assert problem.design.given == given
    rng = np.random.default_rng(3)
    n = 30_000
    cols = {v: np.array(problem.variables[v].labels)[rng.integers(0, problem.variables[v].size, n)] for v in given}
    data = tmp_path / "records.csv"
    pd.DataFrame(cols).to_csv(data, index=False)
    apply_lib(problem, result, data, tmp_path / "out.csv", seed=5)
    released = read_text_csv(tmp_path / "out.csv")
    assert list(released.columns) == [*given, "Y"]
    check_frequencies(problem, result, released)


TWO_TARGETS = """spec "two targets"
var X : data {a, b}
var Y : release over X
var Z : release over X
known P(X) = uniform
design M = P(Y, Z | X)
param eps = 1.0
subject to ldp(X -> Y) <= eps
minimize tv(X, Y)
"""


def test_several_targets_are_drawn_jointly(tmp_path):
    spec = tmp_path / "two.priv"
    spec.write_text(TWO_TARGETS)
    problem = api.load(spec)
    result = problem.solve()
    n = 40_000
    data = tmp_path / "records.csv"
    data.write_text("X\n" + "a\nb\n" * (n // 2))
    report = apply_lib(problem, result, data, tmp_path / "out.csv", seed=2)
    assert report.target == "Y, Z" and report.table == "M"
    released = read_text_csv(tmp_path / "out.csv")
    assert list(released.columns) == ["X", "Y", "Z"]
    table = result.tables["M"]
    for x in ("a", "b"):
        rows = released[released["X"] == x]
        for (y, z), count in rows.groupby(["Y", "Z"]).size().items():
            p = float(table[(table.X == x) & (table.Y == y) & (table.Z == z)]["value"].iloc[0])
            assert p > 1e-9, (x, y, z)  # a cell of probability 0 is never drawn
            assert count / len(rows) == pytest.approx(p, abs=0.015)


def test_inverse_cdf_boundaries():
    cdf = np.array([[0.25, 0.25, 1.0], [0.0, 1.0, 1.0]])
    u = np.array([0.0, 0.2499999, 0.25, 0.9999999, 0.0, 0.5, 0.9999999])
    cells = np.array([0, 0, 0, 0, 1, 1, 1])
    assert applying.draw(cdf, cells, u).tolist() == [0, 0, 2, 2, 1, 1, 1]


def test_rows_cleaned_for_sampling(atr):
    """Tiny negatives are clipped and each row renormalized; every entry from a row's last
    positive one on is exactly 1, so a last label of probability 0 is never drawn."""
    problem, result = atr
    table = result.tables["Dt"].copy()
    values = table["value"].to_numpy().copy()
    values[0], values[1] = 1.0 + 1e-10, -1e-10  # F/low: all deny, a negative rounding error
    table["value"] = values
    cdf = applying._cumulative(problem, table)
    assert cdf.shape == (6, 2)
    assert cdf[0].tolist() == [1.0, 1.0]
    assert (np.diff(cdf, axis=1) >= 0).all() and (cdf[:, -1] == 1.0).all()
    table["value"] = values * 1.1
    with pytest.raises(RuntimeError, match="sums to"):
        applying._cumulative(problem, table)


# ---------------------------------------------------------------- the file


def expected_bytes(lines: list[bytes], appended: list[bytes]) -> bytes:
    """Records as (body, line ending) pairs -> the file apply must write."""
    out = b""
    for line, add in zip(lines, appended):
        body, term = _split_term(line)
        out += body + add + term
    return out


def _split_term(line: bytes) -> tuple[bytes, bytes]:
    for term in (b"\r\n", b"\n", b"\r"):
        if line.endswith(term):
            return line[: -len(term)], term
    return line, b""


def drawn_labels(out: Path) -> list[str]:
    with out.open(newline="", encoding="utf-8-sig") as fh:
        rows = list(csv.reader(fh))
    return [r[-1] for r in rows[1:]]


def test_fields_pass_through_byte_for_byte(atr, tmp_path, blocks):
    problem, result = atr
    records = [
        b'\xef\xbb\xbfid,gender,"income",note,amount\r\n',
        b"007,F,low,NA,12.50\r\n",
        b'0008,M,"high","a, b",\r\n',
        b',F,mid,"two\r\nlines, ""quoted""",-0\n',  # an LF-only ending amid CRLF: kept as it is
        b"1e3,M,low,,\r",  # a CR-only ending
        b'  x ,"F",high,caf\xc3\xa9 \xe2\x80\x94 ok,   ',  # no ending on the last line
    ]
    data = tmp_path / "records.csv"
    data.write_bytes(b"".join(records))
    out = tmp_path / "release.csv"
    report = apply_lib(problem, result, data, out, seed=3)
    assert report.records == 5
    labels = drawn_labels(out)
    assert len(labels) == 5 and set(labels) <= {"deny", "approve"}
    want = expected_bytes(records, [b",decision"] + [b"," + lab.encode() for lab in labels])
    assert out.read_bytes() == want


def test_bom_before_a_quoted_header_name(atr, tmp_path, blocks):
    problem, result = atr
    data = tmp_path / "records.csv"
    data.write_bytes(b'\xef\xbb\xbf"gender",income\nM,mid\n')
    out = tmp_path / "release.csv"
    apply_lib(problem, result, data, out)
    assert out.read_bytes().startswith(b'\xef\xbb\xbf"gender",income,decision\nM,mid,')


def test_text_is_never_reinterpreted(atr, tmp_path):
    problem, result = atr
    data = tmp_path / "records.csv"
    data.write_text(
        "zip,gender,income,score,flag\n007,F,low,12.50,NA\n00123,M,mid,1e5,null\n-0,F,high,,TRUE\n", newline=""
    )
    out = tmp_path / "release.csv"
    apply_lib(problem, result, data, out)
    lines = out.read_text().splitlines()
    assert lines[0] == "zip,gender,income,score,flag,decision"
    assert [ln.rsplit(",", 1)[0] for ln in lines[1:]] == [
        "007,F,low,12.50,NA",
        "00123,M,mid,1e5,null",
        "-0,F,high,,TRUE",
    ]


@pytest.mark.parametrize("text", ["gender,income\n", "gender,income", "gender,income\r\n"])
def test_header_only(atr, tmp_path, blocks, text):
    problem, result = atr
    data = tmp_path / "records.csv"
    data.write_bytes(text.encode())
    out = tmp_path / "release.csv"
    assert apply_lib(problem, result, data, out).records == 0
    body, term = _split_term(text.encode())
    assert out.read_bytes() == body + b",decision" + term


def test_quoted_label_values_match_and_are_quoted_when_drawn(tmp_path, blocks):
    spec = tmp_path / "odd.priv"
    spec.write_text(
        'spec "odd labels"\nvar X : data {"a,b", "x y", "caf\u00e9"}\nvar Y : release over X\n'
        "known P(X) = uniform\ndesign R = P(Y | X)\nparam eps = 1.0\nsubject to ldp(X -> Y) <= eps\nminimize tv(X, Y)\n",
        encoding="utf-8",
    )
    problem = api.load(spec)
    result = problem.solve()
    data = tmp_path / "records.csv"
    data.write_text("X\n" + '"a,b"\nx y\n"x y"\ncaf\u00e9\n' * 200, encoding="utf-8")
    out = tmp_path / "out.csv"
    apply_lib(problem, result, data, out, seed=1)
    rows = list(csv.reader(io.StringIO(out.read_text(encoding="utf-8"), newline="")))
    assert rows[0] == ["X", "Y"] and len(rows) == 801
    assert {r[1] for r in rows[1:]} == {"a,b", "x y", "caf\u00e9"}
    assert all(len(r) == 2 for r in rows)
    assert ',"a,b"\n' in out.read_text(encoding="utf-8")  # the drawn label is quoted


def test_same_seed_same_bytes_whatever_the_chunk(atr, tmp_path, blocks, monkeypatch):
    problem, result = atr
    data = tmp_path / "records.csv"
    rng = np.random.default_rng(0)
    n = 600
    pd.DataFrame({"gender": rng.choice(["F", "M"], n), "income": rng.choice(["low", "mid", "high"], n)}).to_csv(
        data, index=False
    )
    a, b, c, d = (tmp_path / f"{x}.csv" for x in "abcd")
    apply_lib(problem, result, data, a, seed=42)
    apply_lib(problem, result, data, b, seed=42)
    monkeypatch.setattr(applying, "CHUNK", 7)
    apply_lib(problem, result, data, c, seed=42)
    apply_lib(problem, result, data, d, seed=43)
    assert a.read_bytes() == b.read_bytes() == c.read_bytes()
    assert a.read_bytes() != d.read_bytes()


def test_out_is_replaced_with_the_umask_mode(atr, tmp_path):
    problem, result = atr
    data = tmp_path / "records.csv"
    data.write_text("gender,income\nF,low\n")
    out = tmp_path / "release.csv"
    out.write_text("old")
    apply_lib(problem, result, data, out)
    assert out.read_text().startswith("gender,income,decision\nF,low,")
    mask = os.umask(0)
    os.umask(mask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~mask
    assert sorted(p.name for p in tmp_path.iterdir()) == ["records.csv", "release.csv"]


def test_interrupt_while_writing_leaves_nothing(atr, tmp_path, monkeypatch):
    problem, result = atr
    data = tmp_path / "records.csv"
    data.write_text("gender,income\n" + "F,low\nM,high\n" * 100)
    out = tmp_path / "release.csv"
    out.write_text("old")
    records = applying.read_records(problem, data)
    monkeypatch.setattr(applying, "CHUNK", 10)
    calls = []

    def stop(*args):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args)

    real = applying.draw
    monkeypatch.setattr(applying, "draw", stop)
    with pytest.raises(KeyboardInterrupt):
        applying.write_release(problem, result, records, out, 1)
    assert out.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["records.csv", "release.csv"]


def test_a_full_disk_is_a_usage_error_with_nothing_written(atr, tmp_path, monkeypatch):
    problem, result = atr
    data = tmp_path / "records.csv"
    data.write_text("gender,income\nF,low\n")
    records = applying.read_records(problem, data)

    def full(fh, *args):
        fh.write(b"partial")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(applying, "_write", full)
    with pytest.raises(UsageError, match=r"cannot write it \(No space left on device\); nothing was written"):
        applying.write_release(problem, result, records, tmp_path / "release.csv", 1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["records.csv"]


# ---------------------------------------------------------------- the command line


def test_cli_prints_one_line_and_reproduces(tmp_path):
    data = tmp_path / "records.csv"
    data.write_text("gender,income\nF,low\nM,mid\nF,high\n")
    out = tmp_path / "release.csv"
    r, stdout, stderr = invoke("apply", ATR, "--data", data, "--out", out, "--seed", 7)
    assert r.exit_code == 0, stderr
    assert stdout == f"wrote 3 records to {out} (decision drawn from Dt, seed 7)\n"
    first = out.read_bytes()
    r, stdout, _ = invoke("apply", ATR, "--data", data, "--out", out)  # a seed is drawn and printed
    seed = int(re.fullmatch(r"wrote 3 records to .* \(decision drawn from Dt, seed (\d+)\)\n", stdout).group(1))
    again = out.read_bytes()
    invoke("apply", ATR, "--data", data, "--out", out, "--seed", seed)
    assert out.read_bytes() == again
    invoke("apply", ATR, "--data", data, "--out", out, "--seed", 7)
    assert out.read_bytes() == first


def expect_error(tmp_path, text: bytes | str, pattern: str, *extra, spec=ATR, code=2):
    """Run apply on RECORDS ``text``; exit ``code``, message matching ``pattern``, no
    traceback, no FILE.csv and no temp file."""
    data = tmp_path / "records.csv"
    data.write_bytes(text.encode() if isinstance(text, str) else text)
    out = tmp_path / "release.csv"
    before = sorted(p.name for p in tmp_path.iterdir())
    r, stdout, stderr = invoke("apply", spec, "--data", data, "--out", out, "--seed", 1, *extra)
    assert r.exit_code == code, (stdout, stderr)
    assert "Traceback" not in stderr and stdout == ""
    assert re.search(pattern, stderr), stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    return stderr


def test_missing_column_named_with_the_columns_present(tmp_path):
    err = expect_error(tmp_path, "id,gender,salary\n1,F,low\n", r"error: .*records\.csv: no column income")
    assert "The header has: id, gender, salary" in err


def test_value_outside_the_domain_names_row_column_value(tmp_path, blocks):
    err = expect_error(
        tmp_path,
        "gender,income\nF,low\nM,mid\nM,vhigh\nX,low\n",
        r"records\.csv: row 3, column income: 'vhigh' is not a label of income \(low, mid, high\)",
    )
    assert "2 rows have values outside the labels" in err
    expect_error(tmp_path, "gender,income\nF,poor\nX,low\n", r"row 1, column income: 'poor'")
    expect_error(tmp_path, "income,gender\nlow,X\npoor,F\n", r"row 1, column gender: 'X'")
    expect_error(tmp_path, "gender,income\nX,poor\n", r"row 1, column gender: 'X'")  # the design's order


def test_control_characters_in_a_value_are_shown_as_escapes(tmp_path):
    err = expect_error(tmp_path, "gender,income\nF,low\n\x1b[31mM,mid\n", r"row 2, column gender: '\\x1b\[31mM'")
    assert "\x1b" not in err


def test_row_is_counted_in_records_not_lines(tmp_path, blocks):
    expect_error(tmp_path, 'note,gender,income\n"a\nb",F,low\nc,F,poor\n', r"row 2 \(line 4\), column income: 'poor'")


def test_spaces_and_case_are_not_forgiven(tmp_path):
    expect_error(tmp_path, "gender,income\nF ,low\n", r"row 1, column gender: 'F ' .*remove the spaces")
    expect_error(tmp_path, "gender,income\nF,Low\n", r"row 1, column income: 'Low' .*case included")


def test_target_column_already_present(tmp_path):
    expect_error(
        tmp_path, "gender,income,decision\nF,low,deny\n", r"records\.csv: already has a column decision \(column 3\)"
    )


def test_duplicate_conditioning_column(tmp_path):
    expect_error(tmp_path, "gender,income,gender\nF,low,M\n", r"2 columns named gender")


@pytest.mark.parametrize(
    "text, pattern",
    [
        ("gender,income\nF,low\nM\n", r"row 2 has 1 field\(s\), the header has 2"),
        ("gender,income\nF,low,x\n", r"row 1 has 3 field\(s\), the header has 2"),
        ("gender,income\nF,low\n\nM,mid\n", r"row 2 is a blank line"),
        ("gender,income\r\nF,low\r\n\r\n", r"row 2 is a blank line"),
        ("", r"records\.csv: the file is empty"),
        (b"gender,income\nF,l\xe9w\n", r"row 1, field 2: byte 0xe9 is not UTF-8"),
        (b"\xff\xfeg\x00", r"the header, field 1: byte 0xff is not UTF-8"),
        ("gender,income,note\nF,low,5'11\"\n", r'row 1, field 3: a " inside a field that is not quoted'),
        ('gender,income\nF,"low"x\n', r'row 1, field 2: text after the closing " of a quoted field'),
        ('gender,income\nF,low\nM,"mid\n', r"row 2, field 2: a quoted field is never closed"),
    ],
)
def test_malformed_files(tmp_path, blocks, text, pattern):
    expect_error(tmp_path, text, pattern)


def test_noise_spec_refused(tmp_path):
    expect_error(
        tmp_path,
        "x\n1\n",
        r"apply needs a design table P\(target \| given\).*noise-placement",
        spec=SPECS / "noise_placement.priv",
    )


def test_infeasible_spec_writes_nothing(tmp_path):
    spec = tmp_path / "infeasible.priv"  # Dt >= 0.6 where D = 0 and |Dt - D| <= 0.1: no table
    spec.write_text(ATR.read_text() + "subject to Dt >= 0.6\n")
    err = expect_error(tmp_path, "gender,income\nF,low\n", r"infeasible", spec=spec, code=3)
    assert "nothing was written" in err


def test_bad_out_and_data(tmp_path):
    data = tmp_path / "records.csv"
    data.write_text("gender,income\nF,low\n")
    for out, pattern in [
        (data, r"--out .*records\.csv: is the records file given to --data"),
        (tmp_path / "nowhere" / "x.csv", r"the folder .*nowhere does not exist"),
    ]:
        r, _, stderr = invoke("apply", ATR, "--data", data, "--out", out)
        assert r.exit_code == 2 and re.search(pattern, stderr) and "Traceback" not in stderr, stderr
    r, _, stderr = invoke("apply", ATR, "--data", tmp_path / "none.csv", "--out", tmp_path / "x.csv")
    assert r.exit_code == 2 and "--data" in stderr and "no such file" in stderr
    assert data.read_text() == "gender,income\nF,low\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["records.csv"]
    with pytest.raises(UsageError, match="is a folder"):
        applying.check_out(tmp_path, data)


def test_installed_command_exits_2_without_traceback(tmp_path):
    data = tmp_path / "records.csv"
    data.write_text("gender,income\nF,low\nM,vhigh\n")
    out = tmp_path / "release.csv"
    p = subprocess.run(
        [PRIVOPT, "apply", str(ATR), "--data", str(data), "--out", str(out)],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 2, p.stderr
    assert "row 2, column income: 'vhigh'" in p.stderr and "Traceback" not in p.stderr
    assert not out.exists()


# ---------------------------------------------------------------- scale


@pytest.mark.slow
def test_a_million_records_in_seconds(atr, tmp_path):
    import time

    problem, result = atr
    n = 1_000_000
    rng = np.random.default_rng(0)
    data = tmp_path / "records.csv"
    g, i = np.array(["F", "M"])[rng.integers(0, 2, n)], np.array(["low", "mid", "high"])[rng.integers(0, 3, n)]
    data.write_text("id,gender,income\n" + "".join(f"{k},{a},{b}\n" for k, a, b in zip(range(n), g, i)))
    t0 = time.perf_counter()
    report = apply_lib(problem, result, data, tmp_path / "out.csv", seed=1)
    assert report.records == n
    assert time.perf_counter() - t0 < 10
