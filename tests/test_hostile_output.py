"""Hostile battery for what privopt prints and writes (issue 19, items 4 and 5).

* text that fits: at 80 and 60 columns (COLUMNS, or a real terminal of that size) no table
  cuts a cell with "…": a table wraps at spaces, drops its borders, or turns into one block
  per row, and every number printed is the number the wide output prints;
* values printed as what they are (1.94865e-19, never 1.94);
* ``--out DIR`` writes every class's released values as CSV and names exactly the files written;
* one JSON convention: every command's ``spec`` is the same object; groups in spec order.
"""

from __future__ import annotations

import csv
import functools
import json
import os
import pty
import re
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console
from rich.table import Table

from privopt import cli
from tests.conftest import SPECS, invoke

PRIVOPT = str(Path(sys.executable).parent / "privopt")

# one spec of every problem class
CLASSES = {
    "atr": "atr_table4.priv",
    "mechanism": "randomized_response.priv",
    "shaped noise": "shaped_noise_means.priv",
    "noise placement": "noise_placement.priv",
    "obfuscation": "obfuscation_general.priv",
}
NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?(?![\w.])")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def run(*args, columns: int | str | None = None) -> subprocess.CompletedProcess:
    """``privopt ARGS`` in this process (conftest's ``invoke``; the CLI reads COLUMNS for each
    command) with COLUMNS set to ``columns``, or unset (off a terminal: 160 columns)."""
    r = invoke(*args, env={"COLUMNS": None if columns is None else str(columns), "LINES": None})
    return subprocess.CompletedProcess(args, r.exit_code, r.stdout, r.stderr)


@functools.cache
def wide(*args) -> subprocess.CompletedProcess:
    """``run(*args)`` at the default width, once per test session (the reference output)."""
    return run(*args)


def numbers(text: str) -> list[str]:
    """The number tokens of ``text``, in order, without the lines that carry timings and without
    the vertical layout's record numbers ("  1. ")."""
    lines = [re.sub(r"^\s*\d+\. ", "", line) for line in text.splitlines()]
    kept = "\n".join(line for line in lines if not re.search(r"\d\.\d+s\b", line))
    return NUMBER.findall(kept)


def assert_nothing_cut(text: str, width: int) -> None:
    assert "…" not in text, text
    assert "..." not in text.replace(", ...", ""), text  # rich's ASCII ellipsis neither
    for line in text.splitlines():
        assert len(line) <= width, (width, line)


# ================================================================== 1. text that fits


def test_a_tiny_number_in_a_narrow_table_is_printed_whole():
    """The issue's cell 1.94865e-19 was shown as `1.94…` (read as 1.94) at 80 columns."""
    for width in (80, 60, 40, 24):
        t = Table(title="released table")
        for c in ("record", "a long label of the first outcome", "another long outcome label", "third"):
            t.add_column(c, justify="right")
        t.add_row("a record with a long name", cli._fmt(1.94865e-19), cli._fmt(0.123456789), cli._fmt12(2 / 3))
        console = Console(width=width, record=True, highlight=False, file=open(os.devnull, "w"))
        cli._print_table(t, console)
        text = console.export_text()
        assert_nothing_cut(text, width)
        assert NUMBER.findall(text).count("1.94865e-19") == 1, (width, text)
        assert "0.123457" in NUMBER.findall(text) and "0.666666666667" in NUMBER.findall(text), (width, text)
        assert "1.94\n" not in text


def test_formatters_print_values_as_they_are():
    """Each formatter prints a number that parses back to the value within its printed precision."""
    for x in (1.94865e-19, 5e-324, 1e-320, 0.1 + 0.2, 123456789.123, -2.5e300, 0.0):
        for fmt, digits in ((cli._fmt, 6), (cli._fmt12, 12), (cli._sci, 2)):
            text = fmt(x)
            assert "…" not in text and float(text) == pytest.approx(x, rel=10 ** (1 - digits), abs=0), (fmt, x, text)
    for fmt in (cli._fmt, cli._fmt12, cli._sci):
        assert fmt(None) == "-" and fmt(float("nan")) == "-"


