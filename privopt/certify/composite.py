"""A composite's result re-checked (``privopt verify`` on ``use`` / ``choose`` specs; issues 21, 22).

From what the result records (``composite.result.CompositeResult.to_dict``) and the composite
spec rebuilt from its recorded text (its SHA-256 and every block file's compared first: a
change is exit 2, naming the file):

* **blocks**: each block solved by its own route carries its own full result (``result``), re-
  checked exactly as a single result (``check.verify``: the block rebuilt from its recorded text
  at its recorded params, its point, its certificate), every check named ``block NAME: ...``; its
  recorded params and value must be the ones the composite reports. The blocks of a joint
  Gaussian program have no result of their own: the program is re-checked from their recorded
  (co)variances (``_joint``).
* **composition**: every row ``sum_k coef_k x_k <= rhs`` re-evaluated at the chosen params
  (relative ``ROW_RTOL``; a joint group's blocks have coefficient ``1 / |group|``, so it counts
  once), each mechanism's delta param equal to its share of the row's delta, and the
  accountant's claim (pure: every delta 0 and the eps add; basic: the eps and the deltas add;
  gaussian: the one joint mechanism gets the row's (eps, delta)).
* **objective**: ``const + sum_b c_b b.objective`` (a block not chosen counts 0; a chosen
  variable ``t`` of accuracy first is read from the block params it sets), against the recorded
  one; each accuracy target at the answer; the design choice: the chosen branch's blocks solved,
  the others not.
* **lower bound**: ``split``: each row's bound recomputed from its recorded points by
  ``split.recheck`` (the cells' suffix maxima of the points' proven bounds, Lagrangian and
  min-plus) after each point's bound and each cell's pieces are re-proven from their recorded
  LP certificates (``cells.PointProofs``: weak duality at the point, the concave bound in ``t``
  at a piece's two ends), or for an inverse-square closed form (Gaussian blocks under the classic
  calibration, values ``a_i / y_i^2``) the Lagrangian dual ``sum_i 3/2 (2 a_i)^(1/3) lam^(2/3) -
  lam E`` at the KKT multiplier ``lam = 2 a_i / y_i^3`` (weak duality, any ``lam >= 0``; where
  the split chose the deltas too, the (eps, delta) program's dual, ``deltasplit.recheck``, and
  each block's delta is the recorded one, not the even share), or
  for randomized-response blocks ``split.rr_split`` recomputed (``_rr_bound``);
  ``evaluate``: the objective itself; ``bisection``: the objective at the bracket's lower end,
  where a target is proven to fail (``_bracket``); ``least eps sum``: each mechanism's lower end
  re-proven and summed (``_least_sum``; a split's targeted blocks' lower ends alike,
  ``_targeted_terms``); a composite that is one joint Gaussian
  program: its recorded dual point (``optimality.joint_dual``), re-derived by
  ``gaussian.proven_bound`` (``_joint_bound``). A design choice: every branch not chosen
  re-checked from its recorded evidence (``_branches``) and the bound at most each branch's.
  Then ``bound <= objective`` and the recorded gap recomputed; "optimal" only with a gap within
  ``split.RTOL``. A point where a block is infeasible is proven so by its Farkas ray; a joint
  group's points, cells and least share and a randomized-response term's points are re-derived
  (``cells.PointProofs``); an infeasible branch is proven by its splits (``_infeasible_branch``);
  a method verify does not know fails. Taken as recorded (the notes name them): an infeasible
  branch without splits (no certificate of its infeasibility is recorded).
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

from ..builder.build import build
from ..composite.deltasplit import recheck as recheck_deltas
from ..composite.deltasplit import row_deltas
from ..composite.model import branch, branched
from ..composite.model import build as build_composite
from ..composite.split import RTOL, SLACK, Split, recheck, relative_gap
from ..composite.syntax import is_composite as is_composite_spec
from ..errors import UsageError
from ..language.parser import parse
from ..verification.checks import Check, compare, condition
from .cells import PointProofs
from .check import Report, verify_read
from .check import verify as verify_single
from .source import find_spec, is_composite, read_result

JOINT_METHODS = ("joint", "joint targets", "joint least eps")  # gaussian.METHOD, METHOD_TARGETS, METHOD_LEAST
ROW_RTOL = 1e-9  # a composition row's sum against its right-hand side, relative to max(1, |rhs|)
VALUE_RTOL = 1e-9  # recorded values against recomputed ones (objective, bounds), relative to max(1, |value|)


def verify(path_or_dict: str | Path | dict, spec: str | Path | None = None, allow_paths: bool = False) -> Report:
    """Re-check a result, single or composite (``privopt verify``, ``privopt.verify``), without a
    solver: a single program's by ``check.verify``, a composite's as the module docstring says.
    Raises ``UsageError`` (unreadable, unknown format, a changed spec, block or data file: exit 2)
    or ``SpecError``; returns the ``Report`` (``passed``) otherwise."""
    result, name, folder = read_result(path_or_dict)
    if not is_composite(result):
        return verify_read((result, name, folder), spec, allow_paths)
    return verify_composite(result, name, folder, spec, allow_paths)


def verify_composite(
    result: dict, name: str, folder: Path | None, spec: str | Path | None, allow_paths: bool
) -> Report:
    """The composite result ``result`` re-checked (module docstring) into a ``Report``."""
    recorded = result["spec"]
    text, path, where = find_spec(recorded, folder, spec)
    params = recorded.get("params") or {}
    parsed = parse(text, path)
    if not is_composite_spec(parsed):
        raise UsageError(f"{name}: a composite's result, but its spec {path or '<spec>'} is not a composite spec")
    model = build_composite(parsed, dict(params), allow_paths, lambda s, v: build(s, v, allow_paths))
    blocks = result.get("blocks") or {}
    _same_blocks(model, blocks)
    report = Report(name, str(path) if path else "<spec>", where, "composite", result.get("method"), dict(params))
    report.checks += _choice(model, result, blocks)
    chosen = result.get("choice")
    report.checks += _answer(model, result, folder, report.notes, report.params, allow_paths, chosen)
    if model.choice:
        report.checks += _branches(model, result, report.notes, allow_paths)
    report.notes.append(
        f"the composition and the objective: floats, relative {ROW_RTOL:g} (rows) and {VALUE_RTOL:g} (values)"
    )
    report.notes.append(
        "informative figures (the even split and the gain, a joint program's best split, timings) are not re-checked"
    )
    return report


def _answer(
    model, result: dict, folder: Path | None, notes: list[str], params: dict, allow_paths: bool, chosen
) -> list[Check]:
    """The answer ``result`` (the whole composite's, or one design branch's evidence) re-checked:
    its blocks, rows, objective and bound; a branch of a choice involving a joint group as a
    composite of its own (``model.branch``)."""
    blocks = result.get("blocks") or {}
    whole = model
    if branched(model) and chosen in model.choice:
        model = branch(model, chosen)
        blocks = {n: b for n, b in blocks.items() if n in model.blocks}
        result = result | {"blocks": blocks}
        notes.append(f"the design choice: the branch {chosen!r} re-checked as a composite of its own")
    values = _values(model, result, blocks, params)
    checks = _blocks(model, result, blocks, folder, notes)
    checks += _rows(model, result, values)
    checks += _objective(model, result, blocks, values)
    checks += _bound(model, result, blocks, notes, allow_paths, bool(whole.choice))
    return checks


def _branches(model, result: dict, notes: list[str], allow_paths: bool) -> list[Check]:
    """Each design branch not chosen re-checked from its evidence (``optimality.branches``:
    ``composite.result.branch_records``) as an answer of its own (``_answer``, its checks named
    ``branch NAME: ...``), its recorded bound re-derived there; and the composite's bound at most
    every branch's (each feasible point is in one branch, so the least of their bounds is proven)."""
    opt = result.get("optimality") or {}
    key = "lower_bound" if model.sense == "minimize" else "upper_bound"
    sign = 1.0 if model.sense == "minimize" else -1.0
    bound = _number(opt.get(key))
    records = opt.get("branches") if isinstance(opt.get("branches"), dict) else {}
    chosen = result.get("choice")
    checks: list[Check] = []
    for n in model.choice:
        rec = records.get(n)
        label = f"branch {n}"
        if n == chosen:
            continue
        evidence = rec.get("result") if isinstance(rec, dict) else None
        joint = branched(model)  # a branch of a choice involving a joint group: a composite of its own, no choice
        if not isinstance(evidence, dict) or evidence.get("choice") != (None if joint else n):
            checks.append(condition(label, False, "the result records no evidence of this branch's bound"))
            continue
        if evidence.get("objective") is None:  # no feasible answer: a bound of +inf (minimize sense)
            checks += _infeasible_branch(model, evidence, label, sign, notes, allow_paths)
            continue
        inner: list[str] = []
        more = [] if joint else _choice(model, evidence, evidence.get("blocks") or {})
        more += _answer(model, evidence, None, inner, {}, allow_paths, n)
        checks += [dataclasses.replace(c, name=f"{label}: {c.name}") for c in more]
        notes += [f"{label}: {x}" for x in inner if not x.startswith("the design choice")]
        theirs = _number((evidence.get("optimality") or {}).get(key))
        checks.append(_same(f"{label}: its recorded bound", rec.get(key), theirs))
        checks.append(
            _within(
                f"{label}: the composite's {key.replace('_', ' ')} within this branch's",
                sign,
                bound,
                theirs,
                f"the composite's {bound!r} is not proven by this branch's {theirs!r}",
            )
        )
    return checks


