"""``--out DIR``: a result folder written all or nothing.

A run stages its files in a fresh hidden folder beside DIR (``.DIR.privopt-XXXX``, in DIR's own
parent, so the final rename never crosses a filesystem) and only then puts the staged folder in
DIR's place:

* DIR absent: one ``rename(stage, DIR)``;
* DIR present: one atomic ``renameat2(stage, DIR, RENAME_EXCHANGE)`` on Linux (elsewhere, two
  renames with DIR briefly absent), then the old contents, now at the staging name, are removed.

So a run that fails, is interrupted or turns out infeasible never touches DIR, and a run that
succeeds leaves DIR holding exactly its own files, none of an earlier run's. The swap holds an
exclusive ``flock`` on DIR's parent folder with SIGINT and SIGTERM blocked, so two concurrent
runs end with one run's complete output, and a signal cannot strike between the renames. The
staging folder is removed on every exit path a Python process sees (SIGTERM is turned into an
exception by the CLI).

privopt replaces only a folder it wrote: one that is empty, or that holds exactly the files
listed in its ``.privopt-files`` manifest (written by every run) and the manifest. Anything else
is a usage error before solving, so ``--out ~`` cannot wipe a home folder, and a folder that
merely holds a ``result.json`` is not mistaken for privopt's. The working folder (or one above
it) is refused too, and an unwritable place is a usage error before solving. The new folder
keeps the mode of the one it replaces (or the umask's).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import signal
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from .errors import UsageError
from .render import visible

_RENAME_EXCHANGE = 2  # linux/fs.h


MANIFEST = ".privopt-files"  # the names a run wrote, one per line: what makes a folder privopt's


RESERVED = ("result.json", "groups.csv", "noise.csv", "losses.csv")  # names of the files that are not tables


def out_files(result) -> dict[str, Callable[[Path], None]]:
    """The files ``--out DIR`` writes for a solved ``result`` (a ``privopt.results.Result``), by
    name, each with the function that writes it. Every class writes ``result.json`` (the
    ``--json`` object without the tables) and its released values as CSV:

    * one ``NAME.csv`` per released table (transparency reports, mechanisms, shaped noise,
      obfuscation): a column per variable (labels) and ``value`` at full precision; a table
      whose name is one of the other files' is written as ``table_NAME.csv``;
    * ``groups.csv`` (transparency reports): one row per QID group, in spec order;
    * ``noise.csv`` (noise placement): ``noise, i, variance``, one row per coordinate ``i``
      (from 1) of every noise vector: the variance Sigma_ii of the optimal placement (for a
      correlated vector, the diagonal of its covariance);
    * ``covariance_NAME.csv`` for each correlated noise vector NAME: ``i, j, covariance``, every
      entry of Sigma;
    * ``losses.csv`` (noise placement): ``placement, loss``, the expected squared error of the
      optimum and of the classic placements it is compared with.

    The last three are the noise placement section's own (``privopt.sections``: each section
    names the files it adds).

    A composite (issue 21) writes its ``result.json`` and, for each block solved by its own
    route, a subfolder named after the block with that block's files at its chosen budget; a
    block of a joint Gaussian program (no result of its own: the program is one noise placement
    of all its blocks) gets its part of the joint noise, ``NAME/noise.csv`` and
    ``NAME/covariance_NOISE.csv``, as the noise placement section writes them (``joint_noise_files``).
    """
    files: dict[str, Callable[[Path], None]] = {"result.json": lambda path: _write_json(path, result)}
    block_results = getattr(result, "block_results", None)
    if block_results is not None:
        for name, block in block_results.items():
            for file, writer in out_files(block).items():
                files[f"{name}/{file}"] = lambda path, writer=writer: _in_folder(path, writer)
        for name, entry in result.blocks.items():
            for file, writer in joint_noise_files(entry.get("variances") or {}).items():
                files[f"{name}/{file}"] = lambda path, writer=writer: _in_folder(path, writer)
        return files
    taken = {n.lower() for n in RESERVED}
    for name in result.tables:
        file = f"{name}.csv" if f"{name}.csv".lower() not in taken else f"table_{name}.csv"
        taken.add(file.lower())
        files[file] = lambda path, name=name: result.tables[name].to_csv(path, index=False)
    if not result.groups.empty:
        files["groups.csv"] = lambda path: result.groups.to_csv(path, index=False)
    for section in result.sections:  # a class's own files (noise placement: the (co)variances, the losses)
        files.update(section.files())
    return files


def joint_noise_files(variances: dict) -> dict[str, Callable[[Path], None]]:
    """A joint Gaussian program's block's noise (``{noise: variances or covariance}``, as its
    ``result.json`` entry records it) as files: ``noise.csv`` (``noise, i, variance``: Sigma_ii,
    i from 1) and ``covariance_NOISE.csv`` (``i, j, covariance``) per correlated noise; none
    without noise."""
    import csv

    def table(header: tuple[str, ...], rows: list[tuple]) -> Callable[[Path], None]:
        def write(path: Path) -> None:
            with path.open("w", newline="", encoding="utf-8") as fh:
                out = csv.writer(fh, lineterminator="\n")
                out.writerow(header)
                out.writerows(rows)

        return write

    if not variances:
        return {}
    files, rows = {}, []
    for name, S in variances.items():
        full = bool(S) and isinstance(S[0], list)
        rows += [(name, i + 1, S[i][i] if full else S[i]) for i in range(len(S))]
        if full:
            entries = [(i + 1, j + 1, S[i][j]) for i in range(len(S)) for j in range(len(S))]
            files[f"covariance_{name}.csv"] = table(("i", "j", "covariance"), entries)
    return {"noise.csv": table(("noise", "i", "variance"), rows)} | files


def _in_folder(path: Path, writer: Callable[[Path], None]) -> None:
    path.parent.mkdir(exist_ok=True)
    writer(path)


def _write_json(path: Path, result) -> None:
    """``result.json``: the ``--json`` object without the tables, streamed (``Result.write_json``)."""
    with path.open("w", encoding="utf-8") as fh:
        result.write_json(fh, tables=False)


def check_target(out_dir: Path) -> None:
    """Raise ``UsageError`` unless ``out_dir`` is absent, empty, or exactly an earlier privopt
    result (its manifest lists every file in it), is not the working folder or one above it,
    and can be created where it is."""
    out_dir = Path(os.path.abspath(out_dir))
    shown = visible(out_dir)
    if Path.cwd().resolve().is_relative_to(out_dir.resolve()):
        raise UsageError(
            f"--out {shown}: this is the working folder (or holds it), which privopt would replace; name a new folder"
        )
    if out_dir.exists() or out_dir.is_symlink():
        if out_dir.is_symlink() or not out_dir.is_dir():
            raise UsageError(f"--out {shown}: exists and is not a folder (or is a link); name a new or empty folder")
        names = sorted(e.name for e in out_dir.iterdir())
        if names and not _is_earlier_result(out_dir, names):
            listed = ", ".join(visible(n) for n in names[:3]) + (", ..." if len(names) > 3 else "")
            raise UsageError(
                f"--out {shown}: the folder holds files that are not an earlier privopt result ({listed}); "
                "privopt replaces the whole folder, so name a new or empty folder, or an earlier --out folder"
            )
    ancestor = out_dir.parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir() or not os.access(ancestor, os.W_OK | os.X_OK):
        raise UsageError(
            f"--out {shown}: cannot create or write a folder under {visible(ancestor)}; name a writable place"
        )


def _is_earlier_result(out_dir: Path, names: list[str]) -> bool:  # noqa: ARG001 - the top-level names, walked below
    """True when ``out_dir`` holds exactly the files its manifest names (paths relative to it,
    ``/``-separated: a composite's blocks write subfolders), and the manifest; no link to a
    folder, no empty subfolder."""
    try:
        listed = (out_dir / MANIFEST).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return False
    found = files_in(out_dir)
    return found is not None and sorted([*listed, MANIFEST]) == found


def files_in(folder: Path) -> list[str] | None:
    """Every file under ``folder`` as a sorted ``/``-separated relative path; None when it holds
    anything privopt never writes there (a link to a folder, an empty subfolder, a special file)."""
    found = []
    for root, dirs, files in os.walk(folder):
        base = Path(root)
        if any((base / d).is_symlink() for d in dirs) or (base != folder and not dirs and not files):
            return None
        for f in files:
            if not (base / f).is_file():
                return None
            found.append((base / f).relative_to(folder).as_posix())
    return sorted(found)


def write_atomic(out_dir: Path, write: Callable[[Path], None]) -> None:
    """Call ``write(stage)`` to fill a staging folder, then put it in ``out_dir``'s place."""
    import shutil  # these three only where a folder is written: not at start-up (issue 23, goal 1)
    import tempfile

    out_dir = Path(os.path.abspath(out_dir))
    check_target(out_dir)
    parent = out_dir.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        stage = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.privopt-", dir=parent))
    except OSError as e:
        raise UsageError(f"--out {out_dir}: cannot write there ({e.strerror})") from None
    try:
        write(stage)
        (stage / MANIFEST).write_text("".join(f"{p}\n" for p in files_in(stage) or []), encoding="utf-8")
        os.chmod(stage, _folder_mode(out_dir))  # mkdtemp makes 0700; keep the folder's own mode
        with _signals_blocked(), _locked(parent):
            check_target(out_dir)  # again, under the lock: another run may have written meanwhile
            _swap(stage, out_dir)
    finally:
        with _signals_blocked():
            shutil.rmtree(stage, ignore_errors=True)


def check_file_target(path: Path, option: str, hint: str) -> None:
    """Before solving: ``UsageError`` when ``path`` (given as ``option``) is a folder, or its
    folder is missing or cannot be written; ``hint`` says what to name instead of a folder."""
    path = Path(path)
    shown, parent = visible(f"{option} {path}"), path.parent
    if path.is_dir():
        raise UsageError(f"{shown}: is a folder; {hint}")
    if not parent.is_dir():
        raise UsageError(f"{shown}: the folder {visible(parent)} does not exist; create it first")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"{shown}: the folder {visible(parent)} cannot be written")


