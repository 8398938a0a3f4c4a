"""The problem model (IR): variables, known tables, the design, constraints and objective.

Everything here is resolved and validated: names are bound, labels are indices, tables are
numpy arrays whose axes are named by variables. The IR holds no syntax; spans are kept only
to point errors found later (infeasibility, unsupported constructs) back at the spec.
"""

from __future__ import annotations

import os
from dataclasses import field
from enum import StrEnum

import numpy as np

from ..core.sets import Budget as BudgetSet
from ..core.sets import Fidelity, GaussianDP, Leakage, LogLift, Nonnegative, SimplexRows, Zero
from ..language.source import Span
from ..records import Identity
from ..results import LabelRows
from .linear import LinTable
from .noise import NoiseModel, NoiseObjective
from .obfuscation import ObfuscationModel, RankObjective


class Role(StrEnum):
    PUBLIC = "public"  # quasi-identifier known to the adversary
    PRIVATE = "private"  # sensitive attribute
    OUTCOME = "outcome"  # decision the adversary observes for a target
    DATA = "data"  # public attribute to be sanitized
    RELEASE = "release"  # what is published
    OBSERVED = "observed"  # an adversary's side observation


class Variable(Identity):
    """A finite random variable. ``labels`` are the written labels; ``values`` their numbers
    when every label is numeric (else None)."""

    name: str
    role: Role
    labels: tuple[str, ...]
    values: np.ndarray | None = field(default=None, repr=False)
    span: Span | None = field(default=None, repr=False)
    over: str | None = None  # declared "over OTHER": same labels, aligned with OTHER in expressions

    @property
    def size(self) -> int:
        return len(self.labels)

    def index_of(self, text: str, value: float | None = None) -> int | None:
        """Index of a label given as text (and its numeric value, if it was written as a number)."""
        try:
            return self._index[text]
        except KeyError:
            pass
        if value is not None and self.values is not None:
            hits = np.flatnonzero(np.isclose(self.values, value, rtol=0, atol=1e-12))
            if hits.size == 1:
                return int(hits[0])
        return None

    @property
    def _index(self) -> dict[str, int]:
        cache = self.__dict__.get("_index_cache")
        if cache is None:
            cache = {lab: i for i, lab in enumerate(self.labels)}
            object.__setattr__(self, "_index_cache", cache)
        return cache


class Table(Identity):
    """A known table ``P(targets | given)`` as an array with one axis per variable in ``axes``.

    For a joint table (``given`` empty) the entries sum to 1; for a conditional table every
    slice over the targets sums to 1 for each combination of the conditioning variables.
    """

    name: str
    targets: tuple[str, ...]
    given: tuple[str, ...]
    axes: tuple[str, ...]
    data: np.ndarray = field(repr=False)
    span: Span | None = field(default=None, repr=False)

    @property
    def variables(self) -> frozenset[str]:
        return frozenset(self.axes)

    def aligned(self, axes: tuple[str, ...]) -> np.ndarray:
        """The data transposed to ``axes`` (which must be a permutation of ``self.axes``)."""
        return np.transpose(self.data, [self.axes.index(a) for a in axes])


class Design(Identity):
    """The mechanism to choose: the conditional table ``P(targets | given)``.

    Its cells are the decision variables; ``axes`` is ``given + targets``.
    """

    name: str
    targets: tuple[str, ...]
    given: tuple[str, ...]
    span: Span | None = field(default=None, repr=False)

    @property
    def axes(self) -> tuple[str, ...]:
        return self.given + self.targets


class CellConstraint(Identity):
    """An elementwise linear constraint on the design: ``coef * X + const  (<= | ==)  0`` for
    every cell X, with ``coef`` and ``const`` arrays broadcast over the design's axes."""

    coef: np.ndarray = field(repr=False)
    const: np.ndarray = field(repr=False)
    sense: str  # "<=" or "=="
    span: Span | None = field(default=None, repr=False)
    text: str = ""


