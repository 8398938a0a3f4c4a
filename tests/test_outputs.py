"""What privopt prints and writes can be fed to another program (issue 10).

* every spec in specs/ gives strict JSON on stdout through the installed CLI, on every method
  that applies to it: one object, nothing before or after, no NaN/Infinity tokens;
* solver logs go to --log FILE or (--verbose) to stderr, never to stdout;
* user text reaches the terminal as text: no control characters, Rich markup printed literally;
* --out DIR is all or nothing (stale files, failures, infeasible runs, foreign folders,
  concurrent runs, SIGTERM, a temp folder on another filesystem);
* Ctrl-C and SIGTERM end a long solve at once with 130 / 143, no traceback, nothing written.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import privopt
from privopt.methods import METHODS
from tests.conftest import COMPOSITE_SPECS, PROGRAM_SPECS, SPECS, as_a_shell_starts_it, invoke, spec_params

PRIVOPT = str(Path(sys.executable).parent / "privopt")
# composites (specs/blocks_*.priv) have no single problem class: tests/test_composite*.py and the
# composite tests at the end of this file
SPEC_FILES = PROGRAM_SPECS


def run(*args, timeout=300, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([PRIVOPT, *map(str, args)], capture_output=True, text=True, timeout=timeout, **kw)


def here(*args) -> subprocess.CompletedProcess:
    """``privopt ARGS`` in this process (conftest's ``invoke``: no start-up of the CLI), for what
    is not about the process itself."""
    r = invoke(*args)
    return subprocess.CompletedProcess(args, r.exit_code, r.stdout, r.stderr)


def strict_json(text: str):
    """json.loads that refuses NaN, Infinity and -Infinity (and, like it, any text around)."""

    def refuse(token):
        raise ValueError(f"non-standard JSON token {token}")

    return json.loads(text, parse_constant=refuse)


def _methods(path: Path) -> list[str]:
    return sorted(privopt.load(path).explain().applicable)


SPEC_METHODS = [(p, m) for p in SPEC_FILES for m in _methods(p)]
# each method's first spec runs through the installed CLI; the others in this process (no start-up
# of the CLI each time), with descriptor 1 watched for a solver's own output
THROUGH_THE_CLI = {m: p for p, m in reversed(SPEC_METHODS)}


@pytest.mark.parametrize("path,method", SPEC_METHODS, ids=[f"{p.stem}-{m}" for p, m in SPEC_METHODS])
def test_every_spec_prints_strict_json(path, method, capfd):
    if THROUGH_THE_CLI[method] == path:
        r = run("solve", path, "--method", method, "--json")
        code, stdout, stderr = r.returncode, r.stdout, r.stderr
    else:
        r = invoke("solve", path, "--method", method, "--json")
        code, stdout, stderr = r.exit_code, r.stdout, r.stderr
        assert capfd.readouterr().out == ""
    assert code == 0, stderr
    data = strict_json(stdout)
    assert data["status"] == "optimal" and data["method"] == method
    assert "Traceback" not in stderr


def test_specs_cover_every_method():
    """The strict-JSON test above reaches every route privopt has (so no route goes untested)."""
    assert {m for _, m in SPEC_METHODS} == set(METHODS)


def test_solver_log_goes_to_stderr_or_a_file(tmp_path):
    spec = SPECS / "randomized_response.priv"  # its closed form runs no solver: ask for the LP
    r = run("solve", spec, "--method", "lp", "--json", "--verbose")
    assert r.returncode == 0
    strict_json(r.stdout)
    assert "HiGHS" in r.stderr  # the solver's own log, on stderr
    log = tmp_path / "solver.log"
    r = run("solve", spec, "--method", "lp", "--json", "--log", log)
    assert r.returncode == 0
    strict_json(r.stdout)
    assert "HiGHS" in log.read_text() and "HiGHS" not in r.stderr


def test_no_solver_output_through_the_api(capfd):
    privopt.load(SPECS / "atr_three_outcomes.priv").solve(method="lfp")
    privopt.load(SPECS / "shaped_noise_soft_moments.priv").solve()
    captured = capfd.readouterr()
    assert captured.out == ""


@pytest.mark.parametrize("value", ["-1", "0", "nan", "inf", "-inf"])
def test_time_limit_must_be_positive_and_finite(value):
    r = invoke("solve", SPECS / "atr_table4.priv", "--time-limit", value)
    assert r.exit_code == 2
    assert "positive number of seconds" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("over", ["delta=0_9", "delta=nan", "delta=inf", "delta=0x1", "delta=0.9:1:0", "delta=0.9:1:x"])
def test_sweep_values_use_the_spec_number_syntax(over):
    r = invoke("sweep", SPECS / "atr_table4.priv", over)
    assert r.exit_code == 2, r.stdout
    assert "Traceback" not in r.stderr


# ----------------------------------------------------------------- terminal safety

HOSTILE = """spec "title \x1b]52;c;aGVsbG8=\x07 \x1b[2J [b]bold[/b] \u202eevil"
var g : public {"[b]F[/b]", "M\x1b[31m"}
var s : private {lo, hi}
var d : outcome {no, yes}
known P(g, s) = counts {
              lo    hi
  "[b]F[/b]":   1     1
  "M\x1b[31m":  1     1
}
known D = P(d = yes | g, s) = {
              lo    hi
  "[b]F[/b]":   0     1
  "M\x1b[31m":  0     1
}
design Dt = P(d | g, s)
subject to |Dt - D| <= 0.1
minimize max_confidence(g, d -> s)
"""


@pytest.mark.parametrize("command", [["solve"], ["explain"], ["check", "--backends", "highs"]])
def test_user_text_never_reaches_the_terminal_as_control_sequences(tmp_path, command):
    spec = tmp_path / "hostile.priv"
    spec.write_text(HOSTILE, encoding="utf-8")
    r = here(command[0], spec, *command[1:])
    assert r.returncode == 0, r.stderr
    for stream in (r.stdout, r.stderr):
        assert "\x1b" not in stream and "\x07" not in stream and "\u202e" not in stream
    assert "[b]F[/b]" in r.stdout or command[0] == "check"  # markup printed literally
    assert "\\x1b" in r.stdout  # the escape shown as text


def test_error_excerpt_is_visible_text(tmp_path):
    spec = tmp_path / "bad.priv"
    spec.write_text('spec "x"\nvar g : public {a, b} \x1b[2J oops\n', encoding="utf-8")
    r = here("solve", spec)
    assert r.returncode == 2
    assert "\x1b" not in r.stderr and "Traceback" not in r.stderr


# ----------------------------------------------------------------- --out DIR


def _listing(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _no_staging_left(parent: Path) -> bool:
    return not [p for p in parent.iterdir() if ".privopt-" in p.name]


def test_out_replaces_an_earlier_result_without_stale_files(tmp_path):
    out = tmp_path / "res"
    assert here("solve", SPECS / "atr_table4.priv", "--out", out).returncode == 0
    assert sorted(p.name for p in out.iterdir()) == [".privopt-files", "Dt.csv", "groups.csv", "result.json"]
    mode = 0o2750
    os.chmod(out, mode)
    assert here("solve", SPECS / "randomized_response.priv", "--out", out).returncode == 0
    assert sorted(p.name for p in out.iterdir()) == [".privopt-files", "R.csv", "result.json"]  # no Dt.csv left
    assert (out / ".privopt-files").read_text().split() == ["R.csv", "result.json"]
    assert os.stat(out).st_mode & 0o7777 == mode  # the folder keeps its mode
    assert _no_staging_left(tmp_path)


def test_failed_or_infeasible_runs_leave_out_as_it_was(tmp_path):
    out = tmp_path / "res"
    assert here("solve", SPECS / "atr_table4.priv", "--out", out).returncode == 0
    before = _listing(out)
    infeasible = tmp_path / "infeasible.priv"  # Dt >= 0.6 where D = 0 and |Dt - D| <= 0.1: no table
    infeasible.write_text((SPECS / "atr_table4.priv").read_text() + "subject to Dt >= 0.6\n")
    r = here("solve", infeasible, "--out", out)
    assert r.returncode == 3
    r = here("solve", SPECS / "atr_table4.priv", "--out", out, "--set", "nosuch=1")  # a usage error
    assert r.returncode == 2
    r = here("solve", SPECS / "atr_table4.priv", "--out", out, "--method", "lfp", "--time-limit", "1e-6")  # a failure
    assert r.returncode == 1
    assert _listing(out) == before
    assert _no_staging_left(tmp_path)


def test_infeasible_run_writes_nothing(tmp_path):
    spec = tmp_path / "infeasible.priv"
    spec.write_text((SPECS / "randomized_response.priv").read_text() + "subject to tv(X, Y) <= 0.01\n")
    out = tmp_path / "res"
    r = here("solve", spec, "--out", out)
    assert r.returncode == 3, r.stderr
    assert not out.exists() and _no_staging_left(tmp_path)


def test_out_refuses_a_folder_privopt_did_not_write(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "thesis.tex").write_text("precious")
    r = here("solve", SPECS / "atr_table4.priv", "--out", folder)
    assert r.returncode == 2 and "not an earlier privopt result" in r.stderr
    assert (folder / "thesis.tex").read_text() == "precious"
    # a folder that merely looks like a result (a result.json of someone else's) is not privopt's
    look = tmp_path / "lookalike"
    look.mkdir()
    (look / "result.json").write_text("{}")
    (look / "customers.csv").write_text("important")
    r = here("solve", SPECS / "atr_table4.priv", "--out", look)
    assert r.returncode == 2 and (look / "customers.csv").read_text() == "important"
    # nor is an earlier result with a file added by hand
    out = tmp_path / "res"
    assert here("solve", SPECS / "atr_table4.priv", "--out", out).returncode == 0
    (out / "notes.csv").write_text("mine")
    r = here("solve", SPECS / "atr_table4.priv", "--out", out)
    assert r.returncode == 2 and (out / "notes.csv").read_text() == "mine"


def test_out_refuses_the_working_folder_and_unwritable_places(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = here("solve", SPECS / "atr_table4.priv", "--out", ".")
    assert r.returncode == 2 and "working folder" in r.stderr
    afile = tmp_path / "afile"
    afile.write_text("x")
    r = here("solve", SPECS / "atr_table4.priv", "--out", afile / "x")
    assert r.returncode == 2 and "Traceback" not in r.stderr


def test_out_works_when_the_temp_folder_is_on_another_filesystem(tmp_path):
    other = Path("/dev/shm")
    if not other.is_dir() or os.stat(other).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("no second filesystem here")
    out = tmp_path / "res"
    r = run("solve", SPECS / "atr_table4.priv", "--out", out, env=os.environ | {"TMPDIR": str(other)})
    assert r.returncode == 0, r.stderr
    assert (out / "result.json").is_file()


def test_concurrent_runs_end_with_one_complete_output(tmp_path):
    out = tmp_path / "res"
    specs = [SPECS / "atr_table4.priv", SPECS / "randomized_response.priv"] * 2
    procs = [
        subprocess.Popen(
            [PRIVOPT, "solve", str(s), "--out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        for s in specs
    ]
    assert all(p.wait(timeout=300) == 0 for p in procs)
    names = sorted(p.name for p in out.iterdir())
    assert names in (
        [".privopt-files", "Dt.csv", "groups.csv", "result.json"],
        [".privopt-files", "R.csv", "result.json"],
    )
    written = strict_json((out / "result.json").read_text())
    assert ("Dt.csv" in names) == (written["objective_kind"] == "max_confidence")
    assert _no_staging_left(tmp_path)


# ----------------------------------------------------------------- interrupts


def _long_spec(folder: Path) -> Path:
    """Shaped noise at |X| = 100, |Y| = 400 (Ramon & Basu Sec. 3.3): an LP HiGHS works on for
    many seconds, long enough to interrupt."""
    nx, ny = 100, 400
    ys = np.round(np.linspace(0.25, 0.25 * ny, ny), 6)
    lines = [
        'spec "long shaped noise"',
        f"var x : private range(1, {nx})",
        "var y : release {" + ", ".join(f"{v:g}" for v in ys) + "}",
        "param alpha = 0.02",
        "param eps = 1.0",
        "param delta = 0.01",
        "known B = P(y) = uniform",
        "design f = P(y | x)",
        "subject to E[1 / y | x] == alpha / x + (1 - alpha) * E[1 / B]",
        "subject to E[y | x] - alpha * x - (1 - alpha) * E[B] == 0",
        "subject to dp(x -> y) <= (eps, delta)",
        "minimize sum(x, y: f * (x - y)^2)",
    ]
    path = folder / "long.priv"
    path.write_text("\n".join(lines) + "\n")
    return path


def _when_solving(p: subprocess.Popen, log: Path, limit: float = 120.0) -> None:
    """Wait until the solver writes its log (it is then iterating), not a fixed time: on a busy
    machine start-up alone can take seconds."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        assert p.poll() is None, "the run ended before it could be interrupted: make the spec larger"
        if log.exists() and log.stat().st_size > 0:
            time.sleep(0.5)
            return
        time.sleep(0.1)
    raise AssertionError("the solver wrote no log in time")


def _stop(p: subprocess.Popen, sig: int, limit_s: float = 120.0) -> tuple[float, float]:
    """Send ``sig`` to ``p`` and reap it: (wall seconds until it ended, CPU seconds its threads
    spent after the signal, from /proc/PID/stat before and the exit's resource usage after)."""
    fields = Path(f"/proc/{p.pid}/stat").read_text().rpartition(")")[2].split()
    before = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime
    watchdog = threading.Timer(limit_s, p.kill)
    watchdog.start()
    sent = time.monotonic()
    p.send_signal(sig)
    try:
        _, status, usage = os.wait4(p.pid, 0)
    finally:
        watchdog.cancel()
    waited = time.monotonic() - sent
    p.returncode = os.waitstatus_to_exitcode(status)
    return waited, usage.ru_utime + usage.ru_stime - before


def _busy() -> float:
    """How many times over the machine's cores are asked for (the one-minute load average per
    core), at least 1."""
    return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))