def _infeasible_branch(model, evidence: dict, label: str, sign: float, notes: list[str], allow_paths: bool):
    """A branch recorded infeasible (no answer; its bound infinite on the objective's side)
    proven so by its recorded splits: every point of one of its terms proven infeasible (a Farkas
    ray of the block's LP there, ``cells.PointProofs``), so the bound ``_split_bound`` re-derives
    is infinite. A branch without splits (a block infeasible at fixed params, a target missed at
    the top of accuracy first's range) records no certificate of it: said so in the notes."""
    reasons = "; ".join(evidence.get("reasons") or [])
    if evidence.get("method") != "split" or not evidence.get("splits"):
        notes.append(
            f"{label}: infeasible ({reasons}), taken as recorded: its {evidence.get('method')} records no "
            "certificate of infeasibility (only a split's points carry Farkas rays)"
        )
        return []
    inner: list[str] = []
    blocks = evidence.get("blocks") or {}
    derived, more = _split_bound(model, evidence, blocks, sign, allow_paths, inner, strict=True)
    notes += [f"{label}: {x}" for x in inner]
    more = [dataclasses.replace(c, name=f"{label}: {c.name}") for c in more if "lower bound" not in c.name]
    proven = derived is not None and sign * derived == math.inf
    return [
        *more,
        condition(
            f"{label}: infeasible, proven by its recorded splits",
            proven,
            f"its recorded points prove the bound {derived!r}, not that no answer exists ({reasons})",
            f"no split of its budget is feasible ({reasons})",
        ),
    ]


