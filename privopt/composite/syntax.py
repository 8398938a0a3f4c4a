"""What a spec's syntax tree says about composites, asked of every spec ``privopt.load`` reads:
whether it is one, and a located error for a block's name outside one. Apart from
``composite.model``, so a single-program spec does not import the composite's model (its
classes, built at import) to be told it is not one (issue 23, goal 1)."""

from __future__ import annotations

from ..errors import SpecError
from ..language import ast


def is_composite(spec: ast.SpecFile) -> bool:
    """The spec uses blocks or chooses variables (the statements only composites have)."""
    return any(isinstance(s, ast.UseDecl | ast.ChooseDecl | ast.ChooseOneDecl) for s in spec.statements)


def refuse_attrs(spec: ast.SpecFile) -> None:
    """``a.eps`` outside a composite: a located error (only composites have blocks)."""
    found = ast.nodes_in(*spec.statements, kind=ast.Attr)
    if found:
        a = found[0]
        raise SpecError(
            f"'{a.block.name}.{a.attr.name}' names a block, and this spec uses none",
            a.span,
            f'declare the block first: use "FILE.priv" as {a.block.name}',
        )
