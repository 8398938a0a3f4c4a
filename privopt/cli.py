"""Command line: ``privopt solve SPEC`` and ``privopt explain SPEC``.

Exit codes: 0 solved (check: all paths agree), 1 internal or solver error, 2 spec or usage
error, 3 infeasible, 4 (check) a path disagrees or fails.
A user error prints ``FILE:LINE:COL``, the line, a caret and a hint; never a traceback
(set PRIVOPT_DEBUG=1 to see one for an internal error).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table as RichTable

from . import api
from .errors import InfeasibleError, SolverError, SpecError, UsageError

EXIT_OK, EXIT_INTERNAL, EXIT_USAGE, EXIT_INFEASIBLE, EXIT_DISAGREE = 0, 1, 2, 3, 4
MAX_ROWS = 40

# rich assumes 80 columns when output is not a terminal (pipes, CI logs): allow wide tables there
_WIDTH = None if sys.stdout.isatty() else 160
out = Console(highlight=False, soft_wrap=True, width=_WIDTH)
err = Console(stderr=True, highlight=False, soft_wrap=True, width=_WIDTH)


def _params(pairs: tuple[str, ...]) -> dict[str, str]:
    params = {}
    for pair in pairs:
        name, eq, value = pair.partition("=")
        if not eq or not name.strip():
            raise UsageError(f"--set {pair}: write NAME=VALUE")
        params[name.strip()] = value.strip()
    return params


def _fail(e: BaseException) -> None:
    """Print an error for a person and exit with its code."""
    if isinstance(e, (SpecError, UsageError)):
        err.print(str(e), markup=False)
        sys.exit(EXIT_USAGE)
    if isinstance(e, InfeasibleError):
        err.print(str(e), markup=False)
        sys.exit(EXIT_INFEASIBLE)
    if isinstance(e, SolverError):
        err.print(f"error: {e}", markup=False)
        sys.exit(EXIT_INTERNAL)
    if os.environ.get("PRIVOPT_DEBUG"):
        raise e
    err.print(
        f"internal error: {type(e).__name__}: {e}\n(this is a bug in privopt; PRIVOPT_DEBUG=1 shows the traceback)",
        markup=False,
    )
    sys.exit(EXIT_INTERNAL)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="privopt")
def main() -> None:
    """privopt: design privacy mechanisms from a spec file."""


_common = [
    click.argument("spec", type=click.Path(dir_okay=False, path_type=Path)),
    click.option("--set", "sets", multiple=True, metavar="NAME=VALUE", help="Override a param of the spec."),
    click.option("--allow-paths", is_flag=True, help="Let data paths leave the spec's folder."),
]


def _with_common(f):
    for deco in reversed(_common):
        f = deco(f)
    return f


@main.command()
@_with_common
@click.option("--method", type=click.Choice(["auto", "closed-form", "lfp", "reduced-lp", "lp", "qp"]), default="auto", show_default=True)
@click.option("--backend", default="auto", show_default=True, help="highs, scipy, cvxpy, pyomo; auto = highs, or cvxpy (Clarabel) for a QP.")
@click.option("--solver", default=None, help="Inner solver for cvxpy: CLARABEL, HIGHS, SCS, OSQP.")
@click.option("--time-limit", type=float, default=None, metavar="SECONDS", help="Limit for the LP solves.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of the summary.")
@click.option("--no-tables", is_flag=True, help="Leave the released tables out of the output.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None, help="Write result.json and the tables as CSV here.")
def solve(spec, sets, allow_paths, method, backend, solver, time_limit, as_json, no_tables, out_dir):
    """Solve SPEC and print the optimal mechanism with its verification."""
    try:
        problem = api.load(spec, _params(sets), allow_paths)
        result = problem.solve(method=method, backend=backend, time_limit=time_limit, solver=solver)
        if out_dir is not None:
            _write_out(out_dir, result)
    except Exception as e:  # noqa: BLE001 - the CLI boundary maps every error to an exit code
        _fail(e)
        return
    if as_json:
        click.echo(result.to_json(tables=not no_tables))
    else:
        _print_summary(problem, result, tables=not no_tables)
        if out_dir is not None:
            out.print(f"wrote {out_dir}/result.json and the tables as CSV")
    if result.status == "infeasible":
        if not as_json:
            err.print("infeasible: " + "; ".join(result.reasons), markup=False)
        sys.exit(EXIT_INFEASIBLE)


@main.command()
@_with_common
@click.option("--backends", default=None, metavar="LIST", help="Comma-separated: highs,scipy,cvxpy,pyomo or cvxpy:SOLVER (default: all).")
@click.option("--tol", type=float, default=1e-7, show_default=True, help="Largest allowed objective difference (relative beyond |objective| = 1) and violation.")
@click.option("--time-limit", type=float, default=None, metavar="SECONDS", help="Limit for each solver call.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of the table.")
def check(spec, sets, allow_paths, backends, tol, time_limit, as_json):
    """Solve SPEC by every applicable method and backend, and compare.

    Each path's table is measured by privopt itself: the objective it achieves and its largest
    violation of the spec. Exit 0 when all agree within --tol, 4 when any differs or fails.
    """
    from .crosscheck import run_check

    try:
        problem = api.load(spec, _params(sets), allow_paths)
        names = [b.strip() for b in backends.split(",") if b.strip()] if backends else None
        report = run_check(problem, names, tol, time_limit)
    except Exception as e:  # noqa: BLE001
        _fail(e)
        return
    if as_json:
        import json

        click.echo(json.dumps(report.to_dict(), indent=2))
    else:
        t = RichTable(title=f"{escape(str(problem.title or spec))}: every path", title_justify="left")
        for col in ("method", "backend", "status", "objective", "abs diff", "max violation", "build s", "solve s", "note"):
            t.add_column(col, justify="right" if col in ("objective", "abs diff", "max violation", "build s", "solve s") else "left")
        for p in report.paths:
            t.add_row(
                p.method, p.backend or "-", p.status, _fmt12(p.objective), _sci(p.abs_diff), _sci(p.max_violation),
                f"{p.build_s:.3f}", f"{p.solve_s:.3f}", p.message,
            )
        out.print(t)
        ref = report.reference
        out.print(f"reference: {ref['method']}" + (f" on {ref['backend']}" if ref and ref["backend"] else "") if ref else "no path succeeded")
        for line in report.problems:
            out.print(f"[red]problem:[/red] {line}", highlight=False)
        out.print("[green]all paths agree[/green]" if report.agree else "[red]paths disagree or fail[/red]")
    sys.exit(EXIT_OK if report.agree else EXIT_DISAGREE)


def _sweep_values(text: str) -> tuple[str, list[float]]:
    """NAME=V1,V2,... or NAME=START:STOP:COUNT (COUNT evenly spaced values, both ends included)."""
    name, eq, values = text.partition("=")
    if not eq or not name.strip() or not values.strip():
        raise UsageError(f"{text}: write NAME=V1,V2,... or NAME=START:STOP:COUNT")
    try:
        if ":" in values:
            start, stop, count = values.split(":")
            import numpy as np

            out = [float(v) for v in np.linspace(float(start), float(stop), int(count))]
        else:
            out = [float(v) for v in values.split(",") if v.strip()]
    except ValueError:
        raise UsageError(f"{text}: the values must be numbers (and COUNT an integer)") from None
    if not out:
        raise UsageError(f"{text}: no values")
    return name.strip(), out


@main.command()
@_with_common
@click.argument("over", metavar="NAME=VALUES")
@click.option("--method", type=click.Choice(["auto", "closed-form", "lfp", "reduced-lp", "lp", "qp"]), default="auto", show_default=True)
@click.option("--backend", default="auto", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON list, a result per value.")
def sweep(spec, sets, allow_paths, over, method, backend, as_json):
    """Solve SPEC once per value of a param: NAME=V1,V2,... or NAME=START:STOP:COUNT.

    Each value is a full solve with verification; an infeasible value is a row, not an error.
    Exit 0 when every value solves or is infeasible.
    """
    rows = []
    try:
        name, values = _sweep_values(over)
        base = _params(sets)
        for v in values:
            problem = api.load(spec, base | {name: v}, allow_paths)
            rows.append((v, problem.solve(method=method, backend=backend)))
    except Exception as e:  # noqa: BLE001
        _fail(e)
        return
    if as_json:
        import json

        click.echo(json.dumps([{name: v} | r.to_dict(tables=False, groups=False) for v, r in rows], indent=2))
        return
    first = next((r for _, r in rows if r.status == "optimal"), rows[0][1])
    measures = [k for k in first.measures if "dp(" in k or "loglift(" in k or k == "naive mixture objective"]
    t = RichTable(title=f"{escape(str(problem.title or spec))}: sweep over {name}", title_justify="left")
    for col in [name, "status", "objective", *measures]:
        t.add_column(escape(col), justify="left" if col == "status" else "right")
    for v, r in rows:
        t.add_row(f"{v:g}", r.status, _fmt12(r.objective), *[_fmt(r.measures.get(m)) for m in measures])
    out.print(t)
    for v, r in rows:
        if r.reasons:
            out.print(f"{name}={v:g}: " + "; ".join(r.reasons), markup=False)


def _fmt12(x) -> str:
    return "-" if x is None else f"{x:.12g}"


def _sci(x) -> str:
    return "-" if x is None else f"{x:.1e}"


@main.command()
@_with_common
def explain(spec, sets, allow_paths):
    """Say what SPEC is, which methods apply and which one solve would pick."""
    try:
        problem = api.load(spec, _params(sets), allow_paths)
        analysis = problem.explain()
    except Exception as e:  # noqa: BLE001
        _fail(e)
        return
    out.print(f"spec:    {problem.title or spec}  ({problem.source_name})")
    for v in problem.variables.values():
        labels = ", ".join(v.labels[:8]) + (", ..." if v.size > 8 else "")
        out.print(f"  var {v.name} : {v.role.value} ({v.size} values: {labels})", markup=False)
    for t in problem.known.values():
        out.print(f"  known {t.name}: axes {', '.join(t.axes)}", markup=False)
    d = problem.design
    out.print(f"  design {d.name} = P({', '.join(d.targets)} | {', '.join(d.given)})", markup=False)
    params = ", ".join(f"{k}={v:g}" for k, v in problem.params.items()) or "none"
    o = problem.objective
    if problem.family == "atr":
        out.print(f"  {len(problem.constraints)} elementwise constraint(s); params: {params}", markup=False)
        m = o.measure
        out.print(f"  {o.sense} {o.kind}({', '.join(m.public + (m.outcome,))} -> {', '.join(m.private)}); prior {m.prior}"
                  + (f", true mapping {m.reference}" if m.reference else ""), markup=False)
    else:
        for c in problem.constraints:
            rows = int(c.expr.defined_mask().sum())
            out.print(f"  subject to {c.text}  ({rows} cell(s){', induced P(...) fixed' if c.induced else ''})", markup=False)
        for b in problem.budgets:
            pairs = "all pairs" if b.pairs is None else f"{len(b.pairs)} adjacent pairs"
            out.print(f"  budget {b.text}  ({b.kind}, eps={b.eps:g}" + (f", delta={b.delta:g}" if b.delta else "") + f", {pairs})", markup=False)
        out.print(f"  {o.sense} {o.text}  ({o.kind}); params: {params}", markup=False)
    for line in analysis.summary_lines():
        out.print(line, markup=False)


def _write_out(out_dir: Path, result) -> None:
    """Write everything to a temporary folder first, so a failure leaves nothing half-written."""
    out_dir = Path(out_dir)
    parent = out_dir.resolve().parent
    parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".privopt-", dir=parent))
    try:
        (tmp / "result.json").write_text(result.to_json(tables=False))
        for name, df in result.tables.items():
            df.to_csv(tmp / f"{name}.csv", index=False)
        if not result.groups.empty:
            result.groups.to_csv(tmp / "groups.csv", index=False)
        if out_dir.exists():
            for f in tmp.iterdir():
                os.replace(f, out_dir / f.name)
            shutil.rmtree(tmp)
        else:
            os.replace(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _fmt(x) -> str:
    if x is None:
        return "-"
    try:
        xf = float(x)
    except (TypeError, ValueError):
        return str(x)
    return "-" if xf != xf else f"{xf:.6g}"


def _print_summary(problem, result, tables: bool) -> None:
    title = problem.title or problem.source_name
    out.print(f"[bold]{escape(str(title))}[/bold]")
    if result.status != "optimal":
        out.print(f"status: [red]{result.status}[/red]")
        return
    if problem.family == "mechanism":
        _print_mechanism(problem, result, tables)
        return
    kind = "max confidence" if result.objective_kind == "max_confidence" else "min uncertainty (-log beta)"
    out.print(f"status: [green]optimal[/green] (verified)   {kind}: [bold]{_fmt(result.objective)}[/bold]"
              + (f"   beta* = {_fmt(result.beta)}" if result.objective_kind != "max_confidence" else ""))
    where = f"method: {result.method}" + (f" on {result.backend}" if result.backend else "")
    tm = result.timings
    out.print(f"{where}   parse {tm['parse_s']:.3f}s, solve {tm['solve_s']:.3f}s, total {tm['total_s']:.3f}s")
    v = result.verification
    out.print(f"verification: max confidence recomputed {_fmt(v['max_confidence'])} "
              f"(error {v['max_confidence_error']:.1e}); constraint violation {v['max_constraint_violation']:.1e}; "
              f"row sums +- {v['max_row_sum_error']:.1e}; {v['optimality']}")

    g = result.groups
    gt = RichTable(title=f"QID groups ({len(g):,})", title_justify="left")
    cols = [c for c in g.columns]
    for c in cols:
        gt.add_column(c, justify="right" if c not in problem.variables and c != "case" else "left")
    order = g.sort_values("beta", ascending=False).head(MAX_ROWS)
    for _, row in order.iterrows():
        gt.add_row(*[_fmt(row[c]) if c not in problem.variables and c != "case" else str(row[c]) for c in cols])
    out.print(gt)
    if len(g) > MAX_ROWS:
        out.print(f"(the {MAX_ROWS} groups with the largest beta; --out DIR writes all of them)")
    if tables:
        _print_tables(problem, result)


def _print_mechanism(problem, result, tables: bool) -> None:
    o = problem.objective
    out.print(f"status: [green]optimal[/green] (verified)   {o.sense} {escape(o.text)}: [bold]{_fmt12(result.objective)}[/bold]")
    where = f"method: {result.method}" + (f" on {result.backend}" if result.backend else "")
    tm = result.timings
    out.print(f"{where}   parse {tm['parse_s']:.3f}s, solve {tm['solve_s']:.3f}s, total {tm['total_s']:.3f}s")
    v = result.verification
    out.print(f"verification: constraint violation {v['max_constraint_violation']:.1e}; budget violation "
              f"{v['max_budget_violation']:.1e}; row sums +- {v['max_row_sum_error']:.1e}; {v['optimality']}")
    mt = RichTable(title="measures of the released mechanism", title_justify="left")
    mt.add_column("measure")
    mt.add_column("value", justify="right")
    for k, val in result.measures.items():
        mt.add_row(escape(k), _fmt(val))
    out.print(mt)
    if tables:
        _print_tables(problem, result)


def _print_tables(problem, result) -> None:
    for name, df in result.tables.items():
        outcome = problem.design.targets[0]
        keys = [a for a in problem.design.axes if a != outcome]
        wide = df.pivot_table(index=keys, columns=outcome, values="value", observed=True, sort=False)
        t = RichTable(title=f"{name} = P({outcome} | {', '.join(keys)})", title_justify="left")
        for k in keys:
            t.add_column(k)
        for c in wide.columns:
            t.add_column(str(c), justify="right")
        for idx, row in wide.head(MAX_ROWS).iterrows():
            idx = idx if isinstance(idx, tuple) else (idx,)
            t.add_row(*[str(i) for i in idx], *[_fmt(x) for x in row.to_numpy()])
        out.print(t)
        if len(wide) > MAX_ROWS:
            out.print(f"(first {MAX_ROWS} of {len(wide):,} rows; --out DIR writes the whole table)")


if __name__ == "__main__":  # pragma: no cover
    main()
