"""The sections of a result: each problem class's own part of a ``Result``, rendered three ways.

A ``Result`` (privopt.results) has the fields every solve has (status, objective, method,
backend, verification, timings, the released tables) and one section per problem class (per
block, once a program holds several). A section renders itself

* as JSON: ``json()``, the top-level keys it contributes to the result's JSON object (for a
  mechanism ``measures``; a noise placement ``measures``, ``noise``, ``baselines`` and
  ``correlation_gain``; an obfuscation ``measures``, ``channel``, ``optimality`` and
  ``comparison``; a transparency report ``no_records`` where the data leaves combinations
  without a record);
* as text: ``print(console)`` on a Rich console (the CLI's, keeping its styles), and
  ``text_lines(width)``, the same text as plain lines laid out at ``width`` columns (None: a
  line each, unwrapped, as off a terminal);
* as HTML: ``html()``, its tables, so a result shows as tables in a notebook;
* as files: ``files()``, what it adds to ``--out DIR`` (a noise placement's variances and
  losses as CSV), and ``figures()``, its headline figures as a sweep's columns.

Which section a result has is decided here, from ``Result.problem_class``: the one place a
branch on the problem class belongs (result rendering). What a section prints beyond the
result's fields (the objective as the spec writes it, each table's outcome axis, an
obfuscation's leakage bound) comes from ``spec_facts(problem)``, recorded on the result by the
caller that holds the problem (``privopt.api``); a result without them (a cluster solve, or one
built by hand) prints what its fields hold.

Every piece of user text (labels, names, titles, the spec's expressions) passes through
``privopt.render`` in text and through ``html.escape`` (or pandas' escaping ``to_html``) in
HTML, so a label ``<script>`` is shown, never run.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from .records import Record
from .render import fmt, fmt12, print_table, sci, visible
from .render import markup as escape

if TYPE_CHECKING:
    from pathlib import Path

    import pandas as pd
    from rich.console import Console

GROUP_MEASURES = ("objective", "beta", "beta_min", "c_star", "case")  # the rest of a group row is its key
SWEPT_MEASURE = re.compile(r"dp\(|loglift\(|^naive mixture objective$").search  # the measures a sweep shows
MAX_ROWS = 40  # rows of a table printed (or shown in HTML) before "... not shown"
TEXT_WIDTH = 160  # the width of unwrapped text (as the CLI lays out tables off a terminal)


class Section(Protocol):
    """One part of a result that renders itself as JSON keys, text and HTML."""

    name: str

    def json(self) -> dict[str, Any]:
        """The top-level keys (and values) this section adds to the result's JSON."""

    def print(self, console: Console) -> None:
        """Print the section on a Rich console (markup on)."""

    def text_lines(self, width: int | None = None) -> list[str]:
        """The printed text as plain lines, laid out at ``width`` columns (None: unwrapped)."""

    def html(self) -> str:
        """The section as HTML tables, every user text escaped."""

    def figures(self) -> dict[str, str]:
        """The section's headline figures as printed (column -> text): a sweep's columns."""

    def files(self) -> dict[str, Callable[[Path], None]]:
        """The section's own files of ``--out DIR``, by name, each with its writer."""


def text_console(width: int | None) -> Console:
    """A Rich console that writes plain text into memory: at ``width`` columns, wrapping at
    spaces, or (``width`` None) ``TEXT_WIDTH`` wide with lines left whole (soft wrap), as the
    CLI's console is off a terminal."""
    from rich.console import Console

    return Console(
        file=io.StringIO(),
        width=width or TEXT_WIDTH,
        soft_wrap=width is None,
        highlight=False,
        color_system=None,
        force_terminal=False,
        force_jupyter=False,
    )


def captured_lines(console: Console) -> list[str]:
    """What ``console`` (a ``text_console``) has printed, as lines."""
    return console.file.getvalue().splitlines()


