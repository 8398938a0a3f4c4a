"""Hostile inputs to the command line's own options and files (issue 19, items 2, 3 and 6, and
the signal and streaming problems): every option is checked on every route and for every
problem class, every file the CLI reads itself is refused at once when it is not a regular
file, sizes are checked before memory is allocated, SIGTERM while output streams ends with
"terminated" and exit 143, and ``python -m privopt`` is the console script."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import privopt
from privopt.errors import UsageError
from tests.conftest import SPECS, as_a_shell_starts_it, invoke

PRIVOPT = str(Path(sys.executable).parent / "privopt")

# one spec per problem class
CLASSES = {
    "transparency-report": SPECS / "atr_table4.priv",
    "mechanism": SPECS / "count_query_dp.priv",
    "shaped-noise": SPECS / "shaped_noise_means.priv",
    "noise-placement": SPECS / "noise_placement.priv",
    "obfuscation": SPECS / "obfuscation_bsc.priv",
}
AVAILABLE = "available: highs, scipy, cvxpy, pyomo"


def run(*args, timeout=120, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([PRIVOPT, *map(str, args)], capture_output=True, text=True, timeout=timeout, **kw)


def usage_error(r, *words: str) -> None:
    """Exit 2, nothing on stdout, no traceback, and every one of ``words`` in the message (``r``:
    a run of the installed CLI, or one in this process through conftest's ``invoke``)."""
    code = r.returncode if isinstance(r, subprocess.CompletedProcess) else r.exit_code
    assert code == 2, (code, r.stdout, r.stderr)
    assert r.stdout == "" and "Traceback" not in r.stderr, r.stderr
    for w in words:
        assert w in r.stderr, (w, r.stderr)


# ----------------------------------------------------------------- item 2: every option checked


@pytest.mark.parametrize("name", ["nosuchsolver", "gurobi"])
@pytest.mark.parametrize("cls", list(CLASSES))
def test_an_unknown_backend_is_refused_for_every_class(cls, name):
    """Before: ignored with exit 0 where a closed form answers (transparency report, obfuscation)."""
    usage_error(invoke("solve", CLASSES[cls], "--backend", name), f"unknown backend '{name}'", AVAILABLE)


@pytest.mark.parametrize("cls", list(CLASSES))
def test_the_api_refuses_an_unknown_backend_in_the_same_words(cls):
    with pytest.raises(UsageError, match=f"unknown backend 'nosuch'; {AVAILABLE}"):
        privopt.load(CLASSES[cls]).solve(backend="nosuch")


@pytest.mark.parametrize(
    "cls,applies",
    [
        ("transparency-report", "lfp, closed-form"),
        ("mechanism", "lp"),
        ("shaped-noise", "lp"),
        ("noise-placement", "conic"),
        ("obfuscation", "global"),
    ],
)
def test_a_method_that_does_not_apply_says_which_do(cls, applies):
    method = "qp" if cls != "mechanism" else "global"
    r = invoke("solve", CLASSES[cls], "--method", method)
    usage_error(r, f"method '{method}' does not apply", f"methods that apply to this problem: {applies}")


@pytest.mark.parametrize(
    "cls,args,words",
    [
        ("transparency-report", ["--solver", "SCS"], "applies to backends with inner solvers (cvxpy), not 'highs'"),
        ("transparency-report", ["--backend", "cvxpy", "--solver", "NOPE"], "backend 'cvxpy' has no solver 'NOPE'"),
        ("obfuscation", ["--solver", "SCS"], "obfuscation problems are solved without a solver"),
        ("obfuscation", ["--backend", "cvxpy", "--solver", "NOPE"], "backend 'cvxpy' has no solver 'NOPE'"),
        ("noise-placement", ["--solver", "HIGHS"], "solver 'HIGHS' takes no second-order or PSD cones"),
        ("noise-placement", ["--backend", "highs"], "backend 'highs' does not solve conic programs"),
    ],
)
def test_a_solver_that_cannot_be_used_is_refused_before_solving(cls, args, words):
    """Before: ignored (closed forms, obfuscation) or a solver failure, exit 1, after the solve."""
    usage_error(invoke("solve", CLASSES[cls], *args), words)


# ----------------------------------------------------------------- item 2: the dask engine


def _parts(tmp_path: Path) -> Path:
    from tests.test_parquet_parts import write

    write(tmp_path, False, "data/")
    return tmp_path / "parts.priv"


@pytest.mark.parametrize(
    "address,words",
    [
        ("not an address", "scheduler address 'not an address' is malformed; write it SCHEME://HOST:PORT"),
        ("tcp://host", "scheduler address 'tcp://host' is malformed"),
        ("tcp://127.0.0.1:99999", "is malformed"),
        ("udp://127.0.0.1:8786", "unknown scheme 'udp'"),
        ("tcp://127.0.0.1:1", "cannot reach the Dask scheduler at tcp://127.0.0.1:1 within 5 s (Connection refused)"),
    ],
)
def test_a_bad_or_unreachable_scheduler_is_exit_2_naming_it(tmp_path, address, words):
    """Before: an internal error after 30 s (unreachable) or at once (malformed). No cluster needed."""
    spec = _parts(tmp_path)
    t0 = time.monotonic()
    r = run("solve", spec, "--engine", "dask", "--scheduler", address)
    usage_error(r, words)
    assert time.monotonic() - t0 < 20


@pytest.mark.parametrize(
    "args,words",
    [
        (["--backend", "gurobi"], f"unknown backend 'gurobi'; {AVAILABLE}"),
        (["--method", "lp"], "methods that apply to them: closed-form, lfp"),
        (["--scheduler", "tcp://127.0.0.1:1", "--workers", "2"], "workers set the size of a local cluster"),
    ],
)
def test_dask_options_are_checked_on_the_driver(tmp_path, args, words):
    """Before: a bad backend failed inside a worker, as a traceback in distributed's log."""
    usage_error(invoke("solve", _parts(tmp_path), "--engine", "dask", *args), words)


@pytest.mark.slow
def test_an_inline_table_works_on_the_dask_engine(tmp_path):
    """Before: each block narrowed g and h, and the inline table's rows for the other labels
    were 'not in the domain' on a worker (a traceback in the log, then exit 2)."""
    spec = _parts(tmp_path)
    rows = "\n".join(f"    {g} {h}: 0 0.5 1" for g in "FMX" for h in "pq")
    text = spec.read_text().replace(
        'known D = P(decision = approve | g, h, s) from "data/" column rate',
        "known D = P(decision = approve | g, h, s) = {\n    low mid high\n" + rows + "\n}",
    )
    (tmp_path / "inline.priv").write_text(text)
    local = privopt.solve(tmp_path / "inline.priv")
    res = privopt.solve(tmp_path / "inline.priv", engine="dask", workers=2, processes=False)
    assert res.engine == "dask" and res.status == "optimal" and res.verification["passed"]
    assert res.stats["dask"]["block_variables"] == []  # g is listed by the inline table: one block
    assert abs(res.beta - local.beta) <= 1e-12 and len(res.groups) == len(local.groups) == 6


# ----------------------------------------------------------------- item 3: the CLI's own file inputs

ATR = CLASSES["transparency-report"]


@pytest.fixture
def fifo(tmp_path) -> Path:
    path = tmp_path / "pipe.csv"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize(
    "args,words",
    [
        (["audit", ATR, "--release", "{fifo}"], ["--release", "is a FIFO (named pipe), not a regular file"]),
        (
            ["apply", ATR, "--data", "{fifo}", "--out", "{tmp}/out.csv"],
            ["--data", "is a FIFO (named pipe), not a regular file"],
        ),
        (["solve", ATR, "--log", "{fifo}"], ["--log", "is a FIFO (named pipe), not a regular file"]),
        (["audit", ATR, "--log", "{fifo}", "--json"], ["--log", "is a FIFO (named pipe), not a regular file"]),
    ],
)
def test_a_fifo_is_refused_at_once(tmp_path, fifo, args, words):
    """Before: each of these waited for a writer (or a reader) forever. A wait would end in
    ``subprocess.TimeoutExpired`` (the test fails); how fast the refusal is on a loaded machine
    is not this test's business (no wall-clock bound: it was flaky under parallel load)."""
    args = [str(a).format(fifo=fifo, tmp=tmp_path) for a in args]
    r = run(*args, timeout=60)
    usage_error(r, str(fifo), *words)
    assert not (tmp_path / "out.csv").exists()


def test_a_fifo_with_a_reader_is_refused_as_a_log_too(tmp_path, fifo):
    """With a reader at the other end the open succeeds; fstat of what was opened refuses it."""
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        usage_error(run("solve", ATR, "--log", fifo, timeout=30), "--log", "is a FIFO (named pipe), not a regular file")
        assert os.read(reader, 100) == b""  # nothing was written into it
    finally:
        os.close(reader)


@pytest.mark.parametrize("option", ["--release", "--data", "--log"])
def test_a_device_is_not_a_file_of_the_cli(tmp_path, option):
    args = {
        "--release": ["audit", ATR, "--release", "/dev/zero"],
        "--data": ["apply", ATR, "--data", "/dev/zero", "--out", tmp_path / "o.csv"],
        "--log": ["solve", ATR, "--log", "/dev/null"],
    }[option]
    usage_error(run(*args, timeout=30), option, "is a device, not a regular file")


def test_a_release_naming_a_column_twice_says_so(tmp_path):
    """Before: 'column 'value.1' is not a variable of Dt' (pandas' renaming of the copy)."""
    release = tmp_path / "Dt.csv"
    release.write_text("gender,income,decision,value,value\nF,low,deny,1,1\n")
    r = invoke("audit", ATR, "--release", release)
    usage_error(r, f"{release}: error: the header names the column 'value' twice", "name each column once")
    assert "value.1" not in r.stderr


def test_the_api_refuses_a_fifo_release_too(fifo):
    from privopt.audit import read_release

    with pytest.raises(UsageError, match="is a FIFO"):
        read_release(privopt.load(ATR), fifo)


@pytest.mark.parametrize(
    "args,words",
    [
        (
            ["--rows", "1000000000000", "--cols", "10", "--trials", "1"],
            "row degrees; simulate holds them in memory, at most 50,000,000",
        ),
        (["--rows", "1000000", "--cols", "10", "--trials", "51"], "= 51,000,000 row degrees"),
        (["--rows", "100", "--cols", "1000000", "--trials", "1"], "--cols 1,000,000: at most 2,000"),
    ],
)
def test_simulate_checks_sizes_before_allocating(args, words):
    """Before: an internal MemoryError (or, for --cols, minutes of swapping)."""
    usage_error(run("simulate", CLASSES["obfuscation"], *args, timeout=30), words)


# ----------------------------------------------------------------- signals while the output streams


def _many_groups(folder: Path, groups: int) -> Path:
    """A transparency report with ``groups`` QID groups (its JSON is far larger than a pipe's
    buffer, so the writer blocks until the reader reads)."""
    import numpy as np

    rates = np.random.default_rng(1).choice([0.0, 0.25, 0.5, 1.0], size=3 * groups)
    lines = ["g,s,rate"] + [f"{1 + i // 3},{('low', 'mid', 'high')[i % 3]},{r}" for i, r in enumerate(rates)]
    (folder / "rates.csv").write_text("\n".join(lines) + "\n")
    spec = folder / "many.priv"
    spec.write_text(f"""spec "many groups"
var g : public range(1, {groups})
var s : private {{low, mid, high}}
var decision : outcome {{deny, approve}}
known P(g, s) = uniform
known D = P(decision = approve | g, s) from "rates.csv" column rate
design Dt = P(decision | g, s)
subject to |Dt - D| <= 0.1
minimize max_confidence(g, decision -> s)
""")
    return spec


def _wait_until_blocked_on_stdout(p: subprocess.Popen, limit_s: float = 120.0) -> None:
    """Wait until ``p`` sleeps in a system call on descriptor 1, i.e. its write is blocked on the
    full pipe (Linux: /proc/PID/syscall is the call's number and then its arguments, the first
    0x1): a readiness condition, not a sleep that a loaded machine can outrun."""
    end = time.monotonic() + limit_s
    while time.monotonic() < end and p.poll() is None:
        call = Path(f"/proc/{p.pid}/syscall").read_text().split()
        if call[1:2] == ["0x1"]:
            return
        time.sleep(0.01)
    assert p.poll() is None, "privopt ended before it could be signalled: make the output larger"
    raise AssertionError(f"privopt did not block on its stdout within {limit_s} s")


def _signal_mid_stream(args, sig) -> tuple[int, str, str]:
    """Start privopt, wait for its first byte on stdout, wait until it has filled the pipe, then
    signal it."""
    p = subprocess.Popen(
        [PRIVOPT, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=as_a_shell_starts_it
    )
    try:
        first = os.read(p.stdout.fileno(), 1)  # unbuffered: communicate() reads the descriptor itself
        assert first == b"{", (first, p.stderr.read())
        _wait_until_blocked_on_stdout(p)
        p.send_signal(sig)
        rest, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    return p.returncode, (first + rest).decode(), err.decode()


@pytest.mark.parametrize("command,groups", [("audit", 20), ("solve", 3000)])
@pytest.mark.parametrize("sig,code,word", [(signal.SIGTERM, 143, "terminated"), (signal.SIGINT, 130, "interrupted")])
def test_a_signal_while_json_streams_says_the_json_is_incomplete(tmp_path, command, groups, sig, code, word):
    """Before: a traceback, exit 1, and a truncated JSON document on stdout with no word of it."""
    rc, stdout, stderr = _signal_mid_stream([command, _many_groups(tmp_path, groups), "--json"], sig)
    assert rc == code, stderr
    assert "Traceback" not in stderr
    assert f"{word}: stopped while printing the result: the JSON on stdout is incomplete" in stderr
    with pytest.raises(json.JSONDecodeError):  # what was out stays out, and is not a whole document
        json.loads(stdout)
    if command == "audit":  # no timings in it: what is out is the start of the whole document
        whole = run(command, tmp_path / "many.priv", "--json").stdout
        assert len(stdout) < len(whole) and whole.startswith(stdout)
    else:
        assert stdout.startswith('{\n  "status": "optimal"')


def test_a_late_sigterm_leaves_a_finished_run_alone(tmp_path):
    """The summary fully printed, the interpreter tearing down: exit 0, not killed by signal 15."""
    p = subprocess.Popen(
        [PRIVOPT, "solve", _many_groups(tmp_path, 3000), "--no-tables"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    text = p.stdout.read()  # EOF: stdout closed, i.e. the process is exiting
    p.send_signal(signal.SIGTERM)
    _, err2 = p.communicate(timeout=30)
    assert p.returncode in (0, 143), (p.returncode, err2)  # 143 only if it came before the teardown
    assert "Traceback" not in err2
    assert text.startswith("many groups\nstatus: optimal (verified)") and "QID groups (3,000)" in text


# ----------------------------------------------------------------- item 6: python -m privopt


def test_python_dash_m_privopt_is_the_console_script():
    """Before: 'No module named privopt.__main__'."""
    r = subprocess.run([sys.executable, "-m", "privopt", "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith("Usage: privopt [OPTIONS] COMMAND [ARGS]...")
    assert "python -m" not in r.stdout
    r = subprocess.run(
        [sys.executable, "-m", "privopt", "solve", ATR, "--json"], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0 and json.loads(r.stdout)["beta"] == pytest.approx(0.675, rel=1e-12)
    r = subprocess.run(
        [sys.executable, "-m", "privopt", "solve", ATR, "--backend", "gurobi"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    usage_error(r, f"unknown backend 'gurobi'; {AVAILABLE}")


def test_the_readme_quickstart_says_how_to_reach_privopt():
    readme = (SPECS.parent / "README.md").read_text()
    quick = readme[readme.index("## Quickstart") : readme.index("## A spec")]
    commands = [line for line in quick.split("```bash\n")[1].split("```")[0].splitlines() if line.strip()]
    assert len(commands) == 2  # exactly the two commands
    assert "`source .venv/bin/activate`" in quick and "python -m privopt" in quick


@pytest.mark.parametrize("engine", ["local", "dask"])
def test_more_workers_than_the_machine_can_use_are_refused(tmp_path, engine):
    """Before: a pool of (up to) 100,000 processes, or a local Dask cluster of 100,000 workers."""
    spec = CLASSES["transparency-report"] if engine == "local" else _parts(tmp_path)
    usage_error(
        invoke("solve", spec, "--engine", engine, "--workers", "100000"),
        "workers 100,000 is more than this machine can use: at most",
    )


def test_the_api_checks_a_scheduler_address_too(tmp_path):
    with pytest.raises(UsageError, match="scheduler address 'tcp://:8786' is malformed"):
        privopt.solve(_parts(tmp_path), engine="dask", scheduler="tcp://:8786")


@pytest.mark.parametrize(
    "args,words",
    [
        (["sweep", ATR, "delta=0.5,0.6", "--backend", "gurobi"], [f"unknown backend 'gurobi'; {AVAILABLE}"]),
        (
            ["sweep", CLASSES["obfuscation"], "eps=0.5,0.6", "--method", "lp"],
            ["methods that apply to this problem: global"],
        ),
        (
            ["apply", ATR, "--data", "{tmp}/none.csv", "--out", "{tmp}/o.csv", "--backend", "gurobi"],
            [f"unknown backend 'gurobi'; {AVAILABLE}"],
        ),
        (
            ["check", CLASSES["noise-placement"], "--backends", "highs"],
            ["no route of this noise problem runs on highs; its routes run on: cvxpy:CLARABEL, cvxpy:SCS"],
        ),
        (["check", CLASSES["obfuscation"], "--backends", "highs"], ["its routes use no backend"]),
    ],
)
def test_sweep_apply_and_check_check_their_options_first(tmp_path, args, words):
    """Before: sweep ignored --backend where a closed form answered (exit 0) and failed every
    value otherwise; apply read the records first; check --backends with no route on it was
    'inconclusive', exit 1."""
    r = invoke(*[str(a).format(tmp=tmp_path) for a in args])
    usage_error(r, *words)
    assert not (tmp_path / "o.csv").exists()
