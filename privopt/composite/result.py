"""The answer of a composite: each block's params, value and status, the accountant, the even
split, the proven bound and gap, the design choice (docs/blocks.md, "Outputs"). Strict JSON:
non-finite numbers are null."""

from __future__ import annotations

import json
import math
import os
import re
import secrets
from dataclasses import dataclass, field
from typing import Any, TextIO

import numpy as np

from ..render import visible
from .split import RTOL


@dataclass(frozen=True)
class BlockAnswer:
    """One block solved at one point: its params, optimal value (None: infeasible), status,
    why it failed, and its own verified ``Result``."""

    params: dict[str, float]
    value: float | None
    status: str
    reason: str | None
    result: Any


def _finite(x):
    return x if isinstance(x, int | float) and math.isfinite(x) else None


@dataclass
class CompositeResult:
    status: str  # optimal (gap <= 1e-6) | feasible (best found, gap reported) | infeasible
    objective: float | None
    method: str
    accountant: str | None
    blocks: dict[str, dict]
    even_split: dict | None
    optimality: dict
    choice: str | None
    verification: dict
    spec: dict
    stats: dict
    reasons: list[str] = field(default_factory=list)
    hint: str | None = None  # infeasible: what to change (``_advice``)
    problem_class: str = "composite"
    sense: str = "minimize"  # the composite's own, for the gain over the even split
    # each block solved by its own route at its budget (its ``Result``; not in the JSON): the
    # files ``--out`` writes in the block's subfolder
    block_results: dict[str, Any] = field(default_factory=dict, repr=False)
    composition: list[dict] = field(default_factory=list)  # each dp(...) row: its mechanisms (model.Row.describe)
    splits: list[dict] = field(default_factory=list)  # each row's certified split (``split_record``)

    @classmethod
    def build(
        cls,
        c,
        *,
        method,
        objective,
        bound,
        gap,
        answers,
        active,
        choice,
        even,
        calls,
        seconds,
        reasons,
        splits=(),
        bracket=None,
    ):
        from ..results import Result  # a block's own answer (pandas: loaded once a block has solved)

        blocks = {}
        for name, b in c.blocks.items():
            a = answers.get(name)
            if name not in active:
                entry = {"params": {}, "objective": None, "status": "not chosen"}
            elif a is None:
                entry = {"params": {}, "objective": None, "status": "infeasible"}
            else:
                # no answer: a block solved where the composite failed is evidence, not a solved block
                status = a.status if objective is not None or a.status != "optimal" else NO_ANSWER
                entry = {"params": dict(a.params), "objective": _finite(a.value), "status": status}
                if a.result is not None:
                    entry["method"] = a.result.method
                cov = getattr(a.result, "cov", None) or {}  # a joint Gaussian program's: this block's noises
                if cov:
                    entry["variances"] = {
                        k.partition(".")[2]: S.tolist() for k, S in cov.items() if k.startswith(name + ".")
                    }
            blocks[name] = entry | {"file": b.file, "sha256": b.sha256, "text": b.spec.source.text}
        if objective is None:
            status = "infeasible"
        else:
            status = "optimal" if gap <= RTOL else "feasible"
        checks = _checks(c, answers, active) if objective is not None else []
        sense_key = "lower_bound" if c.sense == "minimize" else "upper_bound"
        return cls(
            status=status,
            objective=_finite(objective),
            method=method,
            accountant=c.accountant,
            blocks=blocks,
            # no feasible split at all: the even split is none either (clipped to the ranges, it breaks its row)
            even_split=None if method != "split" else {"objective": _finite(even) if objective is not None else None},
            optimality={sense_key: _finite(bound), "gap": _finite(gap) if objective is not None else None}
            | ({"bracket": bracket} if bracket is not None else {}),
            choice=choice,
            verification={
                "passed": all(ok for _, ok in checks),
                "checks": [{"check": t, "passed": ok} for t, ok in checks],
            }
            if objective is not None
            else {"passed": False, "checks": [], "note": "no point to verify: the composite is infeasible"},
            spec=c.provenance() | {"text": c.spec.source.text, "cwd": os.getcwd()},
            stats={"block_solves": calls, "seconds": seconds},
            reasons=list(reasons) if objective is None else [],
            hint=_advice(c, answers, active) if objective is None else None,
            sense=c.sense,
            block_results={
                n: a.result
                for n, a in answers.items()
                if objective is not None
                and n in active
                and a is not None
                and a.status == "optimal"
                and isinstance(a.result, Result)
            },
            composition=c.composition({n: answers.get(n) for n in active}),
            splits=[split_record(c, row, keys, s, rays) for row, keys, s, rays in splits],
        )

    @property
    def gain(self) -> float | None:
        """How much better the answer is than the even split, in the composite's sense
        (``even - objective`` when it minimizes); None without both."""
        even = None if self.even_split is None else self.even_split.get("objective")
        if even is None or self.objective is None:
            return None
        return even - self.objective if self.sense == "minimize" else self.objective - even

    sections = ()  # a composite's answer is its blocks' entries, not sections of one program

    def to_dict(self, tables: bool = True, groups: bool = True) -> dict[str, Any]:
        """The composite's JSON; each block solved by its own route carries its own result's
        (``result``: what ``privopt verify`` re-checks as a single result)."""
        from ..results import RESULT_FORMAT

        blocks = {
            n: b | ({"result": self.block_results[n].to_dict(tables, groups)} if n in self.block_results else {})
            for n, b in self.blocks.items()
        }
        return {
            "status": self.status,
            "format": RESULT_FORMAT,
            "objective": self.objective,
            "problem_class": self.problem_class,
            "method": self.method,
            "accountant": self.accountant,
            "composition": self.composition,
            "blocks": blocks,
            "splits": self.splits,
            "even_split": None if self.even_split is None else self.even_split | {"gain": _finite(self.gain)},
            "optimality": self.optimality,
            "choice": self.choice,
            "verification": self.verification,
            "spec": self.spec,
            "stats": self.stats,
            "reasons": self.reasons,
        } | ({"hint": self.hint} if self.hint else {})

    def evidence(self) -> dict[str, Any]:
        """What ``privopt verify`` re-derives this answer's bound from as one branch of a design
        choice (``branch_records``): its JSON without the spec, the statistics and the
        informative figures, which the whole composite's result records."""
        drop = ("format", "spec", "stats", "verification", "even_split")
        return {k: v for k, v in self.to_dict().items() if k not in drop}

    def write_json(self, out: TextIO, tables: bool = True, indent: int | None = 2) -> None:
        """The JSON, indented, each list of numbers on one line (a split's points and sparse
        certificates are most of a composite's result: one number a line doubled its size)."""
        out.write(one_line_numbers(self.to_dict(tables), indent))

    def text_lines(self) -> list[str]:
        lines = [f"composite: {self.spec.get('title') or self.spec.get('path')}"]
        obj = "none" if self.objective is None else f"{self.objective:.9g}"
        lines.append(f"status: {self.status}   objective: {obj}   method: {self.method}")
        if self.accountant:
            lines.append(f"accountant: {self.accountant}")
        for row in self.composition:
            # infeasible: no point, so no mechanism's spending to show
            parts = [p for p in row["parts"] if p["eps"] is not None and self.objective is not None]
            names = ", ".join(b for p in row["parts"] for b in p["blocks"])
            eps = f"{row['eps']:g}"
            if row.get("var") and parts and self.objective is not None:  # accuracy first: t spent, not its top
                eps = f"{row['var']} = {math.fsum(p['eps'] for p in parts):.9g}"
            bound = f"({eps}, {row['delta']:g})" if row["delta"] else eps
            each = "; ".join(
                f"{'+'.join(p['blocks'])} {p['mechanism']} ({p['eps']:.6g}, {p['delta']:g})" for p in parts
            )
            split = {"evenly": "; delta split evenly", "optimized": "; delta split optimized with eps"}.get(
                row["delta_split"], ""
            )
            of = f" of {each}{split}" if parts else ""
            lines.append(f"  dp({names}) <= {bound}: {row['accountant']} composition{of}")
        if self.choice:
            lines.append(f"design choice: {self.choice}")
            lines += self._branch_lines()
        for name, b in self.blocks.items():
            params = ", ".join(f"{k}={v:.9g}" for k, v in b["params"].items()) or "-"
            value = "-" if b["objective"] is None else f"{b['objective']:.9g}"
            if self.objective is None:  # infeasible: no block is solved as part of an answer
                lines.append(f"  block {name} ({b['file']}): {b['status']}")
                continue
            lines.append(f"  block {name} ({b['file']}): {b['status']}; budget {params}; value {value}")
        if self.gain is not None:
            lines.append(
                f"even split: {self.even_split['objective']:.9g}   gain of the optimized split: {self.gain:.6g}"
            )
        bound = next((v for k, v in self.optimality.items() if k.endswith("bound")), None)
        if bound is not None and self.optimality["gap"] is not None:
            lines.append(f"proven bound: {bound:.9g}   relative gap: {self.optimality['gap']:.3g}")
        if self.objective is None:
            lines.append("verification: none (no point to verify: the composite is infeasible)")
            lines += [f"why: {r}" for r in self.reasons]
            lines += [f"hint: {self.hint}"] if self.hint else []
            return lines
        lines.append("verification: " + ("passed" if self.verification["passed"] else "FAILED"))
        lines += [f"  {r}" for r in self.reasons]
        return lines

    def _branch_lines(self) -> list[str]:
        """Each branch of the design choice (``optimality.branches``): name, value, proven bound,
        status; the chosen one marked ``*``."""
        key = "lower_bound" if self.sense == "minimize" else "upper_bound"

        def num(x) -> str:
            return "-" if x is None else f"{x:.9g}"

        return [
            f"  {'*' if n == self.choice else ' '} branch {n}: {b['status']}; value {num(b['objective'])}; "
            f"bound {num(b.get(key))}"
            for n, b in (self.optimality.get("branches") or {}).items()
        ]

    def print(self, console, tables: bool = True) -> None:  # noqa: ARG002
        for line in self.text_lines():
            console.print(visible(line), markup=False)


