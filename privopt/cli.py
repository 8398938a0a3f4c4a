"""Command line: ``privopt solve | check | explain | sweep | simulate | audit | apply | verify``.

Exit codes: 0 solved (check: all paths agree; verify: every check holds), 1 internal or
solver error (sweep: a value failed; verify: a check fails), 2 spec or usage error (verify: an
unreadable result, an unknown format, a changed spec or data file), 3 infeasible, 4 (check) a
path disagrees or fails, 130 interrupted (Ctrl-C), 141 stdout's reader went away (a closed
pipe, as in ``privopt solve SPEC | head -2``: no message, the status a shell reports for ``ls``
or ``git`` stopped by SIGPIPE), 143 terminated (SIGTERM).
A user error prints ``FILE:LINE:COL``, the line, a caret and a hint; never a traceback
(set PRIVOPT_DEBUG=1 to see one for an internal error).

stdout carries the result alone (``--json``: one strict JSON object); solver logs go to
``--log FILE`` or, with ``--verbose``, to stderr, and progress to stderr. Every piece of
user-derived text (titles, labels, file names, messages) is printed through
``privopt.render``, so it reaches the terminal as text, never as escape sequences or markup.
"""

from __future__ import annotations

import contextlib
import errno
import math
import os
import re
import signal
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table as RichTable

from . import outdir, solverlog  # standard library only: cheap at start-up
from ._version import __version__
from .errors import InfeasibleError, SolverError, SpecError, UsageError
from .files import NotRegularFile, describe
from .methods import METHODS
from .render import fmt as _fmt
from .render import fmt12 as _fmt12
from .render import markup as escape
from .render import print_table, visible, visible_lines
from .render import sci as _sci
from .sections import MAX_ROWS

EXIT_OK, EXIT_INTERNAL, EXIT_USAGE, EXIT_INFEASIBLE, EXIT_DISAGREE = 0, 1, 2, 3, 4
EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143
EXIT_CLOSED_PIPE = 128 + signal.SIGPIPE  # 141: what a shell reports for `ls | head -1` when ls is stopped by SIGPIPE

MIN_WIDTH = 40  # narrower than this, a line may be wider than the terminal (which wraps it) rather than cut


def _is_composite(problem) -> bool:
    """Whether ``api.load`` gave a composite (``privopt.composite.Composite``) rather than one
    ``Problem``: asked of ``Problem``, so a single spec never imports the composite's solvers
    (issue 23, goal 1)."""
    from .model.problem import Problem

    return not isinstance(problem, Problem)


def _text_width() -> tuple[int, bool]:
    """(the width text is laid out for, whether it is the reader's): COLUMNS when it is set to a
    whole number, else the terminal's; never below MIN_WIDTH. Off a terminal without COLUMNS
    (pipes, CI logs) rich would assume 80: 160 there, so tables stay whole for a parser."""
    columns = (os.environ.get("COLUMNS") or "").strip()
    if columns.isdigit():
        return max(int(columns), MIN_WIDTH), True
    if sys.stdout is not None and sys.stdout.isatty():
        try:
            return max(os.get_terminal_size(sys.stdout.fileno()).columns, MIN_WIDTH), True
        except (OSError, ValueError):
            pass
    return 160, False


