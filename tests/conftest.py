import os
import signal
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

# privopt lays text out for COLUMNS when it is set (the reader's width); pytest-xdist's workers
# set COLUMNS=80 for themselves, which would make every in-process run wrap at 80. Tests that
# want a width set COLUMNS themselves, in a subprocess's environment.
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "specs"
# the specs of one program (one block kind); composites (specs/blocks_*.priv, issue 21) combine
# such specs and have no single problem class or plan: tests/test_composite*.py walk them (solve,
# check, explain, sweep, --out, with goldens), and tests/test_outputs.py (strict JSON, sweep rows)
PROGRAM_SPECS = sorted(p for p in SPECS.glob("*.priv") if not p.name.startswith("blocks_"))
COMPOSITE_SPECS = sorted(SPECS.glob("blocks_*.priv"))
# The specs whose solve and check are the longest (blocks_joint_mixed and _target: a joint Gaussian group
# inside a certified split; measured 2026-11-26 at load 4 on 2 cores: solve 4.6 and 4.0 CPU-s, check 7.3 and 5.6,
# and with the 30-odd tests that read them about 40 worker-seconds, some 20 s of the default run on 2
# cores): every test that reads their answer is
# marked slow, so it runs in CI's slow step (.ci/run), not in the default run, where the other
# specs still reach each construct. A test not marked slow that asks ``composite_solved``,
# ``composite_written`` or ``composite_checked`` for them fails saying so (``_slow_only``).
SLOW_SPECS = {"blocks_joint_mixed", "blocks_joint_mixed_target"}
# `check` of a choice between joint Gaussian programs and of a target on a joint member: 10-20 s
# each (every branch and grid split is a joint program); blocks_joint_gaussian and _target keep
# `check` of joint programs in the default run.
SLOW_CHECKS = SLOW_SPECS | {"blocks_joint_choice", "blocks_joint_member"}


def spec_params(specs, slow: set[str] = SLOW_SPECS) -> list:
    """Each spec (a path, or a stem) as a pytest parameter with its stem as id, marked slow when
    its stem is in ``slow``."""
    return [
        pytest.param(spec, id=Path(spec).stem, marks=[pytest.mark.slow] if Path(spec).stem in slow else [])
        for spec in specs
    ]


