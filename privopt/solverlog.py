"""Where solver output goes, and how a solve is interrupted.

privopt's stdout belongs to privopt: ``--json`` prints one JSON object there and nothing else.
Solvers write to the process's file descriptor 1 from C (HiGHS prints a banner when a ``Highs``
object is constructed, from 1.16 on, whatever its ``output_flag``), so silencing them by option
is not enough. Every solver call runs inside ``captured()``, which points descriptor 1 (and
Python's ``sys.stdout``) at the solver log for its duration:

* by default the log is discarded;
* ``configure("stderr")`` (``privopt --verbose``) sends it to stderr, and solvers are asked
  to be verbose;
* ``configure(path)`` (``privopt --log FILE``) appends it to a file, verbose too; the path must
  be a regular file (or absent: it is created), checked without blocking (``privopt.files``).

``interruptible(run, cancel)`` runs a blocking solver call in a worker thread while the main
thread waits in short slices, so Ctrl-C is seen within a tenth of a second: ``cancel`` (HiGHS's
user interrupt) stops the solver, and ``KeyboardInterrupt`` is raised in the caller. A solver
without a cancel hook is left to finish in its daemon thread (the CLI exits at once).
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from .files import open_regular

T = TypeVar("T")

_sink: str | Path | None = None  # None: discard; "stderr"; or a file path
_lock = threading.RLock()
_depth = 0
_saved_fd: int | None = None


def configure(sink: str | Path | None) -> None:
    """Send solver output to ``"stderr"``, to the file ``sink``, or (None) nowhere."""
    global _sink
    if sink is not None and sink != "stderr":
        sink = Path(sink)
        # fail now, as a usage error, not inside a solve; a FIFO or device (NotRegularFile, an
        # OSError) is refused at once instead of waiting for a reader
        os.close(open_regular(sink, append=True))
    _sink = sink


def verbose() -> bool:
    """True when solver output is kept: backends then ask their solvers for a log."""
    return _sink is not None


def _flush_c_stdio() -> None:
    """Flush C's stdio buffers, so nothing a solver printed lands on the restored stdout."""
    import ctypes  # when a solver ran, not at start-up

    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):  # pragma: no cover - no libc symbol table (not Linux/macOS)
        pass


def _open_sink() -> int:
    if _sink is None:
        return os.open(os.devnull, os.O_WRONLY)
    if _sink == "stderr":
        return os.dup(2)
    return open_regular(_sink, append=True)  # checked again: never blocks on a FIFO swapped in


@contextlib.contextmanager
def captured() -> Iterator[None]:
    """Route descriptor 1 and ``sys.stdout`` to the solver log while the block runs (nestable)."""
    global _depth, _saved_fd
    with _lock:
        if _depth == 0:
            with contextlib.suppress(ValueError, OSError):
                sys.stdout.flush()
            _flush_c_stdio()
            try:
                saved = os.dup(1)
            except OSError:  # no descriptor 1 at all: nothing to protect
                saved = None
            if saved is not None:
                target = _open_sink()
                os.dup2(target, 1)
                os.close(target)
            _saved_fd = saved
        _depth += 1
    python_sink = sys.stderr if _sink == "stderr" else io.StringIO() if _sink is None else None
    try:
        if python_sink is None:
            with (
                os.fdopen(open_regular(_sink, append=True), "a", encoding="utf-8") as log,
                contextlib.redirect_stdout(log),
            ):
                yield
        else:
            with contextlib.redirect_stdout(python_sink):
                yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _saved_fd is not None and not _running:
                _restore_stdout()
            # else: a solver abandoned by an interrupt is still at work and may still print
            # (HiGHS reports its interrupted run): descriptor 1 stays on the log until that
            # worker ends and restores it (``interruptible``), so nothing reaches privopt's stdout


def _restore_stdout() -> None:
    """Point descriptor 1 back at privopt's stdout (the caller holds ``_lock``)."""
    global _saved_fd
    _flush_c_stdio()
    os.dup2(_saved_fd, 1)
    os.close(_saved_fd)
    _saved_fd = None


def interruptible(run: Callable[[], T], cancel: Callable[[], None] | None = None, grace_s: float = 1.5) -> T:
    """``run()`` in a worker thread; Ctrl-C calls ``cancel`` and raises ``KeyboardInterrupt``.

    After ``cancel`` the worker gets ``grace_s`` seconds to stop (HiGHS stops within one
    simplex or IPM iteration), so the interrupt takes effect within about two seconds. A
    worker still running after that is abandoned: ``solver_running()`` says so, and the CLI
    then leaves with ``os._exit`` (a C++ solver thread alive at interpreter shutdown aborts the
    process)."""
    box: dict[str, object] = {}
    done = threading.Event()  # not Thread.is_alive: an interrupted join() can report a live thread dead

    def work() -> None:
        try:
            box["value"] = run()
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = e
        finally:
            _running.discard(done)  # before done.set(): the waiting caller must see it finished
            done.set()
            with _lock:
                if not _running and _depth == 0 and _saved_fd is not None:
                    _restore_stdout()  # the last abandoned solver ended: stdout is privopt's again

    _running.add(done)
    threading.Thread(target=work, name="privopt-solver", daemon=True).start()
    try:
        while not done.wait(0.05):
            pass
    except BaseException:  # KeyboardInterrupt, or the CLI's SIGTERM exception
        if cancel is not None:
            with contextlib.suppress(Exception):
                cancel()
            done.wait(grace_s)
        raise
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]


_running: set[threading.Event] = set()  # one per solver call still at work


def solver_running() -> bool:
    """True while an abandoned solver thread is still at work."""
    return bool(_running)