NO_ANSWER = "no answer"  # a block evaluated where the composite has no feasible point


def _advice(c, answers: dict, active) -> str:
    """What to change when the composite has no feasible point: loosen the targets of the blocks
    that failed (all targets when none is named), raise the top of each chosen variable's range,
    or, with no target, raise the budget of each ``dp(...)`` row (a block's value does not
    increase with its budget) or loosen the failing blocks' own constraints."""
    failing = [n for n in active if answers.get(n) is None or answers[n].value is None]
    targets = [t for t in c.targets if t.block in failing] or list(c.targets)
    steps = [f"loosen '{_written(t.span)}' (line {t.span.line})" for t in targets]
    steps += [
        f"raise the top of {v.key}'s range, now {v.hi:g} (line {v.span.line})"
        for v in c.vars.values()
        if v.block is None and math.isfinite(v.hi)
    ]
    if not targets:
        steps += [f"raise the budget of '{_written(r.span)}' (line {r.span.line})" for r in c.rows if r.accountant]
        steps += [f"loosen block {n}'s own constraints ({c.blocks[n].file})" for n in failing]
    return "; or ".join(steps) if steps else "change the constraints the reasons above name"


def _written(span) -> str:
    """A constraint as the spec writes it, without ``subject to``."""
    return " ".join(span.text().split()).removeprefix("subject to ")