class _Stdout(Console):
    """stdout's console. A reader that went away (a closed pipe) raises ``BrokenPipeError``, which
    ends the run quietly with exit 141 (``_reader_gone``), where rich would exit 1."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))


out = _Stdout(highlight=False)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def _lay_out() -> None:
    """Lay text out for this run's reader (``_text_width``), read when each command starts, not
    at import (commands run in one process, as the tests' in-process runs do, each see their own
    COLUMNS). At a known width the summary lines wrap at spaces (never inside a number); off a
    terminal they stay one line each, for whoever parses them."""
    width, sized = _text_width()
    out.width = err.width = width
    out.soft_wrap = not sized


_lay_out()


def _params(pairs: tuple[str, ...]) -> dict[str, str]:
    from .builder.params import CommandLineParams

    params = CommandLineParams()  # errors about these values name them as --set NAME=VALUE
    for pair in pairs:
        name, eq, value = pair.partition("=")
        if not eq or not name.strip():
            raise UsageError(f"--set {pair}: write NAME=VALUE")
        params[name.strip()] = value.strip()
    return params


class Terminated(BaseException):
    """SIGTERM, raised in the main thread so every cleanup runs (no staging folder is left).
    A BaseException, like KeyboardInterrupt, so no ``except Exception`` takes it for a failure."""


def _on_sigterm(signum, frame):  # noqa: ARG001 - signal handler signature
    raise Terminated()


def _say(text: str) -> None:
    """An error message for a person, on stderr, as visible text."""
    err.print(visible_lines(text), markup=False)


def _reader_gone() -> None:
    """stdout's reader went away (``privopt solve SPEC | head -2``): end as ``ls`` and ``git`` do
    there, with no message and exit 141 (the shell's status for SIGPIPE), descriptor 1 led to
    /dev/null so that nothing more is written to the closed pipe."""
    with contextlib.suppress(OSError):  # no descriptor 1 to replace: nothing more can reach it anyway
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    sys.exit(EXIT_CLOSED_PIPE)


def _fail(e: BaseException, stopped: str = "nothing was written") -> None:
    """Print an error for a person and exit with its code (``stopped``: what an interrupt left)."""
    if isinstance(e, BrokenPipeError):  # printing the result, inside a command's own handler
        _reader_gone()

    if isinstance(e, (KeyboardInterrupt, Terminated)):
        _say(("interrupted" if isinstance(e, KeyboardInterrupt) else "terminated") + f": {stopped}")
        code = EXIT_INTERRUPTED if isinstance(e, KeyboardInterrupt) else EXIT_TERMINATED
        if solverlog.solver_running():  # a solver that ignored its cancel: do not wait for it
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        sys.exit(code)
    if isinstance(e, SpecError):  # its text starts "FILE:LINE:COL: error:" or "FILE: error:"
        _say(str(e))
        sys.exit(EXIT_USAGE)
    if isinstance(e, UsageError):
        _say(f"error: {e}")
        sys.exit(EXIT_USAGE)
    if isinstance(e, InfeasibleError):
        _say(str(e))
        sys.exit(EXIT_INFEASIBLE)
    if isinstance(e, SolverError):
        _say(f"error: {e}")
        sys.exit(EXIT_INTERNAL)
    if os.environ.get("PRIVOPT_DEBUG"):
        raise e
    _say(f"internal error: {type(e).__name__}: {e}\n(this is a bug in privopt; PRIVOPT_DEBUG=1 shows the traceback)")
    sys.exit(EXIT_INTERNAL)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, package_name="privopt")  # given: no importlib.metadata at start-up
def main() -> None:
    """privopt: design privacy mechanisms from a spec file."""
    _lay_out()
    try:
        signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread (an embedding caller): leave signals alone
        pass


def _positive(ctx, param, value):  # noqa: ARG001 - click callback signature
    """A positive, finite number written as in a spec (--time-limit, --tol), or None."""
    if value is None:
        return None
    number = _number_or_nan(value)
    if not (math.isfinite(number) and number > 0):
        what = "a positive number of seconds" if param.name == "time_limit" else "a positive number"
        raise click.BadParameter(f"must be {what} written as in a spec (e.g. 10, 0.5, 1e-7), not {visible(value)}")
    return number


def _number_or_nan(text: str) -> float:
    """``text`` as a number in the spec language's syntax, NaN when it is not one."""
    from .language.tables import parse_number

    value = parse_number(text.strip())
    return math.nan if value is None else value


_QUIET = click.option("--quiet", is_flag=True, help="No progress display on stderr.")
_common = [
    click.argument("spec", type=click.Path(dir_okay=False, path_type=Path)),
    click.option("--set", "sets", multiple=True, metavar="NAME=VALUE", help="Override a param of the spec."),
    click.option("--allow-paths", is_flag=True, help="Let data paths leave the spec's folder."),
    click.option(
        "--log",
        "log_file",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="Append the solvers' own logs to this file.",
    ),
    click.option("--verbose", is_flag=True, help="Show the solvers' own logs on stderr."),
]


def _with_common(f):
    """The options every command that reads a spec takes; --log/--verbose configure the solver
    log before it runs (and ``_with_quiet``'s --quiet)."""
    import functools

    @functools.wraps(f)
    def wrapper(*args, log_file=None, verbose=False, **kwargs):
        try:
            solverlog.configure(log_file if log_file is not None else ("stderr" if verbose else None))
        except OSError as e:
            if isinstance(e, NotRegularFile) or e.errno == errno.ENXIO:
                hint = "name a regular file to append to (--verbose shows the log on stderr)"
                _fail(UsageError(f"--log {visible(log_file)}: {describe(e)}; {hint}"))
            _fail(UsageError(f"--log {visible(log_file)}: cannot write there ({describe(e)})"))
        return f(*args, **kwargs)

    wrapper = _with_quiet(wrapper)
    for deco in reversed(_common):
        wrapper = deco(wrapper)
    return wrapper


def _with_route(time_limit: str | None = None):
    """The options that choose how a command solves: --method, --backend, --solver and, where
    the command solves, --time-limit (its help says what the limit applies to)."""

    def decorate(f):
        options = [
            click.option("--method", type=click.Choice(["auto", *METHODS]), default="auto", show_default=True),
            click.option(
                "--backend",
                default="auto",
                show_default=True,
                help="highs, scipy, cvxpy, pyomo; auto = highs, or cvxpy (Clarabel) for a QP or a conic program.",
            ),
            click.option("--solver", default=None, help="Inner solver for cvxpy: CLARABEL, HIGHS, SCS, OSQP."),
        ]
        if time_limit is not None:
            options.append(
                click.option(
                    "--time-limit",
                    type=str,
                    default=None,
                    metavar="SECONDS",
                    callback=_positive,
                    help=f"Limit for {time_limit} (positive).",
                )
            )
        for option in reversed(options):
            f = option(f)
        return f

    return decorate


def _with_quiet(f):
    """--quiet (no progress display), which every command takes, and the end of a run stopped
    while it printed: Ctrl-C or SIGTERM (``_stopped_printing``), or a reader gone (exit 141)."""
    import functools

    @functools.wraps(f)
    def wrapper(*args, quiet=False, **kwargs):
        global _quiet
        _quiet = quiet
        try:
            return f(*args, **kwargs)
        except (KeyboardInterrupt, Terminated) as e:  # a command's own handler covers all but its printing
            _stopped_printing(e, "JSON" if kwargs.get("as_json") else "output")
        except BrokenPipeError:
            _reader_gone()

    return _QUIET(wrapper)


_quiet = False


def _stopped_printing(e: BaseException, what: str) -> None:
    """Ctrl-C or SIGTERM while the result was being printed (``--json`` streams it): what is on
    stdout cannot be un-printed, so stderr says it is incomplete, and what had not left this
    process yet is dropped (descriptor 1 now leads to /dev/null, so the exit never waits on a
    reader that stopped reading). Exit 130 or 143, as for an interrupted solve."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    except OSError:  # no descriptor 1 to replace: nothing more can reach stdout anyway
        pass
    _fail(e, f"stopped while printing the result: the {what} on stdout is incomplete")


def _load_with_progress(spec, params, allow_paths):
    """``api.load`` with a bar over the data files read (bytes of a CSV, parts of a dataset)."""
    from . import api

    return _reading(lambda: api.load(spec, params, allow_paths))


def _reading(call):
    """``call()`` with a bar over the data files it reads (``language.datafiles.READING``)."""
    from .language.datafiles import READING

    with _progress() as bar:
        tasks: dict[str, int] = {}

        def report(what: str, done: int, total: int) -> None:
            if what not in tasks:
                tasks[what] = bar.add_task(visible(what), total=total)
            bar.update(tasks[what], completed=done, total=total)

        token = READING.set(report)
        try:
            return call()
        finally:
            READING.reset(token)


class _NoProgress:
    """The progress display when it is off: does nothing, as rich's ``Progress(disable=True)``
    does, without importing rich's live display (issue 23, goal 1)."""

    def __enter__(self) -> _NoProgress:
        return self

    def __exit__(self, *exc) -> None:
        return None

    def add_task(self, *args, **kwargs) -> int:  # noqa: ARG002 - rich's Progress signature
        return 0

    def update(self, *args, **kwargs) -> None:  # noqa: ARG002 - rich's Progress signature
        return None

    def advance(self, *args, **kwargs) -> None:  # noqa: ARG002 - rich's Progress signature
        return None


def _progress():
    """A Rich progress display on stderr; off (``_NoProgress``) with --quiet or when stderr is
    not a terminal."""
    if _quiet or not err.is_terminal:
        return _NoProgress()
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    )


