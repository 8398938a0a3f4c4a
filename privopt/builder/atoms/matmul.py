"""``A @ v``: a constant matrix times a vector affine in the symbols (or another matrix),

    (A @ v)_i = sum_j A_ij v_j,

affine. Noise placement's query answers ``O = A @ (x + eta) + xi`` (Ramon & Basu Sec. 3.2)
are written with it; every dimension mismatch is a located error naming both sizes.
"""

from __future__ import annotations

import numpy as np

from ...errors import SpecError
from ...model.linear import LinTable
from ...records import Record
from .base import Atom


class Matrix(Record):
    """A constant matrix of a spec (``const A = matrix ...``), named as written."""

    name: str
    data: np.ndarray

    def __neg__(self) -> Matrix:
        return Matrix("-" + self.name, -self.data)


def same(p: int, q: int, span, left: str, right: str) -> None:
    """Two sizes that must agree, or a located error naming both."""
    if p != q:
        raise SpecError(f"the sizes do not match: {left} but {right}", span, "make the dimensions agree")


class MatMul(Atom):
    name = "@"
    curvature = "affine"

    def apply(self, node, ev, a=None, b=None):
        """``a @ b`` for the operator node ``node`` (its operands' values ``a``, ``b``)."""
        if not isinstance(a, Matrix):
            raise SpecError("the left side of @ must be a matrix", node.left.span, "write A @ x with A a const matrix")
        if isinstance(b, Matrix):
            same(
                a.data.shape[1],
                b.data.shape[0],
                node.span,
                f"{a.name} has {a.data.shape[1]} columns",
                f"{b.name} has {b.data.shape[0]} rows",
            )
            return Matrix(f"{a.name} @ {b.name}", a.data @ b.data)
        if not isinstance(b, LinTable) or not b.axes:
            raise SpecError("the right side of @ must be a vector or a matrix", node.right.span)
        right = node.right.span.text()
        same(
            a.data.shape[1],
            b.cells,
            node.span,
            f"{a.name} has {a.data.shape[1]} columns",
            f"{right} has {b.cells} entries",
        )
        return b.matmul(a.data)


ATOM = MatMul()
