"""The one expression type of the builder: tables whose cells are affine in a decision vector.

A ``LinTable`` is a table over named axes (variables, or a synthetic axis for a plain vector)
whose cells are affine functions of one decision vector ``x`` of length ``n``::

    cell[c] = A[c] @ x + b[c]        (A: sparse, cells x n; b: dense, one per cell)

with the cells raveled in C order over ``axes``. ``defined`` marks the cells that exist: a
conditional given an event of probability 0 (``P(y | s)`` with ``P(s) = 0``) is undefined,
and constraints skip such cells. A constant table has ``A = None`` (or no stored entry).
``A`` is a scipy CSR matrix, or a ``OneEach`` (one entry a row, numpy only) while the table
is a variable's cells, moved, negated or shifted by constants: so a transparency report
(whose tables are such) builds without importing scipy (issue 23, goal 1); ``matrix()``
gives the CSR form, which every other operation works on.

Every problem class evaluates its expressions to LinTables through the one evaluator
(builder/evaluate.py), and ``x`` is the decision vector of the variable registry
(model/registry.py: named blocks of columns), so a table's columns are the registry's:

* transparency reports (``builder/build.py``): ``x`` is the design's cells (one ``table``
  block); every table is over (a subset of) the design's axes and cell ``c`` depends on
  ``x[c]`` alone, so ``A`` is diagonal and its diagonal is the ``coef`` of a
  ``CellConstraint`` (``diagonal``);
* mechanisms (``builder/mechanism.py``): ``x`` is the design's cells (then auxiliary columns);
  induced distributions such as ``P(Y | S) = sum_x M(y | s, x) P(x | s)`` (Ding et al., eq. 9
  and the left side of eq. 3), expectations and ``tv`` mix cells through ``sum_over``;
* noise placement (``builder/noise.py``): one synthetic axis indexes a vector, ``x`` is the
  continuous input's block followed by the noise vectors' blocks, ``matmul`` applies a
  constant matrix and ``columns`` reads one block's coefficients.

The operations are vectorized (no Python loop over cells, so a design of millions of cells
lowers in seconds):

* ``align``: transpose and broadcast onto more axes (a row gather, ``A[idx]``);
* ``+``, ``-``: after aligning both operands on the union of their axes;
* ``scale`` / ``divide``: multiply or divide cell by cell by a constant table
  (``diag(c) @ A``; ``divide`` is a true division, not a product with ``1 / c``);
* ``sum_over``: marginalize axes (one sparse summation matrix, ``S @ A``);
* ``matmul``: ``M @ table`` for a constant matrix ``M`` and a one-axis table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..records import Identity, Record

if TYPE_CHECKING:
    import scipy.sparse as sp


def _size(shape) -> int:
    return int(np.prod(shape, dtype=np.int64))


class OneEach(Record):
    """A ``rows x n`` matrix with one stored entry a row: ``coef[r]`` in column ``col[r]``
    (a variable's cells: the identity on its block of ``x``). Row gathers (``A[idx]``),
    negation and scalar multiples stay in this form; ``csr`` is the scipy CSR matrix."""

    col: np.ndarray  # int, one per row
    coef: np.ndarray  # float, one per row
    n: int

    @property
    def shape(self) -> tuple[int, int]:
        return (self.col.size, self.n)

    @property
    def nnz(self) -> int:
        return self.col.size

    @property
    def data(self) -> np.ndarray:
        return self.coef

    def __getitem__(self, rows: np.ndarray) -> OneEach:
        return OneEach(self.col[rows], self.coef[rows], self.n)

    def __neg__(self) -> OneEach:
        return OneEach(self.col, -self.coef, self.n)

    def __rmul__(self, factor: float) -> OneEach:
        return OneEach(self.col, factor * self.coef, self.n)

    def csr(self) -> sp.csr_array:
        import scipy.sparse as sp

        m = self.col.size
        index = np.int32 if max(m, self.n) < 2**31 - 1 else np.int64  # CSR built directly, no COO copy
        return sp.csr_array((self.coef, self.col.astype(index), np.arange(m + 1, dtype=index)), shape=self.shape)


def _csr(A) -> sp.csr_array:
    """``A`` (a ``OneEach``, or any scipy sparse matrix) as a scipy CSR matrix."""
    import scipy.sparse as sp

    return A.csr() if isinstance(A, OneEach) else sp.csr_array(A)


def widen_columns(A, n: int) -> sp.csr_array:
    """A csr matrix with its column count raised to ``n`` (columns appended, no copy of data)."""
    import scipy.sparse as sp

    A = _csr(A)
    return sp.csr_array((A.data, A.indices, A.indptr), shape=(A.shape[0], n))


def marginal(axes, data: np.ndarray, keep) -> np.ndarray:
    """The dense table ``data`` over ``axes`` summed onto the axes ``keep``, in that order."""
    out = data.sum(axis=tuple(i for i, a in enumerate(axes) if a not in keep))
    present = [a for a in axes if a in keep]
    return np.transpose(out, [present.index(a) for a in keep])


def gather_index(src_axes, src_shape, dst_axes, dst_shape) -> np.ndarray:
    """For each cell of ``dst`` (C order), the index of the cell of ``src`` it copies;
    ``src_axes`` must be a subset of ``dst_axes`` (missing axes broadcast)."""
    idx = np.arange(_size(src_shape), dtype=np.int64).reshape(src_shape)
    present = [a for a in dst_axes if a in src_axes]
    idx = np.transpose(idx, [src_axes.index(a) for a in present])
    shape = [dst_shape[k] if a in src_axes else 1 for k, a in enumerate(dst_axes)]
    return np.broadcast_to(idx.reshape(shape), dst_shape).ravel()


class LinTable(Identity):
    """Cells ``A @ x + b`` over named ``axes`` (module docstring); ``defined`` masks cells."""

    axes: tuple[str, ...]
    shape: tuple[int, ...]
    A: sp.csr_array | OneEach | None  # (cells, n); None for a constant table
    b: np.ndarray  # (cells,)
    n: int  # length of the decision vector
    defined: np.ndarray | None = None  # bool (cells,); None = all cells defined

    # ------------------------------------------------------------------ constructors
    @classmethod
    def const(cls, axes, shape, data, n: int) -> LinTable:
        data = np.broadcast_to(np.asarray(data, dtype=float), tuple(shape))
        return cls(tuple(axes), tuple(shape), None, np.ascontiguousarray(data).ravel(), n)

    @classmethod
    def scalar(cls, value: float, n: int) -> LinTable:
        return cls((), (), None, np.array([float(value)]), n)

    @classmethod
    def variable(cls, axes, shape, n: int, offset: int = 0) -> LinTable:
        """The cells ``x[offset : offset + size]`` as a table over ``axes``."""
        m = _size(shape)
        return cls(tuple(axes), tuple(shape), OneEach(np.arange(offset, offset + m), np.ones(m), n), np.zeros(m), n)

    # ------------------------------------------------------------------ properties
    @property
    def is_const(self) -> bool:
        return self.A is None or self.A.nnz == 0

    @property
    def cells(self) -> int:
        return self.b.size

    def matrix(self) -> sp.csr_array:
        import scipy.sparse as sp

        return _csr(self.A) if self.A is not None else sp.csr_array((self.cells, self.n))

    def array(self) -> np.ndarray:
        """The constant part as an array over ``axes``."""
        return self.b.reshape(self.shape)

    def value(self, x: np.ndarray) -> np.ndarray:
        """The cells at decision vector ``x``, as an array over ``axes``."""
        v = self.b if self.A is None else self.matrix() @ x + self.b
        return v.reshape(self.shape)

    def defined_mask(self) -> np.ndarray:
        return self.defined if self.defined is not None else np.ones(self.cells, dtype=bool)

    # ------------------------------------------------------------------ operations
    def align(self, axes, shape) -> LinTable:
        axes, shape = tuple(axes), tuple(shape)
        if axes == self.axes:
            return self
        idx = gather_index(self.axes, self.shape, axes, shape)
        return LinTable(
            axes,
            shape,
            self.A[idx] if self.A is not None else None,
            self.b[idx],
            self.n,
            self.defined[idx] if self.defined is not None else None,
        )

    def _union(self, other: LinTable):
        sizes = dict(zip(self.axes, self.shape)) | dict(zip(other.axes, other.shape))
        axes = self.axes + tuple(a for a in other.axes if a not in self.axes)
        shape = tuple(sizes[a] for a in axes)
        return self.align(axes, shape), other.align(axes, shape)

    def _combine(self, other: LinTable, sign: float) -> LinTable:
        a, b = self._union(other)
        if a.A is None and b.A is None:
            A = None
        elif b.A is None:
            A = a.A
        elif a.A is None:
            A = sign * b.A
        else:
            A = (_csr(a.A) + sign * _csr(b.A)).tocsr()
        return LinTable(a.axes, a.shape, A, a.b + sign * b.b, a.n, _and(a.defined, b.defined))

    def __add__(self, other: LinTable) -> LinTable:
        return self._combine(other, 1.0)

    def __sub__(self, other: LinTable) -> LinTable:
        return self._combine(other, -1.0)

    def __neg__(self) -> LinTable:
        return LinTable(self.axes, self.shape, -self.A if self.A is not None else None, -self.b, self.n, self.defined)

    def scale(self, factor: LinTable) -> LinTable:
        """Cell-by-cell product with a constant table (aligned by axis name)."""
        assert factor.is_const
        a, f = self._union(factor)
        c = f.b
        import scipy.sparse as sp

        A = None if a.A is None else (sp.diags_array(c) @ a.matrix()).tocsr()
        return LinTable(a.axes, a.shape, A, a.b * c, a.n, _and(a.defined, f.defined))

    def divide(self, factor: LinTable) -> LinTable:
        """Cell-by-cell quotient by a constant table (aligned by axis name) without a zero cell:
        a true division ``a / c`` of every coefficient and constant, not ``a * (1 / c)``."""
        assert factor.is_const
        a, f = self._union(factor)
        c = f.b
        A = None
        if a.A is not None:
            A = a.matrix().copy()
            rows = np.repeat(np.arange(a.cells), np.diff(A.indptr))
            A.data = A.data / c[rows]
            A.eliminate_zeros()  # an underflow to 0 leaves the cell constant, as a product does
        return LinTable(a.axes, a.shape, A, a.b / c, a.n, _and(a.defined, f.defined))

    def matmul(self, M) -> LinTable:
        """``M @ self`` for a constant matrix ``M`` (dense or sparse, ``k x cells``) and a table
        over one axis: a table over the same axis with ``k`` cells (all defined)."""
        assert len(self.axes) == 1 and M.shape[1] == self.cells
        if self.defined is not None:
            assert bool(np.all(self.defined))
        shape = (int(M.shape[0]),)
        import scipy.sparse as sp

        if self.A is None:
            A = None
        elif sp.issparse(M):
            A = sp.csr_array(M @ self.matrix())
        else:
            A = sp.csr_array(np.asarray(M) @ self.matrix().toarray())  # a dense product, as numpy computes M @ C
        b = M @ self.b
        return LinTable(self.axes, shape, A, np.asarray(b, dtype=float).ravel(), self.n)

    def columns(self, offset: int, size: int) -> np.ndarray:
        """The dense coefficient block ``A[:, offset : offset + size]`` (cells x size): the
        coefficients of one symbol whose entries sit at ``x[offset : offset + size]``."""
        assert 0 <= offset and offset + size <= self.n
        if self.A is None:
            return np.zeros((self.cells, size))
        return self.matrix()[:, offset : offset + size].toarray()

    def diagonal(self) -> np.ndarray:
        """Each cell's coefficient of its own entry of ``x``, as an array over ``axes``, for a
        table whose cell ``c`` depends on ``x[c]`` alone (``cells == n``; ATR's elementwise
        tables over the design). The coefficients are read exactly, not recomputed."""
        assert self.cells == self.n
        if self.A is None:
            return np.zeros(self.shape)
        if isinstance(self.A, OneEach):
            assert np.array_equal(self.A.col, np.arange(self.cells)), "a cell depends on another cell of the design"
            return self.A.coef.reshape(self.shape).copy()
        A = _csr(self.A)
        if not A.has_canonical_format:
            A = A.copy()
            A.sum_duplicates()
        rows = np.repeat(np.arange(self.cells), np.diff(A.indptr))
        assert np.array_equal(A.indices, rows), "a cell depends on another cell of the design"
        out = np.zeros(self.cells)
        out[rows] = A.data
        return out.reshape(self.shape)

    def sum_over(self, drop) -> LinTable:
        """Marginalize the axes in ``drop``; undefined cells count as 0."""
        drop = [a for a in drop if a in self.axes]
        if not drop:
            return self
        keep = tuple(a for a in self.axes if a not in drop)
        keep_shape = tuple(s for a, s in zip(self.axes, self.shape) if a not in drop)
        tgt = gather_index(keep, keep_shape, self.axes, self.shape)
        import scipy.sparse as sp

        live = self.defined_mask()
        S = sp.csr_array((live.astype(float), (tgt, np.arange(self.cells))), shape=(_size(keep_shape), self.cells))
        A = None if self.A is None else (S @ self.matrix()).tocsr()
        return LinTable(keep, keep_shape, A, S @ self.b, self.n)

    def take(self, mask: np.ndarray) -> tuple[sp.csr_array, np.ndarray]:
        """Rows (A, b) of the cells where ``mask`` (and ``defined``) hold."""
        keep = np.flatnonzero(mask.ravel() & self.defined_mask())
        return self.matrix()[keep], self.b[keep]

    def with_defined(self, defined: np.ndarray) -> LinTable:
        return LinTable(self.axes, self.shape, self.A, self.b, self.n, _and(self.defined, defined.ravel()))

    def widen(self, n: int) -> LinTable:
        """The same table over a longer decision vector (auxiliary columns appended)."""
        if n == self.n:
            return self
        A = widen_columns(self.A, n) if self.A is not None else None
        return LinTable(self.axes, self.shape, A, self.b, n, self.defined)


def _and(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a & b