@main.command()
@_with_common
@_with_route("the LP solves")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of the summary.")
@click.option("--no-tables", is_flag=True, help="Leave the released tables out of the output.")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write result.json and the released values as CSV here (docs/outputs.md lists the files).",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="Processes for the LFP method, or the Dask engine's threads without --scheduler (default: the machine's cores).",
)
@click.option(
    "--engine",
    type=click.Choice(["local", "dask"]),
    default="local",
    show_default=True,
    help="dask: solve the QID groups on a Dask cluster (pip install 'privopt[dask]').",
)
@click.option(
    "--scheduler",
    default=None,
    metavar="ADDRESS",
    help="With --engine dask: an existing cluster's scheduler (default: dask's threads in this process).",
)
def solve(
    spec,
    sets,
    allow_paths,
    method,
    backend,
    solver,
    time_limit,
    as_json,
    no_tables,
    out_dir,
    workers,
    engine,
    scheduler,
):
    """Solve SPEC and print the optimal mechanism with its verification."""
    from . import api

    try:
        if out_dir is not None:
            outdir.check_target(Path(os.path.abspath(out_dir)))  # before solving: fail fast
        if scheduler is not None and engine != "dask":
            raise UsageError("--scheduler needs --engine dask")
        if engine == "dask":
            result = api.solve(
                spec,
                method=method,
                backend=backend,
                time_limit=time_limit,
                solver=solver,
                engine="dask",
                scheduler=scheduler,
                workers=workers,
                params=_params(sets),
                allow_paths=allow_paths,
            )
        else:
            problem = _load_with_progress(spec, _params(sets), allow_paths)
            with _progress() as bar:
                task = bar.add_task("QID groups", total=None)
                result = problem.solve(
                    method=method,
                    backend=backend,
                    time_limit=time_limit,
                    solver=solver,
                    workers=workers,
                    progress=lambda done, total: bar.update(task, completed=done, total=total),
                )
        written = _write_out(out_dir, result) if out_dir is not None and _answered(result) else None
    except (Exception, KeyboardInterrupt, Terminated) as e:  # noqa: BLE001 - the CLI boundary maps every error to an exit code
        _fail(e)
        return
    if as_json:
        result.write_json(sys.stdout, tables=not no_tables)  # streamed: no copy of the whole text
        sys.stdout.write("\n")
    else:
        result.print(out, tables=not no_tables)  # the result's sections print themselves
        if written:
            out.print(_wrote(out_dir, written), markup=False)
    if result.status == "infeasible":
        if not as_json:
            _say(
                "infeasible: " + "; ".join(result.reasons) + ("\n(nothing was written)" if out_dir is not None else "")
            )
        sys.exit(EXIT_INFEASIBLE)


@main.command()
@_with_common
@click.option(
    "--backends",
    default=None,
    metavar="LIST",
    help="Comma-separated: highs,scipy,cvxpy,pyomo or cvxpy:SOLVER (default: all).",
)
@click.option(
    "--tol",
    type=str,
    default="1e-7",
    show_default=True,
    callback=_positive,
    help="Largest allowed objective difference (relative beyond |objective| = 1) and violation.",
)
@click.option(
    "--time-limit",
    type=str,
    default=None,
    metavar="SECONDS",
    callback=_positive,
    help="Limit for each solver call (positive).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of the table.")
def check(spec, sets, allow_paths, backends, tol, time_limit, as_json):
    """Solve SPEC by every applicable method and backend, and compare.

    Each path's table is measured by privopt itself: the objective it achieves and its largest
    violation of the spec. Each path is compared within its own accuracy (the tol column; --tol
    for the exact paths) and only on what it optimizes. Exit 0 when every path that answered
    agrees, 4 when any disagrees or fails; a path stopped by --time-limit or skipped (with why)
    counts for neither, and exit 1 when no path answered.
    """
    from . import api
    from .crosscheck import run_check

    try:
        problem = api.load(spec, _params(sets), allow_paths)
        names = [b.strip() for b in backends.split(",") if b.strip()] if backends else None
        if _is_composite(problem):
            report = _check_composite(problem, names, tol, time_limit)
        else:
            report = run_check(problem, names, tol, time_limit, progress=not _quiet)
    except (Exception, KeyboardInterrupt, Terminated) as e:  # noqa: BLE001
        _fail(e)
        return
    if _is_composite(problem):
        _print_composite_check(problem, spec, report, as_json)
        sys.exit({"agree": EXIT_OK, "disagree": EXIT_DISAGREE}.get(report.verdict, EXIT_INTERNAL))
    if as_json:
        import json

        click.echo(json.dumps(report.to_dict(), indent=2, allow_nan=False))
    else:
        t = RichTable(title=f"{escape(problem.title or spec)}: every path", title_justify="left")
        numeric = ("objective", "abs diff", "tol", "max violation", "build s", "solve s")
        for col in ("method", "backend", "status", "compares", *numeric, "note"):
            t.add_column(col, justify="right" if col in numeric else "left")
        for p in report.paths:
            t.add_row(
                p.method,
                p.backend or "-",
                p.status,
                p.compares if p.objective is not None else "-",
                _fmt12(p.objective),
                _sci(p.abs_diff),
                _sci(p.allowed),
                _sci(p.max_violation),
                f"{p.build_s:.3f}",
                f"{p.solve_s:.3f}",
                escape(p.message),
            )
        _print_table(t)
        ref = report.reference
        out.print(
            f"reference: {ref['method']}" + (f" on {ref['backend']}" if ref and ref["backend"] else "")
            if ref
            else "no path succeeded"
        )
        for line in report.problems:
            out.print(f"[red]problem:[/red] {escape(line)}", highlight=False)
        verdict = {"agree": "[green]all paths agree[/green]", "disagree": "[red]paths disagree or fail[/red]"}
        out.print(verdict.get(report.verdict, "[yellow]inconclusive: no path gave an answer[/yellow]"))
    sys.exit({"agree": EXIT_OK, "disagree": EXIT_DISAGREE}.get(report.verdict, EXIT_INTERNAL))


def _check_composite(problem, names, tol, time_limit):
    """``composite.check.run_check``: the blocks run on the one backend ``--backends`` names (their
    own checks run every route of their kind)."""
    from .composite.check import run_check as check_composite

    if names is not None and len(names) != 1:
        raise UsageError("a composite's check solves its blocks on one backend: name one (--backends highs), or none")
    with _progress() as bar:
        bar.add_task("composite check", total=None)
        return check_composite(problem, tol, time_limit, backend=names[0] if names else "auto")


