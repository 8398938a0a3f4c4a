"""``privopt sweep --plot`` and ``privopt simulate --plot`` (issue 14, parts 3-4): privopt.plot,
its CLI contract, and the figures of docs/figures.md."""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from privopt import plot
from privopt.cli import main
from privopt.errors import UsageError
from tests.conftest import ROOT, SPECS

TABLE4 = SPECS / "atr_table4.priv"
SHAPED = SPECS / "shaped_noise_sweep.priv"
SVG_NS = "{http://www.w3.org/2000/svg}"


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def svg_texts(path: Path) -> list[str]:
    """Every <text> element's text in an SVG (svg.fonttype 'none': labels are real text)."""
    root = ET.parse(path).getroot()
    return ["".join(t.itertext()) for t in root.iter(f"{SVG_NS}text")]


def words(path: Path) -> list[str]:
    """An SVG's texts that are not tick numbers (title, axis labels, legend entries)."""
    number = re.compile(r"[\u2212+-]?[0-9.]+(e[\u2212+-]?[0-9]+)?%?|[0-9.]+\s*[x\u00d7]\s*10.*")
    return [t for t in svg_texts(path) if not number.fullmatch(t.strip())]


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# ---------------------------------------------------------------- check_target


@pytest.mark.parametrize(
    ("name", "fmt"),
    [("a.png", "png"), ("a.svg", "svg"), ("a.pdf", "pdf"), ("A.PNG", "png"), ("b.Svg", "svg"), ("x.y.PDF", "pdf")],
)
def test_check_target_formats(tmp_path, name, fmt):
    assert plot.check_target(tmp_path / name) == fmt
    assert files(tmp_path) == []


@pytest.mark.parametrize("name", ["a.jpg", "a.txt", "a", "a.png.bak", ".png", "a.eps"])
def test_check_target_refuses_other_extensions(tmp_path, name):
    with pytest.raises(UsageError, match=r"\.png, \.svg or \.pdf"):
        plot.check_target(tmp_path / name)


def test_check_target_refuses_folders(tmp_path):
    (tmp_path / "d.png").mkdir()
    with pytest.raises(UsageError, match="is a folder"):
        plot.check_target(tmp_path / "d.png")
    with pytest.raises(UsageError, match="does not exist"):
        plot.check_target(tmp_path / "missing" / "a.png")


# ---------------------------------------------------------------- sweep --plot on the CLI


def test_sweep_png(tmp_path):
    out = tmp_path / "curve.png"
    r = invoke("sweep", TABLE4, "delta=0.8,0.9,1", "--plot", out)
    assert r.exit_code == 0, r.output
    width, height = png_size(out)
    assert width >= 640 and height >= 480
    import matplotlib.image

    assert matplotlib.image.imread(out).shape[:2] == (height, width)
    # prints what sweep prints without --plot
    assert r.stdout == invoke("sweep", TABLE4, "delta=0.8,0.9,1").stdout
    assert files(tmp_path) == ["curve.png"]  # no temporary file left


def test_sweep_svg_labels_are_text(tmp_path):
    out = tmp_path / "curve.svg"
    r = invoke("sweep", TABLE4, "delta=0.8,0.9,1", "--plot", out)
    assert r.exit_code == 0, r.output
    texts = svg_texts(out)
    assert "delta" in texts
    assert "max_confidence(gender, decision -> income)" in texts
    assert "credit-card transparency report" in texts
    assert "infeasible" not in texts  # a legend only when something did not solve


def test_sweep_pdf(tmp_path):
    out = tmp_path / "curve.PDF"
    r = invoke("sweep", TABLE4, "delta=0.8,0.9,1", "--plot", out)
    assert r.exit_code == 0, r.output
    data = out.read_bytes()
    assert data.startswith(b"%PDF") and data.rstrip().endswith(b"%%EOF")


