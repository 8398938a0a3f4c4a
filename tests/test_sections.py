"""A result's sections (privopt.sections): one per problem class, each rendering itself as JSON
keys, text and HTML (issue 20, item 6).

* the JSON keys the sections contribute are exactly ``measures`` and the class's own keys;
* ``Result.text_lines`` is what ``privopt solve`` prints (the CLI prints through the sections);
* ``Result._repr_html_`` parses, holds the summary, each section's tables and the released
  tables, and shows a label or title ``<script>`` as text, never as markup.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from click.testing import CliRunner

import privopt
from privopt.cli import main
from privopt.sections import ClusterReport, Mechanism, NoisePlacement, Obfuscation, TransparencyReport

HOSTILE = "<script>alert(1)</script>"

ATR = f'''spec "{HOSTILE} report"
var gender   : public  {{F, "{HOSTILE}"}}
var income   : private {{low, high}}
var decision : outcome {{deny, approve}}
known P(gender, income) = counts {{
         low  high
    F:   12   3
    "{HOSTILE}":   9    4
}}
design Dt = P(decision | gender, income)
subject to Dt >= 0.05
minimize max_confidence(gender, decision -> income)
'''

MECHANISM = f'''spec "{HOSTILE} mechanism"
var X : data {{v1, "{HOSTILE}", v3}}
var Y : release over X
known P(X) = uniform
design R = P(Y | X)
param eps = 1.0
subject to ldp(X -> Y) <= eps
minimize tv(X, Y)
'''

NOISE = f'''spec "{HOSTILE} noise"
const A = matrix {{
    1  1  0
    0  1  1
}}
var x : private real[3] in [0, 1]
noise eta : gaussian[3]
noise xi  : gaussian[2]
let O = A @ (x + eta) + xi
param eps = 1.0
param delta = 1e-5
subject to dp(x -> O) <= (eps, delta)
minimize E[sum((O - A @ x)^2)]
'''

OBFUSCATION = f'''spec "{HOSTILE} obfuscation"
var X : data {{0, 1}}
var F : observed over X
var Y : release over X
known P(X) = {{ 0: 0.5, 1: 0.5 }}
known P(F | X) = bsc(0.1)
design W = P(Y | X)
param eps = 0.2
subject to mutual_info(Y; F) <= eps
minimize krcc(X, Y)
'''

CASES = {  # spec text, its section class, the titles of the tables its HTML shows
    "atr": (ATR, TransparencyReport, ["QID groups (2)", "Dt = P(decision | gender, income)"]),
    "mechanism": (MECHANISM, Mechanism, ["measures of the released mechanism", "R = P(Y | X)"]),
    "noise": (NOISE, NoisePlacement, ["expected squared error", "noise (co)variances", "measures"]),
    "obfuscation": (
        OBFUSCATION,
        Obfuscation,
        ["optimal rank distance Q by restriction", "measures of the released channel", "W = P(Y | X)"],
    ),
}


@pytest.fixture(scope="module")
def solved():
    """One solved result per class (solved once for the module)."""
    return {name: privopt.loads(text).solve() for name, (text, _, _) in CASES.items()}


class _Parsed(HTMLParser):
    """The tags, text and script elements of an HTML fragment; raises on unbalanced tables."""

    def __init__(self):
        super().__init__()
        self.tags: list[str] = []
        self.text: list[str] = []
        self.open: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.open.append(tag)

    def handle_endtag(self, tag):
        assert self.open and self.open[-1] == tag, f"</{tag}> closes <{self.open[-1] if self.open else None}>"
        self.open.pop()

    def handle_data(self, data):
        self.text.append(data)


def parsed(fragment: str) -> _Parsed:
    p = _Parsed()
    p.feed(fragment)
    p.close()
    assert not p.open, f"unclosed tags: {p.open}"
    return p


@pytest.mark.parametrize("name", CASES)
def test_each_class_has_its_section(solved, name):
    result = solved[name]
    (section,) = result.sections
    assert type(section) is CASES[name][1]


@pytest.mark.parametrize("name", CASES)
def test_section_json_is_the_measures_and_the_class_keys(solved, name):
    result = solved[name]
    (section,) = result.sections
    keys = (["measures"] if result.measures else []) + list(result.details)
    assert list(section.json()) == keys
    body = result.to_dict(tables=False)
    assert [k for k in body if k in keys] == keys  # in the JSON, in this order


@pytest.mark.parametrize("name", CASES)
def test_html_parses_with_its_tables_and_escaped_labels(solved, name):
    result = solved[name]
    page = result._repr_html_()
    p = parsed(page)
    assert "script" not in p.tags  # the hostile title and labels are text, never an element
    assert HOSTILE not in page and "&lt;script&gt;" in page
    text = "".join(p.text)
    assert f"{HOSTILE} {name if name != 'atr' else 'report'}" in text  # the title, as its characters
    for title in ["status", "objective", "method", "backend", "verification", *CASES[name][2]]:
        assert title in text, title
    assert p.tags.count("table") == 1 + len(CASES[name][2])  # the summary and each table


def test_html_shows_a_hostile_label_in_the_groups_and_the_released_table(solved):
    for name in ("atr", "mechanism"):
        text = "".join(parsed(solved[name]._repr_html_()).text)
        assert text.count(HOSTILE) >= 2, name  # the title, and the label in a table


def test_html_of_an_infeasible_result_says_why():
    spec = MECHANISM.replace("subject to ldp(X -> Y) <= eps", "subject to ldp(X -> Y) <= eps\nsubject to R <= 0.2")
    result = privopt.loads(spec).solve()
    assert result.status == "infeasible"
    p = parsed(result._repr_html_())
    text = "".join(p.text)
    assert "infeasible" in text and p.tags.count("table") == 1
    assert all(reason in text for reason in result.reasons)


@pytest.mark.parametrize("name", CASES)
def test_text_lines_are_what_solve_prints(solved, tmp_path, name):
    """The CLI prints the result's sections: ``text_lines`` (unwrapped) is its stdout, but for
    the timings of that other solve."""
    spec = tmp_path / "spec.priv"
    spec.write_text(CASES[name][0])
    run = CliRunner().invoke(main, ["solve", str(spec), "--quiet"], env={"COLUMNS": ""})
    assert run.exit_code == 0, run.output
    timings = re.compile(r"\d+\.\d{3}s")
    printed = timings.sub("T", run.stdout).splitlines()
    lines = [timings.sub("T", line) for line in solved[name].text_lines()]
    assert lines[0] == f"{HOSTILE} {name if name != 'atr' else 'report'}"
    assert printed[1:] == lines[1:]  # the title names the spec given (here a path, there text)


@pytest.mark.parametrize("width", [60, 100])
def test_text_lines_fit_the_width(solved, width):
    for result in solved.values():
        assert all(len(line) <= width for line in result.text_lines(width)), result.problem_class


def test_sweep_columns_are_the_sections_figures(solved):
    assert list(solved["obfuscation"].sections[0].figures()) == ["Q, symmetric", "Q, unrestricted"]
    assert list(solved["mechanism"].sections[0].figures()) == ["ldp(X -> Y)", "loglift(X -> Y)"]
    assert solved["atr"].sections[0].figures() == {}


def test_noise_section_names_its_out_files(solved):
    assert sorted(solved["noise"].sections[0].files()) == ["losses.csv", "noise.csv"]
    assert solved["mechanism"].sections[0].files() == {}


def test_a_cluster_result_has_the_cluster_section(solved):
    import dataclasses

    result = dataclasses.replace(solved["atr"], engine="dask")
    (section,) = result.sections
    assert isinstance(section, ClusterReport)
    lines = result.text_lines()
    assert lines[-1] == "(--json prints every group; --out DIR writes them as CSV)"
    assert not any(line.startswith("Dt = P(") for line in lines)  # the tables stay in --json and --out
    text = "".join(parsed(result._repr_html_()).text)
    assert "QID groups (2)" in text and "Dt = P(" not in text
