"""Opening a file the user named, without hanging and only if it is a regular file.

``open(path)`` on a FIFO waits until a writer (or, to write, a reader) opens its other end,
possibly forever; a device or a socket is not a file of records either. So a file privopt
reads or appends to on the user's word (``apply --data``, ``audit --release``, ``--log``) is
opened with ``O_NONBLOCK``, which makes opening a FIFO return at once (to write, with
``ENXIO`` when nothing reads it), and ``fstat`` of the descriptor actually opened decides:
anything but a regular file is refused before a byte is read or written. The spec
(``language/parser.py``) and the data files it names (``language/datafiles.py``) are opened
here too, and turn these exceptions into their own located errors.

The callers turn the exceptions into their own messages (``UsageError`` naming the option).
"""

from __future__ import annotations

import errno
import os
import stat


class NotRegularFile(OSError):
    """The path names a folder, FIFO, device or socket. ``kind`` says which, in words."""

    def __init__(self, path: str, kind: str):
        super().__init__(f"{path}: is {kind}, not a regular file")
        self.kind = kind


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words: "a folder", "a FIFO (named pipe)", ..."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def open_regular(path: str | os.PathLike, append: bool = False) -> int:
    """A descriptor of the regular file ``path``, opened to read (``append``: to append,
    created if absent, mode 0o644 before the umask), never blocking on a FIFO. The descriptor
    is in blocking mode again when returned (reads of a regular file never wait anyway).

    Raises the ``OSError`` of the open (``FileNotFoundError``, ``IsADirectoryError``,
    ``PermissionError``, ``ENXIO`` for a FIFO nobody reads, ...) or ``NotRegularFile``."""
    flags = (os.O_WRONLY | os.O_APPEND | os.O_CREAT) if append else os.O_RDONLY
    fd = os.open(path, flags | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(os.fspath(path), file_kind(mode))
        os.set_blocking(fd, True)
        return fd
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | os.PathLike) -> bytes:
    """The bytes of the regular file ``path`` (``open_regular``'s checks and exceptions)."""
    fd = open_regular(path)
    with os.fdopen(fd, "rb") as fh:
        return fh.read()


def describe(e: OSError) -> str:
    """An open's failure in words for a message: "no such file", "is a FIFO (named pipe), not
    a regular file", "Permission denied"..."""
    if isinstance(e, NotRegularFile):
        return f"is {e.kind}, not a regular file"
    if isinstance(e, FileNotFoundError):
        return "no such file"
    if isinstance(e, IsADirectoryError):
        return "is a folder, not a regular file"
    if e.errno == errno.ENXIO:  # opening a FIFO to write that nothing reads (O_NONBLOCK)
        try:
            kind = file_kind(os.stat(e.filename).st_mode) if e.filename else "a FIFO (named pipe)"
        except OSError:
            kind = "a FIFO (named pipe)"
        return f"is {kind}, not a regular file"
    return e.strerror or str(e)
