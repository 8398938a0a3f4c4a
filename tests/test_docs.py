"""The docs as tests (issue 19, item 8): README.md and docs/ say what the code does.

* every relative link resolves inside the repository, nothing points at files outside it, and
  the papers are cited in full in one place;
* every path a page names exists (one case per path);
* every command a page shows runs, in-process, with the exit code, output, files and figures
  the page gives (one case per command); every option a page writes exists; every Python
  example runs; a spec a page shows is the file it names;
* docs/language.md covers the grammar (statements, keywords, operators, functions; its examples
  parse and its quoted errors are privopt's own); docs/api.md covers every problem class,
  method, objective kind, family and backend the code has; README's Layout and
  docs/architecture.md's layers match the package.
"""

import json
import math
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from click.testing import CliRunner

import privopt
from privopt.backends import BACKENDS
from privopt.classify import METHODS
from privopt.cli import main
from privopt.language.parser import parse
from privopt.model.problem import KINDS as BLOCK_KINDS
from tests.conftest import ROOT, SPECS

DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md", ROOT / "benchmarks" / "README.md"]
LINK = re.compile(r"\]\(([^)\s]+)\)")


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_resolve_inside_the_repository(doc):
    text = doc.read_text()
    assert not re.search(r"(?<![\w.-])(shared|work)/(seeds|design|shared)\b|/work/", text), (
        "path outside the repository"
    )
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = (doc.parent / target.split("#", 1)[0]).resolve()
        assert path.is_relative_to(ROOT) and path.exists(), f"{doc.name}: broken link {target}"


def test_the_four_papers_are_cited_in_full():
    refs = " ".join((ROOT / "docs" / "references.md").read_text().split())  # one line
    for authors, title, venue in [
        (
            "Chien-Lun Chen, Leana Golubchik and Ranjan Pal",
            "Achieving Transparency Report Privacy in Linear Time",
            "14(2)",
        ),
        ("Ni Ding, Yucheng Liu and Farhad Farokhi", "A Linear Reduction Method", "arXiv:2101.09689"),
        ("Jan Ramon and Moitree Basu", "Interpretable privacy with optimizable utility", "ECML PKDD 2020"),
        (
            "Mahshad Shariatnasab, Farhad Shirani and S. Sitharama Iyengar",
            "Rank-Preserving Dataset Obfuscation",
            "arXiv:2305.07079",
        ),
    ]:
        assert authors in refs and title in refs and venue in refs
    for anchor in re.findall(r"references\.md#(\w+)", " ".join(d.read_text() for d in DOCS)):
        assert f'<a id="{anchor}"></a>' in refs, anchor


# ---------------------------------------------------------------------------------------------
# Every path a page names exists (issue 19, item 8).
#
# What counts as a path, anywhere on a page (prose, backticks, code blocks, link targets):
#   * a token rooted at a top-level folder of the repository: privopt/..., docs/..., specs/...,
#     tests/..., benchmarks/... ; it is resolved from the repository root;
#   * a relative path with a folder, `blocks/common.py` or `builder/`, or a bare file name of
#     the repository's own kinds (.py .md .priv .lark .jsonl .svg .toml), `build.py`; it must
#     exist from the page's folder, the repository root or privopt/, and a bare file name (no
#     folder) anywhere in the repository's folders above;
#   * a glob (`routes_*.py`) must match at least one file.
# Not paths: placeholders (a part in capitals, `privopt/backends/NAME.py`, `FILE.csv`), the file
# named at the start of an example error message (`bad.priv:17:1: error: ...`), user files of
# other kinds (`records.csv`), and files under a generated folder (GENERATED: ignored by git,
# written by a named script, which the page must name too).
# ---------------------------------------------------------------------------------------------

TOP = r"(?:privopt|docs|specs|tests|benchmarks)/"
EXT = r"(?:py|md|priv|lark|jsonl|svg|toml)"
PATH_TOKEN = re.compile(
    r"(?<![\w./~:@-])("
    + TOP
    + r"[\w./*-]*"  # rooted
    + r"|[A-Za-z_][\w-]*(?:/[\w*-]+)*/[\w*.-]*\."
    + EXT  # relative, with a folder
    + r"|[A-Za-z_][\w-]*/(?:[\w-]+/)*(?=[\s`*),]|$)"  # a relative folder: builder/
    + r"|[A-Za-z_][\w*-]*\."
    + EXT  # a bare file name
    + r")(?![\w(/.-])"
)
ERROR_LOCATION = re.compile(r":\d+:\d+:|: error:")  # after the file of an example error message
PLACEHOLDER = re.compile(r"(?:^|[/.])[A-Z][A-Z0-9_]+(?=[/.]|$)")
SEARCHED = ("privopt", "specs", "tests", "benchmarks", "docs")
GENERATED = {"benchmarks/data/": "benchmarks/bench_closed_form.py"}  # folder -> the script that writes it


def doc_paths(text: str) -> list[tuple[int, str]]:
    """``(line number, path)`` for every path ``text`` names (the rules above)."""
    found = []
    for n, line in enumerate(text.splitlines(), 1):
        for m in PATH_TOKEN.finditer(line):
            path = m.group(1).rstrip(".")
            if path and not PLACEHOLDER.search(path) and not ERROR_LOCATION.match(line, m.end()):
                found.append((n, path))
    return found


def path_exists(path: str, page_dir) -> bool:
    """Whether ``path``, named on a page in ``page_dir``, names something in the repository."""
    if re.match(TOP, path):
        bases = [ROOT]
    elif "/" in path:
        bases = [page_dir, ROOT, ROOT / "privopt"]
    else:  # a bare file name: anywhere in the repository's own folders
        return any(next((ROOT / d).rglob(path), None) is not None for d in SEARCHED)
    for base in bases:
        if "*" in path:
            if next(base.glob(path.rstrip("/")), None) is not None:
                return True
        elif (base / path).exists():
            return True
    return False


PAGE_PATHS = [(doc, n, path) for doc in DOCS for n, path in doc_paths(doc.read_text())]


@pytest.mark.parametrize(
    "doc, line, path", PAGE_PATHS, ids=[f"{d.relative_to(ROOT)}:{n}:{p}" for d, n, p in PAGE_PATHS]
)
def test_every_path_a_page_names_exists(doc, line, path):
    generated = next((folder for folder in GENERATED if path.startswith(folder)), None)
    if generated:
        script = GENERATED[generated]
        assert script in doc.read_text(), f"{doc.name}:{line}: {path} is generated; say that {script} writes it"
        return
    assert path_exists(path, doc.parent), f"{doc.relative_to(ROOT)}:{line}: names {path}, which does not exist"