def _print_composite_check(problem, spec, report, as_json: bool) -> None:
    """The composite check as a table of routes (``composite/check.py``), or its JSON."""
    if as_json:
        import json

        click.echo(json.dumps(report.to_dict(), indent=2, allow_nan=False))
        return
    t = RichTable(title=f"{escape(problem.title or spec)}: the method against independent routes", title_justify="left")
    numeric = ("objective", "bound", "abs diff", "allowed", "solves", "seconds")
    for col in ("route", "status", *numeric, "note"):
        t.add_column(col, justify="right" if col in numeric else "left")
    for p in report.paths:
        t.add_row(
            escape(p.route),
            p.status,
            _fmt12(p.objective),
            _fmt12(p.bound),
            _sci(p.abs_diff),
            _sci(p.allowed),
            str(p.solves),
            f"{p.seconds:.3f}",
            escape(p.message),
        )
    _print_table(t)
    out.print(f"reference: {escape(report.method)} (the automatic method)")
    for line in report.problems:
        out.print(f"[red]problem:[/red] {escape(line)}", highlight=False)
    verdict = {"agree": "[green]all paths agree[/green]", "disagree": "[red]paths disagree or fail[/red]"}
    out.print(verdict.get(report.verdict, "[yellow]inconclusive: no path gave an answer[/yellow]"))


def _number(text: str, what: str) -> float:
    """A finite number written as in a spec (no '_', 'nan', 'inf' or hex), else UsageError."""
    value = _number_or_nan(text)
    if not math.isfinite(value):
        raise UsageError(
            f"{what}: '{visible(text.strip())}' is not a number; write one as in a spec, e.g. 0.5, 2, 1e-3"
        )
    return value


def _sweep_values(text: str) -> tuple[str, list[float]]:
    """NAME=V1,V2,... or NAME=START:STOP:COUNT (COUNT evenly spaced values, both ends included)."""
    import numpy as np

    name, eq, values = text.partition("=")
    if not eq or not name.strip() or not values.strip():
        raise UsageError(f"{visible(text)}: write NAME=V1,V2,... or NAME=START:STOP:COUNT")
    if ":" in values:
        parts = values.split(":")
        if len(parts) != 3 or not re.fullmatch("[0-9]+", parts[2].strip()) or not 1 <= int(parts[2]) <= 100_000:
            raise UsageError(f"{visible(text)}: write NAME=START:STOP:COUNT with COUNT a whole number from 1 to 100000")
        import numpy as np

        with np.errstate(all="ignore"):
            out = [float(v) for v in np.linspace(_number(parts[0], text), _number(parts[1], text), int(parts[2]))]
        if not all(math.isfinite(v) for v in out):
            raise UsageError(
                f"{visible(text)}: the range from START to STOP is wider than floating point can step through"
            )
    else:
        out = [_number(v, text) for v in values.split(",") if v.strip()]
    if not out:
        raise UsageError(f"{visible(text)}: no values")
    return name.strip(), out


@main.command()
@_with_common
@click.argument("over", metavar="NAME=VALUES")
@_with_route("each value's solver calls")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON list, a result per value.")
@click.option(
    "--plot",
    "plot_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="FILE",
    help="Also draw the trade-off curve: FILE.png, FILE.svg or FILE.pdf (matplotlib).",
)
def sweep(spec, sets, allow_paths, over, method, backend, solver, time_limit, as_json, plot_file):
    """Solve SPEC once per value of a param: NAME=V1,V2,... or NAME=START:STOP:COUNT.

    Each value is a full solve with verification and gets its own row and status: optimal,
    infeasible (with the blocking constraints), or failed (with the reason). Exit 0 when every
    value solves or is infeasible; 1 when any value failed (2 when every failure is a spec or
    usage error for that value).
    """
    from . import api
    from .errors import PrivoptError
    from .pipeline import plan

    rows: list[tuple[float, object]] = []  # (value, Result or the exception that stopped it)
    try:
        if plot_file is not None:
            from . import plot

            plot.check_target(plot_file)  # before solving: an unknown format writes nothing
        name, values = _sweep_values(over)
        base = _params(sets)
        problem = api.load(spec, base, allow_paths)  # the spec itself must be sound: exit 2 at once
        if name not in problem.params:
            declared = ", ".join(sorted(problem.params)) or "none"
            raise UsageError(f"the spec has no param '{visible(name)}' to sweep; its params: {declared}")
        if not _is_composite(problem):  # a composite's blocks plan their own routes
            plan(problem, method, backend, solver)  # a bad option fails once, before any value
        with _progress() as progress:
            task = progress.add_task(f"sweep {visible(name)}", total=len(values))
            for v in values:
                try:
                    p = api.load(spec, base.sweeping(name, v), allow_paths)
                    rows.append((v, p.solve(method=method, backend=backend, time_limit=time_limit, solver=solver)))
                except (PrivoptError, Exception) as e:  # noqa: BLE001 - one value's failure is its row
                    rows.append((v, e))
                progress.advance(task)
    except (Exception, KeyboardInterrupt, Terminated) as e:  # noqa: BLE001
        _fail(e)
        return
    failures = [e for _, e in rows if isinstance(e, BaseException)]
    if plot_file is not None:
        composite = _is_composite(problem)  # the optimized answer against the even split
        solved = ("optimal", "feasible") if composite else ("optimal",)  # a composite's feasible: a certified gap
        try:
            plot.sweep_figure(
                plot_file,
                name,
                [v for v, _ in rows],
                [None if isinstance(r, BaseException) or r.status not in solved else r.objective for _, r in rows],
                ["failed" if isinstance(r, BaseException) else r.status for _, r in rows],
                ylabel=objective_text(problem),
                title=problem.title or Path(spec).name,
                even=[_even(r) for _, r in rows] if composite else None,
                solved=solved,
                label="optimized (within its certified gap)" if composite else "optimal",
            )
        except (Exception, KeyboardInterrupt, Terminated) as e:  # noqa: BLE001
            _fail(e)
            return
    if as_json:
        import json

        items = [
            {name: v}
            | (
                _failed_row(r) | {"spec": problem.provenance() | {"params": problem.params | {name: v}}}
                if isinstance(r, BaseException)
                else r.to_dict(tables=False, groups=False)
            )
            for v, r in rows
        ]
        click.echo(json.dumps(items, indent=2, allow_nan=False))
    else:
        _print_sweep(problem, spec, name, rows)
    if failures:
        usage = all(isinstance(e, (SpecError, UsageError)) for e in failures)
        sys.exit(EXIT_USAGE if usage else EXIT_INTERNAL)


def objective_text(problem) -> str:
    """The objective as the spec writes it after minimize/maximize: ``tv(X, Y)``."""
    o = problem.objective
    text = getattr(o, "text", None) or (o.span.text() if o.span is not None else o.kind)
    return re.sub(r"^\s*(minimize|maximize)\s+", "", " ".join(text.split()))


