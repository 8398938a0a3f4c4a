"""Closed forms for sanitization under a fixed induced distribution (Ding, Liu & Farokhi).

Setting: private S, data X with known P(S, X), release Y over the same alphabet as X, and
one constraint ``P(Y | S) == Q`` (for the linear reduction, eq. 3,
``Q = (1 - alpha) P(X | S) + alpha P(X)``). Write ``p_s = P(X | s)`` and ``q_s = Q(. | s)``.

Non-Markov, design ``M = P(Y | S, X)``. For each s, ``T_s(x', y) = p_s(x') M(y | s, x')`` is a
transport plan from ``p_s`` to ``q_s``: its rows sum to ``p_s`` (M is a channel) and its columns
to ``q_s`` (the constraint). The problem separates over s (App. C), and:

* ``tv(X, Y) = 1 - sum_s P(s) sum_x T_s(x, x)``: the diagonal can hold at most
  ``min(p_s(x), q_s(x))``, and every plan that keeps that much is optimal (Prop. 1, eq. 11a:
  ``M(x | s, x) = min(1, q_s(x) / p_s(x))``, equal to ``min{1 - alpha (1 - P(x)/P(x|s)), 1}``
  under eq. 3). The rest moves from X^-(s) (p > q) to X^+(s) (q > p); we take the
  proportional plan ``r(x') t(y) / sum r`` (one of the many solutions of eq. 11d-e).
* ``E[d(X, Y)]`` (Prop. 2, eq. 12): keeping the diagonal full is optimal when ``d(x, x) = 0``
  and d satisfies the triangle inequality: moving mass w -> x -> z costs at least w -> z, so
  any plan that routes mass through x can be rerouted to keep it at x at no extra cost. The
  residual is then a transport problem on X^-(s) x X^+(s) only (eq. 12). Without the triangle
  inequality (e.g. d = (x - y)^2) Prop. 2 can be wrong, and privopt solves the full LP.
  The answer's certificate records the transport LP's potentials (u, v) (``transport_potentials``)
  and the lower bound they prove on its optimum by weak duality (``transport_dual``), so that
  ``privopt verify`` re-proves the optimum without a solver.

Markov, design ``M = P(Y | X)``: ``P(Y | S) = P(X | S) M``. Lemma 1 (eq. 7) gives
``M = (1 - alpha) I + alpha 1 P(X)^T``, which satisfies eq. 3 for every P(X | S). It is the only
solution, hence optimal for any objective, when P(X | S) has full column rank (App. E,
footnote 11). Otherwise other Markov channels satisfy eq. 3 and may do better: the LP decides.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..backends.base import Backend, LinearProgram
from ..errors import SolverError
from ..model.problem import MechanismObjective, Problem, Role

TOL = 1e-12  # recognizing eq. 3 and checking the triangle inequality


@dataclass(frozen=True)
class Sanitization:
    """A problem of the closed forms' shape, in arrays over (S, X) and (S, Y)."""

    private: str
    data: str
    release: str
    markov: bool
    p: np.ndarray  # P(X | S), (S, X); rows of P(s) = 0 are zero
    q: np.ndarray  # the required P(Y | S), (S, Y)
    ps: np.ndarray  # P(S)
    px: np.ndarray  # P(X)
    alpha: float | None  # q is eq. 3 with this alpha, if it is
    recognized: str = ""  # which constraint(s) read as which equation, for explain