def test_generated_folders_are_ignored_and_written_by_their_script():
    ignored = (ROOT / ".gitignore").read_text().split()
    for folder, script in GENERATED.items():
        assert folder in ignored
        source = (ROOT / script).read_text()
        assert f'"{folder.split("/")[-2]}"' in source, f"{script} does not write {folder}"


def test_the_path_rules_catch_what_they_should():
    page = "\n".join(
        [
            "privopt/spec/      grammar (Lark)",  # a code-block layout line
            "see `blocks/common.py` and **builder/**, and `pipeline.py` too;",
            "[sanitization](docs/verification.md#x), docs/figures/a.svg",
            "`privopt/backends/NAME.py` and FILE.csv and records.csv are placeholders or user files",
            "bad.priv:17:1: error: unknown statement 'subjet'",
            "specs/bad.priv: error: the spec has no objective",
            "fractions `a/b`, `delta/|A|`, 1/2, https://example.org/x/y.py",
        ]
    )
    assert [p for _, p in doc_paths(page)] == [
        "privopt/spec/",
        "blocks/common.py",
        "builder/",
        "pipeline.py",
        "docs/verification.md",
        "docs/figures/a.svg",
    ]
    assert not path_exists("privopt/spec/", ROOT) and not path_exists("pipeline.py", ROOT)
    assert path_exists("blocks/common.py", ROOT / "docs") and path_exists("build.py", ROOT / "docs")
    assert path_exists("routes_*.py", ROOT) and not path_exists("nosuch_*.py", ROOT)
    # the README's layout is among the paths checked
    assert {p for d, _, p in PAGE_PATHS if d.name == "README.md"} >= {"privopt/builder/", "privopt/pipeline/"}


# ---------------------------------------------------------------------------------------------
# Every command a page shows runs, with the outcome the page documents (issue 19, item 8).
#
# A command is a line of a code block that starts with `privopt SUBCOMMAND` (after an optional
# `$ ` prompt, `.venv/bin/`, or `... && `), or `python -m privopt SUBCOMMAND`, or one written in
# backticks in prose that names a spec (`privopt solve specs/noise_placement.priv`).
# A command is a template, and not run, when it has a placeholder (SPEC, NAME=VALUE, FILE.csv,
# N, ...), an optional `[...]`, alternatives `|` or an ellipsis. One on a file in a generated
# folder (GENERATED) is run by its benchmark, not here.
#
# Each runs in a temporary folder holding a copy of specs/ (commands write figures and files),
# with the page's own example inputs (a `$ cat FILE` the page shows before FILE is written).
# What is checked:
#   * the exit code: 2 when the output the page shows is an error, 3 when it is infeasible,
#     else 0, unless SHOWN says otherwise;
#   * a `$ ` command's output as the page prints it: every line shown is in the output, in
#     order (white space collapsed, so a line the page wraps still matches);
#   * a `$ cat FILE` after the command that wrote FILE: the file, byte for byte;
#   * `--json`: stdout is one strict JSON value;
#   * SHOWN: the figures the page's prose gives for the command, each at the precision written.
# ---------------------------------------------------------------------------------------------

SUBCOMMANDS = r"(?:solve|explain|sweep|simulate|audit|apply|check)\b"
PROGRAM = r"(?:\.venv/bin/)?(?P<prog>privopt|python3? -m privopt)"
BLOCK_COMMAND = re.compile(r"^(?:\$ |.*&& )?" + PROGRAM + r" (?P<args>" + SUBCOMMANDS + r".*)$")
INLINE_COMMAND = re.compile(r"`" + PROGRAM + r" (?P<args>" + SUBCOMMANDS + r"[^`]*\bspecs/[^`]*)`")
TEMPLATE = re.compile(r"\b(?:SPEC|NAME|VALUE|VALUES|FILE|DIR|RECORDS|VAR|N|M|T|S|B|V1|START|ADDRESS)\b|\[|\||\.\.\.")
CAT = re.compile(r"^\$ cat (\S+)$")


@dataclass
class DocCommand:
    page: Path
    line: int
    args: list[str]
    module: bool  # python -m privopt
    shown: list[str] = field(default_factory=list)  # the output the page prints under a `$ ` command
    files: dict[str, str] = field(default_factory=dict)  # FILE -> its text as a later `$ cat FILE` shows it

    @property
    def text(self) -> str:
        return "privopt " + " ".join(self.args)

    @property
    def key(self) -> str:
        return f"{self.page.name}: {self.text}"


def _code_blocks(text: str):
    """``(line number, lines)`` of each fenced code block."""
    block, start = None, 0
    for n, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            if block is None:
                block, start = [], n + 1
            else:
                yield start, block
                block = None
        elif block is not None:
            block.append(line)


def _outputs(cmd: DocCommand) -> set[str]:
    """The files ``cmd`` writes: the values of --out and --plot."""
    return {cmd.args[i + 1] for i, a in enumerate(cmd.args[:-1]) if a in ("--out", "--plot")}


def doc_commands(page: Path) -> tuple[list[DocCommand], dict[str, str]]:
    """The commands ``page`` shows, and the example input files it shows with `$ cat FILE`
    (``{FILE: text}``) before any of its commands writes FILE."""
    text = page.read_text()
    commands: list[DocCommand] = []
    inputs: dict[str, str] = {}
    for start, lines in _code_blocks(text):
        shown, cat, files, run = None, None, None, []
        for i, line in enumerate(lines):
            m = BLOCK_COMMAND.match(line.strip())
            c = CAT.match(line.strip())
            if m:
                run.append(DocCommand(page, start + i, shlex.split(m["args"]), m["prog"] != "privopt"))
                shown, cat = (run[-1].shown if line.startswith("$ ") else None), None
            elif c:  # the output of the last command in this block that wrote it, else an input
                cat, shown = c[1], None
                writer = next((w for w in reversed(run) if cat in _outputs(w)), None)
                files = writer.files if writer is not None else inputs
                files[cat] = ""
            elif line.startswith("$ "):
                shown = cat = None
            elif cat is not None:
                files[cat] += line + "\n"
            elif shown is not None and line.strip():
                shown.append(line)
        commands += run
    for n, line in enumerate(text.splitlines(), 1):
        for m in INLINE_COMMAND.finditer(line):
            commands.append(DocCommand(page, n, shlex.split(m["args"]), m["prog"] != "privopt"))
    for files in [inputs] + [c.files for c in commands]:  # a blank line ends what `cat` shows
        files.update({name: text.rstrip("\n") + "\n" for name, text in files.items()})
    return commands, inputs


