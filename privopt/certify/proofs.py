"""A result's certificate re-proven from the rebuilt problem, without a solver (``privopt verify``).

Each function returns the checks (``verification.checks.Check``) of one certificate kind and,
where the route's bound feeds the common verifier, the bound it proved:

* ``lp_multipliers``: a ``dual-bound`` of an LP/QP route. The lowered program is rebuilt
  (``lower.mechanism.lower_mechanism`` in the recorded row form) and the recorded row
  multipliers y bound it by weak duality, whatever y is (``methods.lp.lagrangian_bound``: for
  every feasible x, ``c x >= sum_i y_i t_i + min over the column box of (c - A'y) x``). Up to
  ``EXACT_MAX_CELLS`` columns (and no quadratic term) the bound is recomputed in exact rational
  arithmetic from the floats (``verification.exact.exact_lagrangian``), and so are the rows over the design's
  cells at the released table (``exact_rows``); the recorded bound must equal the proven one
  within ``RECOMPUTE_RTOL`` relative;
* ``conic_dual``: a noise placement's dual point (Y, mu): ``ConicProgram.dual_bound`` (Ramon &
  Basu Sec. 3.2's dual made feasible by a rescaling) recomputed; the common verifier
  (``verify_noise``) scales it by the calibration's proven bound;
* ``theorem``: a closed form: its recognizer must accept the rebuilt problem (its conditions
  hold) and its answer, recomputed, must have the recorded objective (within ``OBJ_RTOL``);
  Prop. 2 leaves a transport LP: its recorded potentials (u, v) must be dual feasible and prove,
  by weak duality, a bound equal to the recorded objective (``transport``);
* ``global_bound``: the obfuscation's global method (``lower.obfuscation.optimal_channel``,
  numpy only) re-run: its proven lower bound must be the recorded one and certify Q;
* ``lfp_brackets``: per group, the bracket's upper end is the recorded beta (itself verified
  against the recomputed max confidence), ``lower <= upper`` and the widest relative gap within
  ``GAP_TOL``; each lower end re-derived (``bracket_lower_ends``): from the closed-form bound,
  recomputed, or from the Farkas ray recorded with it (``verification.brackets``), exactly in
  rationals up to ``EXACT_MAX_CELLS`` cells of rays.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..verification.checks import Check, compare, condition
from ..verification.exact import exact_lagrangian
from ..verification.tolerances import GAP_TOL, OBJ_RTOL, VERIFY_TOL

EXACT_MAX_CELLS = 20_000  # columns of a lowered LP whose dual bound is recomputed in rationals
RECOMPUTE_RTOL = 1e-12  # a recorded bound against the same bound recomputed here (relative)


def same(name: str, recorded, recomputed: float, what: str) -> Check:
    """``recorded`` equals ``recomputed`` within ``RECOMPUTE_RTOL`` relative (fails on a null)."""
    if not isinstance(recorded, (int, float)) or isinstance(recorded, bool):
        return condition(name, False, f"the result records no {what} (null)")
    allowed = RECOMPUTE_RTOL * max(1.0, abs(recomputed))
    diff = abs(float(recorded) - recomputed)
    return compare(
        name,
        diff,
        allowed,
        f"the recorded {what} {float(recorded)!r} is not the one proven, {recomputed!r} (off by {diff:.3g})",
        f"the proven {what} {recomputed!r} is the recorded one",
    )


def exact_rows(mlp, x: np.ndarray) -> Check:
    """The lowered program's rows over the design's cells alone (each design row summing to 1,
    the linear constraints), evaluated at the released table ``x`` in exact rational
    arithmetic: the largest violation of a row's bounds, exactly, against ``VERIFY_TOL``
    relative to the magnitude of the row's terms (a table of floats meets an equality only to
    rounding). The row with the largest relative violation is named by its constraint."""
    A = mlp.lp.A.tocsr()
    n = mlp.n_design
    worst, where = Fraction(0), None
    xf = [Fraction(float(v)) if math.isfinite(v) else None for v in x[:n].tolist()]
    for i in range(A.shape[0]):
        cols = A.indices[A.indptr[i] : A.indptr[i + 1]]
        if cols.size == 0 or cols.max() >= n:
            continue
        total, size = Fraction(0), Fraction(0)
        for j, a in zip(cols.tolist(), A.data[A.indptr[i] : A.indptr[i + 1]].tolist()):
            if xf[j] is None:
                return condition("rows over the design (exact)", False, "the table has a cell that is not finite")
            term = Fraction(a) * xf[j]
            total += term
            size += abs(term)
        lo, hi = mlp.lp.row_lower[i], mlp.lp.row_upper[i]
        excess = max(Fraction(lo) - total if math.isfinite(lo) else Fraction(0), Fraction(0))
        excess = max(excess, total - Fraction(hi) if math.isfinite(hi) else Fraction(0))
        relative = excess / max(Fraction(1), size)
        if relative > worst:
            worst, where = relative, i
    named = "" if where is None else f" ({mlp.families[mlp.row_family[where]]}, row {where})"
    return compare(
        "rows over the design (exact)",
        float(worst),
        VERIFY_TOL,
        f"a row is violated by {float(worst):.3g} relative to its terms{named}",
        f"exactly, the largest violation is {float(worst):.3g} relative to its terms{named}",
    )


def lp_multipliers(problem, cert: dict, x: np.ndarray | None, notes: list[str]) -> tuple[list[Check], float | None]:
    """(checks, the bound the recorded multipliers prove, in the spec's units), for an LP/QP
    route's ``dual-bound`` certificate (module docstring); ``x`` the released table whose rows
    are checked exactly (None: a certificate without a released point, its bound alone)."""
    from ..lower.mechanism import lower_mechanism
    from ..methods.lp import lagrangian_bound

    data = cert.get("data") or {}
    program, mult = data.get("program"), data.get("multipliers")
    if not isinstance(program, dict) or not isinstance(mult, dict):
        return [condition("certificate multipliers", False, "the certificate records no row multipliers")], None
    mlp = lower_mechanism(problem, pairwise=bool(program.get("pairwise")))
    n_rows = mlp.lp.A.shape[0]
    rows, values = mult.get("rows") or [], mult.get("values") or []
    checks = [
        condition(
            "certificate program",
            program.get("rows") == n_rows,
            f"the certificate's program has {program.get('rows')} rows, the spec's lowers to {n_rows}",
            f"the spec lowers to the certified program ({n_rows} rows)",
        )
    ]
    try:
        idx = np.asarray(rows, dtype=np.int64)
        val = np.asarray([math.nan if v is None else v for v in values], dtype=float)
    except (TypeError, ValueError):
        return [*checks, condition("certificate multipliers", False, "the multipliers are not numbers")], None
    if idx.shape != val.shape or (idx.size and (idx.min() < 0 or idx.max() >= n_rows)):
        return [
            *checks,
            condition("certificate multipliers", False, f"the multipliers do not index the program's {n_rows} rows"),
        ], None
    y = np.zeros(n_rows)
    y[idx] = val
    bound = mlp.in_objective_units(lagrangian_bound(mlp.lp, y))
    exact = None
    if (mlp.lp.Q is None or not mlp.lp.Q.nnz) and mlp.lp.A.shape[1] <= EXACT_MAX_CELLS:
        exact = exact_lagrangian(mlp.lp, y)
    if exact is not None:
        if x is not None:
            checks.append(exact_rows(mlp, x))
        proven = mlp.sign * mlp.scale * exact + Fraction(mlp.const)
        checks.append(
            compare(
                "certificate dual bound (exact)",
                abs(float(Fraction(bound) - proven)),
                RECOMPUTE_RTOL * max(1.0, abs(bound)),
                f"the float bound {bound!r} is not the exact bound {float(proven)!r}",
                f"in exact rational arithmetic the multipliers prove {float(proven)!r}",
            )
        )
        notes.append(
            f"the dual bound and the rows over the design: exact rational arithmetic ({mlp.lp.A.shape[1]} columns)"
        )
    else:
        notes.append(f"the dual bound: floats ({mlp.lp.A.shape[1]} columns), recomputed to {RECOMPUTE_RTOL:g} relative")
    checks.append(same("certificate bound", cert.get("bound"), bound, "bound"))
    return checks, bound


def conic_dual(program, cert: dict) -> tuple[list[Check], object]:
    """(checks, ``program_bound`` for ``verify_noise``): the recorded dual point (Y, mu) of a
    noise placement, whose ``dual_bound`` the common verifier scales by the calibration."""
    point = (cert.get("data") or {}).get("dual_point")
    try:
        Y = np.asarray(point["Y"], dtype=float)
        mu = np.asarray(point["mu"], dtype=float)
        ok = Y.ndim == 2 and mu.shape == (Y.shape[0],) and Y.shape[0] == program.F.shape[1]
    except (TypeError, KeyError, ValueError):
        ok = False
    if not ok:
        return [condition("certificate dual point", False, "the certificate records no dual point (Y, mu)")], None
    return [], lambda enough: program.dual_bound(Y, mu)  # noqa: ARG005 - the point is fixed


def theorem(problem, result: dict, judge) -> tuple[list[Check], list[str]]:
    """(checks, notes) of a closed form: its recognizer accepts the rebuilt problem (its
    conditions hold), the certificate cites it, and its answer, recomputed, agrees with the
    released one (``judge(outcome)``: the block kind's checks of the theorem's point against
    the recorded answer)."""
    from ..closedform.registry import recognize

    recognizer, match = recognize(problem, result.get("method"))
    cited = ((result.get("certificate") or {}).get("data") or {}).get("theorem")
    if recognizer is None:
        why = getattr(match, "reason", None) or "no closed form of this method applies"
        return [condition("certificate theorem", False, f"the theorem's conditions do not hold: {why}")], []
    checks = [
        condition(
            "certificate theorem",
            cited == recognizer.cites or (isinstance(cited, str) and cited.startswith(recognizer.cites)),
            f"the certificate cites {cited!r}; the spec's closed form is {recognizer.cites}",
            f"{recognizer.cites}: its conditions hold for the spec",
        )
    ]
    if recognizer.method == "reduced-lp":  # Prop. 2: its transport LP's optimum, proven by its potentials
        notes: list[str] = []
        return checks + transport(problem, match.data.san, result, notes), notes
    from ..blocks import kind_of

    prepared = kind_of(problem).prepare(problem)  # what the recognizer reads beside the problem
    return checks + judge(recognizer.answer(problem, match, prepared, None, None)), []


def transport(problem, san, result: dict, notes: list[str]) -> list[Check]:
    """Prop. 2's transport LP re-proven from the recorded potentials (u, v): their largest
    violation of ``u(s, x) + v(s, y) <= ps(s) d(x, y)`` over the pairs (``VERIFY_TOL``, relative
    to the cost), the lower bound they prove on the LP's optimum (``closedform.sanitization.
    transport_dual``, valid for any u, v; in exact rational arithmetic up to ``EXACT_MAX_CELLS``
    pairs) against the recorded one, and in the objective's units (the objective at the full
    diagonal plus it, Prop. 2) against the recorded objective: within ``OBJ_RTOL``, and not below."""
    from ..closedform.sanitization import diagonal_objective, transport_dual, transport_pairs

    r, t, pairs = transport_pairs(san.p, san.q)
    record = ((result.get("certificate") or {}).get("data") or {}).get("transport")
    if pairs is None and record is None:  # no mass moves: the full diagonal alone, a transport cost of 0
        record = {"u": np.zeros(san.p.shape), "v": np.zeros(san.p.shape), "value": 0.0}
        record["bound"] = diagonal_objective(problem, san)
    u = _floats((record or {}).get("u"), san.p.shape)
    v = _floats((record or {}).get("v"), san.p.shape)
    if u is None or v is None or not (np.isfinite(u).all() and np.isfinite(v).all()):
        return [condition("certificate transport potentials", False, "the certificate records no potentials (u, v)")]
    d = problem.objective.distance
    dual = transport_dual(san.p, san.q, san.ps, d, u, v)
    value = dual.value
    n_pairs = 0 if pairs is None else pairs[0].size
    if n_pairs <= EXACT_MAX_CELLS:
        value = float(_exact_transport(r, t, san.ps, d, u, v, pairs))
        notes.append(f"Prop. 2's transport dual value: exact rational arithmetic ({n_pairs} pairs)")
    else:
        notes.append(f"Prop. 2's transport dual value: floats ({n_pairs} pairs)")
    checks = []
    if dual.worst is not None:
        s, x, y = dual.worst
        V = problem.variables
        pair = (
            f"{san.private} = {V[san.private].labels[s]}, {san.data} = {V[san.data].labels[x]}, "
            f"{san.release} = {V[san.release].labels[y]}"
        )
        checks.append(
            compare(
                "certificate transport potentials",
                dual.violation,
                VERIFY_TOL,
                f"at {pair}: u + v exceeds the cost by {dual.violation:.3g} (relative); the potentials are not dual "
                "feasible",
                f"dual feasible: u + v <= ps d on every pair (largest excess {dual.violation:.3g} relative, at {pair})",
            )
        )
    bound = diagonal_objective(problem, san) + value
    recorded = result.get("objective")
    obj = float(recorded) if isinstance(recorded, (int, float)) and not isinstance(recorded, bool) else math.nan
    allowed = OBJ_RTOL * max(1.0, abs(bound))
    notes.append("Prop. 2's bound in the objective's units (the full diagonal's objective plus the dual value): floats")
    return [
        *checks,
        same("certificate transport dual value", (record or {}).get("value"), value, "transport dual value"),
        same("certificate transport bound", (record or {}).get("bound"), bound, "transport bound"),
        compare(
            "certificate transport gap",
            obj - bound,
            allowed,
            f"the objective {obj!r} is {obj - bound:.3g} above the bound {bound!r} the potentials prove",
            f"the objective is within {obj - bound:.3g} of the bound {bound!r} the potentials prove",
        ),
        compare(
            "certificate transport bound below the objective",
            bound - obj,
            allowed,
            f"the objective {obj!r} is below the proven bound {bound!r}, which cannot be",
        ),
    ]


def _exact_transport(r, t, ps, d, u, v, pairs) -> Fraction:
    """``closedform.sanitization.transport_dual``'s value in exact rational arithmetic (every
    float taken exactly)."""
    F = Fraction
    total = sum(
        (F(a) * F(b) for a, b in zip(r.ravel().tolist() + t.ravel().tolist(), u.ravel().tolist() + v.ravel().tolist())),
        F(0),
    )
    if pairs is None:
        return total
    for s, x, y in zip(*(a.tolist() for a in pairs)):
        slack = F(float(ps[s])) * F(float(d[x, y])) - F(float(u[s, x])) - F(float(v[s, y]))
        if slack < 0:
            total += slack * min(F(float(r[s, x])), F(float(t[s, y])))
    return total


def same_optimum(value: float, recorded) -> Check:
    """The theorem's optimum ``value`` against the ``recorded`` objective, within ``OBJ_RTOL``
    relative to max(1, |value|)."""
    diff = abs(recorded - value) if isinstance(recorded, (int, float)) else math.inf
    return compare(
        "certificate theorem's optimum",
        diff,
        OBJ_RTOL * max(1.0, abs(value)),
        f"the theorem's optimum is {value!r}, the result records {recorded!r} (off by {diff:.3g})",
        f"the theorem's optimum {value!r} recomputed",
    )


def global_bound(problem, result: dict) -> list[Check]:
    """The obfuscation's global method re-run (numpy only): its proven lower bound is the
    recorded one and within the method's tolerance of the recorded Q."""
    from ..lower.obfuscation import DEFAULT_TOL, optimal_channel

    m = problem.obfuscation
    sol = optimal_channel(m.px1, m.F_given_X, m.eps, symmetric=m.symmetric, tol=DEFAULT_TOL)
    cert = result.get("certificate") or {}
    recorded = result.get("objective")
    q = float(recorded) if isinstance(recorded, (int, float)) else math.nan
    allowed = max(DEFAULT_TOL, float((cert.get("data") or {}).get("tolerance") or 0.0))
    return [
        same("certificate global bound", cert.get("bound"), sol.lower_bound, "global lower bound"),
        compare(
            "certificate gap",
            q - sol.lower_bound,
            allowed,
            f"Q = {q!r} is {q - sol.lower_bound:.3g} above the proven lower bound {sol.lower_bound!r} "
            f"(tolerance {allowed:g})",
        ),
        compare(
            "certificate bound below Q",
            sol.lower_bound - q,
            RECOMPUTE_RTOL,
            f"Q = {q!r} is below the proven lower bound {sol.lower_bound!r}, which cannot be",
        ),
    ]