def match(problem: Problem) -> tuple[Sanitization | None, str]:
    """The closed forms' setting if ``problem`` is in it, else (None, why not)."""
    d = problem.design
    if problem.budgets:
        return None, "the spec has privacy budgets besides the induced-distribution constraint"
    cons = problem.constraints
    other = [c for c in cons if c.induced is None]
    if not cons or other:
        extra = f" ('{other[0].text}' is not one)" if other else ""
        return (
            None,
            f"the closed forms need the constraints to say one equation, P(Y | S) == a known table (eq. 3){extra}",
        )
    ind = cons[0].induced
    for c in cons[1:]:
        if (c.induced.targets, c.induced.given) != (ind.targets, ind.given) or not _same_table(
            c.induced.value, ind.value
        ):
            return None, f"'{c.text}' and '{cons[0].text}' fix P({', '.join(ind.targets)} | ...) differently"
    if len(ind.targets) != 1 or len(ind.given) != 1 or d.targets != ind.targets:
        return None, "the constraint must fix P(release | private)"
    y, s = ind.targets[0], ind.given[0]
    V = problem.variables
    ydata = V[y].over
    if ydata is None or V[ydata].role is not Role.DATA or V[s].role is not Role.PRIVATE:
        return None, f"{y} must be declared 'release over' a data variable, and {s} private"
    x = ydata
    if set(d.given) == {s, x}:
        markov = False
    elif d.given == (x,):
        markov = True
    else:
        return None, f"the design must be P({y} | {s}, {x}) or P({y} | {x})"
    if problem.model is None:
        return None, "the joint distribution of the private and data variables is not known"
    if problem.joint is None or set(problem.joint.axes) != {s, x}:
        return None, "the model must know exactly the joint distribution of the private and the data variable"
    pxs_joint = _known_joint(problem, s, x)
    ps = pxs_joint.sum(axis=1)
    p = np.divide(pxs_joint, ps[:, None], out=np.zeros_like(pxs_joint), where=ps[:, None] > 0)
    q = ind.value if ind.given == (s,) else ind.value.T
    live = ps > 0
    if np.any(q[live] < -TOL) or np.any(np.abs(q[live].sum(axis=1) - 1) > 1e-9):
        return None, "the required P(Y | S) is not a distribution for every s"
    px = pxs_joint.sum(axis=0)
    alpha = reduction_alpha(p[live], px, q[live])
    written = list(dict.fromkeys(c.text for c in cons))  # a chain's halves share one text
    texts = " and ".join(f"'{t}'" for t in written) + (" read" if len(written) > 1 else " reads")
    if alpha is not None:
        a = f"{alpha:.6g}"
        eq = f"P({y} | {s}) == (1 - {a}) * P({x} | {s}) + {a} * P({x}) (eq. 3, alpha = {a})"
    else:
        eq = f"P({y} | {s}) == a known table"
    return Sanitization(s, x, y, markov, p, q, ps, px, alpha, f"{texts} {eq}"), ""


def _same_table(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=1e-12, atol=1e-12))


def _known_joint(problem: Problem, s: str, x: str) -> np.ndarray:
    """P(S, X) with S on rows."""
    t = problem.joint
    return t.aligned((s, x))


def reduction_alpha(p: np.ndarray, px: np.ndarray, q: np.ndarray) -> float | None:
    """The alpha with ``q = (1 - alpha) p + alpha P(X)`` (eq. 3), or None if q has another form."""
    direction = px[None, :] - p
    r = q - p
    denom = float((direction**2).sum())
    if denom == 0.0:
        return 0.0 if np.abs(r).max(initial=0.0) <= TOL else None
    alpha = float((r * direction).sum() / denom)
    if np.abs(r - alpha * direction).max() > 1e-10 or not (-TOL <= alpha <= 1 + TOL):
        return None
    if abs(alpha) <= TOL or abs(alpha - 1.0) <= TOL:  # rounding in q (e.g. q = -b / c of a rearranged eq. 3)
        alpha = float(round(alpha))
    return min(max(alpha, 0.0), 1.0)


def full_column_rank(p: np.ndarray, ps: np.ndarray) -> bool:
    live = p[ps > 0]
    return live.shape[0] >= live.shape[1] and np.linalg.matrix_rank(live) == live.shape[1]


def lemma1(px: np.ndarray, alpha: float) -> np.ndarray:
    """Ding et al. eq. 7: M[x', x] = P(Y = x | X = x') = 1 - alpha (1 - P(x)) on the diagonal,
    alpha P(x) off it."""
    k = px.size
    return (1.0 - alpha) * np.eye(k) + alpha * np.broadcast_to(px, (k, k))


def is_quasi_metric(d: np.ndarray) -> tuple[bool, str]:
    """d(x, x) = 0 and d(w, z) <= d(w, x) + d(x, z): the condition under which Prop. 2 holds."""
    if np.abs(np.diag(d)).max(initial=0.0) > TOL:
        return False, "d(x, x) is not 0 for every x"
    for k in range(d.shape[0]):  # one vectorized pass per middle point
        viol = d - (d[:, k][:, None] + d[k, :][None, :])
        if viol.max() > TOL * max(1.0, np.abs(d).max()):
            w, z = np.unravel_index(int(np.argmax(viol)), viol.shape)
            return False, f"the triangle inequality fails: d({w},{z}) > d({w},{k}) + d({k},{z}) (by index)"
    return True, ""