def test_sweep_json_stays_strict_json(tmp_path):
    out = tmp_path / "curve.svg"
    r = invoke("sweep", TABLE4, "delta=0.9,1", "--json", "--plot", out)
    assert r.exit_code == 0, r.output
    items = json.loads(r.stdout)  # the whole of stdout is the JSON list
    assert [i["delta"] for i in items] == [0.9, 1.0]
    assert items[0]["objective"] == pytest.approx(0.675)
    assert out.exists()


def test_sweep_infeasible_values_marked(tmp_path):
    # shaped noise: eps = 0.1 cannot meet the moment constraints under (eps, delta)-DP
    out = tmp_path / "eps.svg"
    r = invoke("sweep", SHAPED, "eps=0.1,0.5,1", "--plot", out)
    assert r.exit_code == 0, r.output
    assert "infeasible" in r.stdout
    texts = svg_texts(out)
    assert "infeasible" in texts and "optimal" in texts and "failed" not in texts
    assert "eps" in texts and "sum(x, y: f * (x - y)^2)" in texts


@pytest.mark.parametrize("name", ["curve.jpg", "curve.txt", "curve"])
def test_sweep_unknown_format_exits_2_before_solving(tmp_path, monkeypatch, name):
    import privopt.api

    def no_solving(*a, **k):
        raise AssertionError("loaded the spec before checking --plot")

    monkeypatch.setattr(privopt.api, "load", no_solving)  # the CLI imports the API when a command runs
    r = invoke("sweep", TABLE4, "delta=0.9", "--plot", tmp_path / name)
    assert r.exit_code == 2, r.output
    assert ".png, .svg or .pdf" in r.output and "Traceback" not in r.output
    assert files(tmp_path) == []


def test_sweep_missing_folder_exits_2(tmp_path):
    r = invoke("sweep", TABLE4, "delta=0.9", "--plot", tmp_path / "no" / "curve.png")
    assert r.exit_code == 2 and "does not exist" in r.output
    assert files(tmp_path) == []


def _run_python(code: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    r = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True, cwd=ROOT, env=env, timeout=120
    )
    assert r.returncode == 0, r.stderr
    return r.stdout.strip().splitlines()[-1]


def test_matplotlib_not_imported_without_plot():
    code = f"""
import sys
import privopt.cli
assert 'matplotlib' not in sys.modules, 'import privopt.cli'
sys.argv = ['privopt', 'sweep', {str(TABLE4)!r}, 'delta=0.9,1', '--json']
try:
    privopt.cli.main()
except SystemExit as e:
    assert not e.code, e.code
print('matplotlib' in sys.modules)
"""
    assert _run_python(code) == "False"


def test_matplotlib_imported_with_plot(tmp_path):
    code = f"""
import sys
import privopt.cli
sys.argv = ['privopt', 'sweep', {str(TABLE4)!r}, 'delta=0.9', '--json', '--plot', {str(tmp_path / "a.png")!r}]
try:
    privopt.cli.main()
except SystemExit as e:
    assert not e.code, e.code
print('matplotlib' in sys.modules, 'matplotlib.pyplot' in sys.modules)
"""
    assert _run_python(code) == "True False"  # and never pyplot
    assert (tmp_path / "a.png").exists()


# ---------------------------------------------------------------- sweep_figure as a library function


def _capture(monkeypatch) -> list:
    """Record the figures privopt.plot writes."""
    figures = []
    write = plot._write

    def recording(fig, path, fmt):
        figures.append(fig)
        write(fig, path, fmt)

    monkeypatch.setattr(plot, "_write", recording)
    return figures


