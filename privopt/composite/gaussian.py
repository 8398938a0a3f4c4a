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
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..backends import get_backend
from ..errors import SpecError
from ..lower.noise import lower_noise
from ..measures.gaussian import classic_is_private, max_sensitivity
from ..methods.conic import solve_verified
from ..model.noise import DPRequirement, Noise, NoiseModel, NoiseObjective
from .result import BlockAnswer, CompositeResult
from .split import RTOL, Split, Term, relative_gap, split

SPLIT_CALLS = 4000  # evaluations of the closed-form value curves (no solve each)

METHOD = "joint"
WHY = "Gaussian blocks over one input are one Gaussian mechanism: one conic program, its squared sensitivities add"


@dataclasses.dataclass(frozen=True)
class _Part:
    """What a block's answer in the joint program reports (``CompositeResult`` reads these)."""

    method: str
    verification: dict


def applies(c) -> bool:
    """The composite has a ``dp(...)`` row under the joint Gaussian accountant."""
    return any(r.accountant == "gaussian" for r in c.rows)


def _weights(c, names: list[str]) -> dict[str, float]:
    if c.sense != "minimize":
        raise SpecError(
            "a joint Gaussian program minimizes the blocks' expected squared errors",
            c.objective_span,
            f"write minimize {' + '.join(f'{b}.objective' for b in names)}",
        )
    weights = {}
    for key, coef in c.objective.coefs.items():
        name, _, attr = key.rpartition(".")
        if attr != "objective" or name not in c.blocks:
            raise SpecError(
                f"the objective prices the chosen '{key}': not built yet for the joint Gaussian accountant",
                c.objective_span,
                "the objective of a joint Gaussian program is a weighted sum of the blocks' objectives",
            )
        weights[name] = coef
    for n in names:
        if c.blocks[n].sense != "minimize" or not weights.get(n, 0.0) > 0:
            raise SpecError(
                f"block '{n}' is not weighted by a positive number in the objective: the joint Gaussian program "
                "minimizes a positive sum of the blocks' expected squared errors",
                c.objective_span,
                f"write minimize {' + '.join(f'{b}.objective' for b in names)} (positive weights)",
            )
    for key in weights:
        if key not in names:
            raise SpecError(
                f"block '{key}' is outside the joint Gaussian program: not built yet",
                c.objective_span,
                "list every block of the objective in the dp(...) of the joint program",
            )
    return weights


def _refuse_others(c, joint) -> None:
    """What the joint program does not model yet: located refusals."""
    keys = {f"{n}.{c.blocks[n].budget.eps}" for n in joint.blocks}
    for row in c.rows:
        if row.span is not joint.span and keys & set(row.coefs):
            raise SpecError(
                "a block of the joint Gaussian program is in another constraint: not built yet",
                row.span,
                "constrain the joint program's blocks by their dp(...) only",
            )
    if c.targets:
        raise SpecError(
            "accuracy targets beside a joint Gaussian program are not built yet", c.targets[0].span, "drop the target"
        )
    if c.choice:
        raise SpecError(
            "a design choice beside a joint Gaussian program is not built yet",
            c.choice_span,
            "solve the alternatives as separate composites",
        )
    extra = [n for n in c.blocks if n not in joint.blocks]
    if extra:
        raise SpecError(
            f"block '{extra[0]}' is outside the joint Gaussian program: not built yet",
            joint.span,
            "list it in the dp(...) or solve it in its own composite",
        )


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


def solve(c, options: dict) -> CompositeResult:
    """The joint program solved and certified, the certified best split and the even split beside it."""
    import time

    t0 = time.perf_counter()
    joint = c.joint
    _refuse_others(c, joint)
    weights = _weights(c, list(joint.blocks))
    model, parts = joint_model(c, joint, weights)
    program = lower_noise(model)
    backend = get_backend("cvxpy", options.get("solver"))
    cov, _sol, verification = solve_verified(model, program, backend, options.get("time_limit"))
    loss = verification["objective"]
    lower = verification["evidence"]["bound"]
    # each block's expected squared error at the joint optimum (its own units: unweighted)
    answers, values = {}, {}
    part = _Part("joint conic (" + backend.label + ")", verification)
    for n, (own, _rows) in parts.items():
        total = own.objective.offset
        for k in own.noises:
            S = cov[f"{n}.{k.name}"]
            GG = k.G.T @ k.G
            total += float(np.sum(np.diag(GG) * S)) if S.ndim == 1 else float(np.trace(GG @ S))
        values[n] = total
        block = c.blocks[n]
        answers[n] = BlockAnswer(_params(block, joint.eps, joint.delta), total, "optimal", None, part)
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
    result = CompositeResult.build(
        c,
        method=METHOD,
        objective=objective if passed else None,
        bound=bound,
        gap=relative_gap(objective, bound),
        answers=answers,
        active=list(c.blocks),
        choice=None,
        even=None,
        calls=1 + B,
        seconds=time.perf_counter() - t0,
        reasons=[] if passed else [f"the joint program did not verify: {'; '.join(verification['failures'])}"],
    )
    result.even_split = {"objective": even if math.isfinite(even) else None}
    result.optimality |= {
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
