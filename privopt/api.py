"""The public entry points: load a spec from a file or a string."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from .ir.model import Problem
from .spec.build import build
from .spec.parser import parse, parse_file


def load(path: str | Path, params: dict[str, str | float] | None = None, allow_paths: bool = False) -> Problem:
    """Read, parse and check a spec file. ``params`` overrides ``param`` values (as ``--set``)."""
    t0 = time.perf_counter()
    problem = build(parse_file(path), params, allow_paths)
    return dataclasses.replace(problem, parse_s=time.perf_counter() - t0)


def loads(text: str, params: dict[str, str | float] | None = None, allow_paths: bool = False, path: str | Path | None = None) -> Problem:
    """Parse and check spec text; relative data paths resolve against ``path``'s folder (or the cwd)."""
    t0 = time.perf_counter()
    problem = build(parse(text, path), params, allow_paths)
    return dataclasses.replace(problem, parse_s=time.perf_counter() - t0)


def solve(spec: str | Path | Problem, method: str = "auto", backend: str = "auto", **load_kw):
    """Load (if given a path) and solve a spec; returns a ``Result``."""
    problem = spec if isinstance(spec, Problem) else load(spec, **load_kw)
    return problem.solve(method=method, backend=backend)
