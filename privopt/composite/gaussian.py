"""The joint Gaussian accountant (issue 21, item 2; docs/blocks.md, "Joint Gaussian accountant").

Blocks that add Gaussian noise to the same input vector (same name, length and range) and are
composed by one ``dp(a, b, ...) <= (eps, delta)`` are one Gaussian mechanism: their releases
stacked, ``O = F x + G n`` with ``F`` the blocks' release maps one above the other and each noise
``G_k`` padded with zero rows outside its block. The noise vectors are independent, so the
covariance is block diagonal and for every input coordinate j the squared Mahalanobis
sensitivities add:

    w_j^2 f_j' Sigma^+ f_j = sum_b w_j^2 f_bj' Sigma_b^+ f_bj <= Delta^2,

``Delta`` the largest sensitivity the composed (eps, delta) allows under the blocks' calibration
(the exact analytic one of Balle & Wang, or the classic one when every block asks for it). That
is the noise-placement program of ``lower/noise.py`` for a joint ``NoiseModel``, solved and
verified by the noise method (``methods/conic.solve_verified``: recomputed Sigma, sensitivities
and delta achieved; the loss certified by a point of the Lagrange dual).

The composite's objective ``sum_b c_b b.objective + const`` (each ``c_b > 0`` in the minimize
sense) is the joint program's loss once block b's rows of F and of every G are scaled by
``sqrt(c_b)``: a release scaled by ``s`` keeps every Mahalanobis sensitivity (``Sigma`` scales by
``s^2``) and multiplies its trace by ``s^2``.

Reported beside the joint optimum:

* **split**: the best split of (eps, delta) between the blocks solved apart under basic
  composition (the eps add up, delta split evenly; ``solve._split``, certified). The joint
  program is never worse: the split's noise is feasible for it (basic composition is a valid
  (eps, delta) bound of the stacked mechanism, and ``Delta`` is the exact largest sensitivity of
  a Gaussian mechanism at (eps, delta), so the blocks' squared sensitivities add to at most
  ``Delta^2``).
* **even split** (``even_split``): each block gets an equal share ``Delta^2 / B`` of the squared
  sensitivity. Block b alone at the bound ``Delta`` has loss ``L_b = N_b + o_b`` (``o_b`` its
  noiseless part); every constraint is homogeneous, so at ``Delta^2 / B`` its optimal noise is
  ``B`` times as large and its loss ``B N_b + o_b`` exactly.

Accuracy targets on a group that is the whole composite (``a.objective <= T``): the least eps
meeting them when the row's eps is the composite's chosen ``t`` (``least_budget``: one minimax
joint program scaled exactly, the program being homogeneous), or, at a fixed budget, the targets
as rows of the joint program (``with_targets``; a target from below, ``a.objective >= S``, is a
row too, ``L_a`` being linear in the covariance); both bounds re-derivable from the recorded dual
point (``dual_record``, ``proven_bound``).

A group beside other blocks (another mechanism in its ``dp(...)`` row, or other rows) is one
term of the row's certified split (``split_row``): its value as a function of its eps share is
``GroupCurve`` (one verified joint solve, exact by the same homogeneity, with its dual bound's
curve), and its blocks' answers are the joint program solved again at the split's eps (``answer``).
With targets on its blocks the group's term is an oracle term instead (``target_term``): the
targets' joint program at each eps share, infeasible below a proven least share. Either way each
point carries a ``groupcells.GroupDual`` (``point_dual``): its dual point proves the term is at
least ``A + P / s`` at every squared sensitivity s (``dual_curve``), which with the calibration's
slope bounds the cells beside the point at second order.
"""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np

from ..backends import get_backend
from ..errors import SpecError
from ..lower.noise import lower_noise
from ..measures.gaussian import classic_is_private, max_sensitivity, sensitivity_ceiling
from ..methods.conic import solve_verified
from ..methods.conic import verify as conic_verify
from ..model.noise import DPRequirement, Noise, NoiseModel, NoiseObjective
from .groupcells import GroupDual, mu_bounds
from .result import BlockAnswer, CompositeResult
from .split import RTOL, Split, Term, oracle_pair, relative_gap, split

SPLIT_CALLS = 4000  # evaluations of the closed-form value curves (no solve each)

METHOD = "joint"
WHY = "Gaussian blocks over one input are one Gaussian mechanism: one conic program, its squared sensitivities add"
METHOD_TARGETS = "joint targets"
WHY_TARGETS = "one joint conic program with the accuracy targets as rows over the joint noise"
METHOD_LEAST = "joint least eps"
WHY_LEAST = "the least eps meeting the targets: one minimax joint program, scaled exactly (homogeneous)"


@dataclasses.dataclass(frozen=True)
class _Part:
    """What a block's answer in the joint program reports (``CompositeResult`` reads these)."""

    method: str
    verification: dict
    cov: dict = dataclasses.field(default_factory=dict)  # the joint program's noise (co)variances, for verify


def applies(c) -> bool:
    """The composite has a ``dp(...)`` row under the joint Gaussian accountant."""
    return any(r.accountant == "gaussian" for r in c.rows)


def group_weights(c, group) -> dict[str, float]:
    """Each block's weight ``c_b`` in the composite's objective, in the minimize sense (positive:
    ``model._check_groups``); 1 for every block under accuracy first (the objective is t)."""
    if group.var is not None:
        return dict.fromkeys(group.blocks, 1.0)
    sign = 1.0 if c.sense == "minimize" else -1.0
    return {n: sign * c.objective.coefs[f"{n}.objective"] for n in group.blocks}


def _params(block, eps: float, delta: float) -> dict[str, float]:
    return {**block.fixed, block.budget.eps: eps, block.budget.delta: delta}