def one_line_numbers(body: dict, indent: int | None) -> str:
    """``json.dumps(body, indent=indent, allow_nan=False)`` (strict), each list whose items are
    all numbers (or null) written on one line: the same JSON value."""
    if not indent:
        return json.dumps(body, allow_nan=False)
    nonce, held = secrets.token_hex(8), []

    def hold(x):
        if isinstance(x, dict):
            return {k: hold(v) for k, v in x.items()}
        if not isinstance(x, list):
            return x
        if x and all(v is None or (isinstance(v, int | float) and not isinstance(v, bool)) for v in x):
            held.append(json.dumps(x, allow_nan=False))
            return f"privopt-{nonce}-{len(held) - 1}"
        return [hold(v) for v in x]

    text = json.dumps(hold(body), indent=indent, allow_nan=False)
    parts = re.split(f'"privopt-{nonce}-([0-9]+)"', text)
    return "".join(held[int(p)] if k % 2 else p for k, p in enumerate(parts))


def split_record(c, row, keys: list[str], s, rays: tuple[dict, ...] = ()) -> dict:
    """A row's certified split as ``privopt verify`` re-derives it: its chosen variables
    (``vars``), the budget split (``budget``: the row's right-hand side less the ranges' lower
    ends, ``sum_i coef_i lo_i``), the split's shares, (weighted, minimize-sense) values, objective
    and proven lower bound, the Lagrangian multiplier, every evaluated point (share, verified
    value, proven bound) per term (``split.Split.points``; none for a closed form), the pieces
    of each cell its ends' LP duals bound (``cell_bounds``, ``split.Split.duals``) with the share
    each cell is cut at (``cell_cuts``), and the points' certificates (``certificates``,
    ``_certificates``; ``rays``: per term, its infeasible points' Farkas rays by index); an
    (eps, delta) split (``deltasplit.DeltaSplit``) adds its ``deltas``, ``delta_budget`` and
    ``delta_multiplier``."""
    budget = row.rhs - math.fsum(row.coefs[k] * c.vars[k].lo for k in keys)
    rays = tuple(rays) or tuple({} for _ in s.points)
    deltas = getattr(s, "deltas", None)
    joint = (
        {}
        if deltas is None
        else {"deltas": list(deltas), "delta_budget": s.delta_budget, "delta_multiplier": s.delta_multiplier}
    )
    record = {
        "vars": list(keys),
        "budget": budget,
        "shares": [_finite(x) for x in s.shares],
        "values": [_finite(v) for v in s.values],
        "objective": _finite(s.objective),
        "lower_bound": _finite(s.lower_bound),
        "multiplier": None if s.multiplier is None else _finite(s.multiplier),
        "points": [[[_finite(x) for x in p] for p in pts] for pts in s.points],
        # per block, per point: the pieces [start share, bound, end share, bound] of the cell below
        # it, each a concave bound its ends' LP duals prove (``split.CellEnds``; null: none,
        # monotonicity alone), and the share the cell is cut at (``CellEnds.pieces``' k)
        "cell_bounds": [
            [None if cd is None else [[_finite(x) for x in p] for p in cd[2]] for cd in ds] for ds in s.duals
        ],
        "cell_cuts": [[None if cd is None else _finite(cd[1]) for cd in ds] for ds in s.duals],
        "certificates": [
            _certificates(var, certs, duals, pts, ray)
            for var, certs, duals, pts, ray in zip(
                term_vars(c, keys), s.certs or [()] * len(s.points), s.duals or [()] * len(s.points), s.points, rays
            )
        ],
    }
    return record | joint