def test_sweep_figure_draws_what_solved_and_marks_the_rest(tmp_path, monkeypatch):
    figures = _capture(monkeypatch)
    out = tmp_path / "s.svg"
    values = [0.4, 0.1, 0.2, 0.3, 0.5]  # drawn in increasing x
    objectives = [None, 3.0, None, 2.0, 1.0]
    statuses = ["failed", "optimal", "infeasible", "optimal", "optimal"]
    plot.sweep_figure(out, "k", values, objectives, statuses, ylabel="cost(k)", title="T")
    (ax,) = figures[0].axes
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert set(lines) == {"optimal", "infeasible", "failed"}
    curve = lines["optimal"]
    assert list(curve.get_xdata()) == [0.1, 0.2, 0.3, 0.4, 0.5]
    y = list(curve.get_ydata())
    assert y[0] == 3.0 and math.isnan(y[1]) and y[2] == 2.0 and math.isnan(y[3]) and y[4] == 1.0  # broken at 0.2, 0.4
    assert list(lines["infeasible"].get_xdata()) == [0.2]
    assert list(lines["failed"].get_xdata()) == [0.4]
    for name in ("infeasible", "failed"):  # on the x axis: x in data, y = 0 in axes coordinates
        assert list(lines[name].get_ydata()) == [0.0]
        assert lines[name].get_transform() == ax.get_xaxis_transform()
    assert 0.2 >= ax.get_xlim()[0] and 0.4 <= ax.get_xlim()[1]
    assert {"k", "cost(k)", "T", "infeasible", "failed", "optimal"} <= set(svg_texts(out))


def test_sweep_figure_nothing_solved(tmp_path):
    out = tmp_path / "none.png"
    plot.sweep_figure(out, "eps", [0.1, 0.2], [None, None], ["infeasible", "infeasible"], "obj", "nothing")
    assert png_size(out) >= (640, 480)


def test_user_text_is_literal(tmp_path):
    """Dollar signs, TeX and control characters in a title or label are drawn as written."""
    title, name, ylabel = "cost in $ and $\\frac{1}{2}$", "a_b$c", "$x^2$ \\alpha_1 {"
    for ext in ("svg", "png", "pdf"):
        out = tmp_path / f"t.{ext}"
        plot.sweep_figure(out, name, [1.0, 2.0], [1.0, 2.0], ["optimal"] * 2, ylabel, title)
        assert out.stat().st_size > 0
    texts = svg_texts(tmp_path / "t.svg")
    assert title in texts and name in texts and ylabel in texts
    out = tmp_path / "c.svg"
    plot.sweep_figure(out, "x", [1.0], [1.0], ["optimal"], "y", "bell\x07 and \x1b[2J\nnewline")
    assert "bell\\x07 and \\x1b[2J\\nnewline" in svg_texts(out)  # shown as escapes; still valid XML


def test_same_data_same_bytes(tmp_path):
    for ext in ("svg", "pdf", "png"):
        a, b = tmp_path / f"a.{ext}", tmp_path / f"b.{ext}"
        for out in (a, b):
            plot.sweep_figure(out, "delta", [0.8, 0.9, 1.0], [0.63, 0.675, 1.0], ["optimal"] * 3, "beta", "T")
        assert a.read_bytes() == b.read_bytes(), ext
        assert b"Date" not in a.read_bytes() or ext == "png"