def _same_blocks(model, blocks: dict) -> None:
    """Each block file as read now has the recorded SHA-256 (else exit 2, naming it)."""
    if set(blocks) != set(model.blocks):
        raise UsageError(f"the result's blocks {sorted(blocks)} are not the spec's {sorted(model.blocks)}")
    for n, b in model.blocks.items():
        if blocks[n].get("sha256") != b.sha256:
            raise UsageError(
                f"{b.file}: block '{n}' changed since it was solved (SHA-256 {b.sha256}, the result records "
                f"{blocks[n].get('sha256')}); solve again"
            )


def _number(x) -> float:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else math.nan


def _values(model, result: dict, blocks: dict, params: dict) -> dict[str, float]:
    """The chosen variables and block values at the answer: ``a.eps`` from block a's recorded
    params, ``a.objective`` from its recorded value (0 when not chosen), a variable ``t`` of the
    composite from the block param it sets (``with eps = t``)."""
    values: dict[str, float] = {}
    for n, b in blocks.items():
        values[f"{n}.objective"] = 0.0 if b.get("status") == "not chosen" else _number(b.get("objective"))
    for key, var in model.vars.items():
        if var.block is not None:
            values[key] = _number((blocks[var.block].get("params") or {}).get(var.param, 0.0))
    for key, var in model.vars.items():
        row = next((r for r in model.rows if r.var == key), None)
        if row is not None:  # dp(...) <= (t, delta): t is what the row's mechanisms spend (at least t's lo)
            spent = math.fsum(c * values.get(k, 0.0) for k, c in row.coefs.items())
            values[key] = max(var.lo, spent)
            params[key] = values[key]
        elif var.block is None:
            setters = [(n, p, f) for n, b in model.blocks.items() for p, f in b.linked.items() if set(f.coefs) == {key}]
            if setters:
                n, p, f = setters[0]
                x = _number((blocks[n].get("params") or {}).get(p))
                values[key] = (x - f.const) / f.coefs[key]
                params[key] = values[key]
    return values


def _blocks(model, result: dict, blocks: dict, folder: Path | None, notes: list[str]) -> list[Check]:
    checks: list[Check] = []
    # blocks solved in a joint Gaussian group's program (the rebuilt model's groups, or the whole
    # composite as one group): their variances are checked by the group's program, not alone
    joint = {b for g in model.groups for b in g.blocks} | (
        set(model.joint.blocks) if model.joint is not None else set()
    )
    for n, b in blocks.items():
        status = b.get("status")
        if status == "not chosen":
            continue
        own = b.get("result")
        if status != "optimal":
            checks.append(condition(f"block {n}", False, f"status {status!r}: the answer has no solved block here"))
        elif isinstance(own, dict):
            sub = folder / n if folder is not None else None  # --out: the block's CSV files
            single = verify_single(own, allow_paths=False, folder=sub)
            checks += [dataclasses.replace(c, name=f"block {n}: {c.name}") for c in single.checks]
            checks.append(_same(f"block {n}: value", b.get("objective"), own.get("objective")))
            mine = (own.get("spec") or {}).get("params") or {}
            off = {k: v for k, v in (b.get("params") or {}).items() if mine.get(k) != v}
            checks.append(
                condition(
                    f"block {n}: params",
                    not off,
                    f"the composite reports {off}, the block's own result was solved at {mine}",
                    "the block's own result is at the composite's params",
                )
            )
        elif n not in joint:
            checks.append(condition(f"block {n}", False, "the result records no result of this block to re-check"))
    if joint:
        checks += _joint(model, result)
        notes.append("a joint Gaussian program: its point re-checked from the recorded variances")
    return checks