def _floats(values, shape: tuple[int, ...]) -> np.ndarray | None:
    """A recorded array (nested lists, null as NaN) as floats of ``shape``, or None."""
    try:
        out = np.array(values, dtype=float)  # a null (None) in a float list is NaN
    except (TypeError, ValueError):
        return None
    return out if out.shape == shape else None


def _group(inst, g: int) -> str:
    """A QID group as its labels, for a failure's message."""
    key = inst.group_key(g)
    return "QID group " + (", ".join(f"{k} = {v}" for k, v in key.items()) if key else "(the only one)")


def lfp_brackets(inst, result: dict, beta: np.ndarray, notes: list[str]) -> list[Check]:
    """Per group: the bracket's upper end is the recorded beta, its lower end not above it and
    proven (``bracket_lower_ends``), the widest relative gap within ``GAP_TOL``; the bound is the
    largest lower end."""
    cert = result.get("certificate") or {}
    data = cert.get("data") or {}
    G = beta.size
    lower, upper = _floats(data.get("lower"), (G,)), _floats(data.get("upper"), (G,))
    if lower is None or upper is None:
        return [condition("certificate brackets", False, f"the certificate has no bracket for each of {G} groups")]
    live = np.isfinite(beta)
    off = np.abs(upper - beta)[live]
    g = int(np.argmax(off)) if off.size else 0
    worst_gap = np.where(upper > 0, (upper - lower) / np.where(upper > 0, upper, 1.0), 0.0)[live]
    tol = GAP_TOL + RECOMPUTE_RTOL  # privopt's own gap tolerance, not the recorded one
    return [
        compare(
            "certificate brackets' upper ends",
            float(off.max(initial=0.0)),
            RECOMPUTE_RTOL,
            f"group {g}: the bracket's upper end {upper[live][g]!r} is not its beta {beta[live][g]!r}",
        ),
        compare(
            "certificate brackets ordered",
            float(np.max(lower - upper, initial=-math.inf)),
            0.0,
            "a group's lower bracket end is above its upper end",
        ),
        *bracket_lower_ends(inst, data, lower, live, notes),
        compare(
            "certificate brackets' gap",
            float(worst_gap.max(initial=0.0)),
            tol,
            f"a group's bracket is wider than the LFP's tolerance {GAP_TOL:g}",
        ),
        same("certificate bound", cert.get("bound"), float(np.max(lower, initial=-math.inf)), "bound"),
    ]