def _residuals(p: np.ndarray, q: np.ndarray):
    keep = np.minimum(p, q)
    return keep, p - keep, q - keep  # diagonal mass, supply on X^-(s), demand on X^+(s)


def _channel(p: np.ndarray, plan: np.ndarray) -> np.ndarray:
    """M(y | s, x) = T_s(x, y) / p_s(x); a row with p_s(x) = 0 has no mass and no constraint,
    so it keeps its value (the identity)."""
    k = p.shape[1]
    M = np.divide(plan, p[:, :, None], out=np.zeros_like(plan), where=p[:, :, None] > 0)
    empty = p <= 0
    M[empty] = np.eye(k)[np.nonzero(empty)[1]]
    return M


def prop1(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Prop. 1 (eq. 11) for tv: full diagonal, the rest moved proportionally. Returns M over
    (S, X, Y)."""
    keep, r, t = _residuals(p, q)
    total = r.sum(axis=1)
    share = np.divide(t, total[:, None], out=np.zeros_like(t), where=total[:, None] > 0)
    plan = keep[:, :, None] * np.eye(p.shape[1])[None] + r[:, :, None] * share[:, None, :]
    return _channel(p, plan)


def transport_lp(p: np.ndarray, q: np.ndarray, ps: np.ndarray, d: np.ndarray):
    """Prop. 2's (eq. 12) transport LP over the pairs X^-(s) x X^+(s) of every s, as
    (LinearProgram, (s, x, y) of each column, the supply row of each column), or None when no
    mass moves (the full diagonal is the answer)."""
    import scipy.sparse as sp

    r, t, pairs = transport_pairs(p, q)
    S, k = p.shape
    if pairs is None:
        return None
    s_idx, xs, ys = pairs
    m = s_idx.size
    cols = np.arange(m)
    supply_row, demand_row, used = _rows(pairs, S, k)
    A = sp.csc_array(
        (np.ones(2 * m), (np.concatenate([supply_row, demand_row]), np.tile(cols, 2))), shape=(2 * S * k, m)
    )
    rhs = np.concatenate([r.ravel(), t.ravel()])
    lp = LinearProgram(ps[s_idx] * d[xs, ys], A[used], rhs[used], rhs[used], np.zeros(m), np.full(m, np.inf))
    return lp, pairs, supply_row


def transport_pairs(p: np.ndarray, q: np.ndarray):
    """(the supplies r over (S, X), the demands t over (S, Y), the pairs): the pairs are (s, x, y)
    of X^-(s) x X^+(s), the transport LP's columns, as three arrays (None if there is none)."""
    _, r, t = _residuals(p, q)
    return r, t, _pairs(r, t)


def _pairs(r: np.ndarray, t: np.ndarray):
    """(s, x, y) of every pair X^-(s) x X^+(s); None if there is none."""
    s_idx, xs, ys = [], [], []
    for s in range(r.shape[0]):  # pairs per s; sizes |X^-(s)| x |X^+(s)|, built by broadcasting
        a, b = np.flatnonzero(r[s] > 0), np.flatnonzero(t[s] > 0)
        if a.size and b.size:
            aa, bb = np.meshgrid(a, b, indexing="ij")
            s_idx.append(np.full(aa.size, s))
            xs.append(aa.ravel())
            ys.append(bb.ravel())
    if not s_idx:
        return None
    return np.concatenate(s_idx), np.concatenate(xs), np.concatenate(ys)


def _rows(pairs, S: int, k: int):
    """(each column's supply row, its demand row, the rows the LP keeps) among the 2 S k rows
    (s, x) of supply then (s, y) of demand."""
    s_idx, xs, ys = pairs
    supply_row = s_idx * k + xs
    demand_row = S * k + s_idx * k + ys
    return supply_row, demand_row, np.unique(np.concatenate([supply_row, demand_row]))


def transport_potentials(p: np.ndarray, q: np.ndarray, row_dual: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The transport LP's dual potentials (u over the supplies (s, x), v over the demands
    (s, y), both (S, X); 0 off the LP's rows) from its row multipliers (d objective / d bound)."""
    _, _, pairs = transport_pairs(p, q)
    S, k = p.shape
    y = np.zeros(2 * S * k)
    if pairs is not None:
        y[_rows(pairs, S, k)[2]] = row_dual
    return y[: S * k].reshape(S, k), y[S * k :].reshape(S, k)


@dataclass(frozen=True)
class TransportDual:
    """What potentials (u, v) prove about Prop. 2's transport LP (``transport_dual``)."""

    value: float  # a lower bound on the LP's optimum, whatever u and v are
    violation: float  # the largest u(s, x) + v(s, y) - ps(s) d(x, y) over the pairs, relative to max(1, |cost|)
    worst: tuple[int, int, int] | None  # its pair (s, x, y)


def transport_dual(p: np.ndarray, q: np.ndarray, ps: np.ndarray, d: np.ndarray, u: np.ndarray, v: np.ndarray):
    """Weak duality for Prop. 2's transport LP (eq. 12): for every plan T >= 0 moving the
    supplies r_s(x) onto the demands t_s(y) over the pairs, with cost c = ps(s) d(x, y),

        c T  >=  sum r u + sum t v + sum over pairs of min(0, c - u - v) min(r_s(x), t_s(y)),

    since c T = sum (u + v) T + sum (c - u - v) T and each T(s, x, y) <= min(r_s(x), t_s(y)).
    With feasible potentials (u + v <= c on every pair) the last sum is 0 and this is the dual
    value; nothing the solver claims is trusted. Floats (``certify.proofs`` redoes it exactly)."""
    r, t, pairs = transport_pairs(p, q)
    value = float((r * u).sum() + (t * v).sum())
    if pairs is None:
        return TransportDual(value, 0.0, None)
    s_idx, xs, ys = pairs
    cost = ps[s_idx] * d[xs, ys]
    slack = cost - u[s_idx, xs] - v[s_idx, ys]
    value += float((np.minimum(slack, 0.0) * np.minimum(r[s_idx, xs], t[s_idx, ys])).sum())
    over = -slack / np.maximum(1.0, np.abs(cost))
    j = int(np.argmax(over))
    return TransportDual(value, float(over[j]), (int(s_idx[j]), int(xs[j]), int(ys[j])))


def prop2(p: np.ndarray, q: np.ndarray, ps: np.ndarray, d: np.ndarray, backend: Backend, time_limit=None):
    """Prop. 2 (eq. 12) for E[d(X, Y)] with d a quasi-metric: the full diagonal, then one
    transport LP over the pairs X^-(s) x X^+(s) of every s (the problems are separate; one
    block LP solves them all: ``transport_lp``). Returns (M over (S, X, Y), the LP solution)."""
    keep, r, t = _residuals(p, q)
    S, k = p.shape
    plan = keep[:, :, None] * np.eye(k)[None]
    transport = transport_lp(p, q, ps, d)
    if transport is None:
        return _channel(p, plan), None
    lp, (s_idx, xs, ys), supply_row = transport
    sol = backend.unsupported(lp) or backend.solve(lp, time_limit=time_limit, tol=1e-10)
    if not sol.ok:
        raise SolverError(f"{sol.solver}: Prop. 2's transport LP ended '{sol.termination}' ({sol.message})")
    flow = np.clip(sol.x, 0.0, None)
    # the LP meets its rows to ~1e-10, and M = T / p magnifies that by 1 / p: scale each supply
    # row of the plan onto its exact total r, so every row of M sums to 1 in floating point
    got = np.bincount(supply_row, weights=flow, minlength=S * k)[supply_row]
    need = r.ravel()[supply_row]
    demand_share = t[s_idx, ys] / t.sum(axis=1)[s_idx]
    flow = np.where(got > 0, flow * np.divide(need, got, out=np.zeros_like(got), where=got > 0), need * demand_share)
    np.add.at(plan, (s_idx, xs, ys), flow)
    return _channel(p, plan), sol


def to_design(problem: Problem, san: Sanitization, M: np.ndarray) -> np.ndarray:
    """An (S, X, Y) or (X, Y) array in the design's axis order."""
    order = (san.data, san.release) if san.markov else (san.private, san.data, san.release)
    return np.transpose(M, [order.index(a) for a in problem.design.axes])


def objective_matches(obj: MechanismObjective, san: Sanitization) -> str | None:
    """'tv' or 'distortion' when the objective is the one a proposition is about.

    ``E[d(X, Y)]`` and ``E[d(X, Y) + g(X)]`` differ by the constant ``E[g(X)]`` (the channel's
    rows sum to 1), so they have the same minimizers: d is compared with its rows shifted to a
    zero diagonal (``row_normalized``). A positive multiple of ``1 - [x == y]`` there is tv
    (Prop. 1); anything else is an expected distortion (Prop. 2 if it is a quasi-metric)."""
    if obj.sense != "minimize" or obj.pair != (san.data, san.release):
        return None
    if obj.kind == "expected_distortion" and obj.distance is not None and tv_multiple(obj.distance) is not None:
        return "tv"
    return {"tv": "tv", "expected_distortion": "distortion"}.get(obj.kind)


def row_normalized(d: np.ndarray) -> np.ndarray:
    """d(x, y) - d(x, x): the same minimizers as d for any channel of X (see ``objective_matches``)."""
    return d - np.diag(d)[:, None]


def tv_multiple(d: np.ndarray) -> float | None:
    """c > 0 when ``row_normalized(d)`` is ``c * (1 - [x == y])``, i.e. E[d] = c tv + constant."""
    n = row_normalized(d)
    k = n.shape[0]
    if k < 2:
        return None
    c = float(n[0, 1])
    if not c > 0 or np.abs(n - c * (1.0 - np.eye(k))).max() > 1e-12 * max(1.0, c):
        return None
    return c


def objective_reading(obj: MechanismObjective) -> str:
    """How the objective was read, for explain."""
    x, y = obj.pair if obj.pair else ("X", "Y")
    if obj.kind == "tv":
        same = obj.text.replace(" ", "") == f"tv({x},{y})"
        return "" if same else f"'{obj.text}' is tv({x}, {y})"
    if obj.kind == "expected_distortion" and obj.distance is not None:
        c = tv_multiple(obj.distance)
        if c is not None:
            return f"'{obj.text}' is {c:.6g} * tv({x}, {y}) + a constant"
        return "" if obj.text.startswith("E[") else f"'{obj.text}' is an expected distortion E[d({x}, {y})]"
    return ""


# ------------------------------------------------------------------ recognizers (core.plan.Recognizer)

QUADRATIC = "the objective has squares of affine expressions, so it is not linear"
NOT_TV_OR_DISTORTION = "the objective is neither minimize tv(X, Y) nor minimize E[d(X, Y)]"


@dataclass(frozen=True)
class Reading:
    """What a sanitization recognizer read from the problem (``Match.data``): the setting
    (``match``) and which proposition's objective it is (``objective_matches``)."""

    san: Sanitization
    kind: str | None

    @property
    def read(self) -> str:
        """How the constraint(s) were read as eq. 3, for explain ("" when spelled as such)."""
        return self.san.recognized + "; " if self.san.recognized else ""


def _reading(problem: Problem):
    """(Reading, "") in the closed forms' setting with a linear objective, else (None, why not)."""
    if problem.objective.is_quadratic:
        return None, QUADRATIC
    san, why = match(problem)
    if san is None:
        return None, why
    return Reading(san, objective_matches(problem.objective, san)), ""


def _answer(rec, problem: Problem, match, backend, time_limit):
    """A recognizer's answer for the driver (``core.plan.Outcome``): the design (flat, in the
    design's axis order) with the theorem's certificate (its claim, conditions and citation);
    for Prop. 2 the transport LP's times and solver in the stats and ``backend``'s label."""
    from ..core.certificate import Certificate
    from ..core.plan import Outcome

    x, sol = rec.solve(problem, match, backend, time_limit)
    stats = {}
    data = {"theorem": rec.cites, "conditions": match.why}
    if sol is not None:
        stats.update(
            lp_solve_s=round(sol.solve_s, 6), lp_build_s=round(sol.build_s, 6), solver=f"{sol.solver} {sol.version}"
        )
        data["transport"] = _transport_record(problem, match.data.san, sol)
    cert = Certificate("theorem", rec.claim, data=data)
    return Outcome(
        x,
        rec.claim,
        backend.label if backend is not None else None,
        evidence={"kind": "theorem", "source": rec.claim},
        certificate=cert,
        stats=stats,
    )


def _transport_record(problem: Problem, san: Sanitization, sol) -> dict:
    """Prop. 2's transport LP in the certificate: its potentials (u, v) over (S, X), the lower
    bound they prove on its optimum (``transport_dual``) and that bound in the objective's
    units, the objective at the full diagonal alone (``diagonal_objective``) plus it. No
    potentials (a backend without duals): nulls, and ``privopt verify`` cannot re-prove it."""
    if sol.row_dual is None:
        return {"u": None, "v": None, "value": None, "bound": None}
    d = problem.objective.distance
    u, v = transport_potentials(san.p, san.q, sol.row_dual)
    value = transport_dual(san.p, san.q, san.ps, d, u, v).value
    return {"u": u, "v": v, "value": value, "bound": diagonal_objective(problem, san) + value}


def diagonal_objective(problem: Problem, san: Sanitization) -> float:
    """The objective at the design holding the full diagonal min(1, q/p) and nothing else (not
    a channel: the objective is affine, and with the transport plan T on the pairs added it is
    this plus the transport cost c T, Prop. 2)."""
    keep, _, _ = _residuals(san.p, san.q)
    diagonal = _channel(san.p, keep[:, :, None] * np.eye(san.p.shape[1])[None])
    return problem.objective.evaluate(to_design(problem, san, diagonal).ravel())


class Lemma1:
    """Ding et al. Lemma 1 (eq. 7): in the Markov scheme P(Y | X) under eq. 3, the channel
    ``M = (1 - alpha) I + alpha 1 P(X)^T`` meets eq. 3; when P(X | S) has full column rank it
    is the only one, hence optimal for any objective (App. E, footnote 11)."""

    name = "lemma-1"
    method = "closed-form"
    cites = "Ding, Liu & Farokhi, Lemma 1 (eq. 7)"
    claim = "closed form: Lemma 1 (eq. 7), the unique Markov channel (P(X|S) has full column rank)"

    def in_scope(self, problem) -> bool:
        """About a linear or convex quadratic program over a design table, unless it reads as
        the non-Markov scheme."""
        if problem.design is None or problem.objective.curvature not in ("affine", "convex"):
            return False
        r, _ = _reading(problem)
        return r is None or r.san.markov

    def accepts(self, problem):
        from ..core.plan import Match

        r, why = _reading(problem)
        if r is None:
            return Match.no(why)
        san = r.san
        if not san.markov:
            return Match.no("Lemma 1 is about the Markov scheme P(Y | X)")
        if san.alpha is None:
            return Match.no("the required P(Y | S) is not the linear reduction of eq. 3")
        if not full_column_rank(san.p, san.ps):
            return Match.no(
                "P(X | S) does not have full column rank, so Lemma 1's channel is one of many Markov channels "
                "meeting eq. 3 (App. E, footnote 11) and may not be the best"
            )
        return Match.yes(
            f"{r.read}Lemma 1 (eq. 7) with alpha = {san.alpha:.6g}: P(X | S) has full column rank, so it is the only "
            "Markov channel meeting eq. 3, whatever the objective",
            data=r,
        )

    def solve(self, problem, match, backend=None, time_limit=None):
        """(the design, flat in the design's axis order; None: no LP was solved)."""
        san = match.data.san
        return to_design(problem, san, lemma1(san.px, san.alpha)).ravel(), None

    def answer(self, problem, match, prepared=None, backend=None, time_limit=None):
        """The closed form's design for the driver, with the theorem's certificate (``_answer``)."""
        return _answer(self, problem, match, backend, time_limit)


class Prop1:
    """Ding et al. Prop. 1 (eq. 11): in the non-Markov scheme P(Y | S, X), minimizing tv under
    P(Y | S) fixed keeps the diagonal at its bound ``min(1, q_s(x) / p_s(x))``."""

    name = "prop-1"
    method = "closed-form"
    cites = "Ding, Liu & Farokhi, Prop. 1 (eq. 11)"
    claim = "closed form: Prop. 1 (eq. 11), the diagonal at its bound min(1, q/p)"

    def in_scope(self, problem) -> bool:
        """About a linear or convex quadratic program over a design table read as the non-Markov scheme."""
        if problem.design is None or problem.objective.curvature not in ("affine", "convex"):
            return False
        r, _ = _reading(problem)
        return r is not None and not r.san.markov

    def accepts(self, problem):
        from ..core.plan import Match

        r, why = _reading(problem)
        if r is None:
            return Match.no(why)
        if r.san.markov:
            return Match.no("Prop. 1 is about the non-Markov scheme P(Y | S, X)")
        if r.kind == "tv":
            obj_read = objective_reading(problem.objective)
            return Match.yes(
                f"{r.read}{obj_read + '; ' if obj_read else ''}Prop. 1 (eq. 11): minimize tv under P(Y | S) fixed; "
                "the diagonal at min(1, q/p)",
                data=r,
            )
        if r.kind == "distortion":
            return Match.no("Prop. 1 is for tv; expected distortion needs Prop. 2's transport LP")
        return Match.no(NOT_TV_OR_DISTORTION)

    def solve(self, problem, match, backend=None, time_limit=None):
        """(the design, flat in the design's axis order; None: no LP was solved)."""
        san = match.data.san
        return to_design(problem, san, prop1(san.p, san.q)).ravel(), None

    def answer(self, problem, match, prepared=None, backend=None, time_limit=None):
        """The closed form's design for the driver, with the theorem's certificate (``_answer``)."""
        return _answer(self, problem, match, backend, time_limit)


class Prop2:
    """Ding et al. Prop. 2 (eq. 12): in the non-Markov scheme, minimizing E[d(X, Y)] under a
    quasi-metric d (``d(x, x) = 0`` and the triangle inequality, after shifting each row by its
    d(x, x)) keeps the diagonal full; only the transport LP over X-(s) x X+(s) remains. Its
    method is "reduced-lp": the answer needs an LP backend."""

    name = "prop-2"
    method = "reduced-lp"
    cites = "Ding, Liu & Farokhi, Prop. 2 (eq. 12)"
    claim = "Prop. 2 (eq. 12): full diagonal, transport LP over X-(s) x X+(s); d is a quasi-metric"

    def in_scope(self, problem) -> bool:
        """About a linear or convex quadratic program over a design table."""
        return problem.design is not None and problem.objective.curvature in ("affine", "convex")

    def accepts(self, problem):
        from ..core.plan import Match

        r, why = _reading(problem)
        if r is None:
            return Match.no(why)
        if r.san.markov:
            return Match.no("Prop. 2 is about the non-Markov scheme P(Y | S, X)")
        obj = problem.objective
        if r.kind is None:
            return Match.no(NOT_TV_OR_DISTORTION)
        if not (obj.kind == "expected_distortion" and obj.distance is not None):
            if r.kind == "tv":
                return Match.no("Prop. 2 is for expected distortion (the closed form covers tv)")
            return Match.no("it does not apply to this problem")
        ok, why = is_quasi_metric(row_normalized(obj.distance))
        if not ok:
            return Match.no(f"Prop. 2 needs a quasi-metric distance and {why}; it could miss the optimum")
        obj_read = objective_reading(obj)
        shifted = (
            ""
            if not np.abs(np.diag(obj.distance)).max(initial=0.0)
            else ("with each row shifted by its d(x, x) (a constant in expectation), ")
        )
        return Match.yes(
            f"{r.read}{obj_read + '; ' if obj_read else ''}Prop. 2 (eq. 12): {shifted}d(x, x) = 0 and d satisfies the "
            "triangle inequality, so the full diagonal is optimal and only X-(s) x X+(s) transport remains",
            data=r,
        )

    def solve(self, problem, match, backend=None, time_limit=None):
        """(the design, flat; the transport LP's solution or None) on an LP ``backend``."""
        san = match.data.san
        M, sol = prop2(san.p, san.q, san.ps, problem.objective.distance, backend, time_limit)
        return to_design(problem, san, M).ravel(), sol

    def answer(self, problem, match, prepared=None, backend=None, time_limit=None):
        """The full diagonal and the transport LP's answer on ``backend``, with the theorem's
        certificate (``_answer``)."""
        return _answer(self, problem, match, backend, time_limit)


LEMMA_1, PROP_1, PROP_2 = Lemma1(), Prop1(), Prop2()