def _joint(model, result: dict) -> list[Check]:
    """Each joint Gaussian program re-checked from its recorded (co)variances: the joint model
    rebuilt at the group's recorded (eps, delta) (``gaussian.joint_model``: the blocks' releases
    stacked, each scaled by the square root of its weight), then ``verify_noise`` (each noise in
    its set, every input's summed squared Mahalanobis sensitivity within the ceiling (eps, delta)
    allows, the loss), and each block's own value recomputed (``gaussian.block_values``)."""
    import numpy as np

    from ..composite.gaussian import block_values, group_weights, joint_model
    from ..lower.noise import lower_noise
    from ..verification.problems import verify_noise

    checks: list[Check] = []
    blocks = result["blocks"]
    for group in model.groups or ((model.joint,) if model.joint is not None else ()):
        label = f"joint Gaussian ({', '.join(group.blocks)})"
        first = model.blocks[group.blocks[0]]
        mine = blocks[group.blocks[0]].get("params") or {}
        if first.budget is None or first.budget.eps not in mine:
            checks.append(condition(label, False, "the result records no (eps, delta) for this group"))
            continue
        eps, delta = _number(mine[first.budget.eps]), _number(mine.get(first.budget.delta, group.delta))
        joint_m, parts = joint_model(
            model, dataclasses.replace(group, eps=eps, delta=delta), group_weights(model, group)
        )
        cov = {}
        for n in group.blocks:
            for k, S in (blocks[n].get("variances") or {}).items():
                cov[f"{n}.{k}"] = np.asarray(S, dtype=float)
        missing = [k.name for k in joint_m.noises if k.name not in cov]
        if missing:
            checks.append(condition(label, False, f"the result records no variances of {', '.join(missing)}"))
            continue
        v = verify_noise(joint_m, {k.name: cov[k.name] for k in joint_m.noises}, lower_noise(joint_m))
        checks += [dataclasses.replace(c, name=f"{label}: {c.name}") for c in v.checks]
        part = next(
            (p for r in result.get("composition") or [] for p in r["parts"] if p["blocks"] == list(group.blocks)), {}
        )
        if "sensitivity" in part:
            checks.append(
                _same(f"{label}: recorded sensitivity", part["sensitivity"], v.values["max_sensitivity"], 1e-6)
            )
        for n, value in block_values(parts, cov).items():
            checks.append(_same(f"{label}: block {n} value from the variances", blocks[n].get("objective"), value))
    return checks


def _within(name: str, sign: float, bound: float, other: float, failure: str) -> Check:
    """``bound`` on the proven side of ``other`` (at most it when ``sign`` is 1, at least when
    -1), to ``VALUE_RTOL`` relative to max(1, |other|)."""
    return compare(name, sign * (bound - other), VALUE_RTOL * max(1.0, abs(other)), failure, f"{bound!r} vs {other!r}")


def _same(name: str, recorded, value, rtol: float = VALUE_RTOL) -> Check:
    r, v = _number(recorded), _number(value)
    diff = abs(r - v)
    return compare(name, diff, rtol * max(1.0, abs(v)), f"recorded {recorded!r}, recomputed {value!r}", f"{v!r}")


def _rows(model, result: dict, values: dict[str, float]) -> list[Check]:
    """Each composition row at the chosen params, each mechanism's delta and the accountant."""
    checks = []
    optimized = _optimized_deltas(result)
    for row in model.rows:
        used = math.fsum(coef * values.get(k, 0.0) for k, coef in row.coefs.items())
        allowed = row.rhs + ROW_RTOL * max(1.0, abs(row.rhs))
        text = " + ".join(f"{c:g} {k}" for k, c in row.coefs.items())
        checks.append(
            compare(
                f"composition {text} <= {row.rhs:g}",
                used,
                allowed,
                f"the chosen params spend {used!r}, above {row.rhs!r}",
                f"{used:.12g} <= {row.rhs:.12g}",
            )
        )
        if row.accountant is None:
            continue
        deltas = []
        for part in row.parts:
            block = model.blocks[part.blocks[0]]
            mine = (result["blocks"][part.blocks[0]].get("params") or {}) if part.blocks[0] in result["blocks"] else {}
            if block.budget is not None and block.budget.delta in mine:
                got = _number(mine[block.budget.delta])
                deltas.append(got)
                share = optimized.get(f"{part.blocks[0]}.{part.eps}", part.delta)  # its split's, else the even one
                checks.append(_same(f"composition: {'+'.join(part.blocks)} delta share", got, share, ROW_RTOL))
        delta_sum = math.fsum(deltas)
        if row.accountant == "pure":
            checks.append(
                condition(f"{row.accountant} accountant: no delta", delta_sum == 0, f"deltas {deltas} in a pure row")
            )
        else:
            checks.append(
                compare(
                    f"{row.accountant} accountant: the deltas add up",
                    delta_sum,
                    row.delta + ROW_RTOL * max(row.delta, 1e-300),
                    f"the mechanisms' deltas add to {delta_sum!r}, above {row.delta!r}",
                    f"{delta_sum:.6g} <= {row.delta:.6g}",
                )
            )
    return checks


def _optimized_deltas(result: dict) -> dict[str, float]:
    """The deltas an (eps, delta) split records (``deltasplit``), by its chosen eps variable: a
    block's delta share is checked against these (and the split's bound is then the (eps, delta)
    program's, ``_row_bound``), every other against the even share."""
    return {
        v: _number(d)
        for rec in result.get("splits") or []
        for v, d in zip(rec.get("vars") or [], rec.get("deltas") or [])
    }


def _objective(model, result: dict, blocks: dict, values: dict[str, float]) -> list[Check]:
    """The objective recomputed, and each accuracy target at the answer."""
    value = model.objective.at({k: values.get(k, math.nan) for k in model.objective.coefs})
    checks = [_same("objective = the blocks' weighted values (+ constant)", result.get("objective"), value)]
    for t in model.targets:
        v = values.get(f"{t.block}.objective", math.nan)
        ok = v <= t.bound if t.op == "<=" else v >= t.bound
        checks.append(
            condition(
                f"target {t.block}.objective {t.op} {t.bound:g}",
                bool(ok),
                f"the block's value {v!r} misses it",
                f"{v!r} (the block verified there)",
            )
        )
    return checks


