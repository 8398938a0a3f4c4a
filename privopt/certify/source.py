"""A result read back, its spec found and checked against the recorded SHA-256 sums, and its
problem rebuilt at the recorded params (``privopt verify``; the package docstring says how).

Every refusal is a ``UsageError`` (exit 2) naming the file: an unreadable result, an unknown
format, a spec or data file whose SHA-256 differs from the recorded one (a composite's
blocks: ``composite``). A spec that no longer parses gives the
language's located ``SpecError`` (exit 2).
"""

from __future__ import annotations

import gc
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..builder.build import build
from ..errors import UsageError
from ..language.parser import parse
from ..model.problem import Problem
from ..results import RESULT_FORMAT

KNOWN_FORMATS = (RESULT_FORMAT,)


@dataclass(frozen=True)
class Source:
    """The result (``result``: its JSON as Python values), where it came from (``name``, and
    ``folder``: where ``--out``'s CSV files are; None for a dict), the spec it was checked
    against (``spec_name``, ``spec_from``: "--spec", "file" or "recorded text") and the problem
    rebuilt from it."""

    result: dict[str, Any]
    name: str
    folder: Path | None
    spec_name: str
    spec_from: str
    problem: Problem


def read_result(path_or_dict: str | Path | dict) -> tuple[dict, str, Path | None]:
    """(the result as Python values, its name, its folder or None for a dict). An unreadable
    file, text that is not one JSON object, a composite result or a format other than
    ``KNOWN_FORMATS`` is a ``UsageError``."""
    if isinstance(path_or_dict, dict):
        result, name, folder = path_or_dict, "<result>", None
    else:
        path = Path(path_or_dict)
        name, folder = str(path), path.resolve().parent
        try:
            result = _loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as e:
            raise UsageError(f"{name}: cannot read the result: {e}") from None
        except json.JSONDecodeError as e:
            raise UsageError(
                f"{name}: not a result (JSON: {e}); write one with privopt solve --json or --out"
            ) from None
    if not isinstance(result, dict):
        raise UsageError(f"{name}: not a result: a JSON object is expected")
    fmt = result.get("format")
    if fmt not in KNOWN_FORMATS:
        known = ", ".join(map(str, KNOWN_FORMATS))
        said = "no format" if fmt is None else f"format {fmt!r}"
        raise UsageError(f"{name}: a result of {said}; this privopt verifies format {known} (solve it again)")
    solved = (
        ("optimal", "feasible") if is_composite(result) else ("optimal",)
    )  # a composite's feasible: a certified gap
    if result.get("status") not in solved:
        raise UsageError(f"{name}: status '{result.get('status')}': only a solved result has a point to verify")
    if not isinstance(result.get("spec"), dict) or not isinstance(result["spec"].get("sha256"), str):
        raise UsageError(f"{name}: the result records no spec (spec.sha256)")
    return result, name, folder


def _loads(text: str):
    """``json.loads`` with the cyclic garbage collector paused: a ``--json`` result of 2 million
    records holds 3.9 million row objects, and the collector would walk all of them again and
    again while they are made (half of the parse's time; none of them can form a cycle)."""
    was = gc.isenabled()
    gc.disable()
    try:
        return json.loads(text)
    finally:
        if was:
            gc.enable()


def is_composite(result: dict) -> bool:
    """A composite's result (``composite.result.CompositeResult``): it has blocks."""
    return result.get("problem_class") == "composite" or "blocks" in result


def sha256(text: str) -> str:
    """The SHA-256 of spec text as ``privopt.load`` computes it (UTF-8)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def find_spec(spec: dict, result_folder: Path | None, override: str | Path | None) -> tuple[str, Path | None, str]:
    """(text, path, where from) of the spec to check against. ``override`` (``--spec``) first;
    else the recorded path, relative ones from the recorded ``cwd`` then from the result's
    folder; else the recorded text. A file found must have the recorded SHA-256 (else a
    ``UsageError`` naming it), and so must the recorded text."""
    recorded = spec["sha256"]
    candidates: list[Path] = []
    if override is not None:
        candidates = [Path(override)]
    elif spec.get("path"):
        p = Path(spec["path"])
        candidates = [p] if p.is_absolute() else [Path(d) / p for d in (spec.get("cwd"), result_folder) if d]
    for path in candidates:
        if override is None and not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as e:
            raise UsageError(f"{path}: cannot read the spec: {e}") from None
        if sha256(text) != recorded:
            raise UsageError(
                f"{path}: the spec changed since it was solved (SHA-256 {sha256(text)}, the result records "
                f"{recorded}); verify the result against the spec it was solved from, or solve again"
            )
        return text, path, "--spec" if override is not None else "file"
    text = spec.get("text")
    if not isinstance(text, str):
        raise UsageError(
            f"the spec {spec.get('path') or '<spec>'} is not found and the result records no text: use --spec"
        )
    if sha256(text) != recorded:
        raise UsageError(f"the spec text recorded in the result does not have the recorded SHA-256 {recorded}")
    path = Path(spec["path"]) if spec.get("path") else None
    if path is not None and not path.is_absolute() and spec.get("cwd"):
        path = Path(spec["cwd"]) / path  # data paths resolve against the spec's folder as solved
    return text, path, "recorded text"


def load(read: tuple[dict, str, Path | None], spec: str | Path | None = None, allow_paths: bool = False) -> Source:
    """The result read (``read_result``: the result, its name, its folder), its spec found
    (``find_spec``), parsed and built at the recorded params, and the data files the build read
    compared with the recorded SHA-256."""
    result, name, folder = read
    recorded = result["spec"]
    text, path, where = find_spec(recorded, folder, spec)
    params = recorded.get("params") or {}
    if not isinstance(params, dict):
        raise UsageError(f"{name}: spec.params is not an object of param values")
    problem = build(parse(text, path), dict(params), allow_paths)
    data = recorded.get("data") or {}
    for file, digest in problem.data_sha256.items():
        if data.get(file) != digest:
            raise UsageError(
                f"{file}: the data file changed since it was solved (SHA-256 {digest}, the result records "
                f"{data.get(file)}); solve again"
            )
    for file in set(data) - set(problem.data_sha256):
        raise UsageError(f"{file}: the result records this data file, which the spec no longer reads")
    return Source(result, name, folder, str(path) if path is not None else "<spec>", where, problem)
