"""A newcomer's first hour (brief U): the mistakes people make in their first specs, written from
docs/language.md alone, each answered as the README promises: ``FILE:LINE:COL``, the line with a
caret under the spot, a hint saying what to write, exit 2, no traceback, nothing on stdout and
nothing written to ``--out``. A budget that leaves no mechanism is exit 3, saying infeasible and
which constraints collide.
"""

import subprocess
import sys
from dataclasses import dataclass, field

import pytest

from tests.conftest import ROOT, as_a_shell_starts_it, invoke, strict_json

SANITIZE = """spec "sanitize a survey answer"
var S : private {smoker, nonsmoker}
var X : data {a, b, c}
var Y : release over X
known P(S) = { smoker: 0.2, nonsmoker: 0.8 }
known P(X | S) = {
             a    b    c
  smoker:    0.6  0.3  0.1
  nonsmoker: 0.2  0.3  0.5
}
design M = P(Y | X)
param eps = 0.5
subject to ldp(S -> Y) <= eps
minimize tv(X, Y)
"""

SHAPED = """spec "shaped noise"
var x : private {1, 2, 3}
var y : release {0.5, 1, 2, 3, 4}
param eps = 1.5
param delta = 0.01
known B = P(y) = uniform
design f = P(y | x)
subject to E[y | x] == 0.2 * x + 0.8 * E[B]
subject to dp(x -> y) <= (eps, delta)
minimize sum(x, y: f * (x - y)^2)
"""

NOISE = """spec "noise placement"
const Q = matrix {
  1 1 1 1
  1 -1 0 0
}
var x : private real[4] in [0, 10]
noise e : gaussian[2]
let O = Q @ x + e
param eps = 0.5
param delta = 1e-6
subject to dp(x -> O) <= (eps, delta)
minimize E[sum((O - Q @ x)^2)]
"""

COMPOSITE = """spec "share a budget"
use "sanitize.priv" as san
use "shaped.priv" as shp
param eps = 2
subject to dp(san, shp) <= eps
minimize san.objective + shp.objective
"""
BLOCK_FILES = {"sanitize.priv": SANITIZE, "shaped.priv": SHAPED}  # COMPOSITE's blocks, beside it


