"""Composite specs (issue 21; Ramon & Basu Sec. 3.4; docs/blocks.md): whole specs as blocks that
share a privacy budget privopt splits with a certificate, design choices, accuracy first.

``model`` builds the composite from its syntax tree (located errors), ``split`` is the certified
split core over abstract value oracles, ``solve`` runs the program, ``result`` is its answer.
"""

from .model import is_composite, refuse_attrs
from .result import CompositeResult
from .solve import Composite, build

__all__ = ["Composite", "CompositeResult", "build", "is_composite", "refuse_attrs"]
