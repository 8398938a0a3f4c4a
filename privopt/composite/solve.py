"""Solving a composite (docs/blocks.md): every block by its own route at each point, combined
by one of three programs, each with its certificate.

* **split** (chosen block budgets under linear rows): each row ``sum_i c_i x_i <= E`` is a
  separable program over the blocks in it, solved by ``split.split`` with ``y_i = c_i (x_i -
  lo_i)``; its value curves are the blocks' optimal values, which do not increase with their
  budgets. Rows are independent (a block has one chosen param, in one row), so the composite's
  bound is the sum of the rows' bounds.
* **bisection** (accuracy first: ``minimize t`` subject to ``a.objective <= target``, blocks'
  budgets nondecreasing in t): the targets hold on an interval ``[t*, hi]`` of t, found by
  bisection; the bracket ``[t_lo, t_hi]`` (t_lo fails or is ``lo``, t_hi holds) is the certificate.
* **least eps sum** (accuracy first over ``dp(a, b, ...) <= (t, delta)``: ``_least_sum``): the
  least t is the sum of each mechanism's least eps meeting its targets (``least``: the proof and
  the certified bracket); a target on a block a split chooses makes its term +inf below its
  proven least eps (``_target_term``).
* **evaluate** (nothing chosen): the blocks are solved once.

A design choice ``choose one of a, b`` enumerates the alternatives, each solved and certified;
the unchosen blocks count 0 and spend no budget; the bound is the least over the alternatives.
A choice that lists a block of a joint Gaussian group changes the group itself: each branch is
then a composite of its own (``model.branch``), solved by its own method (``_branches``).
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..closedform.rr import RANDOMIZED_RESPONSE as RR_THEOREM
from ..closedform.rr import rr_value
from ..errors import InfeasibleError, SpecError, UsageError
from ..language import ast
from . import deltasplit, explain, gaussian, least, model
from .closedcells import RRDual
from .model import Row
from .parametric import Cell, ParametricLP, TermDual, mechanism_lp
from .result import BlockAnswer, CompositeResult, bracket_record, branch_records, term_vars
from .split import RTOL, Split, Term, inverse_square_split, oracle_pair, relative_gap, rr_split, split

MAX_CALLS = 160  # block solves per composition row (each is a whole verified solve)
METHOD_SUM = "least eps sum"  # accuracy first over a row of mechanisms (``_least_sum``)
BRANCHES = "branches"  # the plan's step for a design choice involving a joint group (``_branches``)


@dataclass
class Composite(model.Model):
    """A loaded composite spec: its model (``model.Model``) plus ``solve`` and ``explain``."""

    def solve(self, method: str = "auto", backend: str = "auto", time_limit=None, solver=None, workers=None, **_):
        """Solve the composite (module docstring): each block by its own route (``method``,
        ``backend``, ``solver`` and ``time_limit`` apply to every block solve)."""
        return solve(self, method=method, backend=backend, time_limit=time_limit, solver=solver, workers=workers)

    def explain_dict(self) -> dict:
        """``privopt explain --json`` of a composite: its blocks and the method, no canonical program."""
        return {"class": "composite", "blocks": explain.budgets(self), "plan": plan_steps(self), "canonical": None}

    def explain_text(self, as_json: bool = False) -> str:
        """What ``privopt explain`` prints: the JSON of ``explain_dict``, or its lines."""
        data = self.explain_dict()
        if as_json:
            return json.dumps(data, indent=2, allow_nan=False)
        lines = [f"spec:    {self.title or self.source_name}  ({self.source_name})", "class:   composite"]
        lines += [f"  choose {v.key} in [{v.lo:g}, {v.hi:g}]" for v in self.vars.values() if v.block is None]
        lines += explain.budget_lines(data["blocks"])
        if self.choice:
            lines.append(f"  choose one of {', '.join(self.choice)}")
        lines.append("plan:")
        lines += [f"  {s['step']} ({s['kind']}): {s['why']}" for s in data["plan"]]
        return "\n".join(lines)


def build(
    spec: ast.SpecFile, params: dict | None, allow_paths: bool, load_block: Callable, chosen: str | None = None
) -> Composite:
    """The loaded composite (``model.build``); ``load_block(spec, params)`` loads a block; with
    ``chosen``, one branch of its design choice (``model.branch``)."""
    m = model.build(spec, params, allow_paths, load_block, chosen)
    return Composite(**{f.name: getattr(m, f.name) for f in dataclasses.fields(m)})


@dataclass
class _Oracle:
    """Each block solved at a point, memoized: ``(block, params) -> BlockAnswer``."""

    composite: Composite
    options: dict
    cache: dict = field(default_factory=dict)
    warm: dict = field(default_factory=dict)  # block -> _Warm or None
    families: dict = field(default_factory=dict)  # block -> ParametricLP or None
    lowered: dict = field(default_factory=dict)  # (block, eps) -> MechanismLP
    leasts: dict = field(default_factory=dict)  # a targeted block's variable -> its least budget (``_block_least``)

    def answer(self, name: str, values: dict[str, float]) -> BlockAnswer:
        block = self.composite.blocks[name]
        params = dict(block.fixed)
        for key, x in values.items():
            var = self.composite.vars.get(key)
            if var is None:  # a param the split sets beside the chosen ones: an optimized delta (deltasplit)
                params[key.partition(".")[2]] = x
            elif var.block == name:
                params[var.param] = x
        for p, form in block.linked.items():
            params[p] = form.at(values)
        key = (name, tuple(sorted(params.items())))
        if key not in self.cache:
            self.cache[key] = self._solve(name, params)
        return self.cache[key]

    def _solve(self, name: str, params: dict[str, float]) -> BlockAnswer:
        if self.composite.group_of(name) is not None:  # a joint Gaussian group's block (gaussian.py)
            return gaussian.answer(self.composite, name, params, self.options, self.cache)
        block = self.composite.blocks[name]
        try:
            problem = self._load(name, params)
            result = problem.solve(**self.options)
        except InfeasibleError as e:
            return BlockAnswer(params, None, "infeasible", str(e).splitlines()[0], None)
        except UsageError as e:
            if not str(e).startswith("params="):  # a bad --method or --backend: the run's error
                raise UsageError(f"block {name} ({block.file}): {e}") from None
            # a budget outside the block's param domain (eps = 0 for Gaussian noise): no release there
            return BlockAnswer(params, None, "infeasible", str(e).splitlines()[0], None)
        if result.status != "optimal":
            return BlockAnswer(params, None, result.status, "; ".join(result.reasons), result)
        return BlockAnswer(params, float(result.objective), "optimal", None, result)

    def dual(self, v, eps: float, a: BlockAnswer) -> Cell | None:
        """The certificate of block ``v.block``'s cells around ``eps`` (``parametric.Cell``: its
        LP's optimum and t-form duals at ``eps``, from the answer's own solve: ``_solved_point``),
        when its LP is affine in ``e^-eps``
        (``ParametricLP.make``) and the bound at ``eps`` meets the verified value ``a.value``
        (relative ``RTOL``; otherwise the LP is not the block's program as solved and no
        certificate is given); else None."""
        if a.value is None or not (math.isfinite(eps) and eps >= 0) or (fam := self._family(v)) is None:
            return None
        from ..backends import get_backend

        # the point as the block's answer holds it, else (not carried, or not tight) the LP solved again
        for point in (lambda: _solved_point(fam, eps, a), lambda: fam.solve(eps, get_backend("highs"))):
            found = point()
            cell = Cell(fam, eps, *found) if found is not None else None
            if cell is not None and abs(cell.bounds(eps)[1] - a.value) <= RTOL * max(1.0, abs(a.value)):
                return cell
        return None

    def _family(self, v) -> ParametricLP | None:
        """Block ``v.block``'s LP family in its chosen budget (``ParametricLP.make``), memoized;
        None when it is not one (or the block's budget is linked to others)."""
        if v.block not in self.families:
            try:
                linked = self.composite.blocks[v.block].linked
                self.families[v.block] = None if linked else ParametricLP.make(lambda e: self._lowered(v, e))
            except (SpecError, UsageError):
                self.families[v.block] = None  # a probe budget outside the block's param domain
        return self.families[v.block]

    def ray(self, v, eps: float) -> np.ndarray | None:
        """A Farkas ray (``methods.farkas.ray``) of block ``v.block``'s LP in the t-form at
        ``t = e^eps`` (``parametric``: the program ``privopt verify`` rebuilds at the point),
        where the block is infeasible; None when it is not an LP family or no ray is proven."""
        if not (math.isfinite(eps) and eps >= 0) or (fam := self._family(v)) is None:
            return None
        from ..backends import get_backend
        from ..backends.base import LinearProgram
        from ..methods.farkas import ray

        t = math.exp(eps)
        lp = LinearProgram(
            fam.c, fam.matrix(t).tocsc(), fam.lo[0] + t * fam.lo[1], fam.hi[0] + t * fam.hi[1], fam.col_lower,
            fam.col_upper,
        )  # fmt: skip
        return ray(lp, get_backend("highs"))

    def _lowered(self, v, eps: float):
        """The block's LP at budget ``eps`` of its chosen ``v`` (its other params fixed), memoized;
        None when its program there is not a mechanism LP (a design table, linear constraints
        and an affine objective: what ``lower_mechanism`` lowers to an LP)."""
        key = (v.block, eps)
        if key not in self.lowered:
            problem = self._load(v.block, dict(self.composite.blocks[v.block].fixed) | {v.param: eps})
            self.lowered[key] = mechanism_lp(problem)
        return self.lowered[key]

    def _load(self, name: str, params: dict[str, float]):
        """The block's program at ``params``: its warm template at a new budget where it has one
        (``_Warm``), else loaded (built from its parsed syntax tree)."""
        block = self.composite.blocks[name]
        if name not in self.warm:
            self.warm[name] = _Warm.make(self.composite, block, params)
        w = self.warm[name]
        x = params.get(w.param) if w is not None else None
        if w is None or x is None or not (math.isfinite(x) and x >= 0) or w.others != _without(params, w.param):
            return self.composite.load_block(block.spec, params)
        return w.at(x)


def _solved_point(fam: ParametricLP, eps: float, a: BlockAnswer) -> tuple | None:
    """The block's LP point and row multipliers at ``eps`` in the t-form (``ParametricLP.t_form``)
    from its verified answer, so the point is solved once: the design table as verified (the
    LP's columns when the lowering adds none) and the multipliers its certificate records (of
    the envelope form, the one ``fam`` lowers); None when the answer does not carry them."""
    result = a.result
    cert = getattr(result, "certificate", None) or {}
    data = cert.get("data") or {}
    found = data.get("multipliers")
    if found is None or data.get("program", {}).get("pairwise") is not False or len(result.tables) != 1:
        return None
    x = np.asarray(result.tables.columns(next(iter(result.tables))).columns["value"], dtype=float)
    y = np.zeros(fam.rows.shape)
    rows = np.asarray(found["rows"], dtype=np.int64)
    if rows.size and (rows.min() < 0 or rows.max() >= y.size):
        return None
    y[rows] = found["values"]
    return fam.t_form(eps, x, y)


def _without(params: dict, key: str) -> dict:
    return {k: v for k, v in params.items() if k != key}


@dataclass(frozen=True)
class _Warm:
    """A design-table block's program built once, for every value of its chosen budget: the param is
    written only as the eps of its budget statement (``Budget.choosable``), so the program at eps
    ``x`` is the template with that budget's eps (and the param) set to ``x``; its domain is
    ``eps >= 0``, checked by the caller. ``tied`` are the budgets whose eps is the param's, found
    by building the block at two values of it (every other field must agree)."""

    problem: object
    param: str
    tied: tuple[int, ...]
    others: dict

    @staticmethod
    def make(c: Composite, block, params: dict[str, float]) -> _Warm | None:
        p = block.budget.eps if block.budget is not None else None
        if not isinstance(p, str) or p not in block.budget.choosable or block.linked or p not in params:
            return None
        x0 = params[p]
        x1 = 2.0 * x0 + 1.0
        try:
            a = c.load_block(block.spec, params)
            b = c.load_block(block.spec, params | {p: x1})
        except (SpecError, UsageError):
            return None
        if getattr(a, "design", None) is None or len(a.budgets) != len(b.budgets):
            return None
        tied = tuple(i for i, (u, v) in enumerate(zip(a.budgets, b.budgets)) if u.eps != v.eps)
        if not tied or any(a.budgets[i].eps != x0 or b.budgets[i].eps != x1 for i in tied):
            return None
        if _without(a.params, p) != _without(b.params, p) or len(a.constraints) != len(b.constraints):
            return None
        return _Warm(a, p, tied, _without(params, p))

    def at(self, x: float):
        budgets = tuple(
            dataclasses.replace(u, eps=x) if i in self.tied else u for i, u in enumerate(self.problem.budgets)
        )
        return dataclasses.replace(self.problem, params=self.problem.params | {self.param: x}, budgets=budgets)


def plan_steps(c: Composite) -> list[dict]:
    """The steps an automatic solve runs: each block (solved by its own plan), then the program."""
    steps = [
        {"step": f"block {b.name}", "kind": "block", "why": f"{b.file}: {gaussian.route(c, b.name)}"}
        for b in c.blocks.values()
    ]
    method, why = _method(c)
    steps.append({"step": method, "kind": "method", "why": why})
    return steps


def _method(c: Composite) -> tuple[str, str]:
    if model.branched(c):
        return (
            BRANCHES,
            "the design choice changes a joint Gaussian group: each branch solved as a composite of its own",
        )
    if c.joint is not None and c.joint.var is not None:
        return gaussian.METHOD_LEAST, gaussian.WHY_LEAST
    if c.joint is not None and c.targets:
        return gaussian.METHOD_TARGETS, gaussian.WHY_TARGETS
    if c.joint is not None:
        return gaussian.METHOD, gaussian.WHY
    if any(r.var is not None for r in c.rows):
        return METHOD_SUM, "accuracy first under basic composition: the sum of each mechanism's least eps"
    if any(v.block is None for v in c.vars.values()):
        return "bisection", "least value of the composite's variable meeting the targets (monotone in the budget)"
    if c.vars:
        return "split", "budget split by min-plus over refined grids, with a lower bound from monotonicity"
    return "evaluate", "nothing is chosen: each block is solved once"


def solve(c: Composite, **options) -> CompositeResult:
    if model.branched(c):
        return _branches(c, options)
    if c.joint is not None:  # the joint Gaussian accountant: one conic program (gaussian.py)
        return gaussian.solve(c, options)
    t0 = time.perf_counter()
    oracle = _Oracle(c, options)
    method, _ = _method(c)
    choices = [(name,) for name in c.choice] if c.choice else [()]
    outcomes = []
    for chosen in choices:
        active = [n for n in c.blocks if not c.choice or n not in c.choice or n in chosen]
        runner = {"bisection": _bisection, "split": _split, "evaluate": _evaluate, METHOD_SUM: _least_sum}[method]
        outcomes.append(runner(c, oracle, active))
    best = min(range(len(outcomes)), key=lambda k: outcomes[k].value)
    out = outcomes[best]
    lower = min(o.bound for o in outcomes)
    even = _even(c, oracle, out.active) if method == "split" else None
    sign = 1.0 if c.sense == "minimize" else -1.0
    result = _built(
        c,
        method,
        out,
        lower,
        choice=choices[best][0] if c.choice else None,
        even=(sign * even if even is not None and math.isfinite(even) else None),
        calls=len(oracle.cache),
        seconds=time.perf_counter() - t0,
    )
    if c.choice:  # each branch's evidence, so that verify re-derives the least of their bounds
        # the chosen branch's record is the answer itself when its own bound is the least (the usual
        # case: then its status and bound are the answer's), so it is built once
        branches = {
            name: result if k == best and o.bound == lower else _built(c, method, o, o.bound, choice=name)
            for k, ((name,), o) in enumerate(zip(choices, outcomes))
        }
        result.optimality["branches"] = branch_records(branches, c.sense, choices[best][0])
    return result


def _built(
    c: Composite, method: str, out: _Outcome, lower: float, choice=None, even=None, calls=0, seconds=0.0
) -> CompositeResult:
    """The answer ``out`` with the proven bound ``lower`` (the minimize sense) as a ``CompositeResult``
    (with the checks of its mechanisms' least points, ``_least_sum``)."""
    sign = 1.0 if c.sense == "minimize" else -1.0
    result = CompositeResult.build(
        c,
        method=method,
        objective=sign * out.value if math.isfinite(out.value) else None,
        bound=sign * lower if math.isfinite(lower) or lower == math.inf else None,
        gap=relative_gap(out.value, lower),
        answers={n: out.answers.get(n) for n in c.blocks},
        active=out.active,
        choice=choice,
        even=even,
        calls=calls,
        seconds=seconds,
        reasons=out.reasons,
        splits=out.splits,
        bracket=out.bracket,
    )
    if out.checks and out.value < math.inf:
        checks = result.verification["checks"] + [{"check": t, "passed": ok} for t, ok in out.checks]
        result.verification = {"passed": all(x["passed"] for x in checks), "checks": checks}
    return result


def _branches(c: Composite, options: dict) -> CompositeResult:
    """A design choice that involves a joint Gaussian group, by enumeration: each branch
    (``model.branch``: the chosen block released, the others never written) solved and certified
    as a composite of its own; the answer is the best branch, its bound the least of the
    branches' proven bounds (every feasible point is in one branch), and ``optimality.branches``
    gives each branch's value, bound and status. Enumeration is exact for the branches a spec
    lists; a choice inside one joint program as a mixed-integer conic program is not needed for it."""
    t0 = time.perf_counter()
    sign = _sign(c)
    key = "lower_bound" if c.sense == "minimize" else "upper_bound"
    results = {n: solve(build(c.spec, c.params, c.allow_paths, c.load_block, n), **options) for n in c.choice}

    def value(r: CompositeResult) -> float:
        return sign * r.objective if r.objective is not None else math.inf

    def bound(r: CompositeResult) -> float:
        b = r.optimality.get(key)
        return sign * b if b is not None else (math.inf if r.objective is None else -math.inf)

    name = min(c.choice, key=lambda n: value(results[n]))
    out = results[name]
    lower = min(bound(r) for r in results.values())
    out.blocks = {
        n: out.blocks[n]
        if n in out.blocks
        else {"params": {}, "objective": None, "status": "not chosen"}
        | {"file": b.file, "sha256": b.sha256, "text": b.spec.source.text}
        for n, b in c.blocks.items()
    }
    gap = relative_gap(value(out), lower)
    if out.objective is not None:
        out.status = "optimal" if gap <= RTOL else "feasible"
    out.choice = name
    out.optimality |= {
        key: sign * lower if math.isfinite(lower) else None,
        "gap": gap if out.objective is not None and math.isfinite(gap) else None,
        "branches": branch_records(results, c.sense, name),
    }
    out.stats = {
        "block_solves": sum(r.stats["block_solves"] for r in results.values()),
        "seconds": time.perf_counter() - t0,
    }
    return out


@dataclass
class _Outcome:
    value: float  # the composite's objective in the minimize sense (inf: infeasible)
    bound: float  # proven: no feasible point is below it
    answers: dict
    active: list[str]
    reasons: list[str] = field(default_factory=list)
    splits: list = field(default_factory=list)  # (row, its variables, its Split): what verify re-derives
    bracket: dict | None = None  # accuracy first: the bracket and the certificates of its lower end
    checks: list = field(default_factory=list)  # (text, passed) beyond the blocks' own: a joint group's least point


def _objective(c: Composite, answers: dict, values: dict[str, float], active: list[str]) -> float:
    """The composite's objective in the minimize sense; an unchosen block counts 0."""
    sign = 1.0 if c.sense == "minimize" else -1.0
    total = c.objective.const
    for key, coef in c.objective.coefs.items():
        name, _, attr = key.rpartition(".")
        if attr == "objective" and name in c.blocks:
            if name not in active:
                continue
            a = answers[name]
            if a.value is None:
                return math.inf
            total += coef * a.value
        else:
            total += coef * values.get(key, 0.0)
    return sign * total


def _evaluate(c: Composite, oracle: _Oracle, active: list[str]) -> _Outcome:
    answers = {n: oracle.answer(n, {}) for n in active}
    value = _objective(c, answers, {}, active) if _targets_hold(c, answers, active) else math.inf
    return _Outcome(value, value, answers, active, _reasons(answers))


def _targets_hold(c: Composite, answers: dict, active: list[str]) -> bool:
    for t in c.targets:
        a = answers.get(t.block)
        v = 0.0 if t.block not in active else (a.value if a is not None else None)
        if v is None or not (v <= t.bound if t.op == "<=" else v >= t.bound):
            return False
    return True


def _reasons(answers: dict) -> list[str]:
    return [f"block {n}: {a.reason}" for n, a in answers.items() if a is not None and a.reason]


# ---------------------------------------------------------------- accuracy first


def _bisection(c: Composite, oracle: _Oracle, active: list[str]) -> _Outcome:
    """Least ``t`` with every target met (module docstring); the bracket is the certificate."""
    tops = [v for v in c.vars.values() if v.block is None]
    if len(tops) != 1 or len(c.vars) != 1 or set(c.objective.coefs) - {tops[0].key}:
        raise SpecError(
            "accuracy first minimizes one variable of the composite (minimize t), its blocks' budgets set by `with`",
            c.objective_span,
            "choose one variable t in [lo, hi], write `with eps = t` in the use lines, minimize t",
        )
    var = tops[0]
    coef = c.objective.coefs.get(var.key, 0.0) * (1.0 if c.sense == "minimize" else -1.0)
    if coef <= 0 or not c.targets or not math.isfinite(var.hi):
        raise SpecError(
            f"accuracy first needs minimize {var.key}, a bounded range for it and at least one target",
            c.objective_span,
            f"write choose {var.key} in [lo, hi], minimize {var.key} and subject to a.objective <= target",
        )
    _target_sides(c, c.targets)

    def holds(x: float) -> tuple[bool, dict]:
        answers = {n: oracle.answer(n, {var.key: x}) for n in active}
        return _targets_hold(c, answers, active), answers

    lo, hi = var.lo, var.hi
    ok, answers = holds(hi)
    if not ok:
        return _Outcome(
            math.inf, math.inf, answers, active, _reasons(answers) or ["a target is not met at the top of the range"]
        )
    ok_lo, answers_lo = holds(lo)
    if ok_lo:
        value = coef * lo + _sign(c) * c.objective.const
        return _Outcome(value, value, answers_lo, active)
    while (hi - lo) > RTOL * max(abs(hi), 1e-12) / 2:
        mid = 0.5 * (lo + hi)
        ok, mid_answers = holds(mid)
        if ok:
            hi, answers = mid, mid_answers
        else:
            lo, answers_lo = mid, mid_answers
    const = _sign(c) * c.objective.const
    bracket = bracket_record(c, var.key, lo, hi, answers_lo)
    return _Outcome(coef * hi + const, coef * lo + const, answers, active, bracket=bracket)


def _sign(c: Composite) -> float:
    return 1.0 if c.sense == "minimize" else -1.0


def _target_sides(c: Composite, targets: list) -> None:
    """Each target bounds its block on the side a larger budget helps (<= for a block that
    minimizes, >= for one that maximizes): else a located refusal (the budget cannot meet it)."""
    for t in targets:
        block = c.blocks[t.block]
        if (t.op == "<=") != (block.sense == "minimize"):
            raise SpecError(
                f"this target bounds block '{t.block}' on the side its budget does not help",
                t.span,
                f"a block that {block.sense}s is given a target with {'<=' if block.sense == 'minimize' else '>='}",
            )


def _least_sum(c: Composite, oracle: _Oracle, active: list[str]) -> _Outcome:
    """Accuracy first over one ``dp(...) <= (t, delta)`` row of several mechanisms: the least t is
    the sum of each mechanism's least eps meeting its targets (``least`` module docstring: the
    proof, both directions, and the certified bracket). A joint Gaussian group's least eps comes
    from its exact scaling (``gaussian.least_point``); a block's from ``least.bracket`` (bisection
    with proven ends, a closed form's inverse probed first)."""
    row = next(r for r in c.rows if r.var is not None)
    var = c.vars[row.var]
    parts: list[least.Least] = []
    for part in row.parts:
        names = [n for n in part.blocks if n in active]
        if not names:
            continue
        group = c.group_of(names[0])
        if group is not None:
            at = gaussian.least_point(c, group, 0.0, var.hi, oracle.options)
            parts.append(
                least.Least(group.blocks, at.lo, at.hi, at.lo > 0, at.answers or {}, {}, at.record, at.checks, at.why)
            )
        else:
            b = c.blocks[names[0]]
            parts.append(_block_least(c, oracle, c.vars[f"{b.name}.{b.budget.eps}"], var.hi))
    lo, hi = math.fsum(p.lo for p in parts), math.fsum(p.hi for p in parts)
    answers = {n: a for p in parts for n, a in p.answers.items()}
    const = _sign(c) * c.objective.const
    coef = _sign(c) * c.objective.coefs[var.key]

    bracket = least.record(var.key, lo, hi, parts, lambda p: _failing(c, var.key, p))
    bound = const + coef * max(var.lo, lo) if lo <= var.hi else math.inf  # above the range: proven infeasible
    if not hi <= var.hi:
        reasons = [p.why for p in parts if p.why] or [f"the mechanisms' least eps add up to {hi:.9g}, above {var.hi:g}"]
        return _Outcome(math.inf, bound, answers, active, reasons, bracket=bracket)
    fixed, missed = _beside(c, oracle, row, active)
    answers |= fixed
    if missed:
        return _Outcome(math.inf, bound, answers, active, missed, bracket=bracket)
    checks = [(f"{'+'.join(p.blocks)}: {t}", ok) for p in parts for t, ok in p.checks]
    checks.append((f"the least {var.key}: the mechanisms' brackets add up to [{lo:.12g}, {hi:.12g}]", lo <= hi))
    return _Outcome(const + coef * max(var.lo, hi), bound, answers, active, bracket=bracket, checks=checks)


def _beside(c: Composite, oracle: _Oracle, row: Row, active: list[str]) -> tuple[dict, list[str]]:
    """The fixed blocks beside an accuracy-first row (``model._check_least_sum``: no chosen param,
    not set by t): each solved once at its params, which t does not move, so the least t is the
    row's and the composite is feasible exactly when each of them is and meets its targets. Their
    answers, and why one fails (empty when none does)."""
    inside = {n for p in row.parts for n in p.blocks}
    answers = {n: oracle.answer(n, {}) for n in active if n not in inside}
    missed = [f"block {n}: {a.reason or a.status}" for n, a in answers.items() if a.value is None]
    missed += [
        f"block {t.block} (beside the row, fixed): its target {t.block}.objective {t.op} {t.bound:g} fails at "
        f"{answers[t.block].value:.9g}"
        for t in c.targets
        if t.block in answers
        and answers[t.block].value is not None
        and not least.meets(t.op, t.bound, answers[t.block].value)
    ]
    return answers, missed


def _failing(c: Composite, key: str | None, p: least.Least) -> dict:
    """The certificates of a mechanism's targets failing at its lower end (``bracket_record``);
    without a target, its status there (infeasible: ``verify`` takes it as recorded, no
    certificate of infeasibility is kept)."""
    found = bracket_record(c, key, p.lo, p.hi, p.at_lo)["blocks"]
    return found or {
        n: {"params": dict(a.params), "status": a.status, "method": None, "certificate": None}
        for n, a in p.at_lo.items()
        if a.value is None
    }


def _block_least(c: Composite, oracle: _Oracle, v, top: float) -> least.Least:
    """Block ``v.block``'s least budget in ``[v.lo, top]`` meeting its targets (its program
    feasible, when it has none), bracketed (``least.bracket``; memoized in the oracle's cache):
    its closed form's inverse, when it has one, is probed first."""
    key = (v.key, top)
    if key in oracle.leasts:
        return oracle.leasts[key]
    targets = [t for t in c.targets if t.block == v.block]
    _target_sides(c, targets)

    def probe(eps: float) -> tuple[str, BlockAnswer]:
        a = oracle.answer(v.block, {v.key: v.lo + eps})
        if a.value is None:
            return (least.FAILS if a.status == "infeasible" else least.UNKNOWN), a
        if all(least.meets(t.op, t.bound, a.value) for t in targets):
            return least.HOLDS, a
        proven = _proven(a)
        return (least.UNKNOWN if all(least.meets(t.op, t.bound, proven) for t in targets) else least.FAILS), a

    cv = _curve(c, oracle, v) if targets else None
    caps = [t.bound for t in targets if t.op == "<="]
    guess = cv.inverse(min(caps)) - v.lo if cv is not None and caps and len(caps) == len(targets) else None
    found = least.bracket(v.block, probe, max(0.0, top - v.lo), guess)
    found = dataclasses.replace(found, lo=found.lo + v.lo, hi=found.hi + v.lo)
    oracle.leasts[key] = found
    return found


# ---------------------------------------------------------------- the split


def _split(c: Composite, oracle: _Oracle, active: list[str]) -> _Outcome:
    """Each row split by ``split.split`` (module docstring); the rows add up."""
    _target_sides(c, [t for t in c.targets if c.group_of(t.block) is None])
    weights = {}
    for key, coef in c.objective.coefs.items():
        if key in c.vars:
            raise SpecError(
                f"the objective prices the chosen '{key}': not built yet",
                c.objective_span,
                "the objective of a split is a weighted sum of blocks' objectives",
            )
        weights[key.rpartition(".")[0]] = coef * _sign(c)
    active_vars = {k: v for k, v in c.vars.items() if v.block in active}
    rows = [_active_row(r, active_vars) for r in c.rows]
    for key, var in active_vars.items():
        owners = [r for r in rows if key in r.coefs]
        if len(owners) != 1:
            raise SpecError(
                f"'{key}' must be in exactly one composition row (it is in {len(owners)})",
                var.span,
                "constrain it once: subject to a.eps + b.eps <= eps, or dp(a, b) <= eps",
            )
        if owners[0].coefs[key] <= 0:
            raise SpecError(f"'{key}' has a nonpositive coefficient in its row", owners[0].span, "budgets add up")
        block = c.blocks[var.block]
        w = weights.get(var.block, 0.0)
        if w * (1.0 if block.sense == "minimize" else -1.0) < 0:
            raise SpecError(
                f"with this sign, the objective grows with block '{var.block}''s budget: the split would spend nothing on it",
                c.objective_span,
                f"a block that {block.sense}s is weighted {'+' if block.sense == 'minimize' else '-'} when the composite "
                f"{c.sense}s",
            )
    bound = _objective(c, {}, {}, [])  # the constant part
    values: dict[str, float] = {}
    splits = []
    for row in rows:
        keys = [k for k in row.coefs if k in active_vars]
        if not keys:
            continue
        result = _split_row(c, oracle, row, [active_vars[k] for k in keys], weights)
        if result is None:
            return _Outcome(math.inf, math.inf, {}, active, ["a composition row cannot hold with the chosen ranges"])
        for k, x in zip(keys, result.shares):
            values[k] = active_vars[k].lo + x / row.coefs[k]
        values |= deltasplit.delta_values(c, keys, result)  # an (eps, delta) split's deltas
        bound += result.lower_bound
        splits.append((row, keys, result, _rays(c, oracle, row, keys, result)))
    # the answer: every block solved at its budget (a closed form's point is solved here)
    answers = {n: oracle.answer(n, {k: v for k, v in values.items() if k.startswith(n + ".")}) for n in active}
    fixed = [n for n in active if not any(v.block == n for v in active_vars.values())]
    for n in fixed:
        a = answers[n]
        bound += math.inf if a.value is None else weights.get(n, 0.0) * a.value
    # a target on a block the split chooses is part of its term (``_value_term``; its least budget,
    # below which the term is +inf, recorded with its proof: ``least.record``); one on a fixed block
    # holds or not at its one point
    value = _objective(c, answers, values, active) if _targets_hold(c, answers, active) else math.inf
    found = [p for (key, _), p in oracle.leasts.items() if key in active_vars]
    bracket = least.record(None, math.nan, math.nan, found, lambda p: _failing(c, None, p)) if found else None
    return _Outcome(value, min(bound, value), answers, active, _reasons(answers), splits, bracket)


def _rays(c: Composite, oracle: _Oracle, row: Row, keys: list[str], s: Split) -> tuple[dict, ...]:
    """Per term of the split ``s`` (a joint Gaussian group's: none), its points where the block
    is infeasible (value +inf) with the Farkas ray that proves it (``_Oracle.ray``): ``{index
    into the term's points: ray}``, the points without a proven ray left out."""
    out = []
    for var, pts in zip(term_vars(c, keys), s.points):
        v = c.vars[var]
        solo = c.group_of(v.block) is None
        rays = {j: oracle.ray(v, v.lo + x / row.coefs[var]) for j, (x, value, _) in enumerate(pts) if value == math.inf}
        out.append({j: y for j, y in rays.items() if y is not None} if solo else {})
    return tuple(out)


def _active_row(row: Row, active_vars: dict) -> Row:
    """An unchosen block's params count 0 in every row."""
    return Row(
        {k: v for k, v in row.coefs.items() if k in active_vars or "." not in k},
        row.rhs,
        row.span,
        row.accountant,
        row.delta,
        row.parts,
    )


def _split_row(c: Composite, oracle: _Oracle, row: Row, row_vars: list, weights: dict) -> Split | None:
    """One row's split: by a closed form when every block's value is a known curve of its budget
    (``_curve``: all inverse-square, or all randomized response on unit coefficients), else by
    ``split.split`` with each block's curve, or its verified solves, as its oracle."""
    room = row.rhs - math.fsum(row.coefs[v.key] * v.lo for v in row_vars)
    if room < 0:
        return None
    if any(c.group_of(v.block) is not None for v in row_vars):  # a joint Gaussian group is one term
        return gaussian.split_row(
            c, oracle, row, row_vars, room, lambda v: _term(c, oracle, v, row, weights), MAX_CALLS
        )
    scales = [row.coefs[v.key] for v in row_vars]
    ws = [weights.get(v.block, 0.0) for v in row_vars]
    curves = [_curve(c, oracle, v) for v in row_vars]
    forms = {cv.form if cv is not None else None for cv in curves}
    targeted = any(t.block == v.block for t in c.targets for v in row_vars)  # the closed splits take none
    if (
        not targeted
        and all(v.lo == 0 for v in row_vars)
        and not any(cv is not None and not math.isfinite(cv.a) for cv in curves)
    ):
        if forms == {INVERSE_SQUARE}:  # a w k / eps^2 = w k c^2 / y^2 on y = c eps
            a = [w * cv.a * s**2 for w, cv, s in zip(ws, curves, scales)]
            caps = [s * cv.cap for s, cv in zip(scales, curves)]
            shared = deltasplit.row_deltas(c, row, row_vars)  # the (eps, delta) split where it is proven exact
            joint = deltasplit.classic_split(a, shared[0], caps, room, shared[1]) if shared else None
            return joint or inverse_square_split(a, caps, room)
        if forms == {RANDOMIZED_RESPONSE} and all(s == 1 for s in scales):
            return rr_split([cv.a for cv in curves], ws, [cv.cap for cv in curves], room)

    terms = [_row_term(c, oracle, v, s_, w, cv, row.rhs) for v, s_, w, cv in zip(row_vars, scales, ws, curves)]
    if room == 0:
        pairs = [oracle_pair(t.oracle(0.0), 0.0) for t in terms]
        values = tuple(value for value, _ in pairs)
        lower = math.fsum(bound for _, bound in pairs)
        return Split(tuple(0.0 for _ in row_vars), values, math.fsum(values), lower, len(row_vars))
    return split(terms, room, rtol=RTOL, max_calls=MAX_CALLS * len(row_vars))


def _term(c: Composite, oracle: _Oracle, v, row: Row, weights: dict) -> Term:
    """One variable's term of its row (``_value_term`` with its coefficient, weight and curve)."""
    return _row_term(c, oracle, v, row.coefs[v.key], weights.get(v.block, 0.0), _curve(c, oracle, v), row.rhs)


def _row_term(c: Composite, oracle: _Oracle, v, scale: float, w: float, cv, rhs: float) -> Term:
    """The block's term of its row (``rhs``: the row's right-hand side): ``_target_term`` when
    targets bound it, else ``_value_term``."""
    targets = [t for t in c.targets if t.block == v.block]
    noise = _noise_term(c, oracle, v, scale, w, cv, rhs, targets)
    if noise is not None:
        return noise
    if targets:
        return _target_term(c, oracle, v, scale, w, cv, rhs, targets)
    return _value_term(oracle, v, scale, w, cv)


def _noise_term(c: Composite, oracle: _Oracle, v, scale: float, w: float, cv, rhs: float, targets) -> Term | None:
    """A lone noise-placement block's term as a joint Gaussian group of one (``Model.noise_group``;
    ``gaussian.GroupCurve``): its program (a loss linear in Sigma, one Mahalanobis sensitivity row
    per input, nothing else) is homogeneous, so ``V(eps) = N (D(eps_ref) / D(eps))^2 + o`` exactly
    from one verified solve, its proven bound the dual point's curve ``A + P / mu_hi(eps)^2``
    (``gaussian.dual_curve``), its cells second order (``groupcells.GroupDual``) and ``cheap``; with
    upper targets on it, capped (``GroupCurve.capped``). The split's answer is the block solved
    again by its own route. None (``_target_term`` or ``_value_term`` instead) for a closed curve,
    a weight that is not positive, a target from below, a budget other than its eps at unit
    coefficient from 0, or a block not priced so."""
    group = c.noise_group(v.block)
    block = c.blocks[v.block]
    if cv is not None or group is None or c.group_of(v.block) is not None or not w > 0:
        return None
    if scale != 1.0 or v.lo != 0.0 or v.param != block.budget.eps or not rhs > 0:
        return None
    if any(t.op != "<=" for t in targets):
        return None
    curve = gaussian.group_curve(c, group, oracle.options, oracle.cache, rhs)
    return curve.capped(c) if targets else curve.term(c)


def _value_term(oracle: _Oracle, v, scale: float, w: float, cv) -> Term:
    """The block's value on its share ``y = scale (eps - lo)``: its closed curve (exact: its own
    bound; randomized response's with its ``closedcells.RRDual``, its second-order bound inside
    the cells beside it; ``cheap``: its calls are not block solves), else its verified solves as (weighted value, weighted proven bound, the
    point's dual ``parametric.TermDual`` or None: its second-order bound inside the cell below)."""
    if cv is not None and cv.form == RANDOMIZED_RESPONSE and w >= 0:

        def closed(y: float) -> tuple:
            d = RRDual(cv.a, w, v.lo, scale, y)
            value = d.value(y)
            return value, value, d

        return Term(closed, scale * max(0.0, cv.cap - v.lo), cheap=True)
    if cv is not None:  # the closed form as the value oracle (exact: its own bound)
        return Term(lambda y: w * cv.value(v.lo + y / scale), scale * max(0.0, cv.cap - v.lo), cheap=True)

    def g(y: float) -> tuple:
        eps = v.lo + y / scale
        a = oracle.answer(v.block, {v.key: eps})
        if a.value is None:
            return math.inf, math.inf
        cell = oracle.dual(v, eps, a)
        d = TermDual(cell, w, v.lo, scale) if cell is not None else None
        return w * a.value, w * _proven(a), d

    return Term(g, scale * (v.hi - v.lo))


def _target_term(c: Composite, oracle: _Oracle, v, scale: float, w: float, cv, rhs: float, targets: list) -> Term:
    """A block with targets as a term of its row's split (``least`` module docstring): its
    weighted value where every target holds, +inf elsewhere, still nonincreasing in the share.
    Below its proven least budget (``_block_least``, found once over the budgets the row can give
    it) the term is (inf, inf) without a solve; a point whose verified value misses a target is
    not achieved (inf), and its bound stays the block's proven one unless that misses a target too.
    A closed form (``cv``) is exact: its value is its bound (randomized response's with its
    ``closedcells.RRDual``, its cells second order up to the target's corner). A block of weight 0 (a target, no
    price) costs 0 wherever its targets hold, so the split gives it about its least budget."""
    if cv is not None:

        def closed(y: float) -> float | tuple:
            value = cv.value(v.lo + y / scale)
            if not all(least.meets(t.op, t.bound, value) for t in targets):
                return math.inf
            if cv.form == RANDOMIZED_RESPONSE and w >= 0:  # its second-order cells, as in ``_value_term``
                d = RRDual(cv.a, w, v.lo, scale, y)
                return d.value(y), d.value(y), d
            return w * value

        return Term(closed, scale * max(0.0, cv.cap - v.lo), cheap=True)
    found = _block_least(c, oracle, v, min(v.hi, v.lo + rhs / scale))

    def g(y: float) -> tuple:
        eps = v.lo + y / scale
        if found.lo_fails and eps <= found.lo:
            return math.inf, math.inf
        a = oracle.answer(v.block, {v.key: eps})
        if a.value is None:
            return math.inf, math.inf
        proven = _proven(a)
        bound = w * proven if all(least.meets(t.op, t.bound, proven) for t in targets) else math.inf
        if not all(least.meets(t.op, t.bound, a.value) for t in targets):
            return math.inf, bound
        cell = oracle.dual(v, eps, a) if w != 0 else None
        return w * a.value, min(bound, w * a.value), TermDual(cell, w, v.lo, scale) if cell is not None else None

    return Term(g, scale * (v.hi - v.lo))


def _proven(a: BlockAnswer) -> float:
    """The block's proven bound at its point, on the side of its sense (a lower bound when it
    minimizes): its certificate's ``bound``, or its value where the certificate is a theorem
    (an exact closed form); a composite block's own proven bound. A weight ``w`` of the block's
    sign keeps ``w * bound`` a lower bound."""
    if isinstance(a.result, CompositeResult):
        bound = a.result.optimality.get("lower_bound", a.result.optimality.get("upper_bound"))
        if bound is None:
            raise ValueError(f"block at {a.params}: an optimal composite answer without a proven bound")
        return float(bound)
    cert = a.result.certificate if a.result is not None else None
    bound = cert.get("bound") if cert else None
    if cert is None or (bound is None and cert.get("kind") != "theorem"):
        raise ValueError(f"block at {a.params}: an optimal answer without a proven bound")
    return float(a.value if bound is None else bound)


CLASSIC_EPS_MAX = 1.0  # the classic calibration is proven for eps < 1 (Dwork & Roth, Thm A.1)
INVERSE_SQUARE, RANDOMIZED_RESPONSE = "inverse-square", "randomized-response"


@dataclass(frozen=True)
class _ClosedCurve:
    """A block's optimal value as a closed function of its chosen budget eps, for eps up to
    ``cap``: ``a / eps^2`` (``inverse-square``: Gaussian noise under the classic calibration,
    ``Budget.classic``) or ``(a - 1) / (e^eps + a - 1)`` (``randomized-response``, ``a = k``:
    ``closedform/rr.py``'s theorem)."""

    form: str
    a: float
    cap: float

    def value(self, eps: float) -> float:
        if self.form == INVERSE_SQUARE:
            return self.a / eps**2 if eps > 0 and math.isfinite(self.a) else math.inf
        return rr_value(self.a, eps)

    def inverse(self, target: float) -> float:
        """The least eps with ``value(eps) <= target`` (the curve decreases): ``sqrt(a / T)``, or
        ``ln((k - 1) (1 - T) / T)`` for randomized response (0 when ``T >= (k - 1) / k``); inf
        when no eps meets it."""
        if target <= 0:
            return math.inf
        if self.form == INVERSE_SQUARE:
            return math.sqrt(self.a / target) if math.isfinite(self.a) else math.inf
        k = self.a
        return 0.0 if target >= (k - 1) / k else math.log((k - 1) * (1 - target) / target)


def _curve(c: Composite, oracle: _Oracle, v) -> _ClosedCurve | None:
    """The block's value curve in its chosen budget ``v`` when a theorem gives one, else None.

    * classic Gaussian: ``a = V(eps0) eps0^2`` from one verified solve (the value is exactly
      ``a / eps^2``); eps is searched up to ``CLASSIC_EPS_MAX``, where the calibration is proven;
    * randomized response: the block, loaded once, meets ``closedform/rr.py``'s conditions at
      every budget (they do not involve eps; the block's other params are fixed), ``a = k``."""
    block = c.blocks[v.block]
    if block.budget is None or v.param != block.budget.eps or block.linked:
        return None
    if block.budget.classic(v.param):
        cap = min(v.hi, CLASSIC_EPS_MAX)
        eps0 = max(v.lo, cap / 2)
        a = oracle.answer(v.block, {v.key: eps0}) if eps0 > 0 else None
        return _ClosedCurve(INVERSE_SQUARE, math.inf if a is None or a.value is None else a.value * eps0**2, cap)
    eps0 = v.hi if math.isfinite(v.hi) else max(v.lo, 1.0)
    try:
        problem = c.load_block(block.spec, dict(block.fixed) | {v.param: eps0})
    except UsageError:
        return None
    match = (
        RR_THEOREM.accepts(problem)
        if getattr(problem, "design", None) is not None and RR_THEOREM.in_scope(problem)
        else None
    )
    return _ClosedCurve(RANDOMIZED_RESPONSE, float(match.data["k"]), v.hi) if match else None


def _even(c: Composite, oracle: _Oracle, active: list[str]) -> float:
    """The same blocks with each row's right-hand side split evenly (what OpenDP and PipelineDP
    do by default): ``x_i = rhs / (n c_i)``, clipped to the variable's range; inf (no even split)
    when a target misses there."""
    values: dict[str, float] = {}
    for row in c.rows:
        keys = [k for k in row.coefs if k in c.vars and c.vars[k].block in active]
        for k in keys:
            v = c.vars[k]
            values[k] = min(max(row.rhs / (len(keys) * row.coefs[k]), v.lo), v.hi)
    answers = {n: oracle.answer(n, {k: x for k, x in values.items() if k.startswith(n + ".")}) for n in active}
    return _objective(c, answers, values, active) if _targets_hold(c, answers, active) else math.inf