# 60 columns for every class and command with -m slow; the default run keeps 80 here, and 60 in
# a real terminal (test_a_real_terminal_of_60_columns_is_honoured) and for the tiny-number table
@pytest.mark.parametrize("width", [80, pytest.param(60, marks=pytest.mark.slow)])
@pytest.mark.parametrize("klass", list(CLASSES))
def test_solve_at_narrow_widths_cuts_nothing(klass, width):
    """Every class's summary at 80 and 60 columns: no "…", no line beyond the width, and the same
    numbers as the 160-column output prints (a number broken across lines would leave pieces that
    the wide output does not have; the vertical layout repeats headers, so compared as sets)."""
    spec = SPECS / CLASSES[klass]
    narrow, reference = run("solve", spec, columns=width), wide("solve", spec)
    assert narrow.returncode == reference.returncode == 0, narrow.stderr
    assert_nothing_cut(narrow.stdout, width)
    assert set(numbers(narrow.stdout)) == set(numbers(reference.stdout))
    objective = json.loads(wide("solve", spec, "--json", "--no-tables").stdout)["objective"]
    assert f"{objective:.12g}" in numbers(narrow.stdout)


# 60 columns for every class and command with -m slow; the default run keeps 80 here, and 60 in
# a real terminal (test_a_real_terminal_of_60_columns_is_honoured) and for the tiny-number table
@pytest.mark.parametrize("width", [80, pytest.param(60, marks=pytest.mark.slow)])
@pytest.mark.parametrize(
    "args",
    [
        ["explain", SPECS / "noise_placement.priv"],
        ["explain", SPECS / "sanitize_ldp_budget.priv"],
        ["audit", SPECS / "atr_table4.priv"],
        ["sweep", SPECS / "randomized_response.priv", "eps=0.5,1,2"],
        ["sweep", SPECS / "obfuscation_general.priv", "eps=0.2,0.4"],
        ["simulate", SPECS / "obfuscation_general.priv", "--rows", "30", "--cols", "20", "--trials", "3"],
    ],
    ids=["explain-noise", "explain-mechanism", "audit", "sweep-mechanism", "sweep-obfuscation", "simulate"],
)
def test_other_commands_at_narrow_widths_cut_nothing(args, width):
    narrow, reference = run(*args, columns=width), wide(*args)
    assert narrow.returncode == reference.returncode == 0, narrow.stderr
    assert_nothing_cut(narrow.stdout, width)
    assert set(numbers(narrow.stdout)) == set(numbers(reference.stdout))


def test_check_at_80_columns_cuts_no_status_backend_or_number():
    """check's table showed `0.6…`, `agr…`, `cvx…` at 80 columns."""
    args = ["check", SPECS / "atr_table4.priv", "--backends", "highs,scipy"]
    narrow = run(*args, columns=80)
    assert narrow.returncode == 0, narrow.stderr
    assert_nothing_cut(narrow.stdout, 80)
    report = json.loads(run(*args, "--json").stdout)
    for p in report["paths"]:
        assert p["status"] in narrow.stdout and (p["backend"] or "-") in narrow.stdout
        assert f"{p['objective']:.12g}" in numbers(narrow.stdout)
    assert "all paths agree" in narrow.stdout