def joint_model(c, joint, weights: dict[str, float]) -> tuple[NoiseModel, dict]:
    """(the joint ``NoiseModel``, {block: (its own model, its rows)}) (module docstring)."""
    own = {}
    for n in joint.blocks:
        block = c.blocks[n]
        problem = c.load_block(block.spec, _params(block, joint.eps, joint.delta))
        own[n] = problem.noise
    calibrations = {m.requirement.calibration for m in own.values()}
    if len(calibrations) != 1:
        raise SpecError(
            "the blocks of one joint Gaussian program use different calibrations ("
            + ", ".join(sorted(calibrations))
            + ")",
            joint.span,
            "give every block the same calibration (drop 'calibration: classic', or write it in every block)",
        )
    calibration = calibrations.pop()
    if calibration == "classic" and not classic_is_private(joint.eps, joint.delta)[0]:
        raise SpecError(
            f"the classic calibration does not give ({joint.eps:g}, {joint.delta:g})-DP to the joint mechanism",
            joint.span,
            "use the exact analytic calibration in the blocks, or a budget with eps < 1",
        )
    first = own[joint.blocks[0]]
    m = sum(model.answers for model in own.values())
    F, noises, rows, at, offset = [], [], {}, 0, 0.0
    for n, model in own.items():
        s = math.sqrt(weights[n])
        F.append(s * model.F)
        rows[n] = slice(at, at + model.answers)
        for k in model.noises:
            G = np.zeros((m, k.size))
            G[rows[n]] = s * k.G
            noises.append(Noise(f"{n}.{k.name}", k.size, k.correlated, G, k.span))
        offset += weights[n] * model.objective.offset
        at += model.answers
    names = ", ".join(joint.blocks)
    requirement = DPRequirement(
        first.input.name,
        f"({names})",
        joint.eps,
        joint.delta,
        calibration,
        joint.span,
        f"dp({names}) <= ({joint.eps:g}, {joint.delta:g})",
    )
    objective = NoiseObjective("minimize", c.objective.text or "", offset)
    model = NoiseModel(first.input, f"({names})", np.vstack(F), tuple(noises), requirement, objective)
    return model, {n: (own[n], rows[n]) for n in own}


def _solve_joint(c, joint, weights: dict[str, float], options: dict):
    """The joint program at (joint.eps, joint.delta) solved and verified by the noise method:
    (model, parts, covariances, verification, backend label)."""
    model, parts = joint_model(c, joint, weights)
    backend = get_backend("cvxpy", options.get("solver"))
    cov, _sol, verification = solve_verified(model, lower_noise(model), backend, options.get("time_limit"))
    return model, parts, cov, verification, backend.label


def block_values(parts: dict, cov: dict) -> dict[str, float]:
    """Each block's expected squared error at the joint optimum, in its own units (unweighted):
    ``o_b + sum_k tr(G_k' G_k Sigma_k)``."""
    values = {}
    for n, (own, _rows) in parts.items():
        total = own.objective.offset
        for k in own.noises:
            S = cov[f"{n}.{k.name}"]
            GG = k.G.T @ k.G
            total += float(np.sum(np.diag(GG) * S)) if S.ndim == 1 else float(np.trace(GG @ S))
        values[n] = total
    return values


def solve(c, options: dict) -> CompositeResult:
    """The joint program solved and certified, the certified best split and the even split beside
    it; with accuracy targets on its blocks, ``least_budget`` (the group's eps chosen) or
    ``with_targets`` (the targets as rows of the joint program)."""
    if c.joint.var is not None:
        return least_budget(c, options)
    if c.targets:
        return with_targets(c, options)
    t0 = time.perf_counter()
    joint = c.joint
    weights = group_weights(c, joint)
    model, parts, cov, verification, label = _solve_joint(c, joint, weights, options)
    loss = verification["objective"]
    record = dual_record(joint.eps, joint.delta, weights, verification)
    lower = proven_bound(c, joint, record)
    part = _Part(f"joint conic ({label})", verification, cov)
    values = block_values(parts, cov)
    answers = {
        n: BlockAnswer(_params(c.blocks[n], joint.eps, joint.delta), values[n], "optimal", None, part) for n in parts
    }
    objective = c.objective.const + loss
    bound = c.objective.const + lower
    # each block alone at (eps, delta): its value curve in its own budget (module docstring)
    B = len(joint.blocks)
    alone = {}
    for n in joint.blocks:
        block = c.blocks[n]
        r = c.load_block(block.spec, _params(block, joint.eps, joint.delta)).solve(**options)
        if r.status != "optimal":
            raise SpecError(
                f"block '{n}' alone at ({joint.eps:g}, {joint.delta:g}) is {r.status}: no split to compare with",
                joint.span,
                "; ".join(r.reasons) or "check the block on its own",
            )
        off = parts[n][0].objective.offset
        alone[n] = (float(r.objective) - off, float(r.verification["evidence"]["bound"]) - off, off)
    even = c.objective.const + math.fsum(weights[n] * (B * up + off) for n, (up, _, off) in alone.items())
    split, split_lower = best_split(joint, model.requirement.calibration, weights, alone)
    passed = bool(verification["passed"])
    split_value = c.objective.const + split.objective
    tol = 1e-9 * max(1.0, abs(split_value))
    why = f"the joint program did not verify: {'; '.join(verification['failures'])}"
    result = _joint_result(c, t0, METHOD, objective if passed else None, bound, answers, 1 + B, why)
    result.even_split = {"objective": even if math.isfinite(even) else None}
    result.optimality |= {
        "joint_dual": record,
        "split_objective": split_value if math.isfinite(split_value) else None,
        "split_lower_bound": c.objective.const + split_lower if math.isfinite(split_lower) else None,
        "split_gap": relative_gap(split_value, c.objective.const + split_lower),
        "split_eps": dict(zip(joint.blocks, split.shares)),
    }
    checks = [
        ("the joint Gaussian program verified (Sigma, sensitivities, delta achieved, dual bound)", passed),
        (
            f"max sensitivity {verification['max_sensitivity']:.12g} <= {verification['sensitivity_ceiling']:.12g} "
            f"allowed by ({joint.eps:g}, {joint.delta:g})",
            verification["max_sensitivity"] <= verification["sensitivity_ceiling"],
        ),
        (
            f"joint {objective:.12g} <= best split {split_value:.12g} (never worse)",
            objective <= split_value + tol,
        ),
    ]
    result.verification = {
        "passed": all(ok for _, ok in checks),
        "checks": [{"check": t, "passed": ok} for t, ok in checks],
    }
    return result