def runnable(cmd: DocCommand) -> bool:
    if TEMPLATE.search(" ".join(cmd.args)):
        return False
    return not any(a.startswith(folder) for a in cmd.args for folder in GENERATED)


@dataclass(frozen=True)
class Shown:
    """What a page's prose says a command shows: its exit code (None: the one its shown output
    implies, see ``implied_exit``), figures that appear in the output in this order, and table
    rows (``{first cell: [figures in that row]}``)."""

    exit: int | None = None
    numbers: tuple[str, ...] = ()
    rows: dict[str, tuple[str, ...]] = field(default_factory=dict)
    varies: str | None = None  # a regex for what the page shows that changes run to run


SHOWN = {
    # README: "The first solves the paper's worked example (Sec. 8, Table 4): beta* = 0.675"
    "README.md: privopt solve specs/atr_table4.priv": Shown(
        numbers=("0.675",), rows={"F": ("0.675",), "M": ("0.637795",)}
    ),
    "api.md: privopt solve specs/atr_table4.priv --json --no-tables --set delta=0.95": Shown(
        numbers=("0.7702702702702701", "0.95")
    ),
    "noise-placement.md: privopt solve specs/noise_placement.priv": Shown(
        numbers=("37.11",), rows={"inputs only (local DP)": ("55.67",), "answers only": ("55.67",)}
    ),
    "obfuscation.md: privopt solve specs/obfuscation_bsc.priv": Shown(
        numbers=("0.138950634898", "0.2", "8.8e-10"),
        rows={"P(Y = 1 | X = 0)": ("0.178755",), "P(Y = 0 | X = 1)": ("0.178755",)},
    ),
    "obfuscation.md: privopt simulate specs/obfuscation_bsc.priv --rows 200 --cols 400 --trials 40 --seed 7": Shown(
        rows={
            "analytic Q (m -> infinity, Theorem 1)": ("0.138951",),
            "exact expectation at m = 400": ("0.125193",),
            "empirical mean": ("0.125523",),
            "standard deviation / error of the mean": ("0.0013",),
        }
    ),
    "apply.md: privopt apply specs/atr_table4.priv --data records.csv --out release.csv": Shown(varies=r"seed \d+"),
    # figures.md, from the prose under each figure
    "figures.md: privopt sweep specs/atr_table4.priv delta=0:1:101 --plot docs/figures/atr_table4_delta.svg": Shown(
        rows={"0": ("0.6",), "0.72": ("0.6",), "0.9": ("0.675",), "1": ("1",)}
    ),
    "figures.md: privopt sweep specs/atr_table4_male.priv delta=0:1:101 --plot docs/figures/atr_table4_male_delta.svg": Shown(
        rows={"0.65": ("0.45",), "0.9": ("0.6378",), "1": ("0.72",)}
    ),
    "figures.md: privopt sweep specs/atr_alpha_fidelity.priv alpha=0.05:1:20": Shown(
        rows={"0.05": ("1",), "0.5": ("1",), "1": ("1",)}
    ),
    "figures.md: privopt sweep specs/atr_alpha_fidelity_male.priv alpha=0.05:1:96 --plot docs/figures/atr_alpha_fidelity_male.svg": Shown(
        rows={"0.05": ("0.65",), "0.6": ("0.65",), "1": ("0.72",)}
    ),
    "figures.md: privopt sweep specs/sanitize_nonmarkov_tv.priv alpha=0:1:21 --plot docs/figures/sanitize_nonmarkov_tv.svg": Shown(
        rows={"0": ("0", "1.609", "0.875"), "0.5": ("0.105", "0.811", "0.492"), "1": ("0.21", "0", "0")}
    ),
    "figures.md: privopt sweep specs/sanitize_markov_tv.priv alpha=0:1:21 --plot docs/figures/sanitize_markov_tv.svg": Shown(
        rows={"0.5": ("0.2178",), "1": ("0.4355",)}
    ),
    "figures.md: privopt sweep specs/sanitize_distortion.priv alpha=0:1:21 --plot docs/figures/sanitize_distortion.svg": Shown(
        rows={"0.5": ("0.189",), "1": ("0.378",)}
    ),
    "figures.md: privopt sweep specs/sanitize_markov_distortion.priv alpha=0:1:21 --plot docs/figures/sanitize_markov_distortion.svg": Shown(
        rows={"1": ("0.7372",)}
    ),
    "figures.md: privopt sweep specs/shaped_noise_sweep.priv eps=0.05:3:60 --plot docs/figures/shaped_noise_eps.svg": Shown(
        rows={"0.45": ("infeasible",), "0.5": ("31.63",), "1": ("22.34",), "3": ("20.01",)}
    ),
    "figures.md: privopt simulate specs/obfuscation_bsc.priv --rows 200 --cols 10 --trials 40 --plot docs/figures/obfuscation_bsc_m10.svg": Shown(
        rows={
            "analytic Q (m -> infinity, Theorem 1)": ("0.1390",),
            "exact expectation at m = 10": ("0.0645",),
            "empirical mean": ("0.0649",),
        }
    ),
    "figures.md: privopt simulate specs/obfuscation_bsc.priv --rows 200 --cols 100 --trials 40 --plot docs/figures/obfuscation_bsc_m100.svg": Shown(
        rows={"exact expectation at m = 100": ("0.1121",), "empirical mean": ("0.1103",)}
    ),
    "figures.md: privopt sweep specs/obfuscation_bsc.priv eps=0:0.55:12 --plot docs/figures/obfuscation_bsc_eps.svg": Shown(
        rows={"0": ("0.25",), "0.55": ("0",)}
    ),
}

_FOUND = [doc_commands(page) for page in DOCS]
COMMANDS = [c for cmds, _ in _FOUND for c in cmds if runnable(c)]
INPUTS = {page: inputs for page, (_, inputs) in zip(DOCS, _FOUND)}
# the longest commands, about 4 s each in-process on 2 cores (a 101-point and a 60-point sweep
# with --plot), run only with -m slow, to keep this file's default run under ~30 s; and commands whose
# run the default run already makes elsewhere, where the page shows no output of them: the
# blocks_gaussian sweep (3-5 s; test_plot runs every figures.md command and compares its figure)
# and blocks_means' solve --json (8 s; test_cli and test_outputs read its one solve per run, strict JSON)
SLOW = {
    "figures.md: privopt sweep specs/atr_table4.priv delta=0:1:101 --plot docs/figures/atr_table4_delta.svg",
    "figures.md: privopt sweep specs/shaped_noise_sweep.priv eps=0.05:3:60 --plot docs/figures/shaped_noise_eps.svg",
    "figures.md: privopt sweep specs/blocks_gaussian.priv eps=0.3:0.95:14 --plot docs/figures/blocks_gaussian_eps.svg",
    "blocks.md: privopt sweep specs/blocks_gaussian.priv eps=0.3:0.95:14 --plot docs/figures/blocks_gaussian_eps.svg",
    "verification.md: privopt solve specs/blocks_means.priv --json",
}


