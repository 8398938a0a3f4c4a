"""``privopt check`` on a composite (issue 21, item 4; docs/blocks.md, "Checking a composite"):
the automatic method against routes that share none of its code.

Every route is in the composite's minimize sense (a maximizing composite is negated), with the
method's answer ``U`` and its proven bound ``L`` (``L <= OPT <= U``):

* **grid** (a split): each block solved by its own route at the budget shares ``j / N`` of what
  its composition row leaves (``N`` = ``GRID``, ``GRID_MANY`` beyond three blocks in a row),
  the best combination with ``sum_j <= N`` found by a min-plus merge of the blocks' value lists.
  Every grid split is feasible, so its value ``G >= OPT >= L``: a bound above ``G`` is refuted.
  ``U <= G`` up to the method's own gap (``U - OPT <= U - L``). A joint group is solved apart
  (its eps split evenly between its blocks); one with targets, which no such split need meet, by
  its targets' joint program at each grid share (``gaussian.target_term``: the method's term,
  but on the grid, not the split's refinement).
* **grid of t** (accuracy first): the targets at ``T_GRID + 1`` evenly spaced t. Every t below
  the proven ``L`` must miss a target and every t from ``U`` up must meet them all (the budgets
  grow with t); the least grid t that meets them is ``>= L``.
* **branches** (a design choice): the grid on each alternative; the method's ``U`` is at most
  each branch's value up to its gap, and ``L`` below each.
* **joint** (one Gaussian mechanism): the grid of eps splits between the blocks solved apart
  under basic composition (delta split evenly). Each such split is feasible for the joint
  program, so the joint optimum is at most the grid's value, and the certified best split
  reported beside it is too, with its lower bound below it. With targets on its blocks (``joint
  targets``) a block's grid point that misses its target is no feasible point.
* **grid of eps per mechanism** (``least eps sum``: accuracy first over a row of mechanisms):
  each mechanism on its own grid of eps (a group's blocks apart, as above); the least grid eps
  meeting each one's targets add up to a feasible t, at least ``L``; a block alone meeting its
  targets at or below its recorded lower end refutes it.
* **grid of t, blocks apart** (``joint least eps``): the least grid t at which every block alone
  at (t / B, delta / B) meets its target is feasible for the joint program: at least ``L``.
* **branch NAME** (a design choice involving a joint group): each branch (``model.branch``) is
  a composite of its own, checked by its method's routes against the answer and bound.
* **cube-root law** (every block of a row Gaussian under the classic calibration, value
  ``k_i / eps_i^2``; Ramon & Basu Sec. 3.2): ``minimize sum a_i / y_i^2`` subject to ``sum y_i
  <= E`` has ``y_i = E a_i^(1/3) / sum_j a_j^(1/3)`` and the value ``(sum a_i^(1/3))^3 / E^2``
  (Lagrange: ``2 a_i / y_i^3`` equal), ``a_i = w_i k_i c_i^2``, ``k_i`` from one verified solve at
  the even share. The blocks solved at that split must give the formula's value and ``U``. Where
  the method split delta too (``deltasplit``), ``k_i`` scaled by ``L(d_i) / L(d0_i)``, ``L(d) =
  ln(1.25 / d)``, at deltas found apart from the method (``_delta_law``: scipy over the delta split).
* **blocks**: each active block at the budget the method gave it, checked by every route of its
  own kind (``crosscheck.run_check``), whose reference must give the value the method reports.

Statuses as ``privopt check``'s: the method is the reference; ``agrees``, ``disagrees``,
``failed`` (an error, or a route that found no feasible point), ``skipped`` (with why). Grid and
formula points count only when the block's own verification passed.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from ..errors import InfeasibleError, UsageError
from ..results import plain
from .deltasplit import row_deltas
from .gaussian import has_targets, target_term
from .model import branched
from .solve import (
    CLASSIC_EPS_MAX,  # the classic calibration is proven for eps < 1 (Dwork & Roth, Thm A.1)
    build,
    plan_steps,
)
from .split import TINY

GRID = 40  # budget steps of a composition row of at most three blocks: (GRID + 1) solves per block
GRID_MANY = 12  # ... of a row of more blocks
T_GRID = 40  # steps of t for accuracy first


@dataclass
class CheckPath:
    """One route: its value (the composite's own sense), its lower bound where it proves one,
    the difference from the method and what is allowed, the block solves it ran."""

    route: str
    status: str  # reference | agrees | disagrees | failed | skipped
    objective: float | None = None
    bound: float | None = None
    abs_diff: float | None = None
    allowed: float | None = None
    solves: int = 0
    seconds: float = 0.0
    message: str = ""


@dataclass
class CompositeCheck:
    method: str
    paths: list[CheckPath]
    tol: float
    spec: dict
    problems: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        """agree | disagree | inconclusive (the method gave no answer and no route failed)."""
        if any(p.status in ("failed", "disagrees") for p in self.paths):
            return "disagree"
        return "agree" if self.paths and self.paths[0].status == "reference" else "inconclusive"

    @property
    def agree(self) -> bool:
        return self.verdict == "agree"

    def to_dict(self) -> dict:
        """Strict-JSON values (a non-finite number is None)."""
        keys = ("route", "status", "objective", "bound", "abs_diff", "allowed", "solves", "seconds", "message")
        return plain(
            {
                "agree": self.agree,
                "verdict": self.verdict,
                "tolerance": self.tol,
                "problem_class": "composite",
                "reference": {"method": self.method},
                "paths": [{k: getattr(p, k) for k in keys} for p in self.paths],
                "problems": self.problems,
                "spec": self.spec,
            }
        )


class _Blocks:
    """Each block solved at a point by its own route, memoized: ``value`` is None when the block
    is infeasible there or its answer did not verify (no evidence either way)."""

    def __init__(self, c, options: dict):
        self.c, self.options, self.cache = c, options, {}

    def params(self, name: str, values: dict[str, float]) -> dict[str, float]:
        block = self.c.blocks[name]
        params = dict(block.fixed)
        for key, x in values.items():
            var = self.c.vars[key]
            if var.block == name:
                params[var.param] = x
        for p, form in block.linked.items():
            params[p] = form.at(values)
        return params

    def value(self, name: str, params: dict[str, float]) -> float | None:
        key = (name, tuple(sorted(params.items())))
        if key not in self.cache:
            self.cache[key] = self._solve(name, params)
        return self.cache[key]

    def at(self, name: str, values: dict[str, float]) -> float | None:
        return self.value(name, self.params(name, values))

    def _solve(self, name: str, params: dict[str, float]) -> float | None:
        block = self.c.blocks[name]
        try:
            result = self.c.load_block(block.spec, params).solve(**self.options)
        except InfeasibleError:
            return None
        except UsageError as e:
            if not str(e).startswith("params="):
                raise
            return None  # a budget outside the block's domain (eps = 0 for Gaussian noise)
        if result.status != "optimal" or not result.verification.get("passed"):
            return None
        return float(result.objective)


def run_check(c, tol: float = 1e-7, time_limit: float | None = None, backend: str = "auto") -> CompositeCheck:
    """Solve the composite ``c`` by its method and compare every route of the module docstring."""
    options = {"backend": backend, "time_limit": time_limit}
    t0 = time.perf_counter()
    result = c.solve(**options)
    sign = 1.0 if c.sense == "minimize" else -1.0
    bound = next((v for k, v in result.optimality.items() if k in ("lower_bound", "upper_bound")), None)
    ref = CheckPath(
        f"{result.method} (the method)",
        "reference",
        result.objective,
        bound,
        solves=result.stats["block_solves"],
        seconds=time.perf_counter() - t0,
        message=f"relative gap {result.optimality['gap']:.3g}" if result.optimality.get("gap") is not None else "",
    )
    report = CompositeCheck(result.method, [ref], tol, c.provenance())
    if result.status == "infeasible":
        raise InfeasibleError("infeasible: " + ("; ".join(result.reasons) or "no point meets the composite"))
    if not result.verification["passed"]:
        ref.status = "failed"
        ref.message = "its answer did not verify: " + "; ".join(
            ch["check"] for ch in result.verification["checks"] if not ch["passed"]
        )
        return report
    upper, lower = sign * result.objective, sign * bound if bound is not None else -math.inf
    gap = result.optimality.get("gap") or 0.0
    if branched(c):  # a design choice involving a joint group: each branch a composite of its own
        for name in c.choice:
            sub = build(c.spec, c.params, c.allow_paths, c.load_block, name)
            checker = _Checker(sub, _Blocks(sub, options), sign, upper, lower, gap, tol)
            for path in checker.routes(plan_steps(sub)[-1]["step"], None):
                path.route = f"branch {name}: {path.route}"
                report.paths.append(path)
    else:
        checker = _Checker(c, _Blocks(c, options), sign, upper, lower, gap, tol)
        report.paths += checker.routes(result.method, result)
    if c.joint is None:
        report.paths += _block_checks(c, result, tol, time_limit)
    report.problems = [f"{p.route}: {p.message}" for p in report.paths if p.status in ("failed", "disagrees")]
    return report


@dataclass
class _Checker:
    c: object
    blocks: _Blocks
    sign: float
    upper: float  # the method's answer, minimize sense
    lower: float  # its proven bound, minimize sense
    gap: float
    tol: float

    def routes(self, method: str, result) -> list[CheckPath]:
        """The routes of ``method`` (module docstring); ``result`` None for a branch the method
        did not answer with (no certified best split to compare)."""
        routes = {
            "split": self.split_routes,
            "bisection": self.t_grid,
            "joint": self.joint,
            "joint targets": self.joint,
            "joint least eps": self.joint_t_grid,
            "least eps sum": self.eps_grids,
        }
        return routes.get(method, lambda _r: [])(result)

    def slack(self, x: float) -> float:
        """Block solves are exact to their verification tolerance: the comparisons allow ``tol``."""
        return self.tol * max(1.0, abs(x))

    def feasible_point(self, route: str, value: float, solves: int, seconds: float, what: str) -> CheckPath:
        """A route that found a feasible point of value ``value`` (minimize sense): the proven bound
        must be below it, the method's answer below it up to its gap."""
        path = CheckPath(route, "agrees", self.sign * value, solves=solves, seconds=seconds)
        if not math.isfinite(value):
            path.status, path.objective, path.message = "failed", None, f"{what}: no feasible point"
            return path
        path.abs_diff = abs(value - self.upper)
        path.allowed = self.gap * max(abs(self.upper), TINY) + self.slack(value)
        if self.lower > value + self.slack(value):
            path.status = "disagrees"
            path.message = f"{what}: the proven bound {self.sign * self.lower:.12g} is beyond this feasible point"
        elif self.upper > value + path.allowed:
            path.status = "disagrees"
            path.message = f"{what}: better than the method's answer by more than its gap"
        else:
            excess = (value - self.upper) / max(abs(self.upper), TINY)
            path.message = f"{what}; {excess:+.3g} relative to the method"
        return path

    # ------------------------------------------------------------ split and choice

    def weights(self) -> dict[str, float]:
        return {
            k.rpartition(".")[0]: coef * self.sign
            for k, coef in self.c.objective.coefs.items()
            if k.endswith(".objective")
        }

    def grid(self, active: list[str]) -> tuple[float, dict[str, float]]:
        """The best grid split over the blocks in ``active`` (module docstring): (value, point)."""
        c, w = self.c, self.weights()
        avars = {k: v for k, v in c.vars.items() if v.block in active}
        total, point = self.sign * c.objective.const, {}
        for row in c.rows:
            keys = [k for k in row.coefs if k in avars]
            if not keys:
                continue
            room = row.rhs - math.fsum(row.coefs[k] * avars[k].lo for k in keys)
            if room < 0:
                return math.inf, point
            units = self.units(keys)
            n = GRID if len(units) <= 3 else GRID_MANY
            # a unit's share y of the room sets each of its variables to lo + y / (the unit's coefficient)
            xs = [
                [
                    min(avars[u[0]].lo + room * j / n / math.fsum(row.coefs[k] for k in u), avars[u[0]].hi)
                    for j in range(n + 1)
                ]
                for u in units
            ]
            curves = [self.unit_curve(unit, xu, w) for unit, xu in zip(units, xs)]
            value, steps = min_plus(curves, n)
            total += value
            point |= {k: xu[j] for unit, xu, j in zip(units, xs, steps) for k in unit}
        for name in active:
            if not any(v.block == name for v in avars.values()):
                total += _times(w.get(name, 0.0), self.blocks.at(name, {}))
        return total, point

    def units(self, keys: list[str]) -> list[list[str]]:
        """The row's variables, a joint Gaussian group's together: the group spends one eps (each
        member counts 1/|group| in the row), so the grid moves them together."""
        units: dict[object, list[str]] = {}
        for k in keys:
            g = self.c.group_of(self.c.vars[k].block)
            units.setdefault(k if g is None else g.blocks, []).append(k)
        return list(units.values())

    def unit_curve(self, unit: list[str], xs: list[float], w: dict) -> list[float]:
        """A unit's values on the grid. A group's blocks are solved APART at the group's eps, split
        evenly between them by basic composition (as is its delta): a feasible point of the joint
        program (which is never worse), found without it; where a block misses a target on it
        (from above or below), no feasible point (inf)."""
        c = self.c
        if (
            len(unit) == 1 and c.group_of(c.vars[unit[0]].block) is None
        ):  # a block alone: no point where it misses a target
            k = unit[0]
            name = c.vars[k].block
            return [_times(w.get(name, 0.0), self._met(name, self.blocks.at(name, {k: x}))) for x in xs]
        group = c.group_of(c.vars[unit[0]].block)
        if has_targets(c, group):  # no split of the group's eps apart need meet them: its targets' program
            term = target_term(c, group, self.blocks.options, self.blocks.cache, xs[-1])
            return [term.oracle(eps)[0] for eps in xs]
        size = len(group.blocks)
        curve = []
        for eps in xs:
            total = 0.0
            for k in unit:
                block = c.blocks[c.vars[k].block]
                params = self.blocks.params(block.name, {k: eps / size}) | {block.budget.delta: group.delta / size}
                total += _times(w.get(block.name, 0.0), self._met(block.name, self.blocks.value(block.name, params)))
            curve.append(total)
        return curve

    def _met(self, name: str, v: float | None) -> float | None:
        """Block ``name``'s value ``v`` where it meets every target on it, else None (no feasible point)."""
        ok = v is not None and all(
            v <= t.bound if t.op == "<=" else v >= t.bound for t in self.c.targets if t.block == name
        )
        return v if ok else None

    def split_routes(self, result) -> list[CheckPath]:
        c = self.c
        alternatives = [(a,) for a in c.choice] if c.choice else [()]
        paths = []
        for chosen in alternatives:
            active = [n for n in c.blocks if not c.choice or n not in c.choice or n in chosen]
            t0, before = time.perf_counter(), len(self.blocks.cache)
            value, point = self.grid(active)
            label = f"branch {chosen[0]}: grid" if chosen else "grid"
            shown = ", ".join(f"{k}={x:.6g}" for k, x in point.items())
            what = f"best grid split {shown}" if shown else "the blocks at their budgets"
            paths.append(
                self.feasible_point(label, value, len(self.blocks.cache) - before, time.perf_counter() - t0, what)
            )
        if not c.choice:
            paths += self.cube_root(result)
        return paths

    def cube_root(self, result) -> list[CheckPath]:
        """The cube-root law on each row whose blocks are all classic Gaussian (module docstring)."""
        c, w = self.c, self.weights()
        rows = [[k for k in r.coefs if k in c.vars] for r in c.rows]
        classic = [bool(keys) and all(_classic(c, c.vars[k]) for k in keys) for keys in rows]
        if not any(classic):
            return []
        t0, before = time.perf_counter(), len(self.blocks.cache)
        if not all(classic) or any(not any(v.block == n for v in c.vars.values()) for n in c.blocks):
            return [CheckPath("cube-root law", "skipped", message="applies when every block is classic Gaussian")]
        total, formula, point = self.sign * c.objective.const, self.sign * c.objective.const, {}
        for row, keys in zip(c.rows, rows):
            cap = {k: min(c.vars[k].hi, CLASSIC_EPS_MAX) for k in keys}
            even = {k: min(row.rhs / (len(keys) * row.coefs[k]), cap[k] / 2) for k in keys}
            ks = {}
            for k in keys:
                v = self.blocks.at(c.vars[k].block, {k: even[k]})
                if v is None:
                    return [CheckPath("cube-root law", "failed", message=f"{k}={even[k]:.6g}: no verified solve")]
                ks[k] = v * even[k] ** 2
            a = {k: w.get(c.vars[k].block, 0.0) * ks[k] * row.coefs[k] ** 2 for k in keys}
            deltas = _delta_law(c, row, keys, a, result)
            a = {k: a[k] * math.log(1.25 / deltas[k][1]) / math.log(1.25 / deltas[k][0]) for k in deltas} or a
            roots = math.fsum(x ** (1 / 3) for x in a.values())
            for k in keys:
                point[k] = row.rhs * a[k] ** (1 / 3) / roots / row.coefs[k]
                if point[k] >= cap[k]:
                    return [
                        CheckPath(
                            "cube-root law",
                            "skipped",
                            message=f"{k}={point[k]:.6g} is beyond {cap[k]:g}, where the classic calibration holds",
                        )
                    ]
            formula += roots**3 / row.rhs**2
            for k in keys:
                name = c.vars[k].block
                params = self.blocks.params(name, {k: point[k]})
                if k in deltas:
                    params[c.blocks[name].budget.delta] = deltas[k][1]
                    point[f"{name}.{c.blocks[name].budget.delta}"] = deltas[k][1]
                total += _times(w.get(name, 0.0), self.blocks.value(name, params))
        shown = ", ".join(f"{k}={x:.9g}" for k, x in point.items())
        path = self.feasible_point(
            "cube-root law", total, len(self.blocks.cache) - before, time.perf_counter() - t0, f"closed form {shown}"
        )
        if path.status == "agrees":
            if abs(total - formula) > self.slack(formula) or path.abs_diff > path.allowed:
                path.status = "disagrees"
                path.message = (
                    f"closed form {shown}: the blocks give {self.sign * total:.12g}, the formula "
                    f"{self.sign * formula:.12g}, the method {self.sign * self.upper:.12g}"
                )
        return [path]

    # ------------------------------------------------------------ accuracy first

    def t_grid(self, result) -> list[CheckPath]:  # noqa: ARG002 - one signature for every route
        c = self.c
        (var,) = [v for v in c.vars.values() if v.block is None]
        active = [n for n in c.blocks if not c.choice or n not in c.choice or n == result.choice]
        t0, before = time.perf_counter(), len(self.blocks.cache)
        bad, least = [], math.inf
        for t in np.linspace(var.lo, var.hi, T_GRID + 1):
            value = self.sign * c.objective.at({var.key: float(t)})
            holds = all(self._target_holds(target, active, {var.key: float(t)}) for target in c.targets)
            if holds and value < self.lower - self.slack(value):
                bad.append(f"{var.key}={t:.6g} meets the targets below the proven bound")
            if not holds and value >= self.upper + self.slack(value):
                bad.append(f"{var.key}={t:.6g} misses a target above the answer")
            if holds:
                least = min(least, value)
        path = self.feasible_point(
            f"grid of {T_GRID + 1} {var.key}",
            least,
            len(self.blocks.cache) - before,
            time.perf_counter() - t0,
            f"least grid {var.key} meeting the targets",
        )
        if bad:
            path.status, path.message = "disagrees", "; ".join(bad)
        return [path]

    def eps_grids(self, result) -> list[CheckPath]:
        """Accuracy first over a ``dp(...) <= (t, delta)`` row (``least``): each mechanism on its own
        grid of ``T_GRID + 1`` eps in ``[0, hi]`` (a joint group's blocks solved APART at (eps / B,
        delta / B), basic composition: feasible for the group). The least grid eps at which each
        mechanism meets its targets (its program feasible, without one) add up to a feasible t,
        at least the proven bound; and a block alone must miss its targets at every grid eps at or
        below its recorded lower end (its bracket in ``optimality.bracket``)."""
        c = self.c
        row = next(r for r in c.rows if r.var is not None)
        var = c.vars[row.var]
        active = [n for n in c.blocks if not c.choice or n not in c.choice or n == result.choice]
        parts = {tuple(p["blocks"]): p for p in result.optimality.get("bracket", {}).get("parts", [])}
        t0, before = time.perf_counter(), len(self.blocks.cache)
        total, bad, shown = 0.0, [], []
        for part in row.parts:
            names = [n for n in part.blocks if n in active]
            if not names:
                continue
            size, least = len(names), math.inf
            for eps in np.linspace(0.0, var.hi, T_GRID + 1):
                met = True
                for name in names:
                    b = c.blocks[name]
                    params = {**b.fixed, b.budget.eps: float(eps) / size}
                    if size > 1:
                        params[b.budget.delta] = part.delta / size
                    met = met and self._met(name, self.blocks.value(name, params)) is not None
                lo = parts.get(tuple(part.blocks), {}).get("lo")
                if met and size == 1 and lo is not None and eps <= lo:
                    bad.append(f"{names[0]} meets its targets at eps={eps:.6g}, at or below its proven {lo:.9g}")
                if met:  # the mechanism meets its targets on an up-set of eps: the first grid eps is its least
                    least = float(eps)
                    break
            total += least
            shown.append(f"{'+'.join(names)} {least:.6g}")
        inside = {n for p in row.parts for n in p.blocks}
        for name in (n for n in active if n not in inside):  # a fixed block beside the row: t does not move it
            if self._met(name, self.blocks.at(name, {})) is None:
                total = math.inf
                shown.append(f"{name} (fixed) misses its targets")
        value = self.sign * c.objective.at({var.key: max(var.lo, total)})
        path = self.feasible_point(
            f"grid of {T_GRID + 1} eps per mechanism",
            value,
            len(self.blocks.cache) - before,
            time.perf_counter() - t0,
            "least grid eps per mechanism: " + ", ".join(shown),
        )
        if bad:
            path.status, path.message = "disagrees", "; ".join(bad)
        return [path]

    def _target_holds(self, target, active: list[str], values: dict[str, float]) -> bool:
        if target.block not in active:
            return 0.0 <= target.bound if target.op == "<=" else 0.0 >= target.bound
        v = self.blocks.at(target.block, values)
        return v is not None and (v <= target.bound if target.op == "<=" else v >= target.bound)

    # ------------------------------------------------------------ joint Gaussian

    def joint(self, result) -> list[CheckPath]:
        c, w = self.c, self.weights()
        joint = c.joint
        names, n = list(joint.blocks), GRID if len(joint.blocks) <= 3 else GRID_MANY
        t0, before = time.perf_counter(), len(self.blocks.cache)
        shares = [joint.eps * j / n for j in range(n + 1)]

        def at(name: str, eps: float) -> float | None:
            """Block ``name`` alone at (eps, delta / B); None (no feasible point) where it misses a target."""
            b = c.blocks[name]
            v = self.blocks.value(name, {**b.fixed, b.budget.eps: eps, b.budget.delta: joint.delta / len(names)})
            met = v is not None and all(
                v <= t.bound if t.op == "<=" else v >= t.bound for t in c.targets if t.block == name
            )
            return v if met else None

        curves = [[_times(w[name], at(name, e)) for e in shares] for name in names]
        value, steps = min_plus(curves, n)
        value += self.sign * c.objective.const
        shown = ", ".join(f"{name}.eps={shares[j]:.6g}" for name, j in zip(names, steps))
        path = self.feasible_point(
            "grid of eps splits (blocks apart)",
            value,
            len(self.blocks.cache) - before,
            time.perf_counter() - t0,
            f"best split {shown}, delta split evenly",
        )
        opt = result.optimality if result is not None else {}
        split_value, split_lower = opt.get("split_objective"), opt.get("split_lower_bound")
        if path.status == "agrees" and split_value is not None:
            if split_value > value + path.allowed or (
                split_lower is not None and split_lower > value + self.slack(value)
            ):
                path.status = "disagrees"
                path.message = f"the certified best split {split_value:.12g} (bound {split_lower}) is above the grid's {value:.12g}"
            else:
                path.message += f"; certified best split {split_value:.12g} <= it"
        return [path]

    def joint_t_grid(self, result) -> list[CheckPath]:  # noqa: ARG002 - one signature for every route
        """Accuracy first over a joint group (``dp(a, b) <= (t, delta)``): at ``T_GRID + 1`` evenly
        spaced t the blocks solved APART at (t / B, delta / B) (basic composition), each against
        its targets: where all hold, t is feasible for the joint program (never worse), so the
        least such t is at least the proven least t and the method's answer is at most it."""
        c = self.c
        joint, var = c.joint, c.vars[c.joint.var]
        size = len(joint.blocks)
        t0, before = time.perf_counter(), len(self.blocks.cache)
        least = math.inf
        for t in np.linspace(var.lo, var.hi, T_GRID + 1)[1:]:
            ok = True
            for name in joint.blocks:
                b = c.blocks[name]
                v = self.blocks.value(name, {**b.fixed, b.budget.eps: t / size, b.budget.delta: joint.delta / size})
                ok = ok and v is not None and all(v <= tg.bound for tg in c.targets if tg.block == name)
            if ok:
                least = self.sign * c.objective.at({var.key: float(t)})
                break
        return [
            self.feasible_point(
                f"grid of {T_GRID + 1} {var.key} (blocks apart)",
                least,
                len(self.blocks.cache) - before,
                time.perf_counter() - t0,
                f"least grid {var.key} at which the blocks apart meet their targets",
            )
        ]


def _delta_law(c, row, keys: list[str], a: dict[str, float], result) -> dict[str, tuple[float, float]]:
    """Where the method split the row's delta too (its split records ``deltas``;
    ``deltasplit``), the reference delta split, found apart from the method: with eps at the
    cube-root law for given deltas the value is ``(sum_i (a_i L(d_i) / L(d0_i))^(1/3))^3 / E^2``,
    ``L(d) = ln(1.25 / d)``, minimized over ``sum_i d_i = D`` by scipy (Nelder-Mead, then BFGS,
    on a softmax of the shares). Per key ``(d0, d)``: the even share its ``a`` was measured at and
    the reference's share; empty where the delta split is even."""
    recorded = [rec for rec in getattr(result, "splits", None) or [] if set(rec["vars"]) == set(keys)]
    shared = row_deltas(c, row, [c.vars[k] for k in keys])
    if not recorded or recorded[0].get("deltas") is None or shared is None:
        return {}
    from scipy.optimize import minimize

    a0 = np.array([a[k] for k in keys]) / np.array(shared[0])
    delta = shared[1]

    def shares(u: np.ndarray) -> np.ndarray:
        e = np.exp(u - u.max())
        return delta * e / e.sum()

    def value(u: np.ndarray) -> float:
        return float(np.sum(np.cbrt(a0 * np.log(1.25 / shares(u)))) ** 3)

    best = minimize(value, np.zeros(len(keys)), method="Nelder-Mead", options={"xatol": 1e-12, "fatol": 0.0})
    best = minimize(value, best.x, method="BFGS", options={"gtol": 1e-12})
    d = shares(best.x)
    even = [c.blocks[c.vars[k].block].fixed[c.blocks[c.vars[k].block].budget.delta] for k in keys]
    return {k: (d0, float(dk)) for k, d0, dk in zip(keys, even, d)}


def _classic(c, var) -> bool:
    """``var`` is the eps, from 0, of a Gaussian block under the classic calibration (value ``k / eps^2``)."""
    budget = c.blocks[var.block].budget
    return budget is not None and budget.classic(var.param) and var.lo == 0


def _times(weight: float, value: float | None) -> float:
    """A block's term: no verified value is no feasible point (+inf)."""
    return math.inf if value is None else weight * value


def min_plus(curves: list[list[float]], steps: int) -> tuple[float, list[int]]:
    """``min sum_i curves[i][j_i]`` over ``sum_i j_i <= steps`` and the ``j_i`` attaining it
    (a min-plus merge, ``O(n steps^2)``)."""
    best = np.asarray(curves[0], dtype=float)
    picks: list[np.ndarray] = []
    for curve in curves[1:]:
        g = np.asarray(curve, dtype=float)
        # table[s, j] = best[s - j] + g[j] for j <= s
        s = np.arange(steps + 1)[:, None]
        j = np.arange(steps + 1)[None, :]
        table = np.where(j <= s, best[np.clip(s - j, 0, steps)] + g[j], np.inf)
        pick = np.argmin(table, axis=1)
        picks.append(pick)
        best = table[np.arange(steps + 1), pick]
    total = int(np.argmin(best))
    value = float(best[total])
    chosen = []
    for pick in reversed(picks):
        j = int(pick[total])
        chosen.append(j)
        total -= j
    chosen.append(total)
    return value, list(reversed(chosen))


def _block_checks(c, result, tol: float, time_limit: float | None) -> list[CheckPath]:
    """Each active block at the budget the method gave it, checked by every route of its kind."""
    from ..crosscheck import run_check as check_program

    paths = []
    for name, entry in result.blocks.items():
        if entry["status"] != "optimal":
            continue
        if c.group_of(name) is not None:
            paths.append(
                CheckPath(
                    f"block {name}: its own check",
                    "skipped",
                    message="solved in its joint Gaussian group's program, not alone (the grid solves the group apart)",
                )
            )
            continue
        t0 = time.perf_counter()
        block = c.blocks[name]
        label = f"block {name}: its own check"
        try:
            report = check_program(c.load_block(block.spec, entry["params"]), None, tol, time_limit)
        except UsageError as e:  # a kind without routes
            paths.append(CheckPath(label, "skipped", message=str(e)))
            continue
        except Exception as e:  # noqa: BLE001 - a route's error is that route's failure
            paths.append(CheckPath(label, "failed", message=f"{type(e).__name__}: {e}"))
            continue
        agreeing = sum(p.status == "agrees" for p in report.paths)
        ref = next((p for p in report.paths if p.answered), None)
        path = CheckPath(
            label,
            "agrees",
            None if ref is None else ref.objective,
            solves=len(report.paths),
            seconds=time.perf_counter() - t0,
        )
        value = entry["objective"]
        allowed = max(tol, 1e-6) * max(1.0, abs(value)) if value is not None else None
        if report.verdict != "agree":
            path.status = "disagrees" if report.verdict == "disagree" else "failed"
            path.message = f"{block.file}: its routes {report.verdict}: " + "; ".join(report.problems)
        elif ref is None or value is None or abs(ref.objective - value) > allowed:
            path.status = "disagrees"
            path.message = f"{block.file}: its routes give {ref and ref.objective}, the composite reports {value}"
        else:
            path.abs_diff, path.allowed = abs(ref.objective - value), allowed
            path.message = f"{block.file} at {_params(entry['params'])}: {agreeing} of {len(report.paths)} routes agree"
        paths.append(path)
    return paths


def _params(params: dict[str, float]) -> str:
    return ", ".join(f"{k}={v:.6g}" for k, v in params.items())