def edit(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


@dataclass(frozen=True)
class Mistake:
    name: str
    text: str
    line: int
    col: int
    message: str  # in the error line
    advice: str  # in the hint: what to write
    files: dict[str, str] = field(default_factory=dict)


MISTAKES = [
    Mistake(
        "keyword typo", edit(SANITIZE, "minimize", "minimise"), 14, 1, "unknown statement 'minimise'", "'minimize'"
    ),
    Mistake("design typo", edit(SANITIZE, "design M", "desing M"), 11, 1, "unknown statement", "'design'"),
    Mistake(
        "no 'subject to'",
        edit(SANITIZE, "subject to ldp", "ldp"),
        13,
        1,
        "unknown statement 'ldp'",
        "subject to",
    ),
    Mistake(
        "a missing probability",
        edit(SANITIZE, "nonsmoker: 0.2  0.3  0.5", "nonsmoker: 0.2  0.3"),
        9,
        3,
        "2 value(s) but the header has 3",
        "one value per X label: a b c",
    ),
    Mistake(
        "a distribution not summing to 1",
        edit(SANITIZE, "nonsmoker: 0.8", "nonsmoker: 0.7"),
        5,
        14,
        "sum to 0.9, not 1",
        "'counts'",
    ),
    Mistake("a label typo", edit(SANITIZE, "nonsmoker: 0.8", "nonsmokr: 0.8"), 5, 29, "'nonsmokr'", "'nonsmoker'"),
    Mistake("an unknown variable", edit(SANITIZE, "tv(X, Y)", "tv(X, Z)"), 14, 16, "unknown variable 'Z'", "S, X, Y"),
    Mistake(
        "over an unknown variable",
        edit(SANITIZE, "release over X", "release over W"),
        4,
        22,
        "'W' is not a variable",
        "variables: S, X",
    ),
    Mistake("a wrong arity", edit(SANITIZE, "tv(X, Y)", "tv(X)"), 14, 10, "write tv(X, Y)", ""),
    Mistake(
        "a comma for the arrow",
        edit(SANITIZE, "ldp(S -> Y)", "ldp(S, Y)"),
        13,
        12,
        "needs '->'",
        "ldp(SOURCE -> RELEASED)",
    ),
    Mistake("'=>' for the arrow", edit(SANITIZE, "ldp(S -> Y)", "ldp(S => Y)"), 13, 18, "unexpected '='", "write '->'"),
    Mistake("a strict bound", edit(SANITIZE, "<= eps", "< eps"), 13, 24, "unexpected character '<'", "write '<='"),
    Mistake("'=<' for '<='", edit(SANITIZE, "<= eps", "=< eps"), 13, 24, "unexpected '='", "write '<='"),
    Mistake("'!='", edit(SANITIZE, "<= eps", "!= eps"), 13, 24, "unexpected character '!'", "no '!='"),
    Mistake(
        "a unit after a number",
        edit(SANITIZE, "eps = 0.5", "eps = 0.5 nats"),
        12,
        17,
        "unexpected 'nats' right after a complete term",
        "a spec writes no units",
    ),
    Mistake(
        "a product without '*'",
        edit(SANITIZE, "minimize tv(X, Y)", "minimize 2 tv(X, Y)"),
        14,
        12,
        "unexpected 'tv' right after a complete term",
        "'2 * x', not '2x'",
    ),
    Mistake(
        "a decimal comma",
        edit(SANITIZE, "eps = 0.5", "eps = 0,5"),
        12,
        14,
        "unexpected ','",
        "a decimal number takes a point",
    ),
    Mistake(
        "a Greek letter for a name",
        edit(SANITIZE, "param eps = 0.5", "param \u03b5 = 0.5"),
        12,
        7,
        "unexpected character",
        "write eps for \u03b5",
    ),
    Mistake(
        "a param without 'param'",
        edit(SANITIZE, "param eps = 0.5", "eps = 0.5"),
        12,
        1,
        "unknown statement 'eps'",
        "param eps = ...",
    ),
    Mistake(
        "ln for log",
        edit(SANITIZE, "eps = 0.5", "eps = ln(2)"),
        12,
        13,
        "'ln' is not a function of a param",
        "did you mean 'log'?",
    ),
    Mistake(
        "a percentage in a table",
        edit(SANITIZE, "smoker: 0.2, nonsmoker: 0.8", "smoker: 20%, nonsmoker: 80%"),
        5,
        24,
        "'20%' is not a number",
        "write 0.2 for 20%",
    ),
    Mistake(
        "a private real vector without its range",
        edit(NOISE, "real[4] in [0, 10]", "real[4]"),
        6,
        24,
        "a private real vector needs its range",
        "write real[n] in [lo, hi]",
    ),
    Mistake(
        "a percentage for a budget",
        edit(SANITIZE, "eps = 0.5", "eps = 50%"),
        12,
        15,
        "unexpected character '%'",
        "write 0.5 for 50%",
    ),
    Mistake(
        "a hyphen in a label",
        edit(SANITIZE, "data {a, b, c}", "data {low-income, b, c}"),
        3,
        18,
        "in a list of labels",
        'quoted: "low-income"',
    ),
    Mistake(
        "'=' for '=='",
        edit(SHAPED, "E[y | x] == ", "E[y | x] = "),
        8,
        21,
        "unexpected '='",
        "a constraint compares with '=='",
    ),
    Mistake(
        "a table never closed",
        edit(SANITIZE, "nonsmoker: 0.2  0.3  0.5\n}\n", "nonsmoker: 0.2  0.3  0.5\n"),
        6,
        18,
        "this '{' is never closed",
        "end the table with '}'",
    ),
    Mistake(
        "(delta, eps) for (eps, delta): noise",
        edit(NOISE, "(eps, delta)", "(delta, eps)"),
        11,
        26,
        "reads as (delta, eps)",
        "write (eps, delta)",
    ),
    Mistake(
        "(delta, eps) for (eps, delta): a table",
        edit(SHAPED, "(eps, delta)", "(delta, eps)"),
        9,
        26,
        "reads as (delta, eps)",
        "write (eps, delta)",
    ),
    Mistake(
        "a bound of three numbers",
        edit(SHAPED, "(eps, delta)", "(eps, delta, 0)"),
        9,
        26,
        "this bound has 3 numbers",
        "dp(...) <= (eps, delta)",
    ),
    Mistake(
        "three numbers for Gaussian noise",
        edit(NOISE, "(eps, delta)", "(eps, delta, 0)"),
        11,
        26,
        "this bound has 3 numbers",
        "dp(...) <= (eps, delta)",
    ),
    Mistake(
        "Gaussian noise with eps alone", edit(NOISE, "<= (eps, delta)", "<= eps"), 11, 26, "delta > 0", "(eps, delta)"
    ),
    Mistake("a delta on ldp", edit(SANITIZE, "<= eps", "<= (eps, 0.1)"), 13, 27, "bounds dp only", ""),
    Mistake(
        "a negative budget",
        edit(SANITIZE, "eps = 0.5", "eps = -0.5"),
        12,
        13,
        "outside its domain",
        "ldp's budget must be >= 0",
    ),
    Mistake(
        "two objectives",
        SANITIZE + "maximize tv(X, Y)\n",
        15,
        1,
        "the first is on line 14",
        "bound it in a constraint",
    ),
    Mistake(
        "a path outside the folder",
        edit(SANITIZE, "P(S) = { smoker: 0.2, nonsmoker: 0.8 }", 'P(S) = counts from "../prior.csv" column n'),
        5,
        26,
        "leaves the spec's folder",
        "--allow-paths",
    ),
    Mistake(
        "a misspelt data file",
        edit(SANITIZE, "P(S) = { smoker: 0.2, nonsmoker: 0.8 }", 'P(S) = counts from "data/prio.csv" column n'),
        5,
        26,
        "data file 'data/prio.csv' does not exist",
        "did you mean 'data/prior.csv'?",
        {"data/prior.csv": "S,n\nsmoker,2\nnonsmoker,8\n"},
    ),
    Mistake(
        "a composite that uses itself",
        edit(COMPOSITE, '"shaped.priv"', '"spec.priv"'),
        3,
        5,
        "a cycle of `use`: spec.priv -> spec.priv",
        "cannot use",
        {"sanitize.priv": SANITIZE},
    ),
    Mistake(
        "a block file that does not exist",
        edit(COMPOSITE, '"sanitize.priv"', '"sanitise.priv"'),
        2,
        5,
        "block file 'sanitise.priv' does not exist",
        "did you mean 'sanitize.priv'?",
        BLOCK_FILES,
    ),
    Mistake(
        "a block not declared",
        edit(COMPOSITE, "dp(san, shp)", "dp(san, shx)"),
        5,
        20,
        "no block 'shx'",
        'use "FILE.priv" as shx',
        BLOCK_FILES,
    ),
    Mistake(
        "(delta, eps) over blocks",
        edit(COMPOSITE, "param eps = 2", "param eps = 2\nparam delta = 1e-5").replace("<= eps", "<= (delta, eps)"),
        6,
        28,
        "reads as (delta, eps)",
        "write (eps, delta)",
        BLOCK_FILES,
    ),
    Mistake(
        "a delta of 3 over blocks",
        edit(COMPOSITE, "param eps = 2", "param eps = 2\nparam delta = 3").replace("<= eps", "<= (eps, delta)"),
        6,
        34,
        "dp's delta must lie in [0, 1) (it is 3)",
        "1 bounds nothing",
        BLOCK_FILES,
    ),
    Mistake(
        "a design choice of one block",
        edit(COMPOSITE, "param eps = 2", "choose one of san"),
        4,
        18,
        "the line ends in the middle of a statement",
        "choose one of a, b",
        BLOCK_FILES,
    ),
    Mistake(
        "a negative budget set with 'with'",
        edit(COMPOSITE, "as san", "as san with eps = -1"),
        2,
        39,
        "eps = -1 is outside its domain: eps must be >= 0",
        "write a value >= 0 after 'with eps ='",
        BLOCK_FILES,
    ),
    Mistake(
        "a delta of 1 set with 'with'",
        edit(COMPOSITE, 'use "shaped.priv" as shp', 'use "shaped.priv" as shp with delta = 1'),
        3,
        39,
        "delta = 1 is outside its domain",
        "write a value in",
        BLOCK_FILES,
    ),
    Mistake(
        "ldp(...) over blocks",
        edit(COMPOSITE, "param eps = 2", "choose san.eps, shp.eps\nparam eps = 2").replace("dp(san", "ldp(san"),
        6,
        12,
        "blocks compose under dp(...), not ldp(...)",
        "write dp(san, shp) <= eps",
        BLOCK_FILES,
    ),
    Mistake(
        "a block's name for its value",
        edit(COMPOSITE, "minimize san.objective + shp.objective", "minimize san.objective + shp"),
        6,
        26,
        "'shp' is a block, not a number",
        "write shp.objective for its value",
        BLOCK_FILES,
    ),
    Mistake(
        "'or' in a design choice",
        edit(COMPOSITE, "param eps = 2", "choose one of san or shp"),
        4,
        19,
        "unexpected 'or'",
        "list the blocks with commas: choose one of a, b",
        BLOCK_FILES,
    ),
    Mistake(
        "(eps, delta) without parentheses over blocks",
        edit(COMPOSITE, "<= eps", "<= eps, 0"),
        5,
        31,
        "unexpected ','",
        "written in parentheses: dp(...) <= (eps, delta)",
        BLOCK_FILES,
    ),
    Mistake(
        "'use' without 'as'",
        edit(COMPOSITE, "as san", "san"),
        2,
        21,
        "unexpected 'san'",
        "'as'",
        BLOCK_FILES,
    ),
]


@pytest.mark.parametrize("m", MISTAKES, ids=lambda m: m.name)
def test_a_newcomers_mistake_is_a_located_error_with_advice(m: Mistake, tmp_path, monkeypatch):
    folder = tmp_path / "work"
    for name, text in m.files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    folder.mkdir(exist_ok=True)
    (folder / "spec.priv").write_text(m.text)
    monkeypatch.chdir(folder)
    r = invoke("solve", "spec.priv", "--out", tmp_path / "out")
    assert r.exit_code == 2, r.output
    assert r.stdout == "", r.stdout
    err = r.stderr
    assert "Traceback" not in err and "internal error" not in err, err
    head, excerpt, caret, *rest = err.splitlines()
    assert head.startswith(f"spec.priv:{m.line}:{m.col}: error: ") and m.message in head, err
    assert excerpt.startswith(f"{m.line:>5} | "), err
    assert caret.index("^") - caret.index("|") - 2 == m.col - 1, err  # the caret under the spot
    if m.advice:
        assert rest and rest[0].startswith("hint: ") and m.advice in rest[0], err
    assert not (tmp_path / "out").exists()


def test_a_strict_bound_in_a_table_spec_is_read_with_its_advice_too(tmp_path, monkeypatch):
    """The same hint from the other side: `>` and `0.1 < P(...)`."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.priv").write_text(edit(SANITIZE, "minimize", "subject to P(S | Y) > 0.1\nminimize"))
    r = invoke("solve", "a.priv")
    assert r.exit_code == 2 and "a.priv:14:21: error: unexpected character '>'" in r.stderr, r.output
    assert "hint: write '>='" in r.stderr


def test_a_budget_that_leaves_no_mechanism_says_infeasible_and_why(tmp_path, monkeypatch):
    """A posterior bound below the prior's largest value: no release can meet it (exit 3, the
    constraint named with its line, nothing written)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.priv").write_text(edit(SANITIZE, "minimize", "subject to P(S | Y) <= 0.5\nminimize"))
    r = invoke("solve", "a.priv", "--out", tmp_path / "out")
    assert r.exit_code == 3, r.output
    assert "status: infeasible" in r.output and "Traceback" not in r.output
    assert "line 14: 'P(S | Y) <= 0.5' cannot hold" in r.output
    assert not (tmp_path / "out").exists()