def implied_exit(shown: list[str]) -> int:
    """The exit code the output a page shows implies: an error (`FILE:LINE:COL: error: ...`,
    `error: ...`) is 2, an infeasible spec (`infeasible: ...`, `status: infeasible`) is 3,
    anything else (or nothing shown) 0."""
    if any(re.search(r"(^|: )error: ", line) for line in shown):
        return 2
    if any(re.match(r"\s*(infeasible: |status: infeasible)", line) for line in shown):
        return 3
    return 0


def _number_matches(written: str, value: str) -> bool:
    """Whether ``value`` (from the output) is ``written`` (from the page) at the precision the
    page writes it: 0.675 is [0.6745, 0.6755]; 5.8e-10 is [5.75e-10, 5.85e-10]; 16 is 16."""
    try:
        x, y = float(written), float(value)
    except ValueError:
        return written == value
    mantissa, _, exp = written.lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    half = 0.5 * 10.0 ** (-decimals + (int(exp) if exp else 0))
    return math.isclose(x, y, rel_tol=0, abs_tol=half * (1 + 1e-9))


NUMBER = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _in_order(wanted, found, match) -> bool:
    it = iter(found)
    return all(any(match(w, f) for f in it) for w in wanted)


def _table_row(output: str, first: str) -> list[str] | None:
    """The words of the rest of the table row whose first cell is ``first`` (``0.0083 / 0.00131``
    is two words)."""
    for line in output.splitlines():
        cells = [c.strip() for c in line.strip().strip("│┃").split("│")]
        if len(cells) > 1 and cells[0] == first:
            return [word for cell in cells[1:] for word in re.split(r"[\s/,]+", cell) if word]
    return None


def _shown_line(line: str, varies: str | None) -> re.Pattern:
    """A pattern for a line the page shows: the line itself, with what ``varies`` matches in it
    free to be anything ``varies`` matches."""
    if not varies:
        return re.compile(re.escape(line))
    parts = re.split(f"({varies})", line)
    return re.compile("".join(varies if i % 2 else re.escape(p) for i, p in enumerate(parts)))