@pytest.mark.parametrize("sig,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_ends_a_long_solve_at_once_and_writes_nothing(tmp_path, sig, code):
    spec = _long_spec(tmp_path)
    out = tmp_path / "res"
    log = tmp_path / "solver.log"
    p = subprocess.Popen(
        [PRIVOPT, "solve", str(spec), "--out", str(out), "--json", "--log", str(log)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=as_a_shell_starts_it,
    )
    _when_solving(p, log)  # import, build and lower done; HiGHS is iterating
    waited, worked = _stop(p, sig)
    stdout, stderr = p.stdout.read(), p.stderr.read()
    assert p.returncode == code, stderr
    # before: 10-30 s, the solve running to its end; the promise is about 2 s. The CPU time the
    # process spent after the signal does not depend on the machine's load; the wall time does,
    # so its allowance grows with the load (5 s on an idle machine)
    assert worked < 5.0, f"worked {worked:.1f} s of CPU after the signal"
    assert waited < 5.0 * _busy(), f"took {waited:.1f} s to stop"
    assert stdout == "" and "Traceback" not in stderr and "nothing was written" in stderr
    assert not out.exists() and _no_staging_left(tmp_path)


# ----------------------------------------------------------------- sweep


def test_sweep_gives_every_value_its_own_row_and_status():
    r = here("sweep", SPECS / "count_query_dp.priv", "eps=0.5,-1,1", "--json")
    assert r.returncode == 2, r.stderr  # a value failed, and its failure is a spec error
    rows = strict_json(r.stdout)
    assert [row["eps"] for row in rows] == [0.5, -1.0, 1.0]
    assert [row["status"] for row in rows] == ["optimal", "failed", "optimal"]
    assert "eps = -1 is outside its domain: eps must be >= 0" in rows[1]["error"]
    r = here("sweep", SPECS / "count_query_dp.priv", "eps=0.5,-1,1")
    assert r.returncode == 2
    assert r.stdout.count("optimal") == 2 and "failed" in r.stdout and "eps=-1: failed:" in r.stdout


def test_sweep_of_a_broken_spec_or_unknown_param_is_a_usage_error():
    r = here("sweep", SPECS / "count_query_dp.priv", "nosuch=1,2")
    assert r.returncode == 2 and "no param 'nosuch'" in r.stderr and r.stdout == ""


# ----------------------------------------------------------------- hostile-input review


def test_an_all_zero_counts_table_is_a_located_error(tmp_path):
    """It reached HiGHS as NaN, on which HiGHS spins forever."""
    spec = tmp_path / "z.priv"
    spec.write_text(
        (SPECS / "randomized_response.priv")
        .read_text()
        .replace("known P(X) = uniform", "known P(X) = counts {\n v1 v2 v3 v4 v5\n 0 0 0 0 0\n}")
    )
    r = run("solve", spec, timeout=60)  # a process: a regression spins, and is stopped at the timeout
    assert r.returncode == 2 and "z.priv:6:" in r.stderr and "all zero" in r.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["solve", "--set", "delta=\uff11"],
        ["solve", "--set", "delta=\u0660.\u0669"],
        ["solve", "--time-limit", "1_0"],
        ["check", "--tol", "nan"],
        ["check", "--tol", "-1"],
        ["sweep", "delta=0.5:0.9:\u00b2"],
        ["sweep", "delta=1e308:-1e308:3", "--json"],
    ],
)
def test_numbers_are_ascii_and_strict_everywhere(args):
    r = invoke(args[0], SPECS / "atr_table4.priv", *args[1:])
    assert r.exit_code == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""


