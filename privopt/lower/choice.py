"""A design choice as a reduction (issue 20, item 4: "choice -> big-M or enumeration").

A program with a **choice** picks one of K strategies: blocks of columns ``B_1, ..., B_K`` of a
canonical program (``core.canonical``), of which exactly one may be active; the columns of every
other block are 0. Its feasible set is the union over k of ``{x feasible : x_j = 0 for j in B_l,
l != k}``, which is not convex, so a solver needs integers (a binary ``pi_k`` per block) or one
convex program per block. Two reductions:

* ``BigM``: for nonnegative columns with finite upper bounds ``0 <= x_j <= u_j``, the rows
  ``x_j - M_j pi_k <= 0`` (j in B_k) and ``sum_k pi_k = 1`` with binaries ``pi_k`` make a MILP
  whose projection on x is exactly that union: ``pi_k = 0`` forces ``x_j <= 0``, so ``x_j = 0``;
  ``pi_k = 1`` gives ``x_j <= M_j``, which cuts nothing when ``M_j = u_j``. ``u_j`` is the
  smallest valid M (any smaller cuts off ``x_j = u_j``) and the tightest LP relaxation; an
  unbounded column has no valid M and is refused. HiGHS solves the MILP by branch and cut.
* ``Enumeration``: a program whose integers are binaries with at most ``MAX_ASSIGNMENTS``
  assignments (or a choice of at most that many blocks) is solved as one continuous program per
  assignment, the binaries (or the inactive blocks) fixed by their column bounds. The optimum is
  the best branch: ``min over z of (min over x of the program with its binaries at z)``. It is
  the route for integers with cones: HiGHS takes no cones and CLARABEL no integers; SCIP takes
  both (through cvxpy) where pyscipopt is installed, and only second-order cones.

``choose(target)`` picks among them and says why (``Decision``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from ..core.canonical import CanonicalProgram
from ..core.certificate import Certificate
from ..core.plan import Match
from ..errors import InfeasibleError, SolverError, UsageError

# 2^12 = 4,096 continuous solves: at ~10 ms for a small conic program that is under a minute; past
# it the number doubles with each binary, and branch and bound (SCIP) prunes what enumeration solves
MAX_BINARIES = 12
MAX_ASSIGNMENTS = 2**MAX_BINARIES
ROW_TOL = 1e-9  # a row over binaries only holds at an assignment within this (the values are small integers)


@dataclass(frozen=True)
class ChoiceProgram:
    """A canonical program and a choice over it: exactly one of ``blocks`` (disjoint arrays of
    column indices, at least two) is active; the columns of the others are 0."""

    program: CanonicalProgram
    blocks: tuple[np.ndarray, ...]

    def __post_init__(self):
        blocks = tuple(np.asarray(b, dtype=np.int64).ravel() for b in self.blocks)
        object.__setattr__(self, "blocks", blocks)
        n = self.program.shape[1]
        if len(blocks) < 2:
            raise UsageError(f"a choice needs at least two blocks to choose from, got {len(blocks)}")
        cols = np.concatenate(blocks)
        if cols.size and (cols.min() < 0 or cols.max() >= n):
            raise UsageError(f"a choice's columns must lie in 0..{n - 1}")
        if np.unique(cols).size != cols.size:
            raise UsageError("a choice's blocks must not share a column")
        if self.program.n_integers:
            raise UsageError("a choice is made over a continuous program (one without integer columns)")


def binaries(program: CanonicalProgram) -> np.ndarray | None:
    """The integer columns of ``program`` when every one is a binary (bounds within [0, 1]);
    None when one is a general integer."""
    cols = np.flatnonzero(program.integrality) if program.n_integers else np.zeros(0, dtype=np.int64)
    if np.all(program.col_lower[cols] >= -ROW_TOL) and np.all(program.col_upper[cols] <= 1 + ROW_TOL):
        return cols
    return None


class BigM:
    """A choice -> a MILP with one binary per block (the module's docstring states the math)."""

    name = "big-m"
    why = "the choice as binaries pi_k and rows x_j <= M_j pi_k, sum_k pi_k = 1, with M_j the column's upper bound"

    def accepts(self, target) -> Match:
        if not isinstance(target, ChoiceProgram):
            return Match.no("there is no choice to write as binaries")
        program = target.program
        for k, block in enumerate(target.blocks):
            low = np.flatnonzero(program.col_lower[block] < 0)
            if low.size:
                j = int(block[low[0]])
                return Match.no(
                    f"big-M needs nonnegative variables: column {j} of block {k} has lower bound "
                    f"{float(program.col_lower[j])!r} (x_j <= M pi_k forces x_j <= 0, not x_j = 0, when pi_k = 0)"
                )
            open_ = np.flatnonzero(~np.isfinite(program.col_upper[block]))
            if open_.size:
                j = int(block[open_[0]])
                return Match.no(
                    f"big-M needs a finite upper bound on every variable of the choice: column {j} of block {k} "
                    "is unbounded above, so no M is valid; bound it, or enumerate the blocks"
                )
        return Match.yes(self.why)

    def apply(self, target: ChoiceProgram) -> tuple[CanonicalProgram, tuple[int, tuple[np.ndarray, ...]]]:
        """The MILP: columns x then pi (K binaries); rows A x as before, then ``x_j - u_j pi_k <= 0``
        per column of each block and ``sum_k pi_k = 1``. ``UsageError`` where ``accepts`` refuses."""
        import scipy.sparse as sp

        if not (m := self.accepts(target)):
            raise UsageError(m.why)
        p, blocks = target.program, target.blocks
        m_rows, n = p.shape
        K = len(blocks)
        cols = np.concatenate(blocks)
        owner = np.concatenate([np.full(b.size, k) for k, b in enumerate(blocks)])
        r = np.arange(cols.size)
        link = sp.csc_matrix(
            (
                np.concatenate([np.ones(cols.size), -p.col_upper[cols]]),
                (np.concatenate([r, r]), np.concatenate([cols, n + owner])),
            ),
            shape=(cols.size, n + K),
        )
        one = sp.csc_matrix((np.ones(K), (np.zeros(K, dtype=np.int64), n + np.arange(K))), shape=(1, n + K))
        A = sp.vstack([sp.hstack([p.A, sp.csc_matrix((m_rows, K))]), link, one], format="csc")
        Q = None if p.Q is None else sp.block_diag([p.Q, sp.csc_matrix((K, K))], format="csc")
        milp = CanonicalProgram(
            np.concatenate([p.c, np.zeros(K)]),
            A,
            np.concatenate([p.row_lower, np.full(cols.size, -np.inf), [1.0]]),
            np.concatenate([p.row_upper, np.zeros(cols.size), [1.0]]),
            np.concatenate([p.col_lower, np.zeros(K)]),
            np.concatenate([p.col_upper, np.ones(K)]),
            Q=Q,
            cones=p.cones,
            integrality=np.concatenate([np.zeros(n, dtype=bool), np.ones(K, dtype=bool)]),
            offset=p.offset,
        )
        return milp, (n, blocks)

    def invert(self, x: np.ndarray, inverse: tuple[int, tuple[np.ndarray, ...]]) -> tuple[np.ndarray, int]:
        """(the program's columns, the active block: the pi_k rounded to 1)."""
        n, _ = inverse
        return np.asarray(x[:n], dtype=float), int(np.argmax(x[n:]))


@dataclass(frozen=True)
class Branch:
    """One assignment of the enumeration: the binaries' values (``{column: value}``; for a
    choice, the active block as ``{"block": k}``), and the row over binaries only that rules it
    out (``pruned``: proven infeasible without a solve), or None when it is solved."""

    assignment: dict
    pruned: str | None = None


class Enumeration:
    """Binaries (or a choice's blocks) -> one continuous program per assignment; ``invert`` takes
    the best solved branch with an ``enumeration`` certificate (the module's docstring).

    ``takes_integers``: whether the backend that will solve the branches takes integer columns
    (``Backend.accepts``); enumeration is for programs with cones or a quadratic objective, or
    for a backend that takes no integers."""

    name = "enumeration"

    def __init__(self, takes_integers: bool = True):
        self.takes_integers = takes_integers

    def accepts(self, target) -> Match:
        if not (few := _few(target)):
            return few
        program = target.program if isinstance(target, ChoiceProgram) else target
        beyond = program.needs - {"integer"}
        if not beyond and self.takes_integers:
            return Match.no("a MILP without cones: a backend that takes integers solves it by branch and cut at once")
        has = "cones or a quadratic objective" if beyond else "a backend that takes no integers"
        return Match.yes(f"{few.why}, each a continuous program ({has})")

    def apply(self, target) -> tuple[list[CanonicalProgram], list[Branch]]:
        """The continuous programs, one per assignment not ruled out by a row over binaries
        only, and the branches (every assignment, in order, pruned or solved). ``UsageError``
        for a target with general integers or too many assignments."""
        if not (few := _few(target)):
            raise UsageError(few.why)
        if isinstance(target, ChoiceProgram):
            return _choice_branches(target)
        return _binary_branches(target)

    def invert(self, solutions: list, branches: list[Branch]) -> tuple[object, Certificate]:
        """The best solved branch (least objective) and the certificate that every assignment was
        solved: each pruned by a row, proven infeasible by its solver, or solved with its optimum
        on record. ``SolverError`` for a branch with none of these (a limit, an error, an
        unbounded branch); ``InfeasibleError`` when no branch is feasible."""
        solved = [b for b in branches if b.pruned is None]
        if len(solutions) != len(solved):
            raise ValueError(f"{len(solutions)} solutions for {len(solved)} branches")
        record, best, answers = [], None, iter(solutions)
        for b in branches:
            if b.pruned is not None:
                record.append({"assignment": b.assignment, "status": "pruned", "objective": None, "why": b.pruned})
                continue
            sol = next(answers)
            if sol.status not in ("optimal", "infeasible"):
                raise SolverError(
                    f"the enumeration is not proven: the branch {b.assignment} ended '{sol.termination}' "
                    f"({sol.message or sol.status})"
                )
            proof = f"solved by {sol.solver}" if sol.status == "optimal" else f"{sol.solver} proved it infeasible"
            record.append({"assignment": b.assignment, "status": sol.status, "objective": sol.objective, "why": proof})
            if sol.status == "optimal" and (best is None or sol.objective < best[1].objective):
                best = (b, sol)
        if best is None:
            raise InfeasibleError(
                f"every one of the {len(branches):,} assignments is infeasible",
                [f"{r['assignment']}: {r['why']}" for r in record],
            )
        chosen, sol = best
        cert = Certificate(
            "enumeration",
            f"every one of the {len(branches):,} assignments was solved or proven infeasible; the best, "
            f"{chosen.assignment}, is the optimum",
            bound=sol.objective,
            side="lower",
            gap=0.0,
            data={"chosen": chosen.assignment, "assignments": len(branches), "branches": record},
        )
        return sol, cert


def _few(target) -> Match:
    """Whether ``target``'s assignments can be enumerated: binaries only (or a choice), at most
    ``MAX_ASSIGNMENTS`` of them; the match says how many."""
    if isinstance(target, ChoiceProgram):
        count, what = len(target.blocks), f"a choice of {len(target.blocks)} blocks"
    else:
        cols = binaries(target)
        if not target.n_integers:
            return Match.no("the program has no integer columns")
        if cols is None:
            return Match.no("an integer column is not binary (its bounds exceed [0, 1]); enumeration fixes binaries")
        count, what = 2**cols.size, f"{cols.size} binaries"
    if count > MAX_ASSIGNMENTS:
        return Match.no(
            f"{what} give {count:,} assignments, more than {MAX_ASSIGNMENTS:,} ({MAX_BINARIES} binaries): "
            "branch and bound prunes what enumeration would solve one by one"
        )
    return Match.yes(f"{what}, at most {count:,} assignments")


def _choice_branches(target: ChoiceProgram) -> tuple[list[CanonicalProgram], list[Branch]]:
    """Block k active: every other block's columns fixed to 0 by their bounds (a branch whose
    bounds exclude 0 there is pruned)."""
    p, programs, branches = target.program, [], []
    for k in range(len(target.blocks)):
        off = np.concatenate([b for i, b in enumerate(target.blocks) if i != k])
        bad = off[(p.col_lower[off] > 0) | (p.col_upper[off] < 0)]
        if bad.size:
            branches.append(Branch({"block": k}, f"column {int(bad[0])} cannot be 0 (its bounds exclude it)"))
            continue
        lo, hi = p.col_lower.copy(), p.col_upper.copy()
        lo[off] = hi[off] = 0.0
        programs.append(_with_bounds(p, lo, hi))
        branches.append(Branch({"block": k}))
    return programs, branches


def _binary_branches(program: CanonicalProgram) -> tuple[list[CanonicalProgram], list[Branch]]:
    """Every 0/1 assignment within the binaries' bounds; one that breaks a row over binaries only
    is pruned (the row is named), the others fixed by their column bounds."""
    cols = binaries(program)
    lo, hi = np.ceil(program.col_lower[cols] - ROW_TOL), np.floor(program.col_upper[cols] + ROW_TOL)
    A = program.A.tocsr()
    other = np.ones(A.shape[1], dtype=bool)
    other[cols] = False
    only = np.flatnonzero((np.diff(A.indptr) > 0) & (np.asarray((A[:, other] != 0).sum(axis=1)).ravel() == 0))
    sub = A[only][:, cols]
    programs, branches = [], []
    for z in itertools.product(*(range(int(a), int(b) + 1) for a, b in zip(lo, hi))):
        z = np.asarray(z, dtype=float)
        assignment = {int(j): int(v) for j, v in zip(cols, z)}
        vals = sub @ z
        broken = only[(vals < program.row_lower[only] - ROW_TOL) | (vals > program.row_upper[only] + ROW_TOL)]
        if broken.size:
            branches.append(Branch(assignment, f"row {int(broken[0])} (over binaries only) does not hold"))
            continue
        col_lo, col_hi = program.col_lower.copy(), program.col_upper.copy()
        col_lo[cols] = col_hi[cols] = z
        programs.append(_with_bounds(program, col_lo, col_hi))
        branches.append(Branch(assignment))
    return programs, branches


def _with_bounds(p: CanonicalProgram, lo: np.ndarray, hi: np.ndarray) -> CanonicalProgram:
    """``p`` without integers, with these column bounds."""
    return CanonicalProgram(p.c, p.A, p.row_lower, p.row_upper, lo, hi, Q=p.Q, cones=p.cones, offset=p.offset)


@dataclass(frozen=True)
class Decision:
    """How a program with a choice or binaries is solved: the reduction (None: the program goes
    to the backend as it is), the backend and inner solver, and why."""

    reduction: BigM | Enumeration | None
    backend: str
    solver: str | None
    why: str


def choose(target) -> Decision:
    """The route for ``target`` (a ``ChoiceProgram`` or a ``CanonicalProgram`` with binaries):

    * an LP with a choice: big-M, a MILP on HiGHS (one branch and cut; the rows are exact for
      bounded nonnegative variables); where big-M is refused (an unbounded or negative variable),
      the blocks enumerated, each an LP on HiGHS;
    * a MILP: HiGHS as it is;
    * cones or a quadratic objective with few assignments (<= ``MAX_ASSIGNMENTS``): enumeration,
      each branch on cvxpy with CLARABEL (HiGHS takes no cones, CLARABEL no integers);
    * more: SCIP through cvxpy (after big-M for a choice) when pyscipopt imports, as
      ``backends.pick`` finds it; else its ``UsageError`` (install pyscipopt, or fewer binaries).
    """
    from ..backends import pick

    choice = isinstance(target, ChoiceProgram)
    program = target.program if choice else target
    if not choice and not program.n_integers:
        raise UsageError("the program has no choice and no integer columns: there is nothing to choose")
    beyond = program.needs - {"integer"}
    bigm = BigM().accepts(target)
    if not beyond:
        if choice and bigm:
            return Decision(
                BigM(), "highs", None, f"an LP with a choice: {bigm.why}; HiGHS solves the MILP by branch and cut"
            )
        if not choice:
            return Decision(None, "highs", None, "a MILP: HiGHS solves it by branch and cut")
        enum = Enumeration(takes_integers=False).accepts(target)
        if not enum:
            raise UsageError(f"the choice cannot be solved: {bigm.why}; and {enum.why}")
        return Decision(
            Enumeration(takes_integers=False), "highs", None, f"{bigm.why}: {enum.why}, each an LP on HiGHS"
        )
    enum = Enumeration(takes_integers=False).accepts(target)
    if enum:
        backend, solver = pick(beyond)
        return Decision(
            Enumeration(takes_integers=False),
            backend,
            solver,
            f"{enum.why}, solved by {solver}: HiGHS takes no cones or quadratic objective with integers, "
            f"{solver} no integers; the best branch is the optimum, every branch on record",
        )
    if choice and not bigm:
        raise UsageError(f"the choice cannot be solved: {enum.why}; and {bigm.why}")
    backend, solver = pick(beyond | {"integer"})  # SCIP, or UsageError saying what to install
    return Decision(
        BigM() if choice else None,
        backend,
        solver,
        f"{enum.why}; {solver} branches and bounds over the integers with the cones",
    )