def test_a_real_terminal_of_60_columns_is_honoured():
    """On a terminal (no COLUMNS), the terminal's own size decides the layout."""
    import fcntl
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 60, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")} | {"TERM": "xterm"}
    proc = subprocess.Popen(
        [PRIVOPT, "solve", SPECS / "shaped_noise_means.priv", "--quiet"], stdout=slave, stderr=subprocess.PIPE, env=env
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait(timeout=120) == 0, proc.stderr.read()
    text = ANSI.sub("", b"".join(chunks).decode()).replace("\r", "")
    assert_nothing_cut(text, 60)
    assert "0.161875" in text and "14.794640409" in text  # a cell of f and the objective, whole


# ================================================================== 2. --out for every class

OUT_FILES = {
    "atr": ["Dt.csv", "groups.csv", "result.json", ".privopt-files"],
    "mechanism": ["R.csv", "result.json", ".privopt-files"],
    "shaped noise": ["f.csv", "result.json", ".privopt-files"],
    "noise placement": ["losses.csv", "noise.csv", "result.json", ".privopt-files"],
    "obfuscation": ["W.csv", "result.json", ".privopt-files"],
}


@pytest.mark.parametrize("klass", list(CLASSES))
def test_out_writes_every_class_values_as_csv_and_names_exactly_the_files(klass, tmp_path):
    """noise placement said "wrote result.json and the tables as CSV" and wrote no CSV."""
    out = tmp_path / "out"
    r = run("solve", SPECS / CLASSES[klass], "--out", out)
    assert r.returncode == 0, r.stderr
    line = r.stdout.strip().splitlines()[-1]
    assert line == (
        f"wrote {len(OUT_FILES[klass]) - 1} files to {out}: "
        + ", ".join(OUT_FILES[klass][:-1])
        + " (and .privopt-files, the hidden list of them that marks the folder as privopt's)"
    )
    assert sorted(p.name for p in out.iterdir()) == sorted(OUT_FILES[klass])
    assert sorted((out / ".privopt-files").read_text().split()) == sorted(OUT_FILES[klass][:-1])
    result = json.loads((out / "result.json").read_text())
    assert "tables" not in result and result["spec"]["path"] == str(SPECS / CLASSES[klass])
    for name in OUT_FILES[klass]:
        if name.endswith(".csv"):
            with (out / name).open(newline="") as fh:
                rows = list(csv.DictReader(fh))
            assert rows, name
            numeric = [k for k in rows[0] if k in ("value", "variance", "covariance", "loss", "beta")]
            assert numeric, (name, rows[0])
            assert all(float(row[k]) == float(row[k]) for row in rows for k in numeric)  # every cell a number


def test_noise_placement_csv_holds_the_variances_of_the_json(tmp_path):
    """noise.csv holds every coordinate's variance at full precision, covariance_NAME.csv the
    whole covariance of a correlated vector, losses.csv the optimum and the baselines."""
    out = tmp_path / "out"
    r = run("solve", SPECS / "noise_placement_correlated.priv", "--out", out)
    assert r.returncode == 0, r.stderr
    result = json.loads((out / "result.json").read_text())
    with (out / "noise.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    expect = []
    for name, S in result["noise"].items():
        diag = [S[i][i] for i in range(len(S))] if isinstance(S[0], list) else S
        expect += [(name, str(i + 1), v) for i, v in enumerate(diag)]
    assert [(row["noise"], row["i"], float(row["variance"])) for row in rows] == expect  # exact: repr round-trips
    with (out / "covariance_eta.csv").open(newline="") as fh:
        cov = list(csv.DictReader(fh))
    S = result["noise"]["eta"]
    assert len(cov) == len(S) ** 2
    assert all(float(c["covariance"]) == S[int(c["i"]) - 1][int(c["j"]) - 1] for c in cov)
    with (out / "losses.csv").open(newline="") as fh:
        losses = {row["placement"]: float(row["loss"]) for row in csv.DictReader(fh)}
    assert losses["optimized"] == result["objective"]
    assert losses["inputs only"] == result["baselines"]["input_only"]
    assert losses["answers only"] == result["baselines"]["output_only"]
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["covariance_eta.csv", "losses.csv", "noise.csv", "result.json", ".privopt-files"]
    )


def test_a_design_named_like_another_file_does_not_overwrite_it(tmp_path):
    """A design called `groups` would have been overwritten by groups.csv: it becomes table_groups.csv."""
    text = (SPECS / "atr_table4.priv").read_text().replace("Dt", "groups")
    spec = tmp_path / "groups.priv"
    spec.write_text(text)
    out = tmp_path / "out"
    r = run("solve", spec, "--out", out)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["table_groups.csv", "groups.csv", "result.json", ".privopt-files"]
    )
    with (out / "table_groups.csv").open(newline="") as fh:
        assert list(csv.DictReader(fh))[0].keys() == {"gender", "income", "decision", "value"}
    with (out / "groups.csv").open(newline="") as fh:
        assert "beta" in list(csv.DictReader(fh))[0]
    assert (
        r.stdout.strip()
        .splitlines()[-1]
        .endswith(
            ": groups.csv, result.json, table_groups.csv (and .privopt-files, the hidden list of them that marks the folder as privopt's)"
        )
    )


# ================================================================== 3. one convention


@pytest.mark.parametrize(
    "args",
    [
        ["audit", SPECS / "atr_table4.priv", "--json"],
        ["check", SPECS / "atr_table4.priv", "--backends", "highs", "--json"],
        ["sweep", SPECS / "atr_table4.priv", "delta=0.9", "--json"],
        ["simulate", SPECS / "obfuscation_general.priv", "--rows", "10", "--cols", "5", "--trials", "2", "--json"],
    ],
    ids=["audit", "check", "sweep", "simulate"],
)
def test_every_command_json_carries_the_same_spec_object(args):
    """`spec` was an object in solve --json and a string (the title) in audit --json."""
    solved = json.loads(wide("solve", args[1], "--json", "--no-tables").stdout)["spec"]
    assert set(solved) == {"path", "title", "sha256", "params", "data", "text", "cwd"} and solved["path"] == str(
        args[1]
    )
    r = run(*args)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert (doc[0] if args[0] == "sweep" else doc)["spec"] == solved