def _choice(model, result: dict, blocks: dict) -> list[Check]:
    if not model.choice:
        return []
    chosen = result.get("choice")
    solved = [n for n in model.choice if blocks[n].get("status") != "not chosen"]
    return [
        condition(
            "design choice",
            chosen in model.choice and solved == [chosen],
            f"the result chooses {chosen!r} but the blocks solved are {solved}",
            f"{chosen} released (the other branches not chosen)",
        )
    ]


def _bound(model, result: dict, blocks: dict, notes: list[str], allow_paths: bool, choice: bool) -> list[Check]:
    """The proven bound re-derived where the result records what it needs, then its order and gap
    (with a design ``choice``, the bound is the least over the branches: at most the chosen one's)."""
    opt = result.get("optimality") or {}
    key = "lower_bound" if model.sense == "minimize" else "upper_bound"
    sign = 1.0 if model.sense == "minimize" else -1.0
    bound, objective = _number(opt.get(key)), _number(result.get("objective"))
    checks: list[Check] = []
    method = result.get("method")
    if method == "split":
        derived, more = _split_bound(model, result, blocks, sign, allow_paths, notes)
        checks += more + _targeted_terms(model, opt | {"splits": result.get("splits")}, notes)
        if derived is not None:
            name = f"{key.replace('_', ' ')} re-derived from the recorded splits"
            if choice:  # the bound is the least over the branches: at most this branch's
                checks.append(
                    _within(
                        name,
                        sign,
                        bound,
                        derived,
                        f"recorded {bound!r} is not proven by the chosen branch's {derived!r}",
                    )
                )
            else:
                checks.append(_same(name, bound, derived))
        if any(r.get("certificates") for r in result.get("splits") or []):
            notes.append(
                f"the points' bounds: weak duality from their recorded multipliers (a recorded bound at most "
                f"{SLACK:g} relative above); the cells' pieces recomputed from their ends' multipliers in floats, "
                f"to {SLACK:g} relative"
            )
    elif method == "evaluate":
        checks.append(_same(key.replace("_", " "), bound, objective))
    elif model.joint is not None and method in JOINT_METHODS:
        checks.append(_joint_bound(model, opt, bound, choice))
    elif method == "bisection":
        checks += _bracket(model, opt, bound, notes, choice)
    elif method == "least eps sum":  # composite.solve.METHOD_SUM
        checks += _least_sum(model, opt, bound, notes, choice)
    else:
        checks.append(
            condition(
                key.replace("_", " "),
                False,
                f"the result's method {method!r} is not one whose bound privopt verify re-derives for this spec "
                f"(split, evaluate, bisection, least eps sum{', joint' if model.joint is not None else ''})",
            )
        )
    checks.append(
        _within(
            f"{key.replace('_', ' ')} on the objective's side",
            sign,
            bound,
            objective,
            f"the bound {bound!r} is beyond the objective {objective!r}",
        )
    )
    gap = relative_gap(sign * objective, sign * bound)
    checks.append(_same("relative gap", opt.get("gap"), gap))
    status = result.get("status")
    checks.append(
        condition(
            "status",
            (status == "optimal") == (gap <= RTOL),
            f"status {status!r} with a gap of {gap:.3g} (optimal: within {RTOL:g})",
            f"{status} (gap {gap:.3g})",
        )
    )
    return checks


def _bracket(model, opt: dict, bound: float, notes: list[str], choice: bool) -> list[Check]:
    """Accuracy first's bound re-derived (``solve._bisection``): the blocks' budgets do not
    decrease in ``t`` and their values do not get worse with their budgets, so the targets hold on
    an interval ``[t*, hi]``; a target that fails at the bracket's lower end ``lo`` proves ``t* >
    lo``, hence the bound ``const + coef lo``. Each recorded failing block is rebuilt at its
    params at ``t = lo`` (from the spec's ``with``, not the record) and its certificate re-proven
    there: an LP's multipliers (``proofs.lp_multipliers``: its proven bound beyond the target) or
    a closed form's theorem (``proofs.theorem``: its conditions hold, its exact optimum beyond the
    target). With a design ``choice`` the bound is the least over the branches: at most this one's."""
    name = "accuracy first"
    rec = opt.get("bracket")
    var = model.vars.get(rec.get("var")) if isinstance(rec, dict) and isinstance(rec.get("var"), str) else None
    if var is None or var.block is not None:
        return [condition(name, False, "the result records no bracket of the composite's variable (bracket)")]
    lo = _number(rec.get("lo"))
    coef = model.objective.coefs.get(var.key, 0.0)
    at_lo = model.objective.const + coef * lo
    checks = [
        _at_lower_end(model, f"{name}: the bound is the objective at the bracket's lower end", bound, at_lo, choice),
        condition(
            f"{name}: the bracket's lower end in the range",
            var.lo <= lo < _number(rec.get("hi")),
            f"lo = {lo!r} is not in [{var.lo:g}, hi = {rec.get('hi')!r})",
            f"{var.key} = {lo!r}",
        ),
    ]
    failing = rec.get("blocks") if isinstance(rec.get("blocks"), dict) else {}
    if not failing:
        checks.append(
            condition(f"{name}: a target fails at the bracket's lower end", False, "no failing block recorded")
        )
    for n, entry in failing.items():
        block = model.blocks.get(n)
        params = {} if block is None else dict(block.fixed) | {p: f.at({var.key: lo}) for p, f in block.linked.items()}
        checks += _fails_at(model, f"accuracy first: block {n} at {var.key} = {lo!r}", params, n, entry, notes)
    return checks