def best_split(joint, calibration: str, weights: dict[str, float], alone: dict) -> tuple[Split, float]:
    """The best split of eps between the blocks solved apart under basic composition (delta
    split evenly, as ``dp(...)`` does for other blocks), and a proven lower bound on it.

    Block b alone with the sensitivity bound ``D`` has the optimal value ``N_b (D0 / D)^2 + o_b``
    exactly (homogeneity; ``N_b`` its noise part at ``D0``, the bound at (eps, delta)), so its
    value at ``eps_b`` is that at ``D = max_sensitivity(eps_b, delta / B)``: nonincreasing in
    eps_b. ``split.split`` certifies the split over these curves; the blocks' proven lower bounds
    (their dual bounds' noise parts ``N_lb <= N``, ``o_b >= 0``) give curves at least ``min_b
    N_lb / N`` times these, so that factor times the split's lower bound is proven."""
    B = len(joint.blocks)
    d0 = max_sensitivity(joint.eps, joint.delta, calibration)
    share = joint.delta / B

    def term(n: str, noise: float) -> Term:
        off = alone[n][2]

        def g(eps: float) -> float:
            d = max_sensitivity(eps, share, calibration) if eps > 0 else 0.0
            return weights[n] * (noise * (d0 / d) ** 2 + off) if d > 0 else math.inf

        return Term(g, joint.eps)

    upper = split([term(n, alone[n][0]) for n in joint.blocks], joint.eps, rtol=RTOL, max_calls=SPLIT_CALLS)
    # the curves of the proven bounds are at least ratio times these (N_lb = ratio N, o_b >= 0)
    ratio = min(max(lb, 0.0) / up if up > 0 else 1.0 for up, lb, _ in alone.values())
    return upper, min(ratio * upper.lower_bound, upper.objective)


# ---------------------------------------------------------------- a joint group beside other blocks

CLASSIC_EPS_MAX = 1.0  # the classic calibration is proven for eps < 1 (Dwork & Roth, Thm A.1)


@dataclasses.dataclass(frozen=True)
class GroupCurve:
    """A joint group's weighted value as a function of its eps share y (delta fixed at the
    group's share of the row), from one verified joint solve at ``eps_ref``. Every constraint of
    the noise program is homogeneous (Sigma scaled by ``s^2`` divides each Mahalanobis sensitivity
    by ``s``), so with ``D(y) = max_sensitivity(y, delta)`` and ``r(y) = (D(eps_ref) / D(y))^2``:

        value(y) = N r(y) + o          (the joint optimum at y: N its noise part, o its noiseless part)
        bound(y) = A + P / mu_hi(y)^2  (proven: ``dual_curve`` of the solve's dual point, ``curve``)

    Both are nonincreasing in y (D grows with eps). Under the classic calibration ``r(y) =
    (eps_ref / y)^2``: the group's value is ``k / y^2`` plus its noiseless part, the closed form.
    Each point carries its ``groupcells.GroupDual`` (the same dual point for all), so the split
    bounds its cells at second order."""

    noise: float
    offset: float
    d_ref: float
    delta: float
    calibration: str
    width: float
    record: dict | None
    curve: tuple[float, float]
    group: object

    def ratio(self, eps: float) -> float:
        d = mu_bounds(eps, self.delta, self.calibration)[0] if eps >= 0 else 0.0
        return (self.d_ref / d) ** 2 if d > 0 else math.inf

    def value(self, eps: float) -> float:
        return self.noise * self.ratio(eps) + self.offset

    def point(self, c, eps: float) -> tuple[float, float, GroupDual | None]:
        """(value, proven bound, certificate) at eps (``point_dual``; no certificate: the bound
        is the value when that is inf, a failed solve, else nothing is proven)."""
        value = self.value(eps)
        dual = point_dual(c, self.group, self.record, eps, value, self.curve) if math.isfinite(value) else None
        if dual is None:
            return value, value if not math.isfinite(value) else -math.inf, None
        return value, dual.bound, dual

    def term(self, c) -> Term:
        """The group as one term of its row's split: its proven bound as the value curve, so that
        the split's lower bound is proven; the answer is the joint program solved again at the
        split's eps (``answer``), so the reported values are achieved."""
        return Term(lambda y: self.point(c, y), self.width, cheap=True)

    def capped(self, c) -> Term:
        """A group of one (``Model.noise_group``) with upper targets ``a.objective <= T`` as its
        term: the targets do not scale, but one block's program with its own loss capped is the
        program itself where its optimum meets the cap and infeasible elsewhere, so its term is
        ``value(y)`` where ``value(y) <= w T`` (less ``TARGET_MARGIN``, so the block solved again at
        the split's eps still meets it), +inf elsewhere with the point's proven bound kept; below
        the proven least share ``_least_bound`` (from this curve's own dual record: one block's
        ``rho* = N / (T - o)`` exactly) the term is (inf, inf), proven, the least share recorded with
        each point's certificate for ``privopt verify`` (``GroupProofs``)."""
        (n,) = self.group.blocks
        cap = group_weights(c, self.group)[n] * _targets(c, self.group)[n]
        least = (_least_bound(c, self.group, self.record), self.record) if self.record is not None else None
        top = cap - TARGET_MARGIN * abs(cap)

        def g(y: float) -> tuple:
            if least is not None and y < least[0]:
                return math.inf, math.inf
            value, bound, dual = self.point(c, y)
            if dual is not None and least is not None:
                dual = dataclasses.replace(dual, least=least)
            return (value if value <= top else math.inf), bound, dual

        return Term(g, self.width, cheap=True)


def group_curve(c, group, options: dict, cache: dict, room: float) -> GroupCurve:
    """The group's curve (``GroupCurve``) on ``[0, room]`` (at most ``CLASSIC_EPS_MAX`` under the
    classic calibration, where it is proven), memoized in ``cache``."""
    key = ("curve", group.blocks)
    if key not in cache:
        classic = any(c.blocks[n].budget.calibration == "classic" for n in group.blocks)
        width = min(room, CLASSIC_EPS_MAX) if classic else room
        joint = dataclasses.replace(group, eps=width / 2)
        weights = group_weights(c, group)
        model, _parts, _cov, verification, _label = _solve_joint(c, joint, weights, options)
        calibration = model.requirement.calibration
        off = model.objective.offset
        noise = verification["objective"] - off if verification["passed"] else math.inf
        record = dual_record(joint.eps, group.delta, weights, verification)
        d_ref = max_sensitivity(joint.eps, group.delta, calibration)
        cache[key] = GroupCurve(
            noise, off, d_ref, group.delta, calibration, width, record, dual_curve(c, group, record), group
        )
    return cache[key]


def route(c, name: str) -> str:
    """How ``explain`` says a block is solved: by its own route, or in its joint group's program."""
    group = c.group_of(name)
    sign = 1.0 if c.sense == "minimize" else -1.0
    priced = sign * c.objective.coefs.get(f"{name}.objective", 0.0) > 0
    below = any(t.block == name and t.op != "<=" for t in c.targets)
    if group is None and c.noise_group(name) is not None and priced and not below:  # ``solve._noise_term``
        return (
            "priced in a split by one verified noise program scaled by the calibration (exact: its loss is "
            "homogeneous in Sigma), solved by its own route at its budget"
        )
    if group is None:
        return "solved by its own route at each point"
    if c.choice and any(n in group.blocks for n in c.choice):
        return "solved in each branch's joint Gaussian program with the blocks that branch releases"
    if c.joint is None and group.var is not None:  # accuracy first over a row (``least``): its least eps by scaling
        return f"with {' + '.join(group.blocks)}: its least eps by one minimax joint Gaussian program, scaled exactly"
    rows = " with its targets as rows" if c.joint is None and has_targets(c, group) else ""
    return f"solved with {' + '.join(group.blocks)} as one joint Gaussian program{rows} at each eps of the group"