def test_a_budget_too_small_for_the_moment_constraints_names_both(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.priv").write_text(edit(SHAPED, "eps = 1.5", "eps = 0.1"))
    r = invoke("solve", "a.priv")
    assert r.exit_code == 3, r.output
    assert "infeasible: the constraints cannot hold together" in r.output
    assert (
        "line 8: 'E[y | x] == 0.2 * x + 0.8 * E[B]'" in r.output and "line 9: 'dp(x -> y) <= (eps, delta)'" in r.output
    )


def test_the_common_options_are_the_same_on_every_command_that_can_use_them():
    """README: `every command: [--quiet]; every command but verify (which runs no solver): [--log
    FILE] [--verbose]`; and every command that solves takes the same solve options."""
    from privopt.cli import main

    readme = (ROOT / "README.md").read_text()
    assert (
        "every command: [--quiet]; every command but verify (which runs no solver): [--log FILE] [--verbose]" in readme
    )
    solving = {"--method", "--backend", "--solver", "--time-limit"}
    for name, command in main.commands.items():
        options = {o for p in command.params for o in p.opts}
        assert "--quiet" in options, name
        assert ({"--log", "--verbose"} <= options) == (name != "verify"), name
        if name in ("solve", "sweep", "apply"):
            assert solving <= options, (name, solving - options)


def test_verify_takes_quiet(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.priv").write_text(SANITIZE)
    solved = invoke("solve", "a.priv", "--json", "--quiet")
    assert solved.exit_code == 0, solved.output
    (tmp_path / "r.json").write_text(solved.stdout)
    r = invoke("verify", "r.json", "--quiet")
    assert r.exit_code == 0 and r.stderr == "" and "verified: every check holds" in r.stdout, r.output


@pytest.mark.parametrize("options", [["--quiet"], ["--quiet", "--json"], ["--quiet", "--json", "verify"]])
def test_a_reader_that_stops_reading_ends_the_run_quietly_as_ls_does(options, tmp_path):
    """`privopt solve SPEC | head -2`: stdout's pipe is closed before the result is printed. As
    `ls` and `git` (stopped by SIGPIPE: the shell's 141), no message, no traceback, exit 141."""
    (tmp_path / "a.priv").write_text(SANITIZE)
    args = ["solve", "a.priv", *options]
    if "verify" in options:  # verify's own printing
        solved = invoke("solve", tmp_path / "a.priv", "--json", "--quiet")
        (tmp_path / "r.json").write_text(solved.stdout)
        args = ["verify", "r.json", "--quiet"]
    p = subprocess.Popen(
        [sys.executable, "-m", "privopt", *args],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=as_a_shell_starts_it,
    )
    p.stdout.close()  # the reader is gone before a line is printed (start-up alone takes longer)
    err = p.stderr.read()
    assert p.wait(timeout=120) == 141 and err == "", err


def test_a_misspelt_spec_path_names_where_it_looked_and_the_close_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sanitize.priv").write_text(SANITIZE)
    r = invoke("solve", "sanitise.priv")
    assert r.exit_code == 2 and r.stdout == "", r.output
    assert r.stderr.splitlines() == [
        "sanitise.priv: error: the spec file does not exist",
        f"hint: did you mean 'sanitize.priv'? (looked for {tmp_path / 'sanitise.priv'})",
    ]
    r = invoke("solve", "nothing/like/it.priv")
    assert r.exit_code == 2 and r.stderr.splitlines()[1] == f"hint: looked for {tmp_path / 'nothing/like/it.priv'}"


def test_an_infeasible_composite_shows_no_block_as_solved_nor_a_passed_verification(tmp_path, monkeypatch):
    """The shaped-noise block has no mechanism below eps 1.5 or so: one budget of 0.1 shared by the
    two blocks leaves the composite infeasible. No block is shown at a budget as if solved, the
    verification is not "passed" for a point that does not exist, and the output says why (the
    block and its constraints) and what to change (the row's budget, the block's constraints);
    the same in --json, strict."""
    monkeypatch.chdir(tmp_path)
    for name, text in BLOCK_FILES.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "spec.priv").write_text(edit(COMPOSITE, "param eps = 2", "choose san.eps, shp.eps\nparam eps = 0.1"))
    r = invoke("solve", "spec.priv", "--quiet")
    assert r.exit_code == 3, r.output
    lines = r.stdout.splitlines()
    assert "status: infeasible   objective: none   method: split" in lines, r.stdout
    assert "  block san (sanitize.priv): no answer" in lines and "  block shp (shaped.priv): infeasible" in lines
    assert not any(line.startswith("  block") and "budget" in line for line in lines), r.stdout
    assert "verification: none (no point to verify: the composite is infeasible)" in lines
    assert "passed" not in r.stdout
    assert any(line.startswith("why: block shp: the constraints cannot hold together") for line in lines), r.stdout
    assert (
        "hint: raise the budget of 'dp(san, shp) <= eps' (line 6); or loosen block shp's own constraints (shaped.priv)"
        in lines
    )
    r = invoke("solve", "spec.priv", "--quiet", "--json")
    assert r.exit_code == 3
    data = strict_json(r.stdout)
    assert data["status"] == "infeasible" and data["objective"] is None
    assert data["verification"] == {
        "passed": False,
        "checks": [],
        "note": "no point to verify: the composite is infeasible",
    }
    assert {n: b["status"] for n, b in data["blocks"].items()} == {"san": "no answer", "shp": "infeasible"}
    assert not any("result" in b for b in data["blocks"].values())  # no block's own solved result
    assert data["reasons"] and data["reasons"][0].startswith("block shp: the constraints cannot hold together")
    assert data["hint"].startswith("raise the budget of 'dp(san, shp) <= eps' (line 6)")


def test_verify_explains_its_margins_and_lists_each_check_once(tmp_path):
    """`privopt verify`: the margin's sign convention on its own line, a comparison written as
    `measured <= allowed` (a negative measured value never reads as "within"), and the two sides
    of `|Dt - D| <= 1 - delta` as one line; a failing side is shown, numbered, beside its twin."""
    from privopt.certify.check import Report
    from privopt.verification.checks import compare

    solved = invoke("solve", ROOT / "specs" / "atr_table4.priv", "--json", "--quiet")
    (tmp_path / "r.json").write_text(solved.stdout)
    r = invoke("verify", tmp_path / "r.json")
    assert r.exit_code == 0, r.output
    lines = r.stdout.splitlines()
    assert "each check: measured <= allowed; margin = allowed - measured (>= 0: holds; negative: violated)" in lines
    fidelity = [line for line in lines if "fidelity" in line]
    assert fidelity == [
        "ok    fidelity '|Dt - D| <= 1 - delta' (2 checks of this name, the tightest shown)  (margin 3.55e-15)  "
        "0 <= 3.55e-15"
    ], fidelity
    assert "ok    certificate Lemma 5 floor  (margin 0.075)  -0.075 <= 1e-09" in lines
    assert not any(" within " in line for line in lines if line.startswith(("ok", "FAIL")))
    twins = [compare("side", 0.0, 1e-9, "violated"), compare("side", 0.5, 1e-9, "violated by 0.5")]
    report = Report("r.json", "a.priv", "file", "mechanism-lp", None, checks=twins)
    assert report.text_lines()[4:6] == [
        "ok    side [1 of 2]  (margin 1e-09)  0 <= 1e-09",
        "FAIL  side [2 of 2]  (margin -0.5)  violated by 0.5",
    ]


def test_a_restricted_placement_is_never_printed_below_the_optimum():
    """The optimum 37.1136331262 is certified by the bound 37.1136330001; diagonal noise only came
    out at 37.1136330569, inside that gap: printed as the optimum, equal within the gap. A loss
    below the proven bound (a placement outside the program) and one above the optimum are
    printed as they are."""
    from privopt.sections import versus

    assert versus(37.1136330569, 37.1136331262, 37.1136330001) == ("37.1136331262", "x1 (equal within the gap 1.3e-07)")
    assert versus(55.6704495788, 37.1136331262, 37.1136330001) == ("55.6704495788", "x1.5")
    assert versus(30.0, 37.1136331262, 37.1136330001) == ("30", "x0.8083")
    assert versus(37.1136330569, 37.1136331262, None) == ("37.1136330569", "x1")


def test_audit_prints_no_float_noise_and_its_json_keeps_every_digit():
    """Table 4's CSP cell income=low: both groups' approval rates are 0 on the release, whose
    difference float arithmetic leaves at about 2e-17. The text rounds at the verification
    tolerance (0); the JSON keeps the number as computed."""
    spec = ROOT / "specs" / "atr_table4.priv"
    r = invoke("audit", spec, "--quiet")
    assert r.exit_code == 0, r.output
    assert (
        "CSP cells, F vs M (D -> release): income=low: 0 -> 0; income=mid: 0.5 -> 0.38; income=high: 0 -> 0" in r.stdout
    )
    assert "e-1" not in r.stdout, r.stdout
    data = strict_json(invoke("audit", spec, "--quiet", "--json").stdout)
    low = data["fairness"]["release"]["pairs"][0]["csp_cells"][0]
    assert low["given"] == {"income": "low"} and 0 < abs(low["bias"]) < 1e-15, low  # the float noise, kept