def spec_facts(problem) -> dict[str, Any]:
    """What the text of a result shows from the spec beyond the result's own fields:
    ``{"sense", "objective"}`` (the objective as the spec writes it), ``"outcomes"``: for the
    designed table, its name -> the outcome axis (the design's first target: the columns of its
    printed table) and the other axes (the rows); for an obfuscation ``"leakage"`` (the bound
    as written, or None) and ``"eps"``. ``problem`` is a ``privopt.model.problem.Problem``
    (read by its attributes: this layer does not import the model)."""
    o = problem.objective
    facts: dict[str, Any] = {"sense": getattr(o, "sense", None), "objective": getattr(o, "text", None)}
    design = getattr(problem, "design", None)
    if design is not None:
        outcome = design.targets[0]
        facts["outcomes"] = {design.name: (outcome, [a for a in design.axes if a != outcome])}
    model = getattr(problem, "obfuscation", None)
    if model is not None:
        facts |= {
            "objective": model.objective.text,
            "eps": model.eps,
            "leakage": None if model.leakage is None else model.leakage.text,
        }
    return facts


def sections_of(result) -> tuple[Section, ...]:
    """The sections of ``result`` (a ``privopt.results.Result``), by its problem class."""
    kind = result.problem_class
    if kind.startswith("atr-"):
        return (ClusterReport(result),) if result.engine != "local" else (TransparencyReport(result),)
    if kind == "noise-placement":
        return (NoisePlacement(result),)
    if kind == "rank-preserving-obfuscation":
        return (Obfuscation(result),)
    return (Mechanism(result),)


class _ResultSection(Record):
    """A section read from a result's fields (``result``: a ``privopt.results.Result``); each
    subclass prints its own text (``print``) and names its HTML tables (``frames``)."""

    result: Any

    def json(self) -> dict[str, Any]:
        """``measures`` (when the class measures its table) and the class's own keys
        (``Result.details``), in that order."""
        r = self.result
        return ({"measures": r.measures} if r.measures else {}) | dict(r.details)

    def figures(self) -> dict[str, str]:
        """The privacy measures of the released table (a DP or LDP budget, a log-lift, the
        naive mixture's objective), each to 6 digits."""
        return {k: fmt(v) for k, v in self.result.measures.items() if SWEPT_MEASURE(k)}

    def text_lines(self, width: int | None = None) -> list[str]:
        console = text_console(width)
        self.print(console)
        return captured_lines(console)

    def html(self) -> str:
        return "".join(html_table(title, frame) for title, frame in self.frames())

    def frames(self) -> list[tuple[str, pd.DataFrame]]:
        """The section's tables for HTML: (title, frame) each."""
        return []

    def files(self) -> dict[str, Callable[[Path], None]]:
        """The section's own files of ``--out DIR`` (privopt.outdir), by name, each with the
        function that writes it."""
        return {}

    def _timings(self) -> str:
        tm = self.result.timings
        return f"parse {tm['parse_s']:.3f}s, solve {tm['solve_s']:.3f}s, total {tm['total_s']:.3f}s"

    def _where(self) -> str:
        r = self.result
        return escape(f"method: {r.method}" + (f" on {r.backend}" if r.backend else ""))

    def _fact(self, name: str, default=None):
        return self.result.facts.get(name, default)