def answer(c, name: str, params: dict[str, float], options: dict, cache: dict) -> BlockAnswer:
    """Block ``name`` of a joint group at the group's eps (``params``): its own expected squared
    error at the joint optimum there, the joint program solved and verified once per eps
    (memoized in ``cache``)."""
    group = c.group_of(name)
    eps = params[c.blocks[name].budget.eps]
    key = ("joint", group.blocks, eps)
    if key not in cache:
        cache[key] = _group_answers(c, group, eps, options)
    return cache[key][name]


def _group_answers(c, group, eps: float, options: dict) -> dict[str, BlockAnswer]:
    params = {n: _params(c.blocks[n], eps, group.delta) for n in group.blocks}
    classic = any(c.blocks[n].budget.calibration == "classic" for n in group.blocks)
    why = None
    if eps <= 0:
        why = "a Gaussian mechanism with eps = 0 releases nothing useful here (no positive sensitivity)"
    elif classic and not classic_is_private(eps, group.delta)[0]:
        why = f"the classic calibration does not give ({eps:g}, {group.delta:g})-DP"
    if why is not None:
        return {n: BlockAnswer(params[n], None, "infeasible", why, None) for n in group.blocks}
    if has_targets(c, group):  # the targets as rows of the joint program (``target_term``)
        return _target_point(c, group, eps, options).answers
    joint = dataclasses.replace(group, eps=eps)
    _model, parts, cov, verification, label = _solve_joint(c, joint, group_weights(c, group), options)
    part = _Part(f"joint conic ({label}) with {', '.join(group.blocks)}", verification, cov)
    if not verification["passed"]:
        why = f"the joint program did not verify: {'; '.join(verification['failures'])}"
        return {n: BlockAnswer(params[n], None, "unverified", why, part) for n in group.blocks}
    values = block_values(parts, cov)
    return {n: BlockAnswer(params[n], values[n], "optimal", None, part) for n in group.blocks}


def split_row(c, oracle, row, row_vars: list, room: float, single, max_calls: int) -> Split:
    """A composition row with joint Gaussian groups (basic composition between its mechanisms):
    each group is one term of ``split.split`` over its eps share y (its blocks' variables all
    equal y, each with coefficient ``1 / |group|`` in the row, so the group spends y once); every
    other variable is its own term (``single``, the caller's). The shares come back per
    variable, in ``row_vars``' order, as ``split`` gives them (``coef * x``)."""
    units: list[tuple[list, Term]] = []
    index: dict[tuple, int] = {}
    for v in row_vars:
        g = c.group_of(v.block)
        if g is None:
            units.append(([v], single(v)))
        elif g.blocks in index:
            units[index[g.blocks]][0].append(v)
        else:
            index[g.blocks] = len(units)
            curve = None if has_targets(c, g) else group_curve(c, g, oracle.options, oracle.cache, room)
            units.append(
                ([v], target_term(c, g, oracle.options, oracle.cache, room) if curve is None else curve.term(c))
            )
    terms = [t for _, t in units]
    if room == 0:
        pairs = [oracle_pair(t.oracle(0.0), 0.0) for t in terms]
        values = [value for value, _ in pairs]
        s = Split(
            tuple(0.0 for _ in terms), tuple(values), math.fsum(values), math.fsum(b for _, b in pairs), len(terms)
        )
    else:
        s = split(terms, room, rtol=RTOL, max_calls=max_calls * len(terms))
    shares, values = {}, {}
    for (vs, _), y, value in zip(units, s.shares, s.values):
        grouped = c.group_of(vs[0].block) is not None
        for i, v in enumerate(vs):
            shares[v.key] = y * row.coefs[v.key] if grouped else y
            values[v.key] = value if i == 0 else 0.0
    keys = [v.key for v in row_vars]
    return Split(
        tuple(shares[k] for k in keys),
        tuple(values[k] for k in keys),
        s.objective,
        s.lower_bound,
        s.calls,
        s.points,
        multiplier=s.multiplier,
        duals=s.duals,
        certs=s.certs,
    )


# ---------------------------------------------------------------- accuracy targets on a joint group

TARGET_MARGIN = 1e-8  # a target row is asked of the solve this much (relative) tighter, so the point
# cleaned to exact privacy (its noise scaled up by at most a few ulps) still meets it
SCALE_MARGIN = 1e-12  # the least-eps answer's noise is scaled this much (relative) below its targets


def dual_record(eps: float, delta: float, weights: dict[str, float], verification: dict) -> dict | None:
    """What ``proven_bound`` (and ``privopt verify``) re-derives a joint program's lower bound
    from: the (eps, delta) and block weights it was solved at, and its Lagrange dual point (Y, mu)
    (``methods.conic.best_dual``); None when the solve gave no point."""
    point = verification.get("evidence", {}).get("dual_point")
    if not verification.get("passed") or point is None:
        return None
    return {"eps": eps, "delta": delta, "weights": dict(weights), "Y": point["Y"], "mu": point["mu"]}


def _dual_parts(c, group, record: dict) -> tuple[float, float, float, NoiseModel, dict]:
    """The weighted joint program the record was solved at, rebuilt, and its recorded dual point's
    bound there: (``ConicProgram.dual_bound(Y, mu)``, weak duality made feasible by a rescaling;
    -inf for a point of the wrong shape), the program's noiseless part, the sensitivity bound
    it was lowered at, its model, its parts."""
    joint = dataclasses.replace(group, eps=float(record["eps"]), delta=float(record["delta"]))
    model, parts = joint_model(c, joint, {n: float(record["weights"][n]) for n in group.blocks})
    program = lower_noise(model)
    Y, mu = np.asarray(record["Y"], dtype=float), np.asarray(record["mu"], dtype=float)
    if Y.ndim != 2 or mu.shape != (Y.shape[0],) or Y.shape[0] != program.F.shape[1]:
        return -math.inf, program.offset, program.sensitivity_bound, model, parts
    return program.dual_bound(Y, mu), program.offset, program.sensitivity_bound, model, parts


