"""``--plot FILE``: the figures of ``privopt sweep`` and ``privopt simulate`` (matplotlib).

matplotlib is imported inside the functions that draw, never at import time, so ``import
privopt.cli`` and every command run without ``--plot`` leave it unloaded. No pyplot: each
figure is a ``matplotlib.figure.Figure`` on its own Agg canvas (no display, no global figure
state), drawn under ``matplotlib.rc_context`` so the caller's settings are untouched.

* The format comes from the extension (``.png``, ``.svg``, ``.pdf``, any case), checked by
  ``check_target`` before anything is solved.
* User text (the spec's title, the param's name, the objective) is drawn literally: mathtext is
  off for it, so ``$`` cannot break a figure.
* Output is deterministic: the same data give the same bytes (no dates, no version strings;
  SVG ids from a fixed salt).
* The file is written all or nothing: a temporary file in the same folder, renamed over FILE
  once complete; removed on any error.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Sequence
from pathlib import Path

from . import outdir
from .errors import UsageError
from .render import visible

FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}

SIZE_IN = (6.4, 4.8)  # inches; with DPI gives 640 x 480 px PNGs at least
DPI = 100

# rc settings for every figure: real <text> in SVG, no TeX, fixed SVG ids, no mathtext anywhere.
RC = {
    "svg.fonttype": "none",
    "svg.hashsalt": "privopt",
    "text.usetex": False,
    "text.parse_math": False,
    "axes.formatter.use_mathtext": False,
    "figure.dpi": DPI,
    "savefig.dpi": DPI,
    "savefig.bbox": None,  # never "tight": that would shrink the PNG below SIZE_IN
}

# no dates and no program versions in the file, so the same figure gives the same bytes
METADATA = {
    "png": {"Software": None},
    "svg": {"Date": None, "Creator": None},
    "pdf": {"CreationDate": None, "Creator": None, "Producer": None},
}


def check_target(path: Path) -> str:
    """The format (``'png'``, ``'svg'`` or ``'pdf'``) of ``path`` from its extension, any case.

    Raises ``UsageError`` for any other extension (naming the accepted ones), for a path that is
    a folder, and for a parent folder that is missing or cannot be written. Called before
    solving, so a bad ``--plot`` costs nothing and writes nothing.
    """
    path = Path(path)
    shown = visible(path)
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        got = f"'{visible(path.suffix)}' is not a format privopt draws" if path.suffix else "has no extension"
        raise UsageError(f"--plot {shown}: {got}; name a file ending in .png, .svg or .pdf")
    outdir.check_file_target(path, "--plot", "name a file ending in .png, .svg or .pdf")
    return fmt


def sweep_figure(
    path: Path,
    name: str,
    values: Sequence[float],
    objectives: Sequence[float | None],
    statuses: Sequence[str],
    ylabel: str,
    title: str,
    even: Sequence[float | None] | None = None,
    solved: tuple[str, ...] = ("optimal",),
    label: str = "optimal",
) -> None:
    """Draw a sweep's trade-off curve to ``path`` (format from its extension).

    x = the swept param's ``values``, y = the optimal ``objectives``: the values whose status is
    one of ``solved`` and whose objective is finite make a line with markers (legend ``label``),
    in increasing x; the line breaks across any value that did not solve. Values with status
    ``infeasible`` are red crosses on the x axis (legend "infeasible"); any other value
    (``failed``) a black triangle on the x axis (legend "failed"). ``even`` (a composite's sweep,
    issue 21): the same blocks with the budget split evenly at each value, a dashed second line
    (legend "even split") over the values that solved. Labels: x = ``name``, y = ``ylabel`` (the
    objective as the spec writes it), title = ``title``.
    """
    fmt = check_target(path)
    if not len(values) == len(objectives) == len(statuses) == len(even if even is not None else values):
        raise ValueError("sweep_figure: values, objectives, statuses and even differ in length")
    rows = zip(values, objectives, statuses, even if even is not None else [None] * len(values), strict=True)
    points = sorted(rows, key=lambda p: p[0])

    def drawn(o, s) -> bool:
        return s in solved and o is not None and math.isfinite(o)

    with _figure() as (fig, ax):
        xs = [float(v) for v, _, _, _ in points]
        ys = [float(o) if drawn(o, s) else math.nan for _, o, s, _ in points]
        size = 4 if len(xs) <= 40 else 2.5
        if any(not math.isnan(y) for y in ys):
            # NaN breaks the line: a value that did not solve is never bridged
            ax.plot(xs, ys, marker="o", markersize=size, linewidth=1.5, color="C0", label=label)
        if even is not None:
            es = [float(e) if drawn(o, s) and drawn(e, s) else math.nan for _, o, s, e in points]
            if any(not math.isnan(e) for e in es):
                ax.plot(
                    xs, es, marker="s", markersize=size, linewidth=1.5, linestyle="--", color="C1", label="even split"
                )
        bottom = ax.get_xaxis_transform()  # x in data, y in axes coordinates: 0 is the x axis
        infeasible = [v for v, _, s, _ in points if s == "infeasible"]
        failed = [v for v, o, s, _ in points if s != "infeasible" and not drawn(o, s)]
        if infeasible:
            ax.plot(
                infeasible,
                [0.0] * len(infeasible),
                linestyle="none",
                marker="x",
                markersize=8,
                markeredgewidth=2,
                color="tab:red",
                transform=bottom,
                clip_on=False,
                zorder=5,
                label="infeasible",
            )
        if failed:
            ax.plot(
                failed,
                [0.0] * len(failed),
                linestyle="none",
                marker="^",
                markersize=7,
                color="black",
                transform=bottom,
                clip_on=False,
                zorder=5,
                label="failed",
            )
        if not any(not math.isnan(y) for y in ys):
            ax.set_yticks([])  # nothing solved: no y scale to show
        ax.set_xlabel(_literal(name), parse_math=False)
        ax.set_ylabel(_literal(ylabel), parse_math=False, fontsize=_fit(ylabel, 56))
        ax.set_title(_literal(title), parse_math=False, fontsize=_fit(title, 64, 12.0))
        ax.grid(True, alpha=0.3)
        if infeasible or failed or even is not None:
            ax.legend(loc="best")
        _write(fig, path, fmt)


def simulation_figure(
    path: Path, trials, analytic: float, expected: float, title: str, rows: int, cols: int, seed: int
) -> None:
    """Draw ``privopt simulate``'s trials to ``path``: a histogram of each trial's KRCC distance
    (Definition 2), each trial also a tick on the x axis when there are few, with vertical lines
    at the analytic Q (m -> infinity, Theorem 1), the exact expectation at m = ``cols`` and the
    trials' mean."""
    import numpy as np

    fmt = check_target(path)
    t = np.asarray(trials, dtype=float).ravel()
    with _figure() as (fig, ax):
        if t.size:
            counts, _, _ = ax.hist(
                t,
                bins=np.histogram_bin_edges(t, bins="auto" if t.size > 1 else 1),
                color="C0",
                alpha=0.5,
                edgecolor="C0",
                label=f"{t.size} trial(s)",
            )
            ax.set_ylim(0, max(float(counts.max()), 1.0) * 1.5)  # headroom for the legend
            if t.size <= 1000:
                ax.plot(
                    t,
                    np.zeros_like(t),
                    linestyle="none",
                    marker="|",
                    markersize=10,
                    color="C0",
                    transform=ax.get_xaxis_transform(),
                    clip_on=False,
                )
            mean = float(t.mean())
            ax.axvline(mean, color="C0", linestyle=":", linewidth=1.5, label=f"empirical mean {mean:.6g}")
        ax.axvline(
            analytic, color="tab:red", linewidth=2, label=f"analytic Q {analytic:.6g} (m \u2192 \u221e, Theorem 1)"
        )
        ax.axvline(
            expected,
            color="black",
            linestyle="--",
            linewidth=1.5,
            label=f"exact expectation at m = {cols}: {expected:.6g}",
        )
        ax.set_xlabel(
            f"KRCC distance (Definition 2) of each trial: n = {rows} rows, m = {cols} columns, seed {seed}",
            parse_math=False,
            fontsize=9,
        )
        ax.set_ylabel("trials", parse_math=False)
        ax.set_title(_literal(title), parse_math=False, fontsize=_fit(title, 64, 12.0))
        ax.legend(loc="best", fontsize="small")
        ax.grid(True, alpha=0.3)
        _write(fig, path, fmt)


def _literal(text: object) -> str:
    """User text as drawn: control characters shown as escapes (one line, nothing hidden)."""
    return visible(str(text))


def _fit(text: str, chars: int, size: float = 10.0) -> float:
    """``size`` (points), made smaller for a ``text`` longer than about ``chars`` characters so
    it stays inside the figure (never below 6 points): no wrapping, which would split it."""
    return max(6.0, min(size, size * chars / max(len(text), 1)))


@contextlib.contextmanager
def _figure() -> Iterator[tuple]:
    """A fresh figure and axes on an Agg canvas, under privopt's rc settings."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    with matplotlib.rc_context(RC):
        fig = Figure(figsize=SIZE_IN, dpi=DPI, layout="constrained")
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        yield fig, ax


def _write(fig, path: Path, fmt: str) -> None:
    """Save ``fig`` to ``path`` all or nothing (``outdir.write_file``)."""
    outdir.write_file(path, lambda fh: fig.savefig(fh, format=fmt, dpi=DPI, metadata=METADATA[fmt]))