def _failed_row(e: BaseException) -> dict:
    """A sweep row for a value that did not solve: status "failed" and the reason."""
    from .errors import PrivoptError

    kind = "error" if isinstance(e, PrivoptError) else f"internal error: {type(e).__name__}"
    return {"status": "failed", "error": f"{kind}: {e}" if kind != "error" else str(e)}


def _even(r) -> float | None:
    """A composite sweep row's even-split value (None when the value failed or has none)."""
    return None if isinstance(r, BaseException) or r.even_split is None else r.even_split.get("objective")


def _print_composite_sweep(problem, spec, name, rows) -> None:
    """A composite's sweep: each value's optimized objective, its status and certified gap, the
    even split and the gain of the optimized split over it."""
    t = RichTable(title=f"{escape(problem.title or spec)}: sweep over {escape(name)}", title_justify="left")
    for col in [name, "status", "objective", "gap", "even split", "gain"]:
        t.add_column(escape(col), justify="left" if col == "status" else "right")
    for v, r in rows:
        if isinstance(r, BaseException):
            t.add_row(_fmt12(v), "[red]failed[/red]", "-", "-", "-", "-")
        else:
            t.add_row(
                _fmt12(v),
                r.status,
                _fmt12(r.objective),
                _sci(r.optimality.get("gap")),
                _fmt12(_even(r)),
                _fmt12(r.gain),
            )
    _print_table(t)


def _print_sweep(problem, spec, name, rows) -> None:

    if _is_composite(problem):
        _print_composite_sweep(problem, spec, name, rows)
        _print_sweep_notes(name, rows)
        return
    solved = [r for _, r in rows if not isinstance(r, BaseException) and r.status == "optimal"]
    figures = [
        k for s in (solved[0].sections if solved else ()) for k in s.figures()
    ]  # each section's headline columns
    t = RichTable(title=f"{escape(problem.title or spec)}: sweep over {escape(name)}", title_justify="left")
    for col in [name, "status", "objective", *figures]:
        t.add_column(escape(col), justify="left" if col == "status" else "right")
    for v, r in rows:
        if isinstance(r, BaseException):
            t.add_row(_fmt12(v), "[red]failed[/red]", "-", *["-" for _ in figures])
        else:
            shown = {k: text for s in r.sections for k, text in s.figures().items()} if r.status == "optimal" else {}
            t.add_row(_fmt12(v), r.status, _fmt12(r.objective), *[shown.get(k, "-") for k in figures])
    _print_table(t)
    _print_sweep_notes(name, rows)


def _print_sweep_notes(name, rows) -> None:
    """Under a sweep's table: why each value that failed or has reasons did so."""
    for v, r in rows:
        if isinstance(r, BaseException):
            out.print(f"{visible(name)}={_fmt12(v)}: failed: " + visible_lines(_failed_row(r)["error"]), markup=False)
        elif r.reasons:
            out.print(f"{visible(name)}={_fmt12(v)}: " + visible_lines("; ".join(r.reasons)), markup=False)


@main.command()
@_with_common
@_with_route()
@click.option("--json", "as_json", is_flag=True, help='Print {"class", "plan", "canonical"} as JSON.')
def explain(spec, sets, allow_paths, method, backend, solver, as_json):
    """Say what SPEC is, which methods apply, and the plan solve would run: one recognizer
    (a theorem), or a chain of reductions ending in a method and a backend."""
    from . import api
    from .pipeline import plan

    try:
        problem = api.load(spec, _params(sets), allow_paths)
        if _is_composite(problem):  # issue 21: a composite explains its blocks and method
            click.echo(problem.explain_text(as_json))
            return
        analysis = problem.explain()
        the_plan = plan(problem, method, backend, solver)
    except (Exception, KeyboardInterrupt, Terminated) as e:  # noqa: BLE001
        _fail(e)
        return
    if as_json:
        import json

        click.echo(json.dumps(the_plan.to_dict(), indent=2, allow_nan=False))
        return
    out.print(f"spec:    {escape(problem.title or spec)}  ({escape(problem.source_name)})")
    for v in problem.variables.values():
        labels = ", ".join(v.labels[:8]) + (", ..." if v.size > 8 else "")
        out.print(visible(f"  var {v.name} : {v.role.value} ({v.size} values: {labels})"), markup=False)
    for t in problem.known.values():
        out.print(visible(f"  known {t.name}: axes {', '.join(t.axes)}"), markup=False)
    if problem.noise is not None:
        _explain_noise(problem)
    if problem.design is not None:
        d = problem.design
        out.print(visible(f"  design {d.name} = P({', '.join(d.targets)} | {', '.join(d.given)})"), markup=False)
    params = ", ".join(f"{k}={_fmt12(v)}" for k, v in problem.params.items()) or "none"
    for line in _explain_model(problem, params):
        out.print(visible(line), markup=False)
    for line in analysis.summary_lines():
        out.print(visible(line), markup=False)
    out.print("plan:")
    for line in the_plan.text_lines():
        out.print(visible("  " + line), markup=False)


SIMULATE_ENTRIES_MAX = 50_000_000  # above this many entries per trial, draw the degrees (the same law)
SIMULATE_DEGREES_MAX = 50_000_000  # rows x trials: the degrees of X and of Y are held, 8 bytes each
SIMULATE_COLS_MAX = 2_000  # the exact expectation at m = cols is a (2m+1) x (2m+1) FFT: 256 MB, ~5 s here


def _check_simulation_size(rows: int, cols: int, trials: int) -> None:
    """``UsageError`` naming the limit when a simulation would not fit in memory, before the
    solve and before anything is allocated (before: an internal MemoryError)."""
    if rows * trials > SIMULATE_DEGREES_MAX:
        raise UsageError(
            f"--rows {rows:,} x --trials {trials:,} = {rows * trials:,} row degrees; simulate holds them "
            f"in memory, at most {SIMULATE_DEGREES_MAX:,}: lower --rows or --trials"
        )
    if cols > SIMULATE_COLS_MAX:
        raise UsageError(
            f"--cols {cols:,}: at most {SIMULATE_COLS_MAX:,} (the exact expectation at m = cols is a "
            f"(2m+1) x (2m+1) FFT); Q itself is the m -> infinity limit"
        )