def _program_bound(c, group, record: dict) -> tuple[float, NoiseModel, dict]:
    """(the weighted joint program's proven lower bound at the recorded dual point, its model, its
    parts): ``_dual_parts``' bound, then, like ``verification.problems.verify_noise``, times
    ``(bound / ceiling)^2`` when the lowering's sensitivity bound is below the ceiling proven from
    (eps, delta) (every constraint homogeneous)."""
    lb, offset, bound, model, parts = _dual_parts(c, group, record)
    req = model.requirement
    ceiling = sensitivity_ceiling(req.eps, req.delta, req.calibration, bound)
    shrink = (bound / ceiling) ** 2 if ceiling > 0 and math.isfinite(ceiling) else 0.0
    return (offset + (lb - offset) * shrink if lb > offset else lb), model, parts


def _target_shift(c, group, record: dict) -> float | None:
    """``sum_{k_a > 0} k_a T_a - sum_{k_a < 0} |k_a| S_a`` (``proven_bound``), the targets' part of
    a bound with multipliers ``k = w' - w``; None when a multiplier has no target of its sign."""
    upper, lower = _targets(c, group), _floors(c, group)
    own = group_weights(c, group)
    k = {n: float(record["weights"][n]) - own[n] for n in group.blocks}
    if any((v > 0 and n not in upper) or (v < 0 and n not in lower) for n, v in k.items()):
        return None
    return math.fsum(v * upper[n] if v > 0 else v * lower[n] for n, v in k.items() if v != 0)


def dual_curve(c, group, record: dict | None) -> tuple[float, float]:
    """``(A, P)``: the group's term (its targets as rows, if any) is at least ``A + P / s`` at every
    allowed squared sensitivity ``s > 0`` (``groupcells`` module docstring): ``P = max(L - o', 0)
    D_b^2`` from the recorded dual point's bound ``L`` at the lowering's sensitivity ``D_b`` (the
    program's noise part scales as ``1 / s``), ``A = o' - _target_shift``. ``proven_bound`` is
    ``A + P / C^2``, C the ceiling at the record's eps. ``(-inf, 0)`` when nothing is proven."""
    if record is None:
        return -math.inf, 0.0
    lb, offset, bound, _model, _parts = _dual_parts(c, group, record)
    shift = _target_shift(c, group, record)
    if shift is None or not lb > -math.inf:
        return -math.inf, 0.0
    return offset - shift, max(lb - offset, 0.0) * bound * bound


def calibration_of(c, group) -> str:
    """The group's calibration (``joint_model`` refuses a mix): classic when its blocks ask for it."""
    return "classic" if any(c.blocks[n].budget.calibration == "classic" for n in group.blocks) else "analytic"


def point_dual(c, group, record: dict | None, eps: float, cap: float, curve=None) -> GroupDual | None:
    """The group's certificate at eps (``groupcells.GroupDual``) from a dual record (or its
    ``dual_curve`` already computed, ``curve``): ``B = A + P / mu_hi^2`` (at most ``cap``, the
    point's verified value), ``lam = P / mu_hi^4``; None when the record proves nothing."""
    A, P = dual_curve(c, group, record) if curve is None else curve
    calibration = calibration_of(c, group)
    lo, hi = mu_bounds(eps, group.delta, calibration)
    if record is None or not (math.isfinite(A) and lo > 0 and math.isfinite(hi)):
        return None
    s1 = hi * hi
    return GroupDual(eps, group.delta, calibration, min(A + P / s1, cap), P / (s1 * s1), (lo, hi), record)


def proven_bound(c, group, record: dict | None) -> float:
    """The composite's proven lower bound (without its constant) from a ``dual_record``:

    * the joint program (``solve``): its dual bound ``L(w)``;
    * targets ``L_a <= T_a`` and ``L_a >= S_a`` as rows (``with_targets``; each ``L_a`` is linear in
      the covariance): for multipliers ``k_a = w'_a - w_a`` (the record's weights ``w' >= 0`` less
      the objective's ``w``; ``k_a > 0`` prices an upper target, ``k_a < 0`` a lower one), weak
      duality gives ``min sum_b w_b L_b >= L(w') - sum_{k_a > 0} k_a T_a + sum_{k_a < 0} |k_a| S_a``;
    * the least eps (``least_budget``): ``_least_bound``.

    -inf when nothing is proven (no record, a multiplier without its target, a bad point)."""
    if record is None:
        return -math.inf
    if group.var is not None:
        return _least_bound(c, group, record)
    lb, _model, _parts = _program_bound(c, group, record)
    shift = _target_shift(c, group, record)
    return -math.inf if shift is None else lb - shift


def _least_bound(c, group, record: dict) -> float:
    """A proven lower end of the least eps at which every target ``L_b <= T_b`` on the group's
    blocks holds (``record``: a certified joint program over those blocks at ``D_ref``, weights
    ``w >= 0``). Every target met at the reference sensitivity ``D_ref`` scaled to ``D`` needs
    ``D >= D_ref sqrt(rho*)``, ``rho* = min_Sigma max_b N_b / (T_b - o_b)`` (``N_b`` block b's noise
    part, ``o_b`` its noiseless part), and ``rho* >= sum_b w_b N_b / sum_b w_b (T_b - o_b) >= (L(w) -
    sum_b w_b o_b) / sum_b w_b (T_b - o_b)``; the bound is the lower end of ``least_eps`` at ``D_ref
    sqrt(rho_lb)``. Blocks of the group without a target may be left out of the record: their
    noise then costs nothing, a relaxation (``_least_proven``)."""
    blocks = tuple(record["weights"])
    sub = dataclasses.replace(group, blocks=blocks)
    lb, model, parts = _program_bound(c, sub, record)
    targets = _targets(c, group)
    if any(n not in targets for n in blocks):
        return 0.0
    weights = {n: float(record["weights"][n]) for n in blocks}
    room = math.fsum(weights[n] * (targets[n] - parts[n][0].objective.offset) for n in blocks)
    rho = (lb - model.objective.offset) / room if room > 0 else -math.inf
    if not rho > 0:
        return 0.0
    d_ref = max_sensitivity(model.requirement.eps, model.requirement.delta, model.requirement.calibration)
    return least_eps(d_ref * math.sqrt(rho), group.delta, model.requirement.calibration)[0]


def _targets(c, group) -> dict[str, float]:
    """Each block's least upper target ``a.objective <= T``."""
    out: dict[str, float] = {}
    for t in c.targets:
        if t.block in group.blocks and t.op == "<=":
            out[t.block] = min(out.get(t.block, math.inf), t.bound)
    return out


