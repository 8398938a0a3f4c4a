"""The public entry points: load a spec from a file or a string."""

from __future__ import annotations

import dataclasses
import hashlib
import time
from pathlib import Path

from .ir.model import Problem
from .spec.ast import SpecFile
from .spec.build import build
from .spec.parser import parse, parse_file


def load(path: str | Path, params: dict[str, str | float] | None = None, allow_paths: bool = False) -> Problem:
    """Read, parse and check a spec file. ``params`` overrides ``param`` values (as ``--set``)."""
    t0 = time.perf_counter()
    return _checked(parse_file(path), params, allow_paths, t0)


def loads(text: str, params: dict[str, str | float] | None = None, allow_paths: bool = False, path: str | Path | None = None) -> Problem:
    """Parse and check spec text; relative data paths resolve against ``path``'s folder (or the cwd)."""
    t0 = time.perf_counter()
    return _checked(parse(text, path), params, allow_paths, t0)


def _checked(spec: SpecFile, params, allow_paths: bool, t0: float) -> Problem:
    """The spec's ``Problem``, carrying the SHA-256 of its text as read (UTF-8, without a
    byte-order mark: ``sha256sum FILE`` for a file without one) and the parse time."""
    problem = build(spec, params, allow_paths)
    digest = hashlib.sha256(spec.source.text.encode("utf-8")).hexdigest()
    return dataclasses.replace(problem, source_sha256=digest, parse_s=time.perf_counter() - t0)


def solve(spec: str | Path | Problem, method: str = "auto", backend: str = "auto", **load_kw):
    """Load (if given a path) and solve a spec; returns a ``Result``."""
    problem = spec if isinstance(spec, Problem) else load(spec, **load_kw)
    return problem.solve(method=method, backend=backend)