class TransparencyReport(_ResultSection):
    """A transparency report (Chen et al.): the objective (max confidence, or the uncertainty
    -log beta of Sec. 4), beta* = max over groups of the largest posterior (Def. 3), and the
    QID groups' table: per group its key, objective, beta, beta_min (eq. 8), C* and the
    binding case of Theorem 1."""

    name = "transparency report"

    def print(self, console: Console) -> None:
        r, v = self.result, self.result.verification
        kind = "max confidence" if r.objective_kind == "max_confidence" else "min uncertainty (-log beta)"
        console.print(
            f"status: [green]optimal[/green] (verified)   {kind}: [bold]{fmt(r.objective)}[/bold]"
            + (f"   beta* = {fmt(r.beta)}" if r.objective_kind != "max_confidence" else "")
        )
        console.print(f"{self._where()}   {self._timings()}")
        console.print(
            f"verification: max confidence recomputed {fmt(v['max_confidence'])} "
            f"(error {v['max_confidence_error']:.1e}); constraint violation {v['max_constraint_violation']:.1e}; "
            f"row sums +- {v['max_row_sum_error']:.1e}; {v['optimality']}"
        )
        for nr in r.details.get("no_records", ()):  # record-level tables: combinations without records
            shown = "; ".join(", ".join(f"{k}={v}" for k, v in c.items()) for c in nr["cells"][:5])
            more = f" and {len(nr['cells']) - 5} more" if len(nr["cells"]) > 5 else ""
            console.print(
                escape(
                    f"no records: {nr['table']} has no record in '{nr['file']}' for {len(nr['cells'])} "
                    f"combination(s) ({shown}{more}); {nr['treatment']}"
                )
            )
        self._print_groups(console)

    def _print_groups(self, console: Console) -> None:
        import numpy as np
        from rich.table import Table

        g = self.result.group_columns()  # without pandas
        keys, n = group_keys(g), len(g)
        labels = [*keys, "case"]
        gt = Table(title=f"QID groups ({n:,})", title_justify="left")
        for c in g.columns:
            gt.add_column(escape(c), justify="left" if c in labels else "right")
        shown = {c: g.cells(c, slice(0, MAX_ROWS)) for c in g.columns}  # spec order, as in --json and groups.csv
        for i in range(min(n, MAX_ROWS)):
            gt.add_row(*[escape(shown[c][i]) if c in labels else fmt(shown[c][i]) for c in g.columns])
        print_table(gt, console)
        if n > MAX_ROWS:
            console.print(
                f"(the first {MAX_ROWS} of {n:,} groups in spec order, {n - MAX_ROWS:,} not shown; "
                "--json or --out DIR lists every group)"
            )
        if n > MAX_ROWS and not np.isnan(beta := g.columns["beta"]).all():
            top = int(np.nanargmax(beta))
            console.print(
                visible(
                    "the group with the largest beta: "
                    + ", ".join(f"{c}={g.cells(c, top)}" for c in keys)
                    + f" (beta {fmt(beta[top])})"
                ),
                markup=False,
            )

    def frames(self) -> list[tuple[str, pd.DataFrame]]:
        g = self.result.groups
        return [(f"QID groups ({len(g):,})", g)]


class ClusterReport(_ResultSection):
    """A transparency report solved on a cluster (privopt.engines): its figures only; the
    groups and tables stay in ``--json`` and ``--out``."""

    name = "transparency report (cluster)"

    def print(self, console: Console) -> None:
        r = self.result
        console.print(
            f"status: [green]optimal[/green] (verified)   objective: [bold]{fmt12(r.objective)}[/bold]"
            + (f"   beta* = {fmt(r.beta)}" if r.beta is not None else "")
        )
        tm = r.timings
        console.print(
            escape(f"method: {r.method} on the {r.engine} engine ({len(r.groups):,} QID groups)")
            + f"   solve {tm['solve_s']:.3f}s, total {tm['total_s']:.3f}s"
        )
        console.print(escape(f"verification: {r.verification.get('optimality', '')}"))
        console.print("(--json prints every group; --out DIR writes them as CSV)")

    def frames(self) -> list[tuple[str, pd.DataFrame]]:
        g = self.result.groups
        return [(f"QID groups ({len(g):,})", g)]


class Mechanism(_ResultSection):
    """A mechanism table (Ding et al.; Ramon & Basu Sec. 3.3): the objective as the spec writes
    it, the verification with its evidence (a dual bound, or the theorem of a closed form), and
    the privacy and utility measures of the released table."""

    name = "mechanism"

    def print(self, console: Console) -> None:
        r, v = self.result, self.result.verification
        objective = f"{self._fact('sense', 'minimize')} {escape(self._fact('objective') or r.objective_kind)}"
        console.print(f"status: [green]optimal[/green] (verified)   {objective}: [bold]{fmt12(r.objective)}[/bold]")
        console.print(f"{self._where()}   {self._timings()}")
        console.print(
            f"verification: constraint violation {v['max_constraint_violation']:.1e} (relative); budget "
            f"shortfall {v['max_budget_violation']:.1e} (scaled by e^-eps); row sums +- {v['max_row_sum_error']:.1e}; "
            f"{escape(v['optimality'])}"
        )
        console.print(escape(evidence(v.get("evidence", {}))))
        print_measures(console, "measures of the released mechanism", r.measures, fmt)

    def frames(self) -> list[tuple[str, pd.DataFrame]]:
        return [("measures of the released mechanism", measures_frame(self.result.measures))]