def sparse(v) -> dict:
    """A vector as a result records it (format 2): its nonzero entries' positions (``indices``)
    and values (``values``, exactly: floats round-trip through JSON). Its length is the
    program's, which ``privopt verify`` rebuilds."""
    v = np.asarray(v, dtype=float)
    at = np.flatnonzero(v)
    return {"indices": at.tolist(), "values": v[at].tolist()}


def branch_records(results: dict, sense: str, chosen: str) -> dict:
    """``optimality.branches`` of a design choice: per branch (``{name: CompositeResult}``) its
    status, method, objective and proven bound, and for each branch not chosen its evidence
    (``result``: ``CompositeResult.evidence``), from which ``privopt verify`` re-derives its
    bound; the chosen branch's is the answer itself."""
    key = "lower_bound" if sense == "minimize" else "upper_bound"
    return {
        n: {"status": r.status, "method": r.method, "objective": r.objective, key: r.optimality.get(key)}
        | ({} if n == chosen else {"result": r.evidence()})
        for n, r in results.items()
    }


def bracket_record(c, key: str, lo: float, hi: float, answers: dict) -> dict:
    """Accuracy first's certificate (``solve._bisection``): the bracket ``[lo, hi]`` of the
    composite's variable ``key`` (the targets hold at ``hi``, fail at ``lo``) and, per block
    whose target fails at ``lo``, its params there and its own certificate (the block's proven
    bound beyond the target, or its closed form's theorem; none where it is infeasible), so
    ``privopt verify`` can re-prove that a target fails at ``lo``."""
    failing = {}
    for t in c.targets:
        a = answers.get(t.block)
        if a is None or t.block in failing:
            continue
        if a.value is None or not (a.value <= t.bound if t.op == "<=" else a.value >= t.bound):
            cert = getattr(a.result, "certificate", None) if a.value is not None else None
            method = getattr(a.result, "method", None) if a.value is not None else None
            failing[t.block] = {"params": dict(a.params), "status": a.status, "method": method, "certificate": cert}
    return {"var": key, "lo": lo, "hi": hi, "blocks": failing}