def _floors(c, group) -> dict[str, float]:
    """Each block's greatest lower target ``a.objective >= S``."""
    out: dict[str, float] = {}
    for t in c.targets:
        if t.block in group.blocks and t.op == ">=":
            out[t.block] = max(out.get(t.block, -math.inf), t.bound)
    return out


def has_targets(c, group) -> bool:
    """An accuracy target bounds a block of the group (from above or below)."""
    return any(t.block in group.blocks for t in c.targets)


def least_eps(d: float, delta: float, calibration: str) -> tuple[float, float]:
    """``(lo, hi)``: the least eps whose largest sensitivity at delta (``max_sensitivity``,
    nondecreasing in eps) reaches ``d`` lies in ``(lo, hi]``: ``D(lo) < d <= D(hi)`` as computed,
    ``hi - lo <= 2^-44 hi`` by bisection; ``(0, 0)`` when eps = 0 reaches it, ``(inf, inf)`` when
    no eps up to 2^40 does."""
    if max_sensitivity(0.0, delta, calibration) >= d:
        return 0.0, 0.0
    hi = 1.0
    while max_sensitivity(hi, delta, calibration) < d:
        hi *= 2.0
        if hi > 2.0**40:
            return math.inf, math.inf
    lo = 0.0
    while hi - lo > 2.0**-44 * hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if max_sensitivity(mid, delta, calibration) >= d else (mid, hi)
    return lo, hi


def _traces(program, variables: dict) -> dict:
    """Each block's part of the joint program's cost (scaled units; its noises are named
    ``block.noise``): ``sum_i |g_i|^2 s_i`` or ``tr(G'G C)``."""
    import cvxpy as cp

    out: dict = {}
    for b in program.blocks:
        v = variables[b.name]
        term = b.weights @ v if not b.correlated else cp.trace((b.G.T @ b.G) @ v)
        n = b.name.partition(".")[0]
        out[n] = out[n] + term if n in out else term
    return out


