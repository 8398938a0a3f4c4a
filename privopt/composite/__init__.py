"""Composite specs (issue 21; Ramon & Basu Sec. 3.4; docs/blocks.md): whole specs as blocks that
share a privacy budget privopt splits with a certificate, design choices, accuracy first.

``syntax`` tells a composite spec from a single program, ``model`` builds the composite from its
syntax tree (located errors), ``split`` is the certified split core over abstract value oracles,
``solve`` runs the program, ``result`` is its answer.
The names below are imported when first used (PEP 562): loading a single-program spec asks only
``is_composite``, and must not pay for the solvers' imports behind ``solve``.
"""

from importlib import import_module

_LAZY = {
    "is_composite": "syntax",
    "refuse_attrs": "syntax",
    "CompositeResult": "result",
    "Composite": "solve",
    "build": "solve",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{_LAZY[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