def bracket_lower_ends(inst, data: dict, lower: np.ndarray, live: np.ndarray, notes: list[str]) -> list[Check]:
    """Each live group's recorded lower end re-derived: at most the larger of the closed-form
    bound (``closedform.atr.lower_bound``, recomputed) and the bound its Farkas ray proves at its
    level (``verification.brackets``; in rational arithmetic when the rays have at most
    ``EXACT_MAX_CELLS`` cells, else in floats with their rounding allowance, to
    ``RECOMPUTE_RTOL``). A ray with a negative or non-finite entry proves nothing and is named."""
    from ..closedform.atr import lower_bound
    from ..measures.confidence import conditional_prior
    from ..verification.brackets import proven_lower, proven_lower_exact

    G, m, A = inst.lower.shape
    level, ray = _floats(data.get("level"), (G,)), _floats(data.get("ray"), (G, m, A))
    if level is None or ray is None:
        return [condition("certificate rays", False, f"the certificate has no level and ray for each of {G} groups")]
    has = live & np.isfinite(level)
    bad = has & ~(np.isfinite(ray).all(axis=(1, 2)) & (ray >= 0).all(axis=(1, 2)))
    checks = [
        condition(
            "certificate rays",
            not bad.any(),
            f"{_group(inst, int(np.argmax(bad)))}: its ray has a negative or non-finite multiplier",
            f"{int(has.sum())} group(s) proven by a Farkas ray, the others by the closed-form bound",
        )
    ]
    proven = lower_bound(conditional_prior(inst.p), inst.lower, inst.upper)
    rays = np.flatnonzero(has)
    exact = rays.size * m * A <= EXACT_MAX_CELLS
    margin = np.where(live, proven - lower, math.inf)
    if exact:
        for k in rays[np.isfinite(lower[rays]) & np.isfinite(proven[rays])].tolist():
            by_ray = proven_lower_exact(inst.p[k], inst.lower[k], inst.upper[k], float(level[k]), ray[k])
            best = Fraction(float(proven[k])) if by_ray is None else max(by_ray, Fraction(float(proven[k])))
            diff = best - Fraction(float(lower[k]))
            margin[k] = float(diff) if diff >= 0 else min(float(diff), -math.ulp(0.0))  # never rounds to 0
        allowed = 0.0
        notes.append(f"the LFP's lower ends: their Farkas rays in exact rational arithmetic ({rays.size} group(s))")
    else:
        by_ray = proven_lower(inst.p[rays], inst.lower[rays], inst.upper[rays], level[rays], ray[rays])
        margin[rays] = np.maximum(proven[rays], by_ray) - lower[rays]
        allowed = RECOMPUTE_RTOL
        notes.append(
            f"the LFP's lower ends: their Farkas rays in floats ({rays.size} groups), with a rounding allowance, "
            f"to {RECOMPUTE_RTOL:g}"
        )
    notes.append("the closed-form lower ends (Theorem 1's bound, the mediant, Lemma 5): recomputed in floats")
    g = int(np.argmin(margin)) if G else 0
    worst = float(margin[g]) if G else math.inf
    return [
        *checks,
        compare(
            "certificate brackets' lower ends",
            -worst,
            allowed * max(1.0, abs(float(lower[g]))) if G else 0.0,
            f"{_group(inst, g)}: the lower end {float(lower[g])!r} is not proven (its proof gives "
            f"{float(lower[g]) + worst!r}; off by {-worst:.3g})",
            f"every lower end is proven (the least margin {worst:.3g})",
        ),
    ]