def _least_sum(model, opt: dict, bound: float, notes: list[str], choice: bool) -> list[Check]:
    """Accuracy first over a ``dp(...) <= (t, delta)`` row re-derived (``composite.least``: the
    least t is the sum of the mechanisms' least eps, each at least its bracket's lower end): per
    recorded mechanism, its lower end proven (a joint group's by ``gaussian.proven_bound`` from its
    minimax dual record; a block's by its target failing there, ``_fails_at``, from its recorded
    certificate; 0 needs nothing), the mechanisms those of the row, the lower ends adding up to the
    bracket's, and the bound ``const + coef max(lo of t's range, sum)``. A block infeasible at its
    lower end (no target: its least feasible eps) is taken as recorded (a note says so)."""
    name = "accuracy first over the row"
    rec = opt.get("bracket")
    var = model.vars.get(rec.get("var")) if isinstance(rec, dict) and isinstance(rec.get("var"), str) else None
    row = next((r for r in model.rows if var is not None and r.var == var.key), None)
    parts = rec.get("parts") if isinstance(rec, dict) else None
    if row is None or not isinstance(parts, list):
        return [condition(name, False, "the result records no bracket of the row's mechanisms (bracket.parts)")]
    los, checks = _lower_ends(model, name, parts, {tuple(p.blocks) for p in row.parts}, notes)
    total = math.fsum(los)
    at_lo = model.objective.const + model.objective.coefs.get(var.key, 0.0) * max(var.lo, total)
    checks += [
        _same(f"{name}: the lower ends add up", rec.get("lo"), total),
        _at_lower_end(model, f"{name}: the bound is the objective at the summed lower ends", bound, at_lo, choice),
    ]
    return checks


def _targeted_terms(model, opt: dict, notes: list[str]) -> list[Check]:
    """A split's targeted blocks (``composite.least``: a block's term is +inf below its least budget
    meeting its targets): each recorded lower end re-proven (``_lower_ends``), so its +inf points
    there are proven by the target failing at the lower end and the block's monotonicity."""
    parts = (opt.get("bracket") or {}).get("parts")
    if not isinstance(parts, list):
        return []
    mechanisms = {(n,) for n in model.blocks if any(t.block == n for t in model.targets)}
    los, checks = _lower_ends(model, "targeted block", parts, mechanisms, notes)
    floors = {tuple(p.get("blocks") or ())[0]: lo for p, lo in zip(parts, los) if p.get("blocks")}
    for rec in opt.get("splits") or []:
        terms, seen = [], set()  # the split's terms: a joint group is one, at its first variable
        for key in rec.get("vars") or []:
            g = model.group_of(model.vars[key].block) if key in model.vars else None
            if g is None or g.blocks not in seen:
                terms.append(key)
            seen |= {g.blocks} if g is not None else set()
        for key, pts in zip(terms, rec.get("points") or []):
            var = model.vars.get(key)
            if var is None or var.block not in floors:
                continue
            row = next(r for r in model.rows if key in r.coefs)
            infinite = [p[0] for p in pts if p[1] is None and p[2] is None]
            below = sum(var.lo + x / row.coefs[key] <= floors[var.block] for x in infinite)
            notes.append(
                f"block {var.block}: {below} of its {len(infinite)} +inf point(s) lie at or below its re-proven "
                f"least budget {floors[var.block]!r}, proven +inf by its target failing there (the rest as recorded)"
            )
    return checks


def _lower_ends(model, name: str, parts: list, mechanisms: set, notes: list[str]) -> tuple[list[float], list[Check]]:
    """Each recorded mechanism's lower end (``composite.least.record``) re-proven: a joint group's
    by ``gaussian.proven_bound`` from its minimax dual record; a block's by its target failing
    there (``_fails_at``) from its recorded certificate; 0 needs nothing. (the lower ends, checks)"""
    from ..composite.gaussian import proven_bound

    checks: list[Check] = []
    los = []
    for entry in parts:
        blocks = tuple(entry.get("blocks") or ()) if isinstance(entry, dict) else ()
        lo = _number(entry.get("lo")) if isinstance(entry, dict) else math.nan
        label = f"{name}: {'+'.join(blocks) or '?'} at eps {lo!r}"
        los.append(lo)
        if blocks not in mechanisms or not lo >= 0:
            checks.append(condition(label, False, "not a mechanism of the row, or no lower end"))
            continue
        group = model.group_of(blocks[0])
        if lo == 0:
            continue
        if group is not None:
            try:
                derived = proven_bound(model, group, entry.get("joint_dual"))
            except (KeyError, TypeError, ValueError) as e:
                derived, why = -math.inf, f"the recorded dual point cannot be read: {e}"
            else:
                why = f"the recorded dual point proves only {derived!r}"
            checks.append(_within(f"{label}: proven by its minimax dual point", 1.0, lo, derived, why))
            continue
        failing = entry.get("failing") if isinstance(entry.get("failing"), dict) else {}
        n = blocks[0]
        if n not in failing:
            checks.append(condition(label, False, "no failing block recorded at the lower end"))
        elif not any(t.block == n for t in model.targets) and failing[n].get("status") == "infeasible":
            notes.append(f"{label}: infeasible there (its least feasible eps), taken as recorded")
        else:
            block = model.blocks[n]
            checks += _fails_at(model, label, dict(block.fixed) | {block.budget.eps: lo}, n, failing[n], notes)
    return los, checks


