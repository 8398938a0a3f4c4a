"""Import layers of the privopt package (issue 11, item 4: a safety net for the builder/pipeline refactor).

Every ``privopt/**/*.py`` is parsed with ``ast``; every import counts (top level, inside
functions, under ``if TYPE_CHECKING:``), relative imports are resolved, and ``from PKG import
NAME`` is an edge to ``PKG.NAME`` when that is a module, else to ``PKG``. The layers, lowest
first::

    0  privopt._version, privopt.errors, privopt.render, privopt.solverlog, privopt.outdir, privopt.results, privopt.files,
       privopt.records
    1  privopt.language
    2  privopt.model, privopt.core
    3  privopt.measures, privopt.backends, privopt.verification
    4  privopt.builder, privopt.closedform, privopt.lower
    5  privopt.methods, privopt.blocks, privopt.classify
    6  privopt.pipeline
    7  privopt.crosscheck, privopt.api, privopt.engines, privopt.audit, privopt.apply, privopt.plot, privopt.certify
    8  privopt.cli, privopt.__main__, privopt (the package __init__)

A module may import its own layer or lower ones, never a higher one, and the module graph has
no cycle (within a layer too). Importing the ``privopt`` package itself (e.g. for
``__version__``) is an import of layer 8.

Edges that break a rule today are listed in ``KNOWN_VIOLATIONS``: each is checked by an
``xfail(strict=True)`` test, so the allowlist entry must be removed (the test then XPASSes and
fails) once the edge is gone.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG_DIR = Path(__file__).resolve().parent.parent / "privopt"

LAYERS = {
    "privopt._version": 0,
    "privopt.errors": 0,
    "privopt.render": 0,
    "privopt.solverlog": 0,
    "privopt.outdir": 0,
    "privopt.results": 0,
    "privopt.sections": 0,
    "privopt.files": 0,
    "privopt.records": 0,
    "privopt.language": 1,
    "privopt.model": 2,
    "privopt.core": 2,
    "privopt.measures": 3,
    "privopt.backends": 3,
    "privopt.verification": 3,
    "privopt.builder": 4,
    "privopt.closedform": 4,
    "privopt.lower": 4,
    "privopt.methods": 5,
    "privopt.blocks": 5,
    "privopt.classify": 5,
    "privopt.certify": 7,
    "privopt.pipeline": 6,
    "privopt.crosscheck": 7,
    "privopt.api": 7,
    "privopt.composite": 7,
    "privopt.engines": 7,
    "privopt.audit": 7,
    "privopt.apply": 7,
    "privopt.plot": 7,
    "privopt.cli": 8,
    "privopt.__main__": 8,
}
TOP = "privopt"  # the package __init__
TOP_LAYER = 8

# (importer, imported): edges that break the layering today. Each has an xfail(strict=True)
# test below; remove the entry when the edge is fixed.
KNOWN_VIOLATIONS = {}


def _modules() -> dict[str, tuple[Path, bool]]:
    mods = {}
    for path in sorted(PKG_DIR.rglob("*.py")):
        parts = list(path.relative_to(PKG_DIR.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        mods[".".join(parts)] = (path, is_pkg)
    return mods


MODULES = _modules()


def _imports(name: str) -> set[str]:
    """The privopt modules ``name`` imports (resolved, deduplicated)."""
    path, is_pkg = MODULES[name]
    package = name if is_pkg else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                assert base, f"{name}: relative import beyond the top package"
                base_name = ".".join(base + ([node.module] if node.module else []))
            else:
                base_name = node.module or ""
            targets = []
            for alias in node.names:
                sub = f"{base_name}.{alias.name}"
                targets.append(sub if sub in MODULES else base_name)
        else:
            continue
        for t in targets:
            if t == TOP or t.startswith(TOP + "."):
                out.add(_known_module(t))
    out.discard(name)
    return out


def _known_module(target: str) -> str:
    """``target``, or its longest existing prefix (a module not written yet, e.g. builder.noise)."""
    while target not in MODULES and "." in target:
        target = target.rpartition(".")[0]
    return target


def layer_of(module: str) -> int:
    if module == TOP:
        return TOP_LAYER
    best = None
    for prefix, layer in LAYERS.items():
        if module == prefix or module.startswith(prefix + "."):
            if best is None or len(prefix) > len(best[0]):
                best = (prefix, layer)
    assert best is not None, f"{module} has no layer: add it to LAYERS in tests/test_layers.py"
    return best[1]


GRAPH = {m: _imports(m) for m in MODULES}


def upward_edges() -> set[tuple[str, str]]:
    return {(a, b) for a, deps in GRAPH.items() for b in deps if layer_of(b) > layer_of(a)}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in graph:
                    continue
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


# ---------------------------------------------------------------- the checker itself


def test_every_module_has_a_layer():
    assert len(MODULES) > 30  # the walk found the package
    for m in MODULES:
        layer_of(m)


def test_relative_imports_are_resolved():
    # spot checks against imports known to be in the package today
    assert "privopt.pipeline" in GRAPH["privopt.api"]  # `from . import pipeline`: a subpackage
    assert "privopt.builder.build" in GRAPH["privopt.api"]  # `from .builder.build import build`
    assert "privopt.language.ast" in GRAPH["privopt.builder.build"]  # `from ..language import ast`
    assert "privopt.errors" in GRAPH["privopt.builder.build"]


def test_function_level_imports_are_seen():
    # build.py imports the mechanism builder inside Builder.build
    assert "privopt.builder.mechanism" in GRAPH["privopt.builder.build"]
    # the CLI imports language.tables inside _number_or_nan
    assert "privopt.language.tables" in GRAPH["privopt.cli"]


def test_the_checks_can_fail():
    fake = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(fake) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    assert layer_of("privopt.cli") > layer_of("privopt.api") > layer_of("privopt.pipeline")
    assert layer_of("privopt") == TOP_LAYER
    assert layer_of("privopt.builder.mechanism") == 4


# ---------------------------------------------------------------- the rules


def test_no_module_imports_a_higher_layer():
    bad = sorted(upward_edges() - set(KNOWN_VIOLATIONS))
    lines = [f"{a} (layer {layer_of(a)}) imports {b} (layer {layer_of(b)})" for a, b in bad]
    assert not bad, "imports of a higher layer:\n" + "\n".join(lines)


def test_no_import_cycle():
    graph = {a: {b for b in deps if (a, b) not in KNOWN_VIOLATIONS} for a, deps in GRAPH.items()}
    found = cycles(graph)
    assert not found, "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


@pytest.mark.parametrize(
    "edge",
    [
        pytest.param(e, marks=pytest.mark.xfail(strict=True, reason=why), id=f"{e[0]}->{e[1]}")
        for e, why in KNOWN_VIOLATIONS.items()
    ],
)
def test_known_violation_is_fixed(edge):
    """XFAIL while the edge exists; when someone removes it this XPASSes, which fails (strict):
    then delete its KNOWN_VIOLATIONS entry."""
    importer, imported = edge
    assert imported not in GRAPH[importer], f"{importer} still imports {imported}"
    assert layer_of(imported) > layer_of(importer)  # an allowlist entry must be a real violation