def test_written_all_or_nothing(tmp_path, monkeypatch):
    out = tmp_path / "keep.svg"
    out.write_text("earlier")

    def broken(self, *a, **k):
        raise RuntimeError("disk full")

    from matplotlib.figure import Figure

    monkeypatch.setattr(Figure, "savefig", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        plot.sweep_figure(out, "x", [1.0], [1.0], ["optimal"], "y", "t")
    assert out.read_text() == "earlier"
    assert files(tmp_path) == ["keep.svg"]  # the temporary file is gone


def test_new_file_mode_follows_umask(tmp_path):
    old = os.umask(0o027)
    try:
        plot.sweep_figure(tmp_path / "m.png", "x", [1.0], [1.0], ["optimal"], "y", "t")
    finally:
        os.umask(old)
    assert (tmp_path / "m.png").stat().st_mode & 0o777 == 0o640


# ---------------------------------------------------------------- simulate --plot


def test_simulation_figure(tmp_path):
    import numpy as np

    out = tmp_path / "sim.svg"
    plot.simulation_figure(
        out, np.array([0.12, 0.13, 0.14]), analytic=0.139, expected=0.130, title="obf $", rows=50, cols=100, seed=3
    )
    texts = svg_texts(out)
    assert "obf $" in texts and "trials" in texts
    assert any("n = 50 rows, m = 100 columns, seed 3" in t for t in texts)
    assert any(t.startswith("analytic Q 0.139") for t in texts)
    assert any(t.startswith("exact expectation at m = 100") for t in texts)


def test_simulate_plot_cli(tmp_path):
    out = tmp_path / "sim.png"
    r = invoke(
        "simulate", SPECS / "obfuscation_bsc.priv", "--rows", 50, "--cols", 100, "--trials", 10, "--json", "--plot", out
    )
    assert r.exit_code == 0, r.output
    assert len(json.loads(r.stdout)["trials"]) == 10
    assert png_size(out) >= (640, 480)
    r = invoke("simulate", SPECS / "obfuscation_bsc.priv", "--rows", 50, "--cols", 100, "--plot", tmp_path / "s.gif")
    assert r.exit_code == 2
    assert files(tmp_path) == ["sim.png"]


# ---------------------------------------------------------------- docs/figures.md

FIGURES_MD = ROOT / "docs" / "figures.md"
FIGURES = ROOT / "docs" / "figures"


def _doc_commands() -> list[str]:
    """Every ``privopt ...`` line inside a fenced block of docs/figures.md."""
    text = FIGURES_MD.read_text()
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)
    return [line.strip() for b in blocks for line in b.splitlines() if line.strip().startswith("privopt ")]


def _cost(argv: list[str]) -> int:
    """Solves a command makes: the sweep's value count (1 for simulate)."""
    if argv[0] != "sweep":
        return 1
    values = argv[2].partition("=")[2]
    return int(values.split(":")[2]) if ":" in values else len(values.split(","))


def _doc_cases():
    for line in _doc_commands():
        argv = shlex.split(line)[1:]
        marks = [pytest.mark.slow] if _cost(argv) > 25 else []
        yield pytest.param(argv, id=" ".join(argv[:3]), marks=marks)


def test_figures_doc_references_exist():
    text = FIGURES_MD.read_text()
    shown = re.findall(r"!\[[^\]]*\]\((figures/[^)\s]+)\)", text)
    assert len(shown) >= 8
    for ref in shown:
        assert (ROOT / "docs" / ref).is_file(), ref
    drawn = set()
    for line in _doc_commands():
        argv = shlex.split(line)
        assert argv[1] in ("sweep", "simulate"), line
        if "--plot" in argv:
            target = argv[argv.index("--plot") + 1]
            assert target.startswith("docs/figures/") and target.endswith(".svg"), line
            drawn.add(target.removeprefix("docs/"))
    assert drawn == set(shown), "every figure shown is drawn by a command on the page, and the reverse"
    assert {f"figures/{p.name}" for p in FIGURES.iterdir()} == drawn, "files in docs/figures/ not on the page"
    for p in FIGURES.iterdir():
        assert p.stat().st_size < 60_000, p.name  # kept small


@pytest.mark.parametrize("argv", list(_doc_cases()))
def test_figures_doc_commands_run(argv, tmp_path, monkeypatch):
    """Each command of docs/figures.md runs as shown; with --plot into tmp_path, and the figure it
    draws has the same words (title, labels, legend) as the committed one, so a figure whose spec
    or command changed fails. Tick labels are left out: where matplotlib puts ticks is its
    choice, and may change with its version (CI installs the newest)."""
    monkeypatch.chdir(ROOT)
    committed = None
    if "--plot" in argv:
        i = argv.index("--plot") + 1
        committed = ROOT / argv[i]
        argv = [*argv[:i], str(tmp_path / committed.name), *argv[i + 1 :]]
    r = invoke(*argv)
    assert r.exit_code == 0, r.output
    if committed is not None:
        assert words(tmp_path / committed.name) == words(committed)