def as_a_shell_starts_it() -> None:
    """``preexec_fn`` of a subprocess its test signals: SIGINT and SIGTERM with their default
    dispositions and unblocked, as a shell starts a command, whatever this test process holds (a
    disposition set to ignore, or a blocked mask, is inherited across exec; one full run saw an
    xdist worker whose children ignored SIGINT)."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, set())


@pytest.fixture(autouse=True)
def _signals_as_they_were(request):
    """Each test leaves this process's SIGINT/SIGTERM handlers and signal mask as it found them
    (restored after it: the CLI run in-process installs its SIGTERM handler, as its process
    would). What a child would inherit across exec, a disposition set to ignore or a changed mask,
    is named in a warning: no in-process privopt call should leave it."""
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, set())
    yield
    inherited = [
        sig.name for sig, h in handlers.items() if h is not signal.SIG_IGN and signal.getsignal(sig) is signal.SIG_IGN
    ]
    if signal.pthread_sigmask(signal.SIG_BLOCK, set()) != mask:
        inherited.append("the signal mask")
    for sig, h in handlers.items():
        if signal.getsignal(sig) is not h:
            signal.signal(sig, h)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    if inherited:
        warnings.warn(f"{request.node.nodeid} left {', '.join(inherited)} changed (restored)", stacklevel=1)


@pytest.fixture
def specs_dir() -> Path:
    return SPECS


# Hypothesis profiles. The default run tries few examples per property ("fast"; "ci" is the same,
# derandomized: the same examples every run); "deep" tries each property test's full count, and
# CI runs it as a step of its own over exactly the property tests (.ci/run:
# HYPOTHESIS_PROFILE=deep pytest -m hypothesis); "fuzz" searches long.
from hypothesis import HealthCheck, settings  # noqa: E402

FEW_EXAMPLES, FULL_EXAMPLES = 15, 100
_CI = bool(os.environ.get("CI"))
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci" if _CI else "fast")
settings.register_profile("fast", max_examples=FEW_EXAMPLES, deadline=None, print_blob=True)
settings.register_profile("ci", max_examples=FEW_EXAMPLES, derandomize=True, deadline=None, print_blob=True)
settings.register_profile("deep", max_examples=FULL_EXAMPLES, derandomize=_CI, deadline=None, print_blob=True)
settings.register_profile(
    "fuzz", max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.load_profile(PROFILE)


def examples(n: int, few: int = FEW_EXAMPLES) -> int:
    """A property test's example count when it names its own: ``n`` (its full search) in the deep
    and fuzz profiles; in the default run at most ``few`` (fewer than FEW_EXAMPLES for a property
    whose examples take seconds each)."""
    return min(n, few) if PROFILE in ("fast", "ci") else n


def invoke(*args, env: dict[str, str] | None = None):
    """``privopt ARGS`` in this process (click's runner), each argument as text; ``env`` is set
    in ``os.environ`` for the run (e.g. ``{"COLUMNS": "60"}``)."""
    from click.testing import CliRunner

    from privopt.cli import main

    return CliRunner().invoke(main, [str(a) for a in args], env=env)


def strict_json(text: str):
    """``json.loads`` that refuses NaN and Infinity (``--json`` output is strict JSON)."""
    import json

    def refuse(token):
        raise ValueError(f"non-standard JSON token {token}")

    return json.loads(text, parse_constant=refuse)


# ----------------------------------------------------------------- shared solves (issue 23, goal 4)
# A composite's solve (specs/blocks_*.priv) takes up to tens of seconds (its blocks' solves); many
# test files read the same answer. Each is solved (and checked) once per test run, on demand, and
# kept on disk where every pytest-xdist worker of the run finds it: the first worker to ask solves
# under a file lock, the others wait for it and read. (pytest-xdist's --dist loadgroup cannot pin
# the readers to one worker instead: with pytest 9 its xdist_group marks no longer reach the
# scheduler.)


class Lazy(dict):
    """A cache: ``cache[key]`` is ``make(key)``, computed the first time it is asked for."""

    def __init__(self, make):
        super().__init__()
        self.make = make

    def __missing__(self, key):
        value = self[key] = self.make(key)
        return value


@dataclass(frozen=True)
class Solved:
    """``privopt solve specs/STEM.priv --json --out DIR`` run once per test run: its JSON text,
    the folder it wrote, and what reached descriptor 1 while it ran beside the runner's stdout (a
    solver's own output; must be nothing)."""

    json: str
    out: Path
    leaked: bytes


def _fd1_captured(run):
    """``run()`` with file descriptor 1 pointed at a temporary file: (its value, the bytes written
    to descriptor 1 meanwhile, e.g. by a solver's C code, which click's runner does not see)."""
    import tempfile

    with tempfile.TemporaryFile() as sink:
        sys.stdout.flush()
        saved = os.dup(1)
        os.dup2(sink.fileno(), 1)
        try:
            value = run()
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        sink.seek(0)
        return value, sink.read()


def _run_folder(tmp_path_factory) -> Path:
    """A folder of this test run that every pytest-xdist worker of it shares (the workers' base
    temporary folders sit side by side in it); this session's own without xdist."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


_RUNNING: dict[str, pytest.Item] = {}


def pytest_runtest_setup(item: pytest.Item) -> None:
    _RUNNING["item"] = item  # the test whose fixtures and body run now (``_slow_only``)


def _slow_only(stem: str, slow: set[str], what: str) -> None:
    """A test not marked slow that asks for a slow spec's ``what`` fails, naming the mark to add:
    the default run never spends the minutes (``SLOW_SPECS``, ``SLOW_CHECKS``)."""
    item = _RUNNING.get("item")
    if stem in slow and item is not None and item.get_closest_marker("slow") is None:
        pytest.fail(f"{item.nodeid} reads the {what} of {stem} (conftest.SLOW_SPECS/SLOW_CHECKS): mark it slow")


def _once_per_run(folder: Path, make) -> dict:
    """``make(folder)`` (a JSON-able dict) run by the first process of this test run to ask, under
    a file lock, and kept in ``folder``; every process reads the kept value."""
    import fcntl
    import json

    folder.parent.mkdir(parents=True, exist_ok=True)
    kept = folder.parent / f"{folder.name}.json"
    with open(folder.parent / f"{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the lock file closes
        if not kept.exists():
            kept.write_text(json.dumps(make(folder)))
        return json.loads(kept.read_text())


@pytest.fixture(scope="session")
def composite_solved(tmp_path_factory) -> Lazy:
    """stem -> ``Solved`` for each composite spec, solved once per test run (read only: a test that
    changes a result copies it first)."""
    base = _run_folder(tmp_path_factory) / "composites-solved"

    def solve(out: Path) -> dict:
        spec = SPECS / f"{out.name}.priv"
        r, leaked = _fd1_captured(lambda: invoke("solve", spec, "--json", "--out", out))
        assert r.exit_code == 0, r.output
        return {"json": r.stdout, "out": str(out), "leaked": leaked.hex()}

    def read(stem: str) -> Solved:
        _slow_only(stem, SLOW_SPECS, "solve")
        kept = _once_per_run(base / stem, solve)
        return Solved(kept["json"], Path(kept["out"]), bytes.fromhex(kept["leaked"]))

    return Lazy(read)


@pytest.fixture(scope="session")
def composite_written(tmp_path_factory) -> Lazy:
    """stem -> (what ``privopt solve specs/STEM.priv --out DIR`` printed: its text summary and the
    files it wrote; DIR), run once per test run (read only: a test that writes there copies it first)."""
    base = _run_folder(tmp_path_factory) / "composites-written"

    def write(out: Path) -> dict:
        r = invoke("solve", SPECS / f"{out.name}.priv", "--out", out)
        assert r.exit_code == 0, r.output
        return {"output": r.output}

    def read(stem: str) -> tuple[str, Path]:
        _slow_only(stem, SLOW_SPECS, "solve")
        return _once_per_run(base / stem, write)["output"], base / stem

    return Lazy(read)


@pytest.fixture(scope="session")
def composite_checked(tmp_path_factory) -> Lazy:
    """stem -> (exit code, the JSON of ``privopt check specs/STEM.priv --json`` when it printed
    one (exit 0 or 4), else its output), run once per test run."""
    base = _run_folder(tmp_path_factory) / "composites-checked"

    def check(folder: Path) -> dict:
        r = invoke("check", SPECS / f"{folder.name}.priv", "--json")
        return {"code": r.exit_code, "text": r.stdout if r.exit_code in (0, 4) else r.output}

    def read(stem: str):
        _slow_only(stem, SLOW_CHECKS, "check")
        kept = _once_per_run(base / stem, check)
        return kept["code"], strict_json(kept["text"]) if kept["code"] in (0, 4) else kept["text"]

    return Lazy(read)
