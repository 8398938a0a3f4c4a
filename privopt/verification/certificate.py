"""Re-checking a certificate's numbers, without a solver: the route that produced the
certificate (a dual point, a theorem, LFP brackets, a global bound) did the solving; here only
its arithmetic is checked.

* ``weak_duality``: a proven bound B on the objective (a lower bound when minimizing, side
  "lower"; an upper bound when maximizing) certifies the answer v when ``gap = v - B`` (or
  ``B - v``) is within the tolerance; a gap below ``-tol`` (a table better than a proven
  bound) means the table or the bound is wrong, and fails too;
* ``dual_bound``: ``weak_duality`` on a mechanism's evidence (an LP/QP's bound), at
  ``OBJ_RTOL max(|objective|, cost scale)``;
* ``relative_bound``: a noise placement's loss against its proven lower bound, the gap
  relative to the loss, within ``CONIC_RTOL``;
* ``lemma5_floor``: a transparency report's group confidence is never below the privacy limit
  ``beta_min = max_x P(x | group)`` (Chen et al. Lemma 5) by more than ``VERIFY_TOL``;
* ``certificate``: ``weak_duality`` on a ``core.Certificate`` with a bound (a theorem's
  answer is exact: nothing to re-check beyond its conditions).
"""

from __future__ import annotations

import math

import numpy as np

from ..core.certificate import Certificate
from ..measures.confidence import beta_min
from .checks import Check, Verdict, compare, condition
from .tolerances import CONIC_RTOL, VERIFY_TOL


def weak_duality(value: float, bound: float, side: str, tol: float) -> tuple[float, bool]:
    """(gap, holds): ``gap = value - bound`` (side "lower") or ``bound - value`` ("upper"), and
    whether ``|gap| <= tol`` (False on NaN)."""
    gap = value - bound if side == "lower" else bound - value
    return gap, bool(abs(gap) <= tol)


def dual_bound(value: float, evidence: dict, tol: float) -> Verdict:
    """A mechanism's ``evidence`` (``kind``, ``bound``, ``side``) certifies ``value`` within
    ``tol`` (``weak_duality``); records ``gap`` and ``tolerance`` in ``evidence``, as the
    result's ``verification.evidence`` reports them."""
    bound = evidence["bound"]
    gap, ok = weak_duality(value, bound, evidence["side"], tol)
    evidence["gap"] = gap
    evidence["tolerance"] = tol
    if ok:
        why = ""
    elif not math.isfinite(bound):
        why = "no finite bound could be proven"
    elif gap < 0:
        why = f"it is better than the {evidence['kind']} {bound:.12g} by {-gap:.3g}, which cannot be (tolerance {tol:.3g})"
    else:
        why = f"the {evidence['kind']} is {bound:.12g}, {gap:.3g} from the objective (tolerance {tol:.3g})"
    name = f"certificate {evidence['kind']}"
    margin = tol - abs(gap) if gap == gap else math.nan
    return Verdict(
        [Check(name, ok, margin, f"the optimum {value:.12g} is not certified: {why}" if not ok else "certified")]
    )


def relative_gap(loss: float, lb: float, scale: float) -> float:
    """``(loss - lb) / scale``; at scale 0, 0 when ``lb >= loss``, else inf."""
    return (loss - lb) / scale if scale > 0 else (0.0 if lb >= loss else math.inf)


def relative_bound(loss: float, lb: float, scale: float) -> Verdict:
    """A noise placement's ``loss`` against its proven lower bound ``lb``: the gap ``(loss -
    lb) / scale`` (``relative_gap``; scale: |loss|) within ``CONIC_RTOL``."""
    gap = relative_gap(loss, lb, scale)
    why = "no finite bound could be proven" if not math.isfinite(lb) else f"the proven lower bound is {lb:.12g}"
    check = compare(
        "certificate dual bound",
        abs(gap),
        CONIC_RTOL,
        f"the loss {loss:.12g} is not certified: {why} (relative gap {gap:.3g}, tolerance {CONIC_RTOL:g})",
    )
    return Verdict([check])


def lemma5_floor(p: np.ndarray, achieved: np.ndarray) -> Verdict:
    """Lemma 5's privacy limit ``beta_min`` per group is a floor on any table's confidence, so a
    live group can never be certified below it: ``max(beta_min - achieved) <= VERIFY_TOL
    max(1, max beta_min)``."""
    floor = beta_min(p)
    below = float(np.max(floor - achieved)) if achieved.size else 0.0
    allowed = VERIFY_TOL * max(1.0, float(floor.max(initial=0.0)))
    return Verdict(
        [
            compare(
                "certificate Lemma 5 floor",
                below,
                allowed,
                f"a group's confidence is below Lemma 5's floor by {below:.3g}",
            )
        ]
    )


def certificate(cert: Certificate, value: float, tol: float) -> Verdict:
    """A ``core.Certificate`` re-checked against the answer's ``value``: a bound by
    ``weak_duality`` within ``tol``; a theorem (or one without a bound) by its stated claim."""
    if cert.bound is None:
        return Verdict(
            [
                condition(
                    f"certificate {cert.kind}",
                    cert.kind == "theorem",
                    f"a {cert.kind} certificate without a bound proves nothing",
                    cert.claim,
                )
            ]
        )
    gap, ok = weak_duality(value, cert.bound, cert.side or "lower", tol)
    detail = (
        cert.claim
        if ok
        else f"the optimum {value:.12g} is {gap:.3g} from the {cert.kind} {cert.bound:.12g} (tolerance {tol:.3g})"
    )
    return Verdict(
        [Check(f"certificate {cert.kind}", ok, tol - abs(gap) if gap == gap else math.nan, detail)], {"gap": gap}
    )