class MaxConfidence(Identity):
    """Chen et al. Def. 3: the adversary's largest posterior P(x_S | x_U, a) over groups, outcomes
    and private values, when it knows the joint ``prior`` of (public, private) and the design."""

    public: tuple[str, ...]
    outcome: str
    private: tuple[str, ...]
    prior: str  # name of the known table holding P(public, private) or P(private | public)
    reference: str | None  # name of the known true mapping D, if the spec gives one
    span: Span | None = field(default=None, repr=False)


class Objective(Identity):
    """``minimize max_confidence`` (value beta) or ``maximize min_uncertainty`` (value -log beta,
    Chen et al. App. C, Def. 12). Both have the same minimizers."""

    sense: str  # "minimize" | "maximize"
    kind: str  # "max_confidence" | "min_uncertainty"
    measure: MaxConfidence
    span: Span | None = field(default=None, repr=False)

    # a ratio of forms affine in the design (Chen et al. eq. 16): its atom's curvature
    # (builder/atoms/max_confidence.py, min_uncertainty.py)
    curvature = "ratio"

    @property
    def atom(self) -> str:
        """The objective's atom: ``max_confidence`` or ``min_uncertainty``."""
        return self.kind

    def value(self, beta: float) -> float:
        if self.kind == "min_uncertainty":
            return float(-np.log(beta)) if beta > 0 else float("inf")
        return float(beta)


class LinearConstraint(Identity):
    """``expr (<= | ==) 0`` for every defined cell of ``expr``, a table affine in the design.

    ``induced`` is set when the constraint's math fixes a distribution induced by the design,
    ``P(T | G) = q`` (the form of Ding et al. eq. 3), however it is spelled: ``expr`` is
    ``c * (P(T | G) - q)`` cell by cell with every ``c != 0`` (``P(Y | S) == Q``,
    ``2 * Q == 2 * P(Y | S)``, ``P(Y, S) == Q * P(S)``), an equality, or a bound that with the
    other constraints on the same ``P(T | G)`` pins every defined cell at ``q``
    (``builder/mechanism.py``, ``_recognize_induced``). The closed forms look for it.
    """

    expr: LinTable = field(repr=False)
    sense: str  # "<=" or "=="
    span: Span | None = field(default=None, repr=False)
    text: str = ""
    induced: InducedEquality | None = None


class InducedEquality(Identity):
    targets: tuple[str, ...]
    given: tuple[str, ...]
    value: np.ndarray = field(repr=False)  # over given + targets


class Budget(Identity):
    """A pairwise privacy budget on the conditional ``cond = P(target | source)`` induced by the
    design, over the axes ``source + (target,)``:

    * ``ldp`` (Ding et al. eq. 1) and ``dp``: ``cond[a, y] <= e^eps cond[a', y] + delta / |A|``
      for every pair (all pairs, or the ``pairs`` of an adjacency relation) and every y;
    * ``loglift`` (eq. 2): ``e^-eps P(y) <= cond[a, y] <= e^eps P(y)`` with
      ``P(y) = sum_a weights[a] cond[a, y]``, for every a with ``weights[a] > 0``.
    """

    kind: str  # ldp | dp | loglift
    source: tuple[str, ...]
    target: str
    eps: float
    delta: float
    cond: LinTable = field(repr=False)
    pairs: np.ndarray | None = field(default=None, repr=False)  # (k, 2) ordered pairs of source cells
    weights: np.ndarray | None = field(default=None, repr=False)  # P(source), raveled
    span: Span | None = field(default=None, repr=False)
    text: str = ""

    @property
    def source_cells(self) -> int:
        return self.cond.cells // self.cond.shape[-1]


class SquaredTerms(Identity):
    """``sum_k w_k (A_k x + b_k)^2`` with every ``w_k >= 0``: the convex quadratic part of an
    objective (soft moment matching, Ramon & Basu Sec. 3.3)."""

    A: object = field(repr=False)  # scipy.sparse csr (k, n)
    b: np.ndarray = field(repr=False)
    w: np.ndarray = field(repr=False)

    def value(self, x: np.ndarray) -> float:
        r = self.A @ x + self.b
        return float(self.w @ (r * r))


