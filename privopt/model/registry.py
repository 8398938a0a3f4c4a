"""The variable registry: the decision vector ``x`` as named blocks of consecutive columns.

Every expression of a spec is affine in one decision vector (model/linear.py's ``LinTable``:
``cell = A @ x + b``). The registry says which columns of ``x`` belong to which name::

    x = ( x[B_1] | x[B_2] | ... )      B_k = [offset_k, offset_k + size_k)

each block ``B_k`` one of the kinds

* ``table``: a finite design table ``P(T | G)`` over named axes (C order), one column per cell
  (Chen et al. eq. 16's ``Dt``, Ding et al. eq. 9's ``M``);
* ``vector``: a continuous input ``x in [lo, hi]^n`` (Ramon & Basu Sec. 3.2);
* ``variance`` / ``covariance``: a Gaussian noise vector whose entries are symbols of the
  release ``O = F x + sum_s C_s eta_s``; what is designed is its variance per entry or its
  full covariance (Ramon & Basu Sec. 3.2);
* ``scalar``: one real column; ``binary``: one column in {0, 1}.

Blocks are appended in the order they are declared, so a ``LinTable`` built over ``n`` columns
stays valid when later blocks are appended (``LinTable.widen``). The builders allocate decision
columns only through a registry, and read a block's coefficients of a table through it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..records import Record
from .linear import LinTable

KINDS = ("table", "vector", "variance", "covariance", "scalar", "binary")


class Block(Record):
    """The columns ``[offset, offset + size)`` of the decision vector, named ``name``; a table
    block's cells laid out over ``axes`` with ``shape`` in C order."""

    name: str
    kind: str
    offset: int
    size: int
    axes: tuple[str, ...]
    shape: tuple[int, ...]

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"unknown block kind '{self.kind}'; kinds: {', '.join(KINDS)}")

    @property
    def stop(self) -> int:
        return self.offset + self.size


@dataclass
class Registry:
    """Named blocks of decision columns, in the order they were added (see the module doc)."""

    blocks: dict[str, Block] = field(default_factory=dict)

    @property
    def n(self) -> int:
        """The length of the decision vector: every block's columns."""
        return sum(b.size for b in self.blocks.values())

    def add(self, name: str, kind: str, shape, axes=None) -> Block:
        """Append a block of ``prod(shape)`` columns; ``axes`` names the shape's axes (a vector
        block gets one unnamed axis)."""
        if name in self.blocks:
            raise ValueError(f"the registry already has a block '{name}'")
        shape = tuple(int(s) for s in shape)
        size = 1
        for s in shape:
            size *= s
        block = Block(name, kind, self.n, size, tuple(axes) if axes is not None else (), shape)
        self.blocks[name] = block
        return block

    def __contains__(self, name: str) -> bool:
        return name in self.blocks

    def __getitem__(self, name: str) -> Block:
        return self.blocks[name]

    def variable(self, name: str, axes=None):
        """The block's columns as a ``LinTable`` over the registry's ``n`` columns: over the
        block's own axes, or over ``axes`` (one per dimension of its shape) when given."""
        b = self.blocks[name]
        return LinTable.variable(tuple(axes) if axes is not None else b.axes, b.shape, self.n, b.offset)

    def coefficients(self, table, name: str):
        """``C_name``: the dense coefficients of block ``name`` in ``table`` (cells x size)."""
        b = self.blocks[name]
        return table.columns(b.offset, b.size)