def term_vars(c, keys: list[str]) -> list[str]:
    """Each term's variable, in the split's order (``gaussian.split_row``: a joint Gaussian
    group is one term, at its first variable)."""
    out, groups = [], set()
    for k in keys:
        g = c.group_of(c.vars[k].block)
        if g is None or g.blocks not in groups:
            out.append(k)
        if g is not None:
            groups.add(g.blocks)
    return out


def _certificates(var: str, certs, duals, points, rays: dict) -> dict | None:
    """One term's points' certificates, each vector sparse (``sparse``; a joint group's and a
    closed form's points record themselves: ``GroupDual.records``, ``RRDual.records``): the points
    that have an LP certificate (``parametric.TermDual``; ``points``, indices into the term's
    points), and per such point the LP's optimum ``x``, its t-form row multipliers ``y`` at the
    point's budget (``parametric.Cell``: its bound at the point) and the multipliers' motion ``dy``
    toward the cell below and the cell above it where their pieces use it
    (``split.CellEnds.towards``; null where not); the points where the block is infeasible with a
    Farkas ray of its t-form LP there (``infeasible``, indices; ``rays``). None when no point has
    either."""
    have = [j for j, d in enumerate(certs) if d is not None]
    if not have and not rays:
        return None
    records = getattr(certs[have[0]], "records", None) if have else None
    if records is not None:  # a joint group's or a closed form's points (``groupcells``, ``closedcells``)
        return records(var, certs)

    def motion(j: int, cell: int, side: int):
        cd = duals[cell] if 0 < cell < len(duals) else None
        if cd is None:
            return None
        ends, cut, _ = cd
        share = ends.towards(points[cell - 1][0], points[cell][0], cut)[side]
        d = certs[j]
        return None if share is None else sparse(d.cell_cert.motion(d.lo + share / d.scale))

    return {
        "var": var,
        "points": have,
        "x": [sparse(certs[j].cell_cert.x) for j in have],
        "y": [sparse(certs[j].cell_cert.y) for j in have],
        "dy_below": [motion(j, j, 1) for j in have],
        "dy_above": [motion(j, j + 1, 0) for j in have],
        "infeasible": sorted(rays),
        "rays": [sparse(rays[j]) for j in sorted(rays)],
    }


def _checks(c, answers: dict, active: list[str]) -> list[tuple[str, bool]]:
    """What holds at the answer: each active block's own verification, each composition row's
    sum (recomputed), each accuracy target."""
    out = []
    values: dict[str, float] = {}
    for name in active:
        a = answers.get(name)
        ok = a is not None and a.result is not None and bool(a.result.verification.get("passed"))
        out.append((f"block {name} verified by its own route", ok))
        if a is not None:
            for key, var in c.vars.items():
                if var.block == name and var.param in a.params:
                    values[key] = a.params[var.param]
    for row in c.rows:
        used = math.fsum(coef * values.get(k, 0.0) for k, coef in row.coefs.items())
        tol = 1e-12 * max(1.0, abs(row.rhs))
        out.append((f"composition {' + '.join(row.coefs)} = {used:.12g} <= {row.rhs:.12g}", used <= row.rhs + tol))
    for t in c.targets:
        a = answers.get(t.block)
        v = 0.0 if t.block not in active else (a.value if a is not None else None)
        ok = v is not None and (v <= t.bound if t.op == "<=" else v >= t.bound)
        out.append((f"target {t.block}.objective {t.op} {t.bound:g}", ok))
    return out