class MechanismObjective(Identity):
    """A scalar affine in the design, plus optionally a convex quadratic part: ``tv(X, Y)``
    (Ding et al. App. B), an expected distortion ``E[d(X, Y)]``, a sum such as
    ``sum(x, y: f * (x - y)^2)`` (Ramon & Basu Sec. 3.3), and any nonnegative combination of
    squares of affine expressions. ``distance`` is ``d`` over (data, release) when the
    objective is exactly an expected distortion."""

    sense: str
    expr: LinTable = field(repr=False)
    kind: str  # tv | expected_distortion | linear | quadratic
    text: str = ""
    pair: tuple[str, str] | None = None  # (data, release) for tv / expected distortion
    distance: np.ndarray | None = field(default=None, repr=False)
    span: Span | None = field(default=None, repr=False)
    squares: SquaredTerms | None = field(default=None, repr=False)

    @property
    def is_quadratic(self) -> bool:
        return self.squares is not None

    @property
    def atom(self) -> str | None:
        """The objective's atom when it is one (``tv``; ``E`` for an expected distortion), None
        for a sum of terms."""
        return {"tv": "tv", "expected_distortion": "E"}.get(self.kind)

    @property
    def curvature(self) -> str:
        """``affine`` in the design's cells, or ``convex`` with squares of affine expressions
        (nonnegative weights): a linear or a convex quadratic program."""
        return "convex" if self.is_quadratic else "affine"

    def evaluate(self, x: np.ndarray) -> float:
        """The objective at design vector ``x``."""
        v = float(self.expr.value(x).reshape(()))
        return v + (self.squares.value(x) if self.squares is not None else 0.0)

    def value(self, v: float) -> float:
        return float(v)


class NoRecords(Identity):
    """A known table estimated from a file of records (``from FILE`` without ``column``) with
    combinations of its conditioning labels that no record has. Their rate is undefined: the
    constraints that read it do not hold at those cells, the table holds the rate over all the
    file's records there (a reference only), and the builder has checked that the combinations
    carry no population, so nothing there changes a confidence."""

    table: str  # the known table's name
    path: str  # the file as written in the spec
    given: tuple[str, ...]  # the conditioning variables
    labels: tuple[tuple[str, ...], ...]  # each conditioning variable's labels
    index: np.ndarray  # (combinations, len(given)): each combination without records as label indices
    records: int  # records in the file
    span: Span | None = field(default=None, repr=False)
    text: str = ""  # P(...) as written

    fill: dict[str, float] = field(
        default_factory=dict
    )  # the reference there: the rate over all records, by target label(s)

    TREATMENT = (
        "no record, so no population: no confidence depends on these cells. A constraint reading their rate does "
        "not hold there (there is none), so their released values are free; the rate over all records of the "
        "file is the reference they are kept near when the method breaks ties"
    )

    @property
    def count(self) -> int:
        """The number of combinations without records."""
        return len(self.index)

    def cell_text(self, j: int) -> str:
        return ", ".join(f"{v}={labels[i]}" for v, labels, i in zip(self.given, self.labels, self.index[j]))

    def to_dict(self) -> dict:
        """Plain values; ``cells`` one {variable: label} per combination, kept as codes
        (``results.LabelRows``: a list of dicts only when asked for)."""
        return {
            "table": self.table,
            "file": self.path,
            "records": self.records,
            "cells": LabelRows(self.given, self.labels, self.index),
            "rate_used": dict(self.fill),
            "treatment": self.TREATMENT,
        }


# the block kinds (``privopt.blocks``): what a program designs. "atr": a transparency report
# (Chen et al.); "mechanism": a mechanism table (Ding et al., Kairouz et al., count queries,
# Ramon & Basu Sec. 3.3); "noise": Gaussian noise variances (Ramon & Basu Sec. 3.2);
# "obfuscation": a rank-preserving test channel (Shariatnasab et al.)
KINDS = ("atr", "mechanism", "noise", "obfuscation")