def _noise_bound(problem, cert: dict) -> tuple[list[Check], float | None]:
    """A noise block's proven lower bound from its certificate's dual point (``proofs.conic_dual``),
    carried from its lowered program to the spec by the calibration's proven ceiling, as
    ``verify_noise`` does (``noise_shrink``, ``noise_bound``); None when the point is unreadable
    or no ceiling is proven."""
    from ..lower.noise import lower_noise
    from ..verification.problems import noise_bound, noise_shrink
    from .proofs import conic_dual

    program = lower_noise(problem.noise)
    checks, bound_of = conic_dual(program, cert)
    _ceiling, shrink = noise_shrink(problem.noise, program)
    if bound_of is None or not shrink > 0:
        return checks, None
    return checks, float(noise_bound(program, shrink, bound_of(math.inf)))


def _at_lower_end(model, name: str, bound: float, at_lo: float, choice: bool) -> Check:
    """The recorded bound is the objective ``at_lo`` at the proven lower end of t (with a design
    ``choice``, the least over the branches: at most it)."""
    sign = 1.0 if model.sense == "minimize" else -1.0
    return compare(
        name,
        sign * (bound - at_lo) if choice else abs(bound - at_lo),
        VALUE_RTOL * max(1.0, abs(at_lo)),
        f"recorded {bound!r}, the objective at the lower end is {at_lo!r}",
        f"{at_lo!r}",
    )


def _fails_at(model, label: str, params: dict, n: str, entry: dict, notes: list[str]) -> list[Check]:
    """Block ``n``'s target proven to fail at ``params`` from its recorded certificate there."""
    from .proofs import lp_multipliers, theorem

    target = next((t for t in model.targets if t.block == n), None)
    block = model.blocks.get(n)
    if target is None or block is None or not isinstance(entry, dict):
        return [condition(label, False, f"block {n!r} has no target in the spec")]
    problem = model.load_block(block.spec, params)
    cert = entry.get("certificate") or {}
    value: list[float] = []
    if cert.get("kind") == "dual-bound" and "dual_point" in (cert.get("data") or {}):  # a conic program's
        checks, proven = _noise_bound(problem, cert)
        value += [] if proven is None else [proven]
    elif cert.get("kind") == "dual-bound":
        checks, proven = lp_multipliers(problem, cert, None, notes)
        value += [] if proven is None else [proven]
    elif cert.get("kind") == "theorem" and getattr(problem, "design", None) is not None:
        checks, more = theorem(
            problem,
            {"method": entry.get("method"), "certificate": cert},
            lambda o: value.append(problem.objective.evaluate(o.point)) or [],
        )
        notes += more
    else:
        return [
            condition(label, False, "the result records no certificate of the block there (a proven bound or theorem)")
        ]
    checks = [dataclasses.replace(c, name=f"{label}: {c.name}") for c in checks]
    if not value:
        return [*checks, condition(label, False, "its certificate proves no bound there")]
    v = value[0]
    fails = v > target.bound if target.op == "<=" else v < target.bound
    return [
        *checks,
        condition(
            f"{label}: its target {n}.objective {target.op} {target.bound:g} fails",
            bool(fails),
            f"its proven value {v!r} does not miss the target: the bracket's lower end is not proven",
            f"proven {v!r}, beyond {target.bound:g}",
        ),
    ]


def _joint_bound(model, opt: dict, bound: float, choice: bool) -> Check:
    """The lower bound of a composite that is one joint Gaussian program re-derived from its
    recorded dual point (``optimality.joint_dual``: (eps, delta), the weights, (Y, mu)) by
    ``gaussian.proven_bound``: the program rebuilt at those weights and the dual point's bound
    recomputed (weak duality), then the targets' multipliers or the least eps where they apply."""
    from ..composite.gaussian import proven_bound

    record = opt.get("joint_dual")
    name = "lower bound re-derived from the joint program's recorded dual point"
    if not isinstance(record, dict):
        return condition(name, False, "the result records no dual point of the joint program (joint_dual)")
    try:
        derived = model.objective.const + proven_bound(model, model.joint, record)
    except (KeyError, TypeError, ValueError) as e:
        return condition(name, False, f"the recorded dual point cannot be read: {e}")
    if not math.isfinite(derived):
        return condition(name, False, "the recorded dual point and weights prove no finite bound")
    if choice:  # the least over the branches: at most this branch's
        return _within(
            name, 1.0, bound, derived, f"recorded {bound!r} is not proven by the chosen branch's {derived!r}"
        )
    return _same(name, bound, derived)


