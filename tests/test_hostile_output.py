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
from tests.conftest import SPECS

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


def run(*args, columns: int | None = None, timeout=300, **kw) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    if columns is not None:
        env["COLUMNS"] = str(columns)
    return subprocess.run([PRIVOPT, *map(str, args)], capture_output=True, text=True, timeout=timeout, env=env, **kw)


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


@pytest.mark.parametrize("width", [80, 60])
@pytest.mark.parametrize("klass", list(CLASSES))
def test_solve_at_narrow_widths_cuts_nothing(klass, width):
    """Every class's summary at 80 and 60 columns: no "…", no line beyond the width, and the same
    numbers as the 160-column output prints (a number broken across lines would leave pieces that
    the wide output does not have; the vertical layout repeats headers, so compared as sets)."""
    spec = SPECS / CLASSES[klass]
    narrow, wide = run("solve", spec, columns=width), run("solve", spec)
    assert narrow.returncode == wide.returncode == 0, narrow.stderr
    assert_nothing_cut(narrow.stdout, width)
    assert set(numbers(narrow.stdout)) == set(numbers(wide.stdout))
    objective = json.loads(run("solve", spec, "--json", "--no-tables").stdout)["objective"]
    assert f"{objective:.12g}" in numbers(narrow.stdout)


@pytest.mark.parametrize("width", [80, 60])
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
    narrow, wide = run(*args, columns=width), run(*args)
    assert narrow.returncode == wide.returncode == 0, narrow.stderr
    assert_nothing_cut(narrow.stdout, width)
    assert set(numbers(narrow.stdout)) == set(numbers(wide.stdout))


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
    proc = subprocess.Popen([PRIVOPT, "solve", SPECS / "shaped_noise_means.priv", "--quiet"], stdout=slave,
                            stderr=subprocess.PIPE, env=env)
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