class Problem(Identity):
    """A validated privacy-design problem. ``kind`` is set by the builder that reads the spec
    (``KINDS``); what the program is (its objective's atom and curvature, ``objective.atom`` and
    ``objective.curvature``, and its constraints' ``sets``) is read from its parts."""

    title: str | None
    variables: dict[str, Variable]
    params: dict[str, float]
    known: dict[str, Table]
    design: Design | None  # None for a noise-placement program
    constraints: tuple[CellConstraint | LinearConstraint, ...]
    objective: Objective | MechanismObjective | NoiseObjective | RankObjective
    kind: str  # the block kind of the designed object (``privopt.blocks``): one of ``KINDS``
    source_name: str = "<spec>"
    source_sha256: str | None = None  # SHA-256 of the spec text as read (set by privopt.load / loads)
    source_text: str | None = field(default=None, repr=False)  # the spec text as read (privopt verify re-parses it)
    data_sha256: dict[str, str] = field(default_factory=dict)  # data file (as written) -> SHA-256 of its bytes
    parse_s: float = 0.0  # seconds spent reading and checking the spec (reported in timings)
    budgets: tuple[Budget, ...] = ()
    model: LinTable | None = field(
        default=None, repr=False
    )  # joint P(known vars, design targets), linear in the design
    joint: Table | None = field(default=None, repr=False)  # the known joint of the non-release variables
    noise: NoiseModel | None = field(default=None, repr=False)  # continuous inputs and Gaussian noise (model/noise.py)
    obfuscation: ObfuscationModel | None = field(
        default=None, repr=False
    )  # rank-preserving obfuscation (model/obfuscation.py)
    no_records: tuple[NoRecords, ...] = ()  # record-level tables' combinations without records (builder: _records)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"unknown block kind '{self.kind}'; kinds: {', '.join(KINDS)}")

    @property
    def sets(self) -> frozenset[str]:
        """The kinds of the sets its constraints are in (``core.sets``' ``kind`` words): what
        the program's constraints are, read from the parts it holds, not from its ``kind``.

        * a design table's rows: ``simplex rows`` (cells in [0, 1], each row summing to 1);
        * elementwise cell bounds (Chen et al. eqs. 9-10): ``fidelity``;
        * a linear constraint: ``zero`` (``==``) or ``nonnegative`` (``<=``);
        * a dp / ldp budget: ``budget``; a log-lift bound: ``loglift`` (Ding et al. eqs. 4-5);
        * a Gaussian release's (eps, delta)-DP requirement: ``gaussian dp`` (Ramon & Basu Sec. 3.2);
        * an obfuscation's leakage bound ``I(Y; F) <= eps``: ``leakage`` (Shariatnasab et al. eq. 3),
          and its symmetric restriction, an equality: ``zero``."""
        out = {SimplexRows.kind} if self.design is not None else set()
        for c in self.constraints:
            if isinstance(c, CellConstraint):
                out.add(Fidelity.kind)
            else:
                out.add(Zero.kind if c.sense == "==" else Nonnegative.kind)
        out.update(LogLift.kind if b.kind == "loglift" else BudgetSet.kind for b in self.budgets)
        if self.noise is not None:
            out.add(GaussianDP.kind)
        ob = self.obfuscation
        if ob is not None and ob.leakage is not None:
            out.add(Leakage.kind)
        if ob is not None and ob.symmetric:
            out.add(Zero.kind)
        return frozenset(out)

    @property
    def design_size(self) -> int:
        if self.design is None:
            return 0
        return int(np.prod(self.shape(self.design.axes), dtype=np.int64))

    def shape(self, axes: tuple[str, ...]) -> tuple[int, ...]:
        return tuple(self.variables[a].size for a in axes)

    def provenance(self) -> dict:
        """What was solved: {"path" (None for text given to ``loads`` without a path), "title",
        "sha256" of the spec text, "params": every param's value after overrides, "data": the
        SHA-256 of every data file the spec read, by its path as written in the spec, "text": the
        spec text itself, "cwd": the folder it was solved in (relative paths resolve from it)}."""
        path = None if self.source_name == "<spec>" else self.source_name
        return {
            "path": path,
            "title": self.title,
            "sha256": self.source_sha256,
            "params": dict(self.params),
            "data": dict(self.data_sha256),
            "text": self.source_text,
            "cwd": os.getcwd(),
        }