def _collapse(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize(
    "cmd",
    [pytest.param(c, marks=[pytest.mark.slow] if c.key in SLOW else []) for c in COMMANDS],
    ids=[f"{c.page.relative_to(ROOT)}:{c.line}:{c.text}" for c in COMMANDS],
)
def test_every_command_a_page_shows_runs_as_documented(cmd, tmp_path, monkeypatch):
    shutil.copytree(SPECS, tmp_path / "specs")
    (tmp_path / "docs" / "figures").mkdir(parents=True)
    for name, text in INPUTS[cmd.page].items():
        (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    if cmd.module:
        run = subprocess.run([sys.executable, "-m", "privopt", *cmd.args], capture_output=True, text=True, timeout=120)
        exit_code, stdout, output = run.returncode, run.stdout, run.stdout + run.stderr
    else:
        r = CliRunner().invoke(main, cmd.args)
        exit_code, stdout, output = r.exit_code, r.stdout, r.output
    shown = SHOWN.get(cmd.key, Shown())
    where = f"{cmd.page.name}:{cmd.line}: {cmd.text}"
    expected = implied_exit(cmd.shown) if shown.exit is None else shown.exit
    assert exit_code == expected, f"{where}: exit {exit_code}, the page says {expected}\n{output}"
    if "--json" in cmd.args:
        json.loads(stdout, parse_constant=lambda c: pytest.fail(f"{where}: {c} in --json output"))
    if cmd.shown:
        found, pos = _collapse(output), 0
        for line in cmd.shown:
            m = _shown_line(_collapse(line), shown.varies).search(found, pos)
            assert m is not None, f"{where}: the page shows {line.strip()!r}, not in the output (in order)\n{output}"
            pos = m.end()
    for name, text in cmd.files.items():
        assert (tmp_path / name).read_text() == text, f"{where}: {name} is not what the page shows"
    numbers = NUMBER.findall(output)
    assert _in_order(shown.numbers, numbers, _number_matches), (
        f"{where}: the page says it shows {shown.numbers}\n{output}"
    )
    for first, values in shown.rows.items():
        row = _table_row(output, first)
        assert row is not None, f"{where}: no table row {first!r}\n{output}"
        assert _in_order(values, row, _number_matches), f"{where}: row {first!r} is {row}, the page says {values}"


def test_the_commands_found_are_the_pages_commands():
    texts = {c.key for c in COMMANDS}
    assert not set(SHOWN) - texts, f"SHOWN names commands no page shows: {sorted(set(SHOWN) - texts)}"
    assert not SLOW - texts
    # templates are recognized, and the README's usage is all templates
    readme = [c for c in doc_commands(ROOT / "README.md")[0]]
    assert any(c.text.startswith("privopt solve SPEC") for c in readme) and not any(
        runnable(c) and "SPEC" in c.text for c in readme
    )
    # the apply example's input is the page's own records.csv, and its release is compared
    apply_page = ROOT / "docs" / "apply.md"
    assert "records.csv" in INPUTS[apply_page]
    assert any("release.csv" in c.files for c in COMMANDS if c.page == apply_page)


def test_the_command_rules_catch_what_they_should(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "\n".join(
            [
                "Run `privopt solve specs/a.priv --json` or `privopt explain` (no spec: prose, not a command).",
                "```bash",
                "python3 -m venv .venv && .venv/bin/pip install -q . && .venv/bin/privopt solve specs/a.priv",
                "python -m privopt check specs/a.priv --tol 1e-7",
                "privopt solve SPEC [--json]",
                "privopt sweep specs/a.priv NAME=V1,V2,...",
                "privopt/builder/   a layout line, not a command",
                "```",
                "```",
                "$ cat in.csv",
                "x,y",
                "",
                "$ privopt apply specs/a.priv --data in.csv --out out.csv --seed 7",
                "wrote 1 records to out.csv",
                "",
                "$ cat out.csv",
                "x,y,z",
                "```",
            ]
        )
    )
    commands, inputs = doc_commands(page)
    assert [(c.line, c.text, c.module) for c in commands] == [
        (3, "privopt solve specs/a.priv", False),
        (4, "privopt check specs/a.priv --tol 1e-7", True),
        (5, "privopt solve SPEC [--json]", False),
        (6, "privopt sweep specs/a.priv NAME=V1,V2,...", False),
        (13, "privopt apply specs/a.priv --data in.csv --out out.csv --seed 7", False),
        (1, "privopt solve specs/a.priv --json", False),
    ]
    assert [runnable(c) for c in commands] == [True, True, False, False, True, True]
    assert inputs == {"in.csv": "x,y\n"}
    assert commands[4].shown == ["wrote 1 records to out.csv"] and commands[4].files == {"out.csv": "x,y,z\n"}
    assert _number_matches("0.675", "0.6749") and not _number_matches("0.675", "0.6756")
    assert _number_matches("5.8e-10", "5.83e-10") and not _number_matches("5.8e-10", "5.9e-10")
    assert _number_matches("16", "16") and not _number_matches("16", "16.6")
    assert implied_exit(["bad.priv:3:1: error: unknown statement 'x'"]) == 2 and implied_exit(["error: --out x"]) == 2
    assert implied_exit(["infeasible: the constraints cannot hold together"]) == 3
    assert implied_exit(["wrote 6 records to release.csv (decision drawn from Dt, seed 7)"]) == implied_exit([]) == 0


# ---------------------------------------------------------------------------------------------
# docs/language.md covers the whole language (issue 19, item 8): every example marked ```priv
# parses (one that starts with `spec "..."` is a whole spec and loads), every keyword and operator
# of the grammar is on the page, every statement has its row in the Statements table, and the
# error messages the page quotes are the ones privopt prints.
# ---------------------------------------------------------------------------------------------


LANGUAGE = ROOT / "docs" / "language.md"
GRAMMAR = (ROOT / "privopt" / "language" / "grammar.lark").read_text()


def spec_examples(text: str) -> list[tuple[int, str]]:
    """``(line, text)`` of each code block whose info string is ``priv``."""
    found, block, start = [], None, 0
    for n, line in enumerate(text.splitlines(), 1):
        if block is None and line.strip() == "```priv":
            block, start = [], n + 1
        elif block is not None and line.strip() == "```":
            found.append((start, "\n".join(block) + "\n"))
            block = None
        elif block is not None:
            block.append(line)
    return found


EXAMPLES = spec_examples(LANGUAGE.read_text())


@pytest.mark.parametrize("line, text", EXAMPLES, ids=[f"docs/language.md:{n}" for n, _ in EXAMPLES])
def test_every_spec_example_on_the_language_page_parses(line, text):
    spec = parse(text, path=f"language.md:{line}")
    assert spec.statements
    if text.startswith('spec "'):  # a whole spec: it also builds, with every name and table checked
        problem = privopt.loads(text)
        assert problem.explain().chosen


def _grammar_rule(name: str) -> str:
    m = re.search(rf"^{name}:(.*?)(?=^\S|\Z)", GRAMMAR, re.M | re.S)
    assert m, name
    return m.group(1)


def statement_keywords() -> set[str]:
    """The word each statement of the grammar starts with (both of SENSE's)."""
    words = set()
    for rule in re.findall(r"^(\w+_stmt):", GRAMMAR, re.M):
        first = re.match(r'\s*(?:"(\w+)"|([A-Z]+))', _grammar_rule(rule))
        words |= {first[1]} if first[1] else set(re.findall(r'"(\w+)"', _grammar_rule(first[2])))
    return words


def _section(text: str, title: str) -> str:
    start = text.index(f"\n## {title}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else None]


def test_every_statement_and_keyword_of_the_grammar_is_on_the_language_page():
    page = LANGUAGE.read_text()
    statements = statement_keywords()
    assert statements >= {
        "spec",
        "var",
        "param",
        "known",
        "const",
        "design",
        "subject",
        "minimize",
        "maximize",
        "noise",
        "let",
    }
    table = _section(page, "Statements")
    missing = [w for w in sorted(statements) if not re.search(rf"^\| `{w}\b|/ `{w}\b", table, re.M)]
    assert not missing, f"statements without a row in the Statements table: {missing}"
    keywords = set(re.findall(r'"([A-Za-z]+)"', GRAMMAR))
    listed = re.search(r"\* Keywords: `([^`]*)`", page)[1].split()
    assert not keywords - set(listed), f"keywords missing from the Keywords line: {sorted(keywords - set(listed))}"
    for word in ("real", "matrix", "noise", "let", "in"):
        assert word in keywords
    # every section the issue named, each with an example
    for construct in ("noise eta : gaussian", "let O =", "= matrix", "real[3] in [0, 1]", " @ "):
        assert any(construct in text for _, text in EXAMPLES), construct


def test_every_operator_of_the_grammar_is_on_the_language_page():
    page = LANGUAGE.read_text()
    code = " ".join(re.findall(r"`([^`]+)`", page))
    rules = "\n".join(  # the grammar's rules, without comments, regex terminals and %ignore lines
        line.split("//")[0] for line in GRAMMAR.splitlines() if not re.match(r"[A-Z_]+: /|%ignore", line)
    )
    operators = set(re.findall(r'"([^\w\s"]+)"', rules))
    for terminal in ("COMPARE", "ARROW"):
        operators |= set(re.findall(r'"([^"]+)"', _grammar_rule(terminal)))
    assert operators >= {"+", "-", "*", "/", "@", "^", "<=", ">=", "==", "->", "|", ";"}
    missing = sorted(op for op in operators if op not in code)
    assert not missing, f"operators the page never shows: {missing}"
    operator_line = re.search(r"\* Operators, (.*?)(?=\n\* |\n\n)", page, re.S)[1]
    for op in ("<=", ">=", "==", "+", "-", "*", "/", "@", "^"):
        assert f"{op}" in operator_line, op


def _readme_spec() -> str:
    readme = (ROOT / "README.md").read_text()
    return _section(readme, "A spec").split("```\n", 2)[1]


def test_the_errors_the_language_page_quotes_are_privopts(tmp_path, monkeypatch):
    """The page's two examples are the README's spec with `subject` misspelt, and with
    `subject to Dt >= 0.6` added as line 18: privopt prints what the page shows."""
    page = _section(LANGUAGE.read_text(), "Errors")
    shown = page.split("```\n", 2)[1].splitlines()
    lines = _readme_spec().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("subject to"))
    assert at + 1 == int(re.search(r":(\d+):1: error", shown[0])[1]), "the misspelt line is not the page's"
    (tmp_path / "specs").mkdir()
    monkeypatch.chdir(tmp_path)
    bad = lines[:at] + ["subjet" + lines[at][len("subject") :]] + lines[at + 1 :]
    Path("specs/bad.priv").write_text("\n".join(bad) + "\n")
    r = CliRunner().invoke(main, ["solve", "specs/bad.priv"])
    assert r.exit_code == 2
    assert r.stderr.splitlines() == shown, r.stderr
    infeasible = lines[: at + 1] + ["subject to Dt >= 0.6"] + lines[at + 1 :]
    Path("specs/inf.priv").write_text("\n".join(infeasible) + "\n")
    r = CliRunner().invoke(main, ["solve", "specs/inf.priv"])
    quoted = _collapse(re.search(r"collide \(the\nREADME's.*?\):\n`([^`]*)`", page, re.S)[1])
    assert r.exit_code == 3 and quoted in _collapse(r.stderr), r.stderr


# ---------------------------------------------------------------------------------------------
# docs/api.md documents every problem class, method and objective kind the code has (issue 19,
# item 8). Methods are privopt.classify.METHODS; classes and objective kinds are what the code
# says for the shipped specs, which cover every block kind of privopt.model.problem.KINDS.
# ---------------------------------------------------------------------------------------------


API = ROOT / "docs" / "api.md"
API_REGISTRY = "Problem classes, methods and objective kinds"


def _shipped() -> dict[str, tuple[str, str, str]]:
    """``{spec: (block kind, problem class, objective kind)}`` for every spec in specs/."""
    out = {}
    for spec in sorted(SPECS.glob("*.priv")):
        if spec.name.startswith("blocks_"):  # composites have no single class: docs/blocks.md
            continue
        problem = privopt.load(spec)
        out[spec.name] = (problem.kind, problem.explain().problem_class, problem.objective.kind)
    return out


SHIPPED = _shipped()
CLASSES = sorted({c for _, c, _ in SHIPPED.values()})
KINDS = sorted({k for _, _, k in SHIPPED.values()})


def _result_row(field_name: str) -> str:
    return re.search(rf"^\| `{field_name}` \|.*$", _section(API.read_text(), "`Result`"), re.M)[0]


def test_the_shipped_specs_cover_every_block_kind():
    assert {f for f, _, _ in SHIPPED.values()} == set(BLOCK_KINDS)


@pytest.mark.parametrize("method", METHODS)
def test_the_api_page_documents_every_method(method):
    registry = _section(API.read_text(), API_REGISTRY)
    assert re.search(rf"^\| `{method}` \| \w", registry, re.M), f"no row for {method} in the methods table"
    assert f"`{method}`" in _result_row("method")
    solve_row = re.search(r"^\| `solve\(.*$", _section(API.read_text(), "`Problem`"), re.M)[0]
    assert f"`{method}`" in solve_row


@pytest.mark.parametrize("problem_class", CLASSES)
def test_the_api_page_documents_every_problem_class(problem_class):
    assert f"`{problem_class}`" in _section(API.read_text(), API_REGISTRY)
    assert f"`{problem_class}`" in _result_row("problem_class")


@pytest.mark.parametrize("kind", KINDS)
def test_the_api_page_documents_every_objective_kind(kind):
    assert f"`{kind}`" in _section(API.read_text(), API_REGISTRY)
    assert f"`{kind}`" in _result_row("objective_kind")


@pytest.mark.parametrize("block_kind", sorted(BLOCK_KINDS))
def test_the_api_page_documents_every_block_kind(block_kind):
    assert f'"{block_kind}"' in re.search(r"^\| `kind` \|.*$", API.read_text(), re.M)[0]
    assert f"| `{block_kind}` |" in _section(API.read_text(), API_REGISTRY)


def test_the_api_registry_table_matches_the_code():
    """Each row of the classes table states the block kind, classes, objective kinds and methods
    of one class; what the code says for the shipped specs must be in the row that names it."""
    rows = [r for r in _section(API.read_text(), API_REGISTRY).splitlines() if r.count("|") == 7][2:]
    table = [[cell.strip() for cell in r.strip("|").split("|")] for r in rows]
    for spec, (family, cls, kind) in SHIPPED.items():
        holding = [r for r in table if f"`{cls}`" in r[1] and f"`{kind}`" in r[3]]
        assert holding, f"{spec}: no row with class {cls} and objective kind {kind}"
        assert any(f"`{family}`" == r[2] for r in holding), f"{spec}: block kind {family}"
        chosen = privopt.load(SPECS / spec).explain().chosen
        assert any(f"`{chosen}`" in r[4] for r in holding), f"{spec}: method {chosen} is not in its row"


# ---------------------------------------------------------------------------------------------
# The options a page writes exist, and the Python a page shows runs.
# ---------------------------------------------------------------------------------------------

ALL_COMMANDS = [c for cmds, _ in _FOUND for c in cmds]


@pytest.mark.parametrize(
    "cmd", ALL_COMMANDS, ids=[f"{c.page.relative_to(ROOT)}:{c.line}:{c.text}" for c in ALL_COMMANDS]
)
def test_every_option_a_page_writes_exists(cmd):
    """Templates included: `privopt sweep SPEC ... [--plot FILE]` names real options."""
    sub = main.commands.get(cmd.args[0])
    assert sub is not None, f"{cmd.page.name}:{cmd.line}: no command {cmd.args[0]!r}"
    options = {o for p in sub.params for o in p.opts + p.secondary_opts}
    written = re.findall(r"(?<![\w-])--[a-z][a-z-]*", " ".join(cmd.args))
    assert not set(written) - options, (
        f"{cmd.page.name}:{cmd.line}: privopt {cmd.args[0]} has no {set(written) - options}"
    )


def python_examples(page: Path) -> list[tuple[int, str]]:
    text, found = page.read_text(), []
    for start, lines in _code_blocks(text):
        if text.splitlines()[start - 2].strip() == "```python":
            found.append((start, "\n".join(lines) + "\n"))
    return found


PYTHON = [(page, n, code) for page in DOCS for n, code in python_examples(page)]
# what a page says its example prints, line by line (README: `print(...)   # 0.7703 optimal False`)
PRINTS = {"README.md": ["0.7703 optimal False", "{'delta': 0.95}"]}


@pytest.mark.parametrize("page, line, code", PYTHON, ids=[f"{p.relative_to(ROOT)}:{n}" for p, n, _ in PYTHON])
def test_every_python_example_runs(page, line, code, tmp_path, monkeypatch, capsys):
    shutil.copytree(SPECS, tmp_path / "specs")
    for inputs in INPUTS.values():  # the example files the pages show (docs/apply.md's records.csv)
        for name, text in inputs.items():
            (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, f"{page.name}:{line}", "exec"), {"__name__": "__doc_example__"})
    printed = capsys.readouterr().out.splitlines()
    for want in PRINTS.get(page.name, []):
        assert want in printed, f"{page.name}:{line}: the page says it prints {want!r}; it printed {printed}"


def test_python_examples_are_found():
    assert {p.name for p, _, _ in PYTHON} >= {"README.md", "api.md"} and set(PRINTS) <= {p.name for p, _, _ in PYTHON}


# ---------------------------------------------------------------------------------------------
# A spec a page shows is the spec it names: a block that starts with a shipped spec's title
# (`spec "credit-card transparency report"`), or that a line ending in `(`specs/NAME.priv`):`
# introduces, has that file's statements (comments and blank lines aside; the title may be left
# out). Any other block that starts with `spec "..."` is a whole spec of its own and loads.
# ---------------------------------------------------------------------------------------------


def _statements(text: str) -> list[str]:
    return [" ".join(line.split("#")[0].split()) for line in text.splitlines() if line.split("#")[0].strip()]


SPEC_TITLES = {m[1]: f for f in SPECS.glob("*.priv") if (m := re.search(r'^spec "([^"]*)"', f.read_text(), re.M))}


def shown_specs() -> list[tuple[Path, int, str, Path | None]]:
    """``(page, line, block, the spec file it shows or None)`` for every spec block of the pages."""
    found = []
    for page in DOCS:
        text = page.read_text()
        lines = text.splitlines()
        for start, block in _code_blocks(text):
            body = _statements("\n".join(block))
            before = next((x for x in reversed(lines[: start - 2]) if x.strip()), "")  # the text above the fence
            named = re.search(r"\(`(specs/[\w-]+\.priv)`\):$", before)
            title = re.match(r'spec "([^"]*)"$', body[0]) if body else None
            if named:
                found.append((page, start, "\n".join(block), ROOT / named[1]))
            elif title:
                found.append((page, start, "\n".join(block), SPEC_TITLES.get(title[1])))
    return found


SHOWN_SPECS = shown_specs()


@pytest.mark.parametrize(
    "page, line, block, spec", SHOWN_SPECS, ids=[f"{p.relative_to(ROOT)}:{n}" for p, n, _, _ in SHOWN_SPECS]
)
def test_a_spec_a_page_shows_is_the_file_it_names(page, line, block, spec):
    if spec is None:
        assert privopt.loads(block).explain().chosen
        return
    shown, actual = _statements(block), _statements(spec.read_text())
    if not shown[0].startswith("spec "):
        actual = [s for s in actual if not s.startswith("spec ")]
    assert shown == actual, f"{page.name}:{line} differs from {spec.relative_to(ROOT)}"


def test_the_shown_specs_are_found():
    names = {(p.name, s.name if s else None) for p, _, _, s in SHOWN_SPECS}
    assert {
        ("README.md", "atr_table4.priv"),
        ("shaped-noise.md", "shaped_noise_means.priv"),
        ("noise-placement.md", "noise_placement.priv"),
        ("obfuscation.md", "obfuscation_bsc.priv"),
    } <= names


def test_the_architecture_pages_layers_are_the_enforced_ones():
    """docs/architecture.md draws the import layers; tests/test_layers.py enforces its own table.
    Every top-level module or folder of privopt/ the drawing names sits in the layer the test
    enforces, and every enforced one is drawn."""
    from tests.test_layers import LAYERS, TOP_LAYER

    text = (ROOT / "docs" / "architecture.md").read_text()
    drawing = next(
        lines for _, lines in _code_blocks(text) if any(line.lstrip().startswith("layer 8") for line in lines)
    )
    drawn, layer = {}, None
    for line in drawing:
        m = re.match(r"\s*layer (\d+)\s", line)
        layer = int(m[1]) if m else layer
        for name in re.findall(r"(?<![\w/.])(?:privopt/)?(\w+)(?:\.py\b|/)", re.sub(r"\([^)]*\)", "", line)):
            if name == "__init__":
                drawn["privopt"] = layer
            elif (ROOT / "privopt" / f"{name}.py").exists() or (ROOT / "privopt" / name).is_dir():
                drawn[f"privopt.{name}"] = layer
    assert drawn.pop("privopt") == TOP_LAYER
    assert drawn == LAYERS


@pytest.mark.parametrize("backend", sorted(BACKENDS))
def test_every_backend_is_documented(backend):
    assert re.search(rf"^\| `{backend}` \| \S", (ROOT / "docs" / "backends.md").read_text(), re.M), (
        "no row in backends.md"
    )
    solve_row = re.search(r"^\| `solve\(.*$", _section(API.read_text(), "`Problem`"), re.M)[0]
    assert f"`{backend}`" in solve_row, "not in api.md's Problem.solve row"
    for solver in BACKENDS[backend].solvers:  # cvxpy's inner solvers
        assert f"`{solver}`" in solve_row and solver in (ROOT / "docs" / "backends.md").read_text(), solver


def test_every_function_of_the_language_is_on_the_language_page():
    """The builder's own registries (scalar functions, budgets, the transparency-report
    measures) and the functions each family reads by name are written on the page as calls."""
    from privopt.builder.build import MEASURES
    from privopt.builder.mechanism import BUDGETS
    from privopt.builder.values import SCALAR_FUNCS

    page = LANGUAGE.read_text()
    named = {"tv", "krcc", "mutual_info", "sum", "uniform", "bsc"}  # read by name in builder/
    missing = [
        f
        for f in sorted(set(SCALAR_FUNCS) | set(BUDGETS) | set(MEASURES) | named)
        if not re.search(rf"`[^`]*\b{f}\b[^`]*`", page)
    ]
    assert not missing, f"functions the language page never shows: {missing}"
    assert re.search(r"`E\[[^`]*\]`", page)


def test_the_readme_layout_names_every_part_of_the_package():
    """README's Layout matches the real tree: every module and folder of privopt/ is named (the
    dunder files __init__.py and __main__.py aside), and everything it names exists (above)."""
    layout = _section((ROOT / "README.md").read_text(), "Layout")
    named = {p.rstrip("/").split("/")[-1] for _, p in doc_paths(layout)}
    parts = {
        p.name
        for p in (ROOT / "privopt").iterdir()
        if not p.name.startswith(("__", ".")) and (p.suffix == ".py" or (p.is_dir() and any(p.glob("*.py"))))
    }
    assert not parts - named, f"README's Layout does not name {sorted(parts - named)}"


# one shipped spec per problem class (the first by name)
CLASS_SPECS = {cls: next(s for s, (_, c, _) in sorted(SHIPPED.items()) if c == cls) for cls in CLASSES}


def _json_table_keys() -> set[str]:
    table = _section(API.read_text(), "JSON output")
    return {k for row in re.findall(r"^\| ([^|]*) \|", table, re.M) for k in re.findall(r"`(\w+)`", row)}


@pytest.mark.parametrize("problem_class", CLASSES, ids=[f"{c}:{CLASS_SPECS[c]}" for c in CLASSES])
def test_the_api_page_documents_every_json_key(problem_class):
    """Every key of `solve --json` is a row of api.md's JSON table, every key of its
    `verification` is named in the `Result.verification` row, and the keys that row says are
    always there are."""
    result = privopt.load(SPECS / CLASS_SPECS[problem_class]).solve()
    data = json.loads(result.to_json())
    assert not set(data) - _json_table_keys(), f"undocumented JSON keys: {sorted(set(data) - _json_table_keys())}"
    row = _result_row("verification")
    named = set(re.findall(r"`(\w+)`", row))
    assert not set(data["verification"]) - named, f"undocumented: {sorted(set(data['verification']) - named)}"
    always = set(re.findall(r"`(\w+)`", re.sub(r"\([^)]*\)", "", re.search(r"Always (.*?)\. ", row)[1])))
    assert always >= {"passed", "failures", "optimality"} and not always - set(data["verification"])


def test_an_infeasible_results_verification_is_as_documented():
    result = privopt.load(SPECS / "shaped_noise_means.priv", params={"alpha": 0.3, "eps": 0.25}).solve()
    data = json.loads(result.to_json())
    assert data["status"] == "infeasible" and data["verification"] == {"passed": False}
    assert 'an infeasible result has only `{"passed": false}`' in _section(API.read_text(), "JSON output")
    assert "measures" in _json_table_keys() and "measures" not in data and data["reasons"]


def _api_paragraph(starts: str) -> str:
    text = API.read_text()
    at = text.index(starts)
    end = text.find("\n\n", at)
    return text[at : end if end > 0 else None]


def _invoke_json(*args):
    r = CliRunner().invoke(main, [str(a) for a in args])
    return r.exit_code, json.loads(r.stdout)


def test_sweep_json_is_as_the_api_page_says():
    """A list, one object per value: {NAME: value} plus solve's keys without tables, groups null;
    a value that did not solve is {NAME: value, status: failed, error, spec}."""
    assert "`groups` set to `null`" in " ".join(_api_paragraph("`privopt sweep SPEC NAME=VALUES --json`").split())
    # shaped noise is infeasible for eps <= 0.495 (docs/figures.md); a delta outside [0, 1] would
    # be a spec error at the param, not an infeasible value
    code, rows = _invoke_json("sweep", SPECS / "shaped_noise_sweep.priv", "eps=1,0.3", "--json")
    assert code == 0 and [r["status"] for r in rows] == ["optimal", "infeasible"]
    for r in rows:
        assert "tables" not in r and r["groups"] is None and not set(r) - _json_table_keys() - {"eps"}
    code, rows = _invoke_json("sweep", SPECS / "atr_alpha_fidelity.priv", "alpha=0", "--json")
    # exit 2: every failed value was a spec error (docs/outputs.md, Exit codes)
    assert code == 2 and set(rows[0]) == {"alpha", "status", "error", "spec"} and rows[0]["status"] == "failed"
    assert rows[0]["spec"]["params"]["alpha"] == 0
    assert "every failed value was a spec or usage error" in (ROOT / "docs" / "outputs.md").read_text()


def test_check_and_audit_json_keys_are_on_the_api_page():
    documented = set(re.findall(r"`(\w+)`", _api_paragraph("`privopt check SPEC --json` prints")))
    code, data = _invoke_json("check", SPECS / "atr_table4.priv", "--backends", "highs", "--json")
    assert code == 0 and data["verdict"] == "agree"
    assert not set(data) - documented, sorted(set(data) - documented)
    for path in data["paths"]:
        assert not set(path) - documented, sorted(set(path) - documented)
    documented = set(re.findall(r"`(\w+)`", _api_paragraph("`privopt audit SPEC --json` prints")))
    code, data = _invoke_json("audit", SPECS / "atr_table4.priv", "--json")
    assert code == 0 and not set(data) - documented, sorted(set(data) - documented)


def _pairs(obj, skip=("versions",)):
    """Every (key, scalar value) at any depth of a JSON value, outside the ``skip`` keys."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in skip:
                continue
            if isinstance(v, (dict, list)):
                yield from _pairs(v, skip)
            else:
                yield k, v
    elif isinstance(obj, list):
        for v in obj:
            yield from _pairs(v, skip)


def test_the_json_example_on_the_api_page_is_what_solve_prints(tmp_path, monkeypatch):
    """The example after `privopt solve specs/atr_table4.priv --json --no-tables --set
    delta=0.95`: every key with a value written out (not `<...>`, not the versions, which are
    the machine's) has that value in the output."""
    text = API.read_text()
    command = "privopt solve specs/atr_table4.priv --json --no-tables --set delta=0.95"
    block = text[text.index("```json", text.index(command)) :]
    block = block[: block.index("```", 3)]
    versions = block.index('"versions"')
    shown = [
        (k, json.loads(v))
        for k, v in re.findall(r'"(\w+)": ("[^"<]*"|-?[\d.]+(?:e[-+]?\d+)?|true|false|null)', block)
        if block.index(f'"{k}"') < versions
    ]
    assert ("objective", 0.7702702702702701) in shown and ("delta", 0.95) in shown and len(shown) >= 5
    shutil.copytree(SPECS, tmp_path / "specs")
    monkeypatch.chdir(tmp_path)
    code, data = _invoke_json(*command.split()[1:])
    actual = list(_pairs(data))
    assert code == 0
    for pair in shown:
        assert pair in actual, f"the page shows {pair}; solve prints {[p for p in actual if p[0] == pair[0]]}"