def _with_rows(model: NoiseModel, caps: dict[str, float] | None, floors: dict[str, float] | None = None):
    """The joint program with rows on its blocks' costs ``C_b = w_b N_b`` (real units), solved by
    cvxpy (Clarabel, tolerances 1e-10), its point cleaned to exact privacy
    (``ConicProgram.clean``): ``caps`` None: minimize r subject to ``C_b <= r`` for every block
    (the minimax of ``least_budget``); else minimize ``sum_b C_b`` subject to ``C_a <= caps[a]``
    and ``C_a >= floors[a]`` (cleaning only adds noise, so a floor met stays met).
    (program, cleaned (co)variances or None, each row's multiplier in real units (a floor's
    negative), the solver's status)."""
    import cvxpy as cp

    from .. import solverlog

    program = lower_noise(model)
    problem, variables, _named = program.to_cvxpy()
    traces = _traces(program, variables)
    if caps is None:
        r = cp.Variable()
        rows = {n: traces[n] <= r for n in traces}
        objective = cp.Minimize(r)
    else:
        rows = {n: traces[n] <= cap / program.unit for n, cap in caps.items()}
        objective = problem.objective
    below = {n: traces[n] >= floor / program.unit for n, floor in (floors or {}).items()}
    p = cp.Problem(objective, [*problem.constraints, *rows.values(), *below.values()])
    try:
        with solverlog.captured():
            p.solve(solver="CLARABEL", tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    except cp.error.SolverError as e:
        return program, None, {}, f"solver error: {e}"
    if p.status not in ("optimal", "optimal_inaccurate"):
        return program, None, {}, p.status
    raw = {b.name: np.asarray(variables[b.name].value, dtype=float) for b in program.blocks}
    multipliers = {n: max(float(row.dual_value), 0.0) for n, row in rows.items()}
    for n, row in below.items():
        multipliers[n] = multipliers.get(n, 0.0) - max(float(row.dual_value), 0.0)
    return program, program.clean(model, program.real(raw)), multipliers, p.status


def _answers(c, group, eps: float, parts: dict, cov: dict, verification: dict, label: str) -> dict:
    part = _Part(label, verification, cov)
    values = block_values(parts, cov)
    status = "optimal" if verification["passed"] else "unverified"
    return {n: BlockAnswer(_params(c.blocks[n], eps, group.delta), values[n], status, None, part) for n in parts}


def _targets_hold(c, group, values: dict[str, float]) -> bool:
    """Every target on the group's blocks holds at their values (``CompositeResult`` lists each)."""
    up, down = _targets(c, group), _floors(c, group)
    return all(values[n] <= b for n, b in up.items()) and all(values[n] >= b for n, b in down.items())


def _finish(c, result: CompositeResult, record: dict | None, checks: list[tuple[str, bool]]) -> CompositeResult:
    result.optimality["joint_dual"] = record
    result.verification = {
        "passed": result.verification["passed"] and all(ok for _, ok in checks),
        "checks": result.verification["checks"] + [{"check": t, "passed": ok} for t, ok in checks],
    }
    return result


@dataclasses.dataclass(frozen=True)
class _TargetPoint:
    """The joint program with the targets as rows at one eps: the blocks' answers, the weighted
    objective ``sum_b w_b L_b`` at the verified point (inf when there is none), its proven lower
    bound (``proven_bound``), the dual record, and the checks that hold or fail."""

    answers: dict
    value: float
    bound: float
    record: dict | None
    checks: list
    why: str | None


def _target_point(c, group, eps: float, options: dict) -> _TargetPoint:
    """The targets' program at the group's eps (``with_targets``, module docstring): the point
    solved with the rows (``_with_rows``) and verified; the bound from the rows' multipliers moved
    into the weights (``w'_a = w_a (1 + k_a)``, kept positive: any ``w' >= 0`` gives a bound) of a
    joint program solved and certified on its own. When the rows admit no point here, the bound is
    the joint program's without the rows (a relaxation)."""
    g = dataclasses.replace(group, eps=eps)
    weights = group_weights(c, g)
    model, parts = joint_model(c, g, weights)
    off = {n: parts[n][0].objective.offset for n in g.blocks}
    caps = {n: weights[n] * (T - off[n]) * (1 - TARGET_MARGIN) for n, T in _targets(c, g).items()}
    floors = {n: weights[n] * (S - off[n]) * (1 + TARGET_MARGIN) for n, S in _floors(c, g).items() if S > off[n]}
    params = {n: _params(c.blocks[n], eps, g.delta) for n in g.blocks}
    if any(cap <= 0 for cap in caps.values()):
        why = "a target is at or below its block's noiseless part: no noise meets it"
        return _TargetPoint(_failed(params, "infeasible", why), math.inf, math.inf, None, [], why)
    program, cov, k, status = _with_rows(model, caps, floors)
    if cov is None:
        why = f"the joint program with the targets as rows is {status} at ({eps:g}, {g.delta:g})"
        _m, _p, _cov, certified, _label = _solve_joint(c, g, weights, options)
        bound = proven_bound(c, g, dual_record(eps, g.delta, weights, certified))
        return _TargetPoint(_failed(params, "infeasible", why), math.inf, bound, None, [], why)
    verification = conic_verify(model, cov, program, None, certify=False)
    # the multipliers of the rows on C_a = w_a N_a: k_a (real) per unit of C_a, so w_a k_a per unit of L_a
    bound_weights = {n: weights[n] * max(1.0 + k.get(n, 0.0), 1e-9) for n in g.blocks}
    _m, _p, _cov, certified, label = _solve_joint(c, g, bound_weights, options)
    record = dual_record(eps, g.delta, bound_weights, certified)
    answers = _answers(c, g, eps, parts, cov, verification, f"joint conic with targets ({label})")
    values = {n: a.value for n, a in answers.items()}
    checks = [("the joint point verified (Sigma, sensitivities, delta achieved)", bool(verification["passed"]))]
    passed = bool(verification["passed"]) and _targets_hold(c, g, values)
    value = math.fsum(weights[n] * values[n] for n in g.blocks) if passed else math.inf
    why = None if passed else "the point fails a check or a target (verification lists them)"
    return _TargetPoint(answers, value, proven_bound(c, g, record), record, checks, why)


def _failed(params: dict, status: str, why: str) -> dict[str, BlockAnswer]:
    return {n: BlockAnswer(p, None, status, why, None) for n, p in params.items()}


def target_term(c, group, options: dict, cache: dict, room: float) -> Term:
    """A group with accuracy targets as one term of its row's split (``split_row``): the targets
    do not scale with the noise, so its value is no longer an exactly scaled curve. It is an
    oracle term like an LP block's: at each eps share ``y`` the targets' joint program
    (``_target_point``: its verified value, its proven dual bound), nonincreasing in ``y`` (a
    point private at ``y`` is private at every larger eps, and the targets do not move), with the
    point's certificate (``point_dual``: its dual point bounds the cells beside it at second
    order, ``groupcells``; the proven least share rides along for ``privopt verify``). Below the
    proven least eps ``t_l`` meeting the upper targets (``_least_proven``) no point exists: the
    term is ``(inf, inf)`` there, proven. The blocks' answers at ``y`` are memoized in ``cache``
    for ``answer``."""
    classic = any(c.blocks[n].budget.calibration == "classic" for n in group.blocks)
    width = min(room, CLASSIC_EPS_MAX) if classic else room

    def proof() -> tuple[float, dict | None]:
        key = ("least", group.blocks)
        if key not in cache:
            cache[key] = _least_proven(c, group, min(width, CLASSIC_EPS_MAX / 2) if classic else width, options)
        return cache[key]

    def least() -> float:
        return proof()[0]

    def g(y: float) -> tuple:
        key = ("joint", group.blocks, y)
        if y < least():
            params = {n: _params(c.blocks[n], y, group.delta) for n in group.blocks}
            why = f"the targets need the group's eps >= {least():.9g} (proven)"
            if least() == math.inf:
                why = "a target is at or below its block's noiseless part: no noise meets it"
            cache[key] = _failed(params, "infeasible", why)
            return math.inf, math.inf
        if y <= 0 or (classic and not classic_is_private(y, group.delta)[0]):
            cache.setdefault(key, _group_answers(c, group, y, options))
            return math.inf, math.inf
        at = _target_point(c, group, y, options)
        cache[key] = at.answers
        dual = point_dual(c, group, at.record, y, at.value)
        if dual is not None and proof()[1] is not None:  # the proven least share, recorded with the term
            dual = dataclasses.replace(dual, least=proof())
        return at.value, min(at.bound, at.value), dual

    return Term(g, width)


def _least_proven(c, group, eps_ref: float, options: dict) -> tuple[float, dict | None]:
    """A proven lower end of the least eps at which the group's upper targets can hold (0 when
    none is proven): ``_least_bound`` over the blocks with a target (the others' noise left free, a
    relaxation), from the minimax of ``least_budget`` at ``eps_ref``; inf when a target is at or
    below its block's noiseless part (no noise meets it at any eps). With it, the dual record it is
    re-derived from (``_least_bound``; None for 0 and inf)."""
    targets = _targets(c, group)
    if not targets or not eps_ref > 0:
        return 0.0, None
    sub = dataclasses.replace(group, blocks=tuple(n for n in group.blocks if n in targets), eps=eps_ref)
    _m, parts = joint_model(c, sub, dict.fromkeys(sub.blocks, 1.0))
    room = {n: targets[n] - parts[n][0].objective.offset for n in sub.blocks}
    if any(r <= 0 for r in room.values()):
        return math.inf, None
    model, _parts = joint_model(c, sub, {n: 1.0 / room[n] for n in sub.blocks})
    _program, cov, mu, _status = _with_rows(model, None)
    if cov is None:
        return 0.0, None
    weights = {n: max(mu.get(n, 0.0), 1e-12) / room[n] for n in sub.blocks}
    _m, _p, _cov, certified, _label = _solve_joint(c, sub, weights, options)
    record = dual_record(eps_ref, group.delta, weights, certified)
    return (0.0, None) if record is None else (_least_bound(c, group, record), record)


def with_targets(c, options: dict) -> CompositeResult:
    """The joint program with each target ``L_a <= T_a`` (or ``L_a >= S_a``) on a member block as
    a row over the joint noise (``_target_point``; the targets do not scale with the noise, so the
    program is no longer homogeneous: this is the feasibility-and-cost program itself, convex, each
    ``L_a`` linear in the covariance), its point verified (privacy, every target), and its lower
    bound ``proven_bound``."""
    t0 = time.perf_counter()
    g = c.joint
    at = _target_point(c, g, g.eps, options)
    if at.record is None and not math.isfinite(at.value):
        return _refused(c, t0, at.why)
    const = c.objective.const
    objective = const + at.value if math.isfinite(at.value) else None
    result = _joint_result(c, t0, METHOD_TARGETS, objective, const + at.bound, at.answers, 2, at.why)
    return _finish(c, result, at.record, at.checks)


def least_budget(c, options: dict) -> CompositeResult:
    """Accuracy first over one joint group, ``dp(a, b) <= (t, delta)``, ``minimize t``, every
    block ``L_b <= T_b``: the least t (``least_point`` over t's range)."""
    t0 = time.perf_counter()
    g = c.joint
    var = c.vars[g.var]
    const = c.objective.const
    at = least_point(c, g, var.lo, var.hi, options)
    if at.answers is None:
        return _refused(c, t0, at.why)
    objective = const + at.hi if at.passed else None
    result = _joint_result(c, t0, METHOD_LEAST, objective, const + at.lo, at.answers, 2, at.why)
    return _finish(c, result, at.record, at.checks)


@dataclasses.dataclass(frozen=True)
class LeastPoint:
    """The least eps of a joint group meeting its upper targets, bracketed: ``lo`` proven (no eps
    below it meets them: ``proven_bound`` of ``record``), ``hi`` achieved (``answers``: the
    blocks at eps ``hi``, verified; ``passed`` when every check and target holds there);
    ``answers`` None when no point was found (``why``)."""

    lo: float
    hi: float
    answers: dict | None
    record: dict | None
    checks: list
    passed: bool
    why: str | None


def least_point(c, g, lo: float, hi: float, options: dict) -> LeastPoint:
    """The least eps in ``[lo, hi]`` at which the group ``g`` (its delta share ``g.delta``) meets
    every upper target on its blocks. Every constraint of the joint program is homogeneous, so one
    program at a reference eps answers for all: at ``D_ref`` the minimax ``rho = min_Sigma max_b
    N_b / (T_b - o_b)`` (``_with_rows``, weights ``1 / (T_b - o_b)``), and the targets hold at
    sensitivity D iff ``D >= D_ref sqrt(rho*)``. The answer: the minimax point (verified, its
    ``rho_u`` recomputed) scaled to ``D(t_u)``, ``t_u`` the upper end of ``least_eps`` at ``D_ref
    sqrt(rho_u)``; the bound: ``proven_bound``'s ``t_l`` from the minimax's multipliers ``mu``, the
    joint program at weights ``mu_b / (T_b - o_b)`` solved and certified."""
    classic = any(c.blocks[n].budget.calibration == "classic" for n in g.blocks)
    eps_ref = min(hi, CLASSIC_EPS_MAX / 2) if classic else hi
    if not eps_ref > 0:
        return LeastPoint(lo, math.inf, None, None, [], False, f"'{g.var}' has no positive value in its range")
    ref = dataclasses.replace(g, eps=eps_ref)
    _model, parts = joint_model(c, ref, group_weights(c, g))
    targets = _targets(c, g)
    room = {n: targets[n] - parts[n][0].objective.offset for n in g.blocks}
    if any(r <= 0 for r in room.values()):
        why = "a target is at or below its block's noiseless part: no budget meets it"
        return LeastPoint(math.inf, math.inf, None, None, [], False, why)
    model, parts = joint_model(c, ref, {n: 1.0 / room[n] for n in g.blocks})
    program, cov, mu, status = _with_rows(model, None)
    if cov is None:
        why = f"the minimax joint program is {status} at the reference eps {eps_ref:g}"
        return LeastPoint(lo, math.inf, None, None, [], False, why)
    ref_check = conic_verify(model, cov, program, None, certify=False)
    values = block_values(parts, cov)
    rho_u = max((values[n] - parts[n][0].objective.offset) / room[n] for n in g.blocks) * (1 + SCALE_MARGIN)
    bound_weights = {n: max(mu.get(n, 0.0), 1e-12) / room[n] for n in g.blocks}
    _m, _p, _cov, certified, label = _solve_joint(c, ref, bound_weights, options)
    record = dual_record(eps_ref, g.delta, bound_weights, certified)
    calibration = model.requirement.calibration
    d_ref = program.sensitivity_bound
    t_u = max(least_eps(d_ref * math.sqrt(rho_u), g.delta, calibration)[1], lo)
    t_l = max(proven_bound(c, g, record), lo)
    if t_u > hi or (classic and not classic_is_private(t_u, g.delta)[0]):
        why = f"the targets need {g.var} >= {t_l:.9g}, beyond its range or the calibration's"
        return LeastPoint(t_l, math.inf, None, record, [], False, why)
    at = dataclasses.replace(g, eps=t_u)
    model_u, parts_u = joint_model(c, at, group_weights(c, g))
    scale = (d_ref / max_sensitivity(t_u, g.delta, calibration)) ** 2
    cov_u = {k: S * scale for k, S in cov.items()}
    verification = conic_verify(model_u, cov_u, lower_noise(model_u), None, certify=False)
    answers = _answers(c, g, t_u, parts_u, cov_u, verification, f"joint conic, least eps by scaling ({label})")
    checks = [
        ("the minimax point verified at the reference eps", bool(ref_check["passed"])),
        (f"the answer verified at {g.var} = {t_u:.12g} (Sigma, sensitivities, delta achieved)", verification["passed"]),
        (f"the proven least {g.var} {t_l:.12g} <= {t_u:.12g}", t_l <= t_u),
    ]
    passed = all(ok for _, ok in checks) and _targets_hold(c, g, {n: a.value for n, a in answers.items()})
    why = None if passed else "the answer fails a check or a target (verification lists them)"
    return LeastPoint(t_l, t_u, answers, record, checks, passed, why)


def _joint_result(
    c, t0: float, method: str, objective: float | None, bound: float, answers: dict, calls: int, why: str
) -> CompositeResult:
    """The composite's answer from one joint program: ``objective`` None when the point failed
    (``why`` is then its reason), its gap from the proven ``bound``."""
    return CompositeResult.build(
        c,
        method=method,
        objective=objective,
        bound=bound,
        # a refusal (no point) keeps gap inf: ``relative_gap(inf, inf)`` is 0, which would claim a
        # proof of infeasibility that a failed solve or an unmet target at one budget is not
        gap=math.inf if objective is None else relative_gap(objective, bound),
        answers=answers,
        active=list(c.blocks),
        choice=None,
        even=None,
        calls=calls,
        seconds=time.perf_counter() - t0,
        reasons=[] if objective is not None else [why],
    )


def _refused(c, t0: float, why: str) -> CompositeResult:
    """An infeasible answer (no point meets the targets), saying why."""
    method = METHOD_LEAST if c.joint.var is not None else METHOD_TARGETS
    return _joint_result(c, t0, method, None, math.inf, {}, 0, why)