def _split_bound(
    model, result: dict, blocks: dict, sign: float, allow_paths: bool, notes: list[str], strict: bool = False
) -> tuple[float | None, list[Check]]:
    """The composite's bound (minimize sense, then signed back): constant + each row's re-derived
    bound + each block not split's weighted value. ``strict``: a point's recorded bound of +inf
    counts only where a ray proves it (``cells.PointProofs``), as an infeasible branch needs."""
    splits = result.get("splits")
    if not isinstance(splits, list):
        return None, [condition("split", False, "the result records no splits to re-derive its bound from")]
    checks, total = [], sign * model.objective.const
    split_vars = set()
    for k, rec in enumerate(splits):
        split_vars |= set(rec.get("vars") or [])
        derived, more, said = _row_bound(model, rec, allow_paths, f"split {k + 1}", strict)
        checks += more
        notes += said
        if isinstance(derived, str):
            checks.append(condition(f"split {k + 1}", False, derived))
            return None, checks
        checks.append(_same(f"split {k + 1} ({', '.join(rec['vars'])}) lower bound", rec.get("lower_bound"), derived))
        total += derived
    split_blocks = {model.vars[v].block for v in split_vars if v in model.vars}
    for key, coef in model.objective.coefs.items():
        n = key.rpartition(".")[0]
        if n in model.blocks and n not in split_blocks and blocks[n].get("status") != "not chosen":
            total += sign * coef * _number(blocks[n].get("objective"))
    return sign * total, checks


def _row_bound(
    model, rec: dict, allow_paths: bool, label: str, strict: bool = False
) -> tuple[float | str, list[Check], list[str]]:
    """One row's lower bound from its record (or why it cannot be re-derived), the checks of its
    points' certificates and the notes on what stays as recorded."""
    budget = _number(rec.get("budget"))
    pts = rec.get("points") or []
    if pts:
        points = tuple(tuple(tuple(math.inf if x is None else float(x) for x in p) for p in block) for block in pts)
        proven = PointProofs(model, rec, points, label, strict)
        if proven.error is not None:
            return proven.error, proven.checks, proven.notes
        try:
            duals = proven.cell_duals()
            s = Split(
                (), (), _number(rec.get("objective")), _number(rec.get("lower_bound")), 0, proven.points, duals=duals
            )
            derived = recheck(s, [p[-1][0] if p else 0.0 for p in points], budget, names=proven.names)
            return derived, proven.checks, proven.notes
        except ValueError as e:
            return f"the recorded points do not prove a bound: {e}", proven.checks, proven.notes
    classic = all(
        (b := model.blocks[model.vars[v].block]).budget is not None and b.budget.classic(model.vars[v].param)
        for v in rec["vars"]
    )
    if not classic:
        return _rr_bound(model, rec, budget, allow_paths), [], []
    y = [_number(x) for x in rec.get("shares") or []]
    a = [_number(v) * x**2 for v, x in zip(rec.get("values") or [], y)]
    if not y or not all(x > 0 for x in y):
        return "an inverse-square split with a zero share", [], []
    if rec.get("deltas") is not None:
        return _delta_bound(model, rec, y, budget), [], []
    lams = [2 * ai / yi**3 for ai, yi in zip(a, y)]
    return max(math.fsum(1.5 * (2 * ai) ** (1 / 3) * lam ** (2 / 3) for ai in a) - lam * budget for lam in lams), [], []


def _delta_bound(model, rec: dict, y: list[float], budget: float) -> float | str:
    """An (eps, delta) split's bound re-derived (``deltasplit.recheck``: the Lagrangian dual of
    the classic-calibration program at its KKT multipliers), on a row where that program is the
    composition (``deltasplit.row_deltas``: every mechanism one classic Gaussian block sharing
    the row's delta, which is the delta split)."""
    row = next((r for r in model.rows if set(rec["vars"]) <= set(r.coefs)), None)
    shared = None if row is None else row_deltas(model, row, [model.vars[v] for v in rec["vars"]])
    if shared is None:
        return "an (eps, delta) split on a row that is not classic Gaussian blocks sharing its delta"
    try:
        return recheck_deltas(
            [_number(v) for v in rec.get("values") or []], y, [_number(d) for d in rec["deltas"]], budget, shared[1]
        )
    except ValueError as e:
        return f"the recorded (eps, delta) split proves no bound: {e}"


def _rr_bound(model, rec: dict, budget: float, allow_paths: bool) -> float | str:
    """A randomized-response closed-form split's bound recomputed by ``split.rr_split``: each
    block rebuilt at its recorded params must meet ``closedform/rr.py``'s theorem (its value is
    then ``w (k - 1) / (e^eps + k - 1)`` at every eps of its range), ``k`` from the theorem,
    ``w`` the block's weight in the objective (minimize sense), the width its range's top."""
    from ..closedform.rr import RANDOMIZED_RESPONSE
    from ..composite.split import rr_split

    sign = 1.0 if model.sense == "minimize" else -1.0
    ks, ws, tops = [], [], []
    for key in rec["vars"]:
        var = model.vars[key]
        block = model.blocks[var.block]
        eps0 = var.hi if math.isfinite(var.hi) else max(var.lo, 1.0)  # the theorem's conditions do not involve eps
        problem = build(block.spec, dict(block.fixed) | {var.param: eps0}, allow_paths)
        in_scope = getattr(problem, "design", None) is not None and RANDOMIZED_RESPONSE.in_scope(problem)
        match = RANDOMIZED_RESPONSE.accepts(problem) if in_scope else None
        if not match or var.lo != 0:
            return f"block {var.block}: a closed-form split, but neither inverse-square nor randomized response"
        ks.append(float(match.data["k"]))
        ws.append(sign * model.objective.coefs.get(f"{var.block}.objective", 0.0))
        tops.append(var.hi)
    return rr_split(ks, ws, tops, budget).lower_bound