def write_file(path: Path, write: Callable[[BinaryIO], None]) -> None:
    """One file written all or nothing (``apply --out FILE``, ``--plot FILE``): ``write`` fills a
    fresh hidden temporary file beside ``path`` (same folder, so the rename never crosses a
    filesystem), which is then renamed over ``path``. On any exception or interrupt the temporary
    file is removed and ``path`` is as it was. The file keeps the mode of the one it replaces
    (or a new file's under the umask), as ``--out DIR`` does for folders."""
    import tempfile

    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".privopt-tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
        os.chmod(tmp, _file_mode(path))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _file_mode(path: Path) -> int:
    """The mode ``path`` has, or a new file's under the process's umask."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _folder_mode(out_dir: Path) -> int:
    """The mode ``out_dir`` has, or a new folder's under the process's umask."""
    try:
        return stat.S_IMODE(os.stat(out_dir).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o777 & ~umask


def _swap(stage: Path, out_dir: Path) -> None:
    """Move ``stage`` to ``out_dir``; whatever ``out_dir`` held ends up at ``stage``."""
    import shutil
    import tempfile

    try:
        os.rename(stage, out_dir)  # out_dir absent (or an empty folder: rename replaces it)
        return
    except OSError as e:
        if e.errno not in (errno.EEXIST, errno.ENOTEMPTY):
            raise
    if _exchange(stage, out_dir):
        return
    old = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.privopt-old-", dir=out_dir.parent))
    try:
        os.rename(out_dir, old / "d")
        os.rename(stage, out_dir)
        os.rename(old / "d", stage)  # so the caller's cleanup removes the old contents
    finally:
        shutil.rmtree(old, ignore_errors=True)


def _exchange(a: Path, b: Path) -> bool:
    """Atomically exchange two paths with Linux's renameat2; False where it is unavailable."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd = -100
    rc = renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), _RENAME_EXCHANGE)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):  # old kernel or a filesystem without it
        return False
    raise OSError(err, os.strerror(err), str(b))


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


@contextlib.contextmanager
def _signals_blocked() -> Iterator[None]:
    """SIGINT and SIGTERM held back while the folder is swapped or cleaned (main thread only)."""
    sigs = {signal.SIGINT, signal.SIGTERM}
    try:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
    except (AttributeError, ValueError, OSError):  # pragma: no cover - not POSIX
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