def test_a_stdout_that_cannot_be_written_is_one_line(tmp_path):
    with open("/dev/full", "w") as full:
        p = subprocess.run(
            [PRIVOPT, "solve", str(SPECS / "atr_table4.priv"), "--json"], stdout=full, stderr=subprocess.PIPE, text=True
        )
    assert p.returncode == 1 and "cannot write the output" in p.stderr and "Traceback" not in p.stderr


def test_sigterm_stops_a_sweep_at_once(tmp_path):
    spec = _long_spec(tmp_path)
    log = tmp_path / "solver.log"
    p = subprocess.Popen(
        [PRIVOPT, "sweep", str(spec), "eps=1,2,3", "--json", "--log", str(log)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _when_solving(p, log)
    p.send_signal(signal.SIGTERM)
    stdout, stderr = p.communicate(timeout=60)
    assert p.returncode == 143 and stdout == "" and "terminated" in stderr


ABANDONED_SOLVER = """
import _thread, os, threading
from privopt import solverlog

at_work, may_end = threading.Event(), threading.Event()

def solver():  # ignores its cancel, then reports its interrupted run on descriptor 1, as HiGHS does
    at_work.set()
    may_end.wait()
    os.write(1, b"SOLVER CHATTER\\n")

def ctrl_c():  # once the solver is at work (no timer: under load a timer can fire too early or too late)
    at_work.wait()
    _thread.interrupt_main()

threading.Thread(target=ctrl_c, daemon=True).start()
try:
    with solverlog.captured():
        solverlog.interruptible(solver, cancel=lambda: None, grace_s=0.05)
except KeyboardInterrupt:
    assert solverlog.solver_running()
    may_end.set()  # the abandoned solver prints, ends and hands descriptor 1 back
    for worker in threading.enumerate():
        if worker.name == "privopt-solver":
            worker.join()
    assert not solverlog.solver_running()
    os.write(1, b"privopt's own output\\n")
"""


def test_an_abandoned_solver_never_prints_on_stdout():
    """Before: leaving ``captured()`` on an interrupt pointed descriptor 1 back at stdout while
    the abandoned solver thread was still at work, and its report of the interrupted run landed
    on privopt's stdout (seen as HiGHS lines under load after SIGTERM). Now the worker restores
    stdout itself when it ends."""
    r = subprocess.run(
        [sys.executable, "-c", ABANDONED_SOLVER],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=as_a_shell_starts_it,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout == "privopt's own output\n"


# ----------------------------------------------------------------- composites (specs/blocks_*.priv)


@pytest.mark.parametrize("path", spec_params(COMPOSITE_SPECS))
def test_every_composite_prints_strict_json(path, composite_solved, capfd):
    """solve --json and explain --json in this process (solve once per session: conftest), with
    descriptor 1 watched for a solver's own output (solve through the installed CLI: below)."""
    solved = composite_solved[path.stem]
    assert solved.leaked == b""
    assert strict_json(solved.json)["status"] in ("optimal", "feasible")
    r = here("explain", path, "--json")
    assert capfd.readouterr().out == ""
    assert r.returncode == 0, r.stderr
    data = strict_json(r.stdout)
    assert "Traceback" not in r.stderr
    assert data["class"] == "composite"


def test_a_composite_prints_strict_json_through_the_installed_cli():
    r = run("solve", SPECS / "blocks_choice.priv", "--json")
    assert r.returncode == 0, r.stderr
    assert strict_json(r.stdout)["problem_class"] == "composite" and "Traceback" not in r.stderr


def test_a_composite_sweep_gives_every_value_its_own_row_and_status():
    r = run("sweep", SPECS / "blocks_choice.priv", "eps=0.5,-1", "--json")
    assert r.returncode == 0, r.stderr  # infeasible is an answer
    rows = strict_json(r.stdout)
    assert [row["status"] for row in rows] == ["optimal", "infeasible"]
    assert rows[1]["even_split"] == {"objective": None, "gain": None}  # no split of a negative budget
    assert rows[0]["even_split"]["gain"] == 0.0  # one block released: the even split is the whole budget
