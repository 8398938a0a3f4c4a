"""The spec grammar's LALR(1) parser as one self-contained module: Lark's stand-alone parser
(``lark.tools.standalone``) generated from ``grammar.lark``, its code compiled once and kept in
the user's cache folder, then run here (``exec`` into this module, so its classes are
``privopt.language.lalr.Tree``, ``Token``, ...).

Why (issue 23, goal 1): importing the ``lark`` package imports its grammar compiler, its Earley
and CYK parsers and its serialisation, about a third of numpy's import, and its cache is a
pickle of the analysed grammar read on top of that. The stand-alone module holds only the LALR
runtime (lexer, parser, tree, visitors, errors) and the tables, the same tables Lark builds:
the trees, tokens, positions and errors are Lark's own. ``lark`` is imported only when the
module is generated (first run, a changed grammar, a new Python or Lark, or a damaged file).

The file is ``$PRIVOPT_CACHE_DIR`` or the user's cache folder (``$XDG_CACHE_HOME`` or
``~/.cache``) / ``privopt/grammar.lalr``: a first line with the SHA-256 of what it was made
from (the grammar, the options, Lark's installed ``__init__.py``, Python's version) and of the
rest, then the module's code object (``marshal``). A file whose key or hash does not match, or
that cannot be read, is regenerated and replaced whole (written beside it, then renamed); the
folder is the user's own (mode 0700), never a shared temporary one. When no such folder can be
made or written, the module is generated in memory on each run.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import sys
from importlib.util import find_spec
from typing import cast  # noqa: F401  (Lark 1.3's stand-alone visitors call cast() without importing it)

GRAMMAR = os.path.join(os.path.dirname(__file__), "grammar.lark")
OPTIONS = dict(parser="lalr", lexer="contextual", propagate_positions=True, maybe_placeholders=True)
CACHE_NAME = "grammar.lalr"


def cache_file() -> str | None:
    """The cache file's path, its folder made (mode 0700) if missing; None when that folder
    cannot be made or written."""
    root = os.environ.get("PRIVOPT_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "privopt"
    )
    try:
        os.makedirs(root, mode=0o700, exist_ok=True)
    except OSError:
        return None
    return os.path.join(root, CACHE_NAME) if os.access(root, os.W_OK) else None


def _key(grammar: bytes) -> str:
    """SHA-256 of everything the generated code depends on: the grammar, the options, the
    installed Lark (its ``__init__.py``, which holds its version) and Python (``marshal``'s
    format). Not Lark's path, so environments with the same Lark share the file."""
    lark = find_spec("lark")
    origin = lark.origin if lark is not None and lark.origin else ""
    try:
        with open(origin, "rb") as f:
            lark_init = f.read()
    except OSError:
        lark_init = b""
    h = hashlib.sha256(grammar)
    for part in (repr(sorted(OPTIONS.items())), sys.version, sys.implementation.cache_tag or ""):
        h.update(b"\0" + part.encode())
    h.update(b"\0" + lark_init)
    return h.hexdigest()


def generate(grammar: str) -> str:
    """The stand-alone parser module's source for ``grammar`` (imports ``lark``)."""
    import io

    from lark import Lark
    from lark.tools.standalone import gen_standalone

    out = io.StringIO()
    gen_standalone(Lark(grammar, **OPTIONS), out=out)
    return out.getvalue()


def _read(path: str, key: str):
    """The cached code object, or None when the file is missing, foreign or damaged."""
    try:
        with open(path, "rb") as f:
            head, _, payload = f.read().partition(b"\n")
        want_key, want_hash = head.decode("ascii").split()
        if want_key != key or hashlib.sha256(payload).hexdigest() != want_hash:
            return None
        return marshal.loads(payload)
    except (OSError, ValueError, EOFError, TypeError, UnicodeDecodeError):
        return None


def _write(path: str, key: str, code) -> None:
    """Write ``code`` to ``path`` whole (a file beside it, then renamed); silently nothing on
    failure (the next run regenerates)."""
    payload = marshal.dumps(code)
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(f"{key} {hashlib.sha256(payload).hexdigest()}\n".encode("ascii") + payload)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def code():
    """The stand-alone parser module's code object: from the cache when it matches, else
    generated (and cached where the folder allows)."""
    with open(GRAMMAR, "rb") as f:
        grammar = f.read()
    key = _key(grammar)
    path = cache_file()
    cached = _read(path, key) if path is not None else None
    if cached is not None:
        return cached
    compiled = compile(
        generate(grammar.decode("utf-8")), f"<lark stand-alone parser of {GRAMMAR}>", "exec", dont_inherit=True
    )
    if path is not None:
        _write(path, key, compiled)
    return compiled


exec(code(), globals())  # defines Lark_StandAlone, Tree, Token, Transformer_NonRecursive, v_args, the errors