@main.command()
@_with_common
@click.option("--rows", type=click.IntRange(min=2), required=True, help="Rows n of each dataset (the ranked users).")
@click.option("--cols", type=click.IntRange(min=1), required=True, help="Columns m of each dataset.")
@click.option(
    "--trials", type=click.IntRange(min=1, max=1_000_000), default=40, show_default=True, help="Datasets drawn."
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Seed: the same seed gives the same output.",
)
@click.option("--json", "as_json", is_flag=True, help='Print {"analytic", "empirical", "trials", ...} as JSON.')
@click.option(
    "--plot",
    "plot_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="FILE",
    help="Also draw the trials against Q: FILE.png, FILE.svg or FILE.pdf (matplotlib).",
)
def simulate(spec, sets, allow_paths, rows, cols, trials, seed, as_json, plot_file):
    """Solve SPEC (a rank-preserving obfuscation) and check its Q by simulation (Sec. IV-A).

    Draws TRIALS binary datasets of ROWS x COLS entries from P(X), obfuscates every entry
    through the solved channel, ranks the rows of both by degree and measures Definition 2's
    KRCC distance (ties are not discordant). Prints the analytic Q, the exact expectation at
    this COLS, the empirical mean and spread, and every trial. No timings: the same seed gives
    byte-identical output.
    """
    import numpy as np

    from . import api
    from .measures.obfuscation import expected_distance
    from .measures.obfuscation import simulate as draw

    try:
        if plot_file is not None:
            from . import plot

            plot.check_target(plot_file)  # before solving: an unknown format writes nothing
        _check_simulation_size(rows, cols, trials)
        problem = api.load(spec, _params(sets), allow_paths)
        if problem.objective.atom != "krcc":  # the simulation draws releases through the channel W
            raise UsageError(
                "simulate needs a rank-preserving obfuscation spec (minimize krcc(X, Y)); "
                f"this spec is a {problem.kind} problem"
            )
        result = problem.solve()
        model, d = problem.obfuscation, result.details["channel"]
        W = np.array([[1.0 - d["p1"], d["p1"]], [d["p2"], 1.0 - d["p2"]]])
        mode = "entries" if rows * cols <= SIMULATE_ENTRIES_MAX else "degrees"
        with _progress() as progress:  # stderr only; off with --quiet or off a terminal
            task = progress.add_task("simulate", total=trials)
            values = draw(
                model.px1,
                W,
                rows,
                cols,
                trials,
                np.random.default_rng(seed),
                mode=mode,
                progress=lambda k: progress.update(task, completed=k),
            )
        finite_m = expected_distance(model.px1, W, cols)
        if plot_file is not None:
            plot.simulation_figure(
                plot_file,
                values,
                analytic=result.objective,
                expected=finite_m,
                title=problem.title or Path(spec).name,
                rows=rows,
                cols=cols,
                seed=seed,
            )
    except (Exception, KeyboardInterrupt, Terminated) as e:  # noqa: BLE001
        _fail(e)
        return
    mean = float(values.mean())
    std = float(values.std(ddof=1)) if trials > 1 else 0.0
    report = {
        "analytic": result.objective,
        "empirical": mean,
        "std": std,
        "stderr": std / math.sqrt(trials),
        "expected_at_cols": finite_m,
        "trials": [float(v) for v in values],
        "rows": rows,
        "cols": cols,
        "seed": seed,
        "draw": mode,
        "channel": {"p1": d["p1"], "p2": d["p2"]},
        "spec": result.spec,  # what was simulated, as in every command's JSON
    }
    if as_json:
        import json

        click.echo(json.dumps(report, indent=2, allow_nan=False))
        return
    out.print(f"[bold]{escape(problem.title or spec)}[/bold]: {trials} dataset(s) of {rows} x {cols}, seed {seed}")
    t = RichTable(title="KRCC distance (Definition 2)", title_justify="left")
    t.add_column("what")
    t.add_column("value", justify="right")
    t.add_row("analytic Q (m -> infinity, Theorem 1)", _fmt12(report["analytic"]))
    t.add_row(f"exact expectation at m = {cols}", _fmt12(finite_m))
    t.add_row("empirical mean", _fmt12(mean))
    t.add_row("standard deviation / error of the mean", f"{std:.3g} / {report['stderr']:.3g}")
    t.add_row("min / max", f"{values.min():.6g} / {values.max():.6g}")
    _print_table(t)
    out.print("trials: " + " ".join(f"{v:.6g}" for v in values))