def test_a_failed_sweep_value_carries_the_spec_with_its_own_params():
    r = run("sweep", SPECS / "randomized_response.priv", "eps=1,-1", "--json")
    assert r.returncode == 2, r.stderr
    ok, failed = json.loads(r.stdout)
    assert failed["status"] == "failed" and "eps = -1 is outside its domain: eps must be >= 0" in failed["error"]
    assert failed["spec"] == ok["spec"] | {"params": {"eps": -1.0}}


def test_groups_are_in_spec_order_in_text_json_and_csv(tmp_path):
    """The text sorted groups by beta, the JSON and CSV kept spec order: spec order everywhere."""
    spec = SPECS / "atr_three_outcomes.priv"
    out = tmp_path / "out"
    text = run("solve", spec, "--out", out).stdout
    keys = [(g["key"]["gender"], g["key"]["age"]) for g in json.loads(run("solve", spec, "--json").stdout)["groups"]]
    assert keys == [("F", "young"), ("F", "old"), ("M", "young"), ("M", "old")]  # labels as declared
    with (out / "groups.csv").open(newline="") as fh:
        assert [(row["gender"], row["age"]) for row in csv.DictReader(fh)] == keys
    section = text[text.index("QID groups") :]
    rows = [
        tuple(cell.strip() for cell in line.split("│")[1:3]) for line in section.splitlines() if line.startswith("│")
    ]
    assert rows[: len(keys)] == keys


def test_more_groups_than_shown_says_which_and_how_many_are_hidden(tmp_path):
    """Beyond 40 groups the text says they are the first 40 in spec order and how many are hidden."""
    labels = [f"g{i:02d}" for i in range(45)]
    counts = "\n".join(f"  {g}: {1 + i % 3} {2 + i % 5}" for i, g in enumerate(labels))
    rates = "\n".join(f"  {g}: {0.1 + 0.01 * (i % 7):.2f} {0.9 - 0.01 * (i % 11):.2f}" for i, g in enumerate(labels))
    spec = tmp_path / "many.priv"
    spec.write_text(
        f'spec "many groups"\nvar g : public {{{", ".join(labels)}}}\nvar s : private {{lo, hi}}\n'
        "var d : outcome {no, yes}\n"
        f"known P(g, s) = counts {{\n        lo hi\n{counts}\n}}\n"
        f"known D = P(d = yes | g, s) = {{\n        lo hi\n{rates}\n}}\n"
        "design Dt = P(d | g, s)\nparam delta = 0.9\nsubject to |Dt - D| <= 1 - delta\n"
        "minimize max_confidence(g, d -> s)\n"
    )
    r = run("solve", spec, "--no-tables")
    assert r.returncode == 0, r.stderr
    assert "(the first 40 of 45 groups in spec order, 5 not shown; --json or --out DIR lists every group)" in r.stdout
    shown = [line.split("│")[1].strip() for line in r.stdout.splitlines() if line.startswith("│ g")]
    assert shown == labels[:40]
    groups = json.loads(run("solve", spec, "--json", "--no-tables").stdout)["groups"]
    top = max(groups, key=lambda g: g["beta"])
    assert f"the group with the largest beta: g={top['key']['g']} (beta {top['beta']:.6g})" in r.stdout


@pytest.mark.parametrize("columns", ["0", "5", "junk", " "])
def test_a_tiny_or_bogus_columns_value_cuts_nothing(columns):
    """COLUMNS=0 or 5 would fold every number; junk is ignored (160 columns off a terminal)."""
    r = run("sweep", SPECS / "randomized_response.priv", "eps=0.5,1", columns=columns)
    assert r.returncode == 0, r.stderr
    assert "…" not in r.stdout
    assert {"0.708124867259", "0.595390324808", "0.378009", "0.704605"} <= set(numbers(r.stdout))
    width = cli.MIN_WIDTH if columns.strip().isdigit() else 160
    assert max(len(line) for line in r.stdout.splitlines()) <= width
    if not columns.strip().isdigit():
        assert "┃ eps ┃ status" in r.stdout  # a table, at 160 columns