def versus(loss: float, optimum: float, bound: float | None) -> tuple[str, str]:
    """A placement's loss and its ratio to the optimum, as the table prints them. A loss inside
    the optimum's certified interval [bound, optimum] (a restriction of the program solved to its
    own tolerance, such as diagonal noise where the optimum's is diagonal too) is not better than
    the optimum: it is shown as max(loss, optimum), equal within the gap. A loss below the proven
    bound belongs to a placement outside the program, and is shown as it is."""
    if optimum and bound is not None and bound <= loss < optimum:
        return fmt12(optimum), f"x1 (equal within the gap {optimum - bound:.2g})"
    return fmt12(loss), f"x{loss / optimum:.4g}" if optimum else "-"


class NoisePlacement(_ResultSection):
    """Gaussian noise placement (Ramon & Basu Sec. 3.2): the least expected squared error beside
    the classic placements (noise on the inputs only, local DP; on the answers only), the
    optimum with diagonal noise only where a noise is correlated, each noise's (co)variances,
    and the (eps, delta) achieved by the analytic Gaussian calibration."""

    name = "noise placement"

    def print(self, console: Console) -> None:
        from rich.table import Table

        r, v = self.result, self.result.verification
        objective = escape(self._fact("objective") or r.objective_kind)
        console.print(f"status: [green]optimal[/green] (verified)   {objective}: [bold]{fmt12(r.objective)}[/bold]")
        where = f"method: {r.method} on {r.backend}"
        if r.method == "barrier":  # privopt's own Newton method (methods/barrier.py): no solver to name
            where = "method: barrier (Newton's method on the log barrier, numpy and LAPACK; no solver)"
        console.print(f"{escape(where)}   {self._timings()}")
        console.print(
            escape(
                f"verification: largest sensitivity {v['max_sensitivity']:.9g} (bound {v['sensitivity_bound']:.9g}, "
                f"{v['calibration']} calibration); delta achieved {v['delta_achieved']:.6g} at eps = {fmt12(v['eps'])} "
                f"(required {fmt12(v['delta'])}); {v['optimality']}"
            )
        )
        console.print(escape(evidence(v.get("evidence", {}))))
        bt = Table(title="expected squared error", title_justify="left")
        bt.add_column("noise placed")
        bt.add_column("loss", justify="right")
        bt.add_column("vs optimum", justify="right")
        bound = (v.get("evidence") or {}).get("bound")
        for name, loss in self.losses():
            bt.add_row(name, *versus(loss, r.objective, bound))
        print_table(bt, console)
        nt = Table(title="noise (co)variances", title_justify="left")
        nt.add_column("noise")
        nt.add_column("variances", justify="left")
        for name, S in r.details["noise"].items():
            label, flat = variances(S)
            shown = ", ".join(fmt(x) for x in flat[:MAX_ROWS]) + (", ..." if len(flat) > MAX_ROWS else "")
            nt.add_row(escape(name), escape(f"{label}: {shown}"))
        print_table(nt, console)
        for name, check in v.get("baselines", {}).items():
            if not check["passed"]:
                console.print(
                    escape(
                        f"note: the {name} baseline is feasible but its optimality is not certified: "
                        + "; ".join(check["failures"])
                    )
                )

    def losses(self) -> list[tuple[str, float | None]]:
        """(placement, expected squared error): the optimum, then the classic placements."""
        r = self.result
        base = r.details["baselines"]
        rows = [
            ("optimized (this spec)", r.objective),
            ("inputs only (local DP)", base["input_only"]),
            ("answers only", base["output_only"]),
        ]
        gain = r.details.get("correlation_gain")
        if gain:
            rows.append(("optimized, diagonal noise only", gain["diagonal"]))
        return rows

    def files(self) -> dict[str, Callable[[Path], None]]:
        """``noise.csv`` (``noise, i, variance``: Sigma_ii of every noise vector, i from 1),
        ``covariance_NAME.csv`` (``i, j, covariance``) for each correlated noise, and
        ``losses.csv`` (``placement, loss``: the optimum and the classic placements)."""
        import pandas as pd

        r = self.result
        noise = r.details.get("noise")
        if not noise:
            return {}
        files: dict[str, Callable[[Path], None]] = {}
        rows = []
        for name, S in noise.items():
            full = bool(S) and isinstance(S[0], list)
            rows += [(name, i + 1, S[i][i] if full else S[i]) for i in range(len(S))]
            if full:
                n = len(S)
                cov = pd.DataFrame(
                    {
                        "i": [i + 1 for i in range(n) for _ in range(n)],
                        "j": [j + 1 for _ in range(n) for j in range(n)],
                        "covariance": [S[i][j] for i in range(n) for j in range(n)],
                    }
                )
                files[f"covariance_{name}.csv"] = lambda path, cov=cov: cov.to_csv(path, index=False)
        variances = pd.DataFrame(rows, columns=["noise", "i", "variance"])
        files["noise.csv"] = lambda path: variances.to_csv(path, index=False)
        base = r.details.get("baselines", {})
        losses = [
            ("optimized", r.objective),
            ("inputs only", base.get("input_only")),
            ("answers only", base.get("output_only")),
        ]
        gain = r.details.get("correlation_gain")
        if gain:
            losses.append(("optimized, diagonal noise only", gain.get("diagonal")))
        frame = pd.DataFrame(losses, columns=["placement", "loss"])
        files["losses.csv"] = lambda path: frame.to_csv(path, index=False)
        return files

    def frames(self) -> list[tuple[str, pd.DataFrame]]:
        import pandas as pd

        noise = [(name, *variances(S)) for name, S in self.result.details["noise"].items()]
        return [
            ("expected squared error", pd.DataFrame(self.losses(), columns=["noise placed", "loss"])),
            (
                "noise (co)variances",
                pd.DataFrame(
                    {
                        "noise": [n for n, _, _ in noise],
                        "kind": [k for _, k, _ in noise],
                        "variances": [", ".join(map(fmt, f)) for _, _, f in noise],
                    }
                ),
            ),
            ("measures", measures_frame(self.result.measures)),
        ]