@main.command()
@_with_common
@click.option(
    "--release",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="FILE.csv",
    help="Audit this release (the layout of solve --out's table CSV) instead of the solved one.",
)
@click.option(
    "--protected", default=None, metavar="VAR", help="The protected attribute Z (default: the first public variable)."
)
@click.option(
    "--given", default=None, metavar="VAR[,VAR...]", help="CSP's score variables (default: every other input variable)."
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of the report.")
def audit(spec, sets, allow_paths, release, protected, given, as_json):
    """Audit a transparency report: the inference attack of Sec. 3.2 and the fairness measures
    (SP, CSP, p%-rule) on the true D and on the release, with Lemma 2's bounds.

    The release is the table solve returns, or --release FILE.csv. Exit 0 when the audit ran,
    whatever it found; 2 for a spec or release file that cannot be audited (naming the row).
    """
    from .audit import run_audit

    try:
        problem = _load_with_progress(spec, _params(sets), allow_paths)
        names = None if given is None else [n.strip() for n in given.split(",") if n.strip()]
        report = run_audit(problem, release=release, protected=protected, given=names)
    except (Exception, KeyboardInterrupt, Terminated) as e:  # noqa: BLE001
        _fail(e)
        return
    if as_json:
        report.write_json(sys.stdout)  # streamed: the groups and CSP cells a chunk at a time
        sys.stdout.write("\n")
    else:
        _print_audit(problem, spec, report)


def _print_audit(problem, spec, report) -> None:
    """The audit as a person reads it: the attack per group, then the measures side by side, each
    figure rounded at the verification tolerance (``audit.at_tolerance``; --json keeps them whole)."""
    import numpy as np

    from .audit import at_tolerance

    def _fmt_audit(x) -> str:
        return _fmt(at_tolerance(x))

    where = "the solved release" if report.release_from == "solved" else f"the release {report.release_from}"
    out.print(
        visible(f"{problem.title or spec}: audit of {where} ({problem.design.name}) against the true mapping"),
        markup=False,
    )
    gD, gT = report.groups("D"), report.groups("release")
    keys = list(report.public)
    t = RichTable(title="Inference attack (Sec. 3.2): the adversary's surest guess per group", title_justify="left")
    for col in (
        "group",
        "prior (no report)",
        "D: max confidence",
        "D: inference",
        "release: max confidence",
        "release: inference",
    ):
        t.add_column(escape(col), justify="left" if "inference" in col or col == "group" else "right")
    for (_, d), (_, r) in zip(gD.head(MAX_ROWS).iterrows(), gT.head(MAX_ROWS).iterrows()):
        key = ", ".join(f"{k}={d[k]}" for k in keys) or "(all)"
        t.add_row(
            escape(key),
            _fmt_audit(d["prior"]),
            _fmt_audit(d["max_confidence"]),
            escape(f"{d['outcome']} -> {d['private']}"),
            _fmt_audit(r["max_confidence"]),
            escape(f"{r['outcome']} -> {r['private']}"),
        )
    _print_table(t)
    if len(gD) > MAX_ROWS:
        out.print(
            f"(the first {MAX_ROWS} of {len(gD):,} groups in spec order, {len(gD) - MAX_ROWS:,} not shown; "
            "--json lists every group and inference)"
        )
    out.print(
        f"max confidence: D {_fmt_audit(gD['max_confidence'].max())}, release {_fmt_audit(gT['max_confidence'].max())}"
    )

    f = report.fairness
    lemma = f["lemma2"]
    given = ", ".join(f["given"]) or "nothing"
    t = RichTable(title=escape(f"Fairness (App. A) of {f['protected']}, CSP given {given}"), title_justify="left")
    for col in ("measure", "D", "release", "change", "Lemma 2 bound", "within"):
        t.add_column(col, justify="left" if col in ("measure", "within") else "right")
    rows = [
        ("SP", "sp", "sp_change", lemma["tv_bound"]),
        ("CSP", "csp", "csp_change", lemma["tv_bound"]),
        ("p%-rule", "p_rule", None, None),
        ("rm = -log p", "rm", "rm_change", lemma["rm_bound"]),
    ]
    for label, key, change, bound in rows:
        c = lemma.get(change) if change else None
        if change is None:
            shown_bound, ok = "-", "-"
        elif bound is None:
            shown_bound, ok = "none (alpha = 0)", "-"
        else:
            shown_bound, ok = (
                _fmt_audit(bound),
                "-" if c is None else ("yes" if c <= bound + 1e-12 * max(1.0, bound) else "NO"),
            )
        t.add_row(label, _fmt_audit(f["D"][key]), _fmt_audit(f["release"][key]), _fmt_audit(c), shown_bound, ok)
    _print_table(t)
    for which in ("D", "release"):
        rates = "; ".join(
            f"{z}: " + ", ".join(f"{o} {_fmt_audit(r)}" for o, r in rs.items()) for z, rs in f[which]["rates"].items()
        )
        out.print(visible(f"rates on {which}: {rates}"), markup=False)
    shown = 8
    names, labels = f["given"], report.score_labels
    sizes = tuple(len(x) for x in labels)

    def cell(c: int) -> str:
        idx = np.unravel_index(c, sizes) if names else ()
        return ", ".join(f"{n}={lab[i]}" for n, lab, i in zip(names, labels, idx)) or "(all)"

    for pD, pT in zip(report.cells["D"], report.cells["release"]):
        if pD.cells.size <= shown:
            picked, more = range(pD.cells.size), ""
        else:  # many cells: those where each table's CSP is attained
            picked = sorted({int(np.argmax(pD.bias)), int(np.argmax(pT.bias))})
            more = f" (the largest of {pD.cells.size:,} cells; --json lists them all)"
        items = [f"{cell(pD.cells[i])}: {_fmt_audit(pD.bias[i])} -> {_fmt_audit(pT.bias[i])}" for i in picked]
        z1, z2 = (problem.variables[f["protected"]].labels[k] for k in (pD.z1, pD.z2))
        out.print(
            visible(f"CSP cells, {z1} vs {z2} (D -> release): {'; '.join(items) or 'none populated in both'}{more}"),
            markup=False,
        )
    verdict = "hold" if lemma["holds"] else "DO NOT hold"
    out.print(
        f"Lemma 2: the release achieves delta = {_fmt_audit(lemma['delta'])}, alpha = {_fmt_audit(lemma['alpha'])}; "
        f"its bounds {verdict} (tv bound min(2 (1 - delta), 1), rm bound -2 log alpha; docs/audit.md)"
    )


@main.command(name="apply")
@_with_common
@click.option(
    "--data",
    "data",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    metavar="RECORDS.csv",
    help="Records: a header, one column per conditioning variable of the design (others pass through).",
)
@click.option(
    "--out",
    "out_file",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    metavar="FILE.csv",
    help="The records with the drawn target appended (written all or nothing).",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=None,
    help="Seed: the same seed gives a byte-identical file (default: drawn and printed).",
)
@_with_route("the solver calls")
def apply_(spec, sets, allow_paths, data, out_file, seed, method, backend, solver, time_limit):
    """Solve SPEC, then draw each record's released value from the design's row for it.

    Every field of RECORDS.csv is kept as text, byte for byte; one column named after the
    design's target is appended. Exit 2 (nothing written) for a record outside the spec's
    labels, naming its row; 3 when the spec is infeasible.
    """
    from . import apply as applying
    from .pipeline import plan

    try:
        applying.check_out(out_file, data)  # before solving: a bad target writes nothing
        problem = _load_with_progress(spec, _params(sets), allow_paths)
        if _is_composite(problem):  # issue 21: a composite has no one design to draw from
            raise UsageError("apply draws from one design: run it on the spec of one of the composite's blocks")
        plan(problem, method, backend, solver)  # before reading or solving: a bad option fails fast
        records = applying.read_records(problem, data)  # before solving: bad records fail fast
        result = problem.solve(method=method, backend=backend, solver=solver, time_limit=time_limit)
        if result.status == "infeasible":
            raise InfeasibleError("infeasible: the spec admits no table (nothing was written)", result.reasons)
        if seed is None:
            seed = applying.fresh_seed()
        report = applying.write_release(problem, result, records, out_file, seed)
    except (Exception, KeyboardInterrupt, Terminated) as e:  # noqa: BLE001
        _fail(e)
        return
    out.print(
        visible(
            f"wrote {report.records} records to {out_file} ({report.target} drawn from {report.table}, seed {seed})"
        ),
        markup=False,
    )


def _explain_model(problem, params: str):
    """The lines of ``explain`` that show the constraints and the objective, from the parts the
    problem holds: a max-confidence measure (its cell bounds, counted), an obfuscation model
    (its leakage bound and symmetric restriction), else each linear constraint and budget."""
    o = problem.objective
    if o.curvature == "ratio":  # max_confidence or min_uncertainty: the measure it reads
        m = o.measure
        yield f"  {len(problem.constraints)} elementwise constraint(s); params: {params}"
        yield (
            f"  {o.sense} {o.kind}({', '.join(m.public + (m.outcome,))} -> {', '.join(m.private)}); prior {m.prior}"
            + (f", true mapping {m.reference}" if m.reference else "")
        )
        return
    if problem.obfuscation is not None:
        model = problem.obfuscation
        if model.leakage is not None:
            yield (
                f"  subject to {model.leakage.text}  (leakage in bits, {model.release} - {model.data} - "
                f"{model.leakage.other} Markov)"
            )
        if model.symmetric:
            yield "  subject to the symmetric restriction P(Y = 1 | X = 0) == P(Y = 0 | X = 1)"
        yield f"  minimize {o.text}  (Q of Theorem 1; P_X(1) = {_fmt12(model.px1)}); params: {params}"
        yield "  optimum: global, with a proven lower bound (gap <= 1e-9 in Q)"
        return
    for c in problem.constraints:
        rows = int(c.expr.defined_mask().sum())
        yield f"  subject to {c.text}  ({rows} cell(s){', induced P(...) fixed' if c.induced else ''})"
    for b in problem.budgets:
        pairs = "all pairs" if b.pairs is None else f"{len(b.pairs)} adjacent pairs"
        yield (
            f"  budget {b.text}  ({b.kind}, eps={_fmt12(b.eps)}"
            + (f", delta={_fmt12(b.delta)}" if b.delta else "")
            + f", {pairs})"
        )
    if problem.noise is not None:
        yield f"  {o.text}; params: {params}"
    else:
        yield f"  {o.sense} {o.text}  ({o.kind}); params: {params}"


def _explain_noise(problem) -> None:
    model = problem.noise
    x = model.input
    lo, hi = x.lo.min(), x.hi.max()
    out.print(visible(f"  var {x.name} : {x.role} real[{x.size}] in [{_fmt12(lo)}, {_fmt12(hi)}]"), markup=False)
    for n in model.noises:
        out.print(
            visible(f"  noise {n.name} : gaussian[{n.size}]" + (" correlated" if n.correlated else "")), markup=False
        )
    req = model.requirement
    out.print(
        visible(f"  release {model.release}: {model.answers} answer(s); {req.text} ({req.calibration} calibration)"),
        markup=False,
    )


def _answered(result) -> bool:
    """A result ``--out`` writes: optimal, or a composite's verified best point with its certified
    gap (status feasible: docs/blocks.md)."""
    composite = getattr(result, "problem_class", None) == "composite"
    return result.status == "optimal" or (
        composite and result.status == "feasible" and bool(result.verification["passed"])
    )


def _write_out(out_dir: Path, result) -> list[str]:
    """Write ``result`` to ``out_dir``, all or nothing (privopt.outdir), and return the names of
    the files written, the manifest last (``outdir.out_files`` says which files each class gets)."""

    files = outdir.out_files(result)
    written: list[str] = []

    def write(stage: Path) -> None:
        for name, writer in files.items():
            writer(stage / name)
        written[:] = outdir.files_in(stage) or []

    outdir.write_atomic(Path(out_dir), write)
    return [*written, outdir.MANIFEST]


def _wrote(out_dir: Path, names: list[str]) -> str:
    """The line that names exactly the files ``--out`` wrote: the count is of the files a reader
    asked for, and the hidden manifest is named apart, with what it is for."""
    files = [n for n in names if n != outdir.MANIFEST]
    count = f"{len(files)} file{'s' if len(files) != 1 else ''}"
    index = f"(and {outdir.MANIFEST}, the hidden list of them that marks the folder as privopt's)"
    return visible(f"wrote {count} to {out_dir}: {', '.join(files)} {index}")


@main.command(name="verify")
@click.argument("result_file", metavar="RESULT.json", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--spec",
    "spec_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The spec to check against (default: the one the result records; its SHA-256 must match).",
)
@click.option("--allow-paths", is_flag=True, help="Let the spec read data files outside its folder.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object: every check with its margin.")
@_with_quiet
def verify_command(result_file, spec_file, allow_paths, as_json):
    """Re-check RESULT.json (solve --json or --out) without any solver: every constraint, budget,
    the objective and the certificate. Exit 0: all hold; 1: a check fails (named); 2: the result
    is unreadable, of an unknown format, or its spec or data changed (SHA-256)."""
    import json

    from .certify import verify

    try:
        report = _reading(lambda: verify(result_file, spec=spec_file, allow_paths=allow_paths))
    except (Exception, KeyboardInterrupt, Terminated) as e:  # noqa: BLE001 - the CLI boundary maps every error to an exit code
        _fail(e)
        return
    if as_json:
        sys.stdout.write(json.dumps(report.to_dict(), indent=2, allow_nan=False) + "\n")
    else:
        for line in report.text_lines():
            out.print(visible(line), markup=False)
    if not report.passed:
        if not as_json:
            _say("verify: " + "; ".join(f"{c.name}: {c.detail}" for c in report.failed))
        sys.exit(EXIT_INTERNAL)


def _print_table(t: RichTable, console: Console | None = None, names: list[str] | None = None) -> None:
    """``render.print_table`` on ``console``, the command's stdout by default."""
    print_table(t, console or out, names)


def run() -> None:
    """The console entry point: ``main``, with a stdout that cannot be written (closed, a full
    disk) reported in one line on stderr, exit 1, instead of a traceback. A reader that went away
    (a closed pipe: ``privopt solve SPEC | head -2``) wants no message: exit 141 quietly, the
    status ``ls`` and ``git`` end with there (stopped by SIGPIPE: 128 + 13)."""

    if sys.stdout is None:  # started with descriptor 1 closed
        _say("privopt: standard output is closed; nothing can be printed")
        sys.exit(EXIT_INTERNAL)
    try:
        try:
            main(prog_name="privopt")  # also under python -m privopt (click would say "python -m privopt")
        except Terminated:  # outside a command's own handlers (while click reads the options or exits)
            _say("terminated")
            sys.exit(EXIT_TERMINATED)
        finally:
            try:
                sys.stdout.flush()  # may wait for a slow reader: SIGTERM then leaves stdout incomplete
            except Terminated as e:
                _stopped_printing(e, "output")
            finally:
                # the result is out and the exit code decided; the interpreter now tears down (a
                # second or more after a large solve) with Python's signal handlers already gone,
                # where a SIGTERM would kill the process by signal: ignored instead
                with contextlib.suppress(ValueError):
                    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    except OSError as e:
        closed = e.errno == errno.EPIPE
        if not closed:  # a reader that went away wants no message
            _say(f"privopt: cannot write the output: {e.strerror or e}")
        try:
            sys.stdout = open(os.devnull, "w")  # so the interpreter's own final flush is quiet
        except OSError:
            pass
        sys.exit(EXIT_CLOSED_PIPE if closed else EXIT_INTERNAL)


if __name__ == "__main__":  # pragma: no cover
    run()