class Obfuscation(_ResultSection):
    """Rank-preserving obfuscation (Shariatnasab et al.): Q of Theorem 1 at the optimal channel,
    the leakage recomputed against its bound, the certificate of global optimality, and the
    optimum under the other restriction (symmetric or unrestricted channel)."""

    name = "obfuscation"

    def print(self, console: Console) -> None:
        from rich.table import Table

        r, v, d = self.result, self.result.verification, self.result.details
        objective = escape(self._fact("objective") or r.objective_kind)
        console.print(
            f"status: [green]optimal[/green] (verified, global)   minimize {objective}: [bold]{fmt12(r.objective)}[/bold]"
        )
        console.print(escape(f"method: {r.method} ({r.stats['route']})") + f"   {self._timings()}")
        leakage = self._fact("leakage")
        bound = (
            "no leakage bound"
            if leakage is None
            else f"{escape(leakage)} (eps = {fmt12(self._fact('eps', v.get('leakage_bound')))} bits)"
        )
        console.print(
            f"verification: leakage recomputed {v['leakage_bits']:.12g} bits; {bound}; {escape(v['optimality'])}"
        )
        symmetric = d["channel"]["symmetric"]
        ct = Table(title="optimal rank distance Q by restriction", title_justify="left")
        ct.add_column("channel")
        ct.add_column("Q", justify="right")
        ct.add_row("symmetric" + (" (this spec)" if symmetric else ""), fmt12(d["comparison"]["symmetric"]))
        ct.add_row("unrestricted" + ("" if symmetric else " (this spec)"), fmt12(d["comparison"]["unrestricted"]))
        print_table(ct, console)
        print_measures(console, "measures of the released channel", r.measures, fmt12)

    def figures(self) -> dict[str, str]:
        """The privacy measures, then Q under each restriction (12 digits)."""
        c = self.result.details["comparison"]
        return super().figures() | {f"Q, {k}": fmt12(c.get(k)) for k in ("symmetric", "unrestricted")}

    def frames(self) -> list[tuple[str, pd.DataFrame]]:
        import pandas as pd

        d = self.result.details
        c, ch = d["comparison"], d["channel"]
        return [
            (
                "optimal rank distance Q by restriction",
                pd.DataFrame(
                    {
                        "channel": ["symmetric", "unrestricted"],
                        "Q": [c["symmetric"], c["unrestricted"]],
                        "this spec": [ch["symmetric"], not ch["symmetric"]],
                    }
                ),
            ),
            ("measures of the released channel", measures_frame(self.result.measures)),
        ]


def group_keys(groups: Any) -> list[str]:
    """The key columns of a QID groups frame (a DataFrame or ``privopt.results.Columns``: its
    public variables): every column that is not a measure (``GROUP_MEASURES``)."""
    return [c for c in groups.columns if c not in GROUP_MEASURES]


def variances(S: list) -> tuple[str, list[float]]:
    """(what is shown, the values): a noise's variances, or the diagonal of its covariance."""
    if not S or not isinstance(S[0], list):
        return "variances", S
    return "diagonal of the covariance", [S[i][i] for i in range(len(S))]


def evidence(e: dict) -> str:
    """One line on the evidence of optimality (docs/verification.md)."""
    if "bound" not in e:
        return f"optimality evidence: {e.get('kind', 'none')}"
    return (
        f"optimality evidence: {e['kind']} {fmt12(e['bound'])} (a proven {e['side']} bound), "
        f"gap {sci(e.get('gap'))} (tolerance {sci(e.get('tolerance'))})"
    )


def print_measures(console: Console, title: str, measures: Mapping[str, float], number) -> None:
    """The measures of a released table as a two-column table, each value by ``number``."""
    from rich.table import Table

    mt = Table(title=title, title_justify="left", min_width=len(title))  # a narrow table does not wrap its title
    mt.add_column("measure")
    mt.add_column("value", justify="right")
    for k, val in measures.items():
        mt.add_row(escape(k), number(val))
    print_table(mt, console)


def print_released(console: Console, name: str, table: Any, outcome: str, keys: list[str]) -> None:
    """A released table (``privopt.results.Columns``) P(outcome | keys) wide: one row per
    combination of ``keys`` (the first ``MAX_ROWS``, in spec order), one column per label of
    ``outcome`` (``Columns.wide``, without pandas)."""
    from rich.table import Table

    rows, outcomes, values = table.wide(keys, outcome)
    t = Table(title=escape(f"{name} = P({outcome} | {', '.join(keys)})"), title_justify="left")
    for k in keys:
        t.add_column(escape(k))
    for c in outcomes:
        t.add_column(escape(c), justify="right")
    for idx, row in zip(rows[:MAX_ROWS], values[:MAX_ROWS]):
        t.add_row(*[escape(i) for i in idx], *[fmt(x) for x in row])
    print_table(t, console, names=[escape(k) for k in keys] + [escape(f"{name}({outcome} = {c})") for c in outcomes])
    if len(rows) > MAX_ROWS:
        console.print(
            f"(the first {MAX_ROWS} of {len(rows):,} rows in spec order, {len(rows) - MAX_ROWS:,} not shown; "
            "--out DIR writes the whole table)"
        )


def table_layout(df: Any, facts: Mapping[str, Any], name: str) -> tuple[str, list[str]]:
    """(outcome axis, the other axes) of the released table ``name``: from the spec's facts,
    else the last label column as the outcome (a design P(targets | given) has its axes in the
    order given + targets)."""
    if name in facts.get("outcomes", {}):
        outcome, keys = facts["outcomes"][name]
        return outcome, list(keys)
    labels = [c for c in df.columns if c != "value"]
    return labels[-1], labels[:-1]


def measures_frame(measures: Mapping[str, float]) -> pd.DataFrame:
    """The measures as a two-column frame (measure, value)."""
    import pandas as pd

    return pd.DataFrame({"measure": list(measures), "value": list(measures.values())})


def html_table(title: str, frame: pd.DataFrame, index: bool = False, max_rows: int = MAX_ROWS) -> str:
    """``frame`` as an HTML table under its (escaped) title: pandas ``to_html`` escapes every
    cell, header and (``index``) row label; at most ``max_rows`` rows, with a line saying how
    many are not shown."""
    shown = frame.head(max_rows)
    more = (
        f"<p>(the first {max_rows} of {len(frame):,} rows, {len(frame) - max_rows:,} not shown)</p>"
        if len(frame) > max_rows
        else ""
    )
    import html  # for a notebook, not at start-up

    return f"<h4>{html.escape(title)}</h4>" + shown.to_html(index=index, escape=True, na_rep="-") + more
