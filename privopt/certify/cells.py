"""A split's evaluated points and cells re-proven from their recorded LP certificates (``privopt
verify`` of a composite; issues 21 item 3, 22).

A row of a composite split by ``composite.split.split`` records, per term (a block's chosen
budget), the points it evaluated ``(share, verified value, proven bound)``, the pieces of each
cell's second-order bound (``cell_bounds``, cut at ``cell_cuts``) and, for an LP block, each
point's certificate (``certificates``: the LP's optimum ``x*``, its t-form row multipliers
``y_b`` at the point's budget ``eps_b = lo + share / coef`` and their motions ``dy`` toward the
cells beside it; ``composite.parametric``). Here:

* the block's LP family is rebuilt from its spec (``ParametricLP.make``: the LP lowered at three
  budgets, its rows affine in ``s = e^-eps``, the objective and box fixed), so the LP at any
  ``t = e^eps`` is ``min c'x`` s.t. ``lo(t) <= (A0 + t A1) x <= hi(t)``, ``l <= x <= u``;
* **the point's bound** (weak duality, any ``y``): ``V(eps_b) >= L(y_b, t_b) = sum_i y_i
  side_i(t_b) + sum_j min(r_j l_j, r_j u_j)``, ``r = c - A(t_b)' y_b``, recomputed in exact
  rational arithmetic (``proofs.exact_lagrangian``, every float of the LP at ``t_b = fl(e^eps_b)``
  taken exactly) up to ``proofs.EXACT_MAX_CELLS`` columns, else in floats; the recorded bound
  ``b`` (the block's own certificate's, times its weight ``w``) must not exceed ``w L`` by more
  than ``split.SLACK`` relative, and the row's bound is re-derived from ``min(b, w L)``;
* **a cell's pieces**: each end's multipliers moved with ``t``, ``y(t) = y_b + (t - t_b) dy``
  (``dy`` as recorded, ``dy_below`` / ``dy_above``: any ``dy`` proves a bound when every row
  keeps its multiplier's sign over the cell and that side is finite, checked by ``Moved``; the
  solve's least-squares choice of ``dy`` only makes it tight) give ``L(y(t), t) >= q~(t) + E``, concave in
  ``t`` (``q~ = q0 + q1 d + min(q2, 0) d^2``, ``E`` the columns' worst loss over the cell), so
  its values at the piece's two ends bound every budget between them from below (with ``lam
  ln t`` concave too, the Lagrangian item's least is at an end: ``split._dual_items``);
  ``CellEnds.pieces`` at the recorded cut recomputes them, and ``split.recheck`` compares them
  to the recorded ones (``split.SLACK``) before re-deriving the row's bound. The cut itself needs
  no proof (any cut gives valid pieces).

A joint Gaussian group's term (``GroupProofs``: each point's dual record re-proven, its
sensitivity bounds and price checked, its cells' linear pieces recomputed, the points below its
proven least share confirmed; ``composite.groupcells``) and a randomized-response block in
closed form (``_closed_term``: the theorem re-checked, each point's bound its exact value;
``composite.closedcells``) are re-derived too, and so are

* **an infeasible point** of an LP block (value and bound +inf): its Farkas ray ``y`` (``rays``,
  at the indices ``infeasible``) proves the block's t-form LP at ``t_b`` infeasible when
  ``verification.exact.farkas(lp, y) > 0`` (weak duality with a zero objective: every feasible x
  has ``0 >= F(y)``), exactly;
* **a randomized-response term recorded without its closed-form record** (``_closed``; its block
  meets ``closedform/rr.py``'s theorem, whose conditions do not involve eps): each point's bound
  at most ``w (k - 1) / (e^eps + k - 1)``.

Every vector of a certificate is recorded sparse (``composite.result.sparse``: ``indices``,
``values``; ``_dense`` reads it back). Points without any of these (a block of no closed form
that is not an LP affine in ``e^-eps``) keep their recorded bound; the notes name how many and
where.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from types import SimpleNamespace

import numpy as np

from ..composite.closedcells import KIND as RR_KIND
from ..composite.closedcells import RRDual
from ..composite.groupcells import KIND as GROUP_KIND
from ..composite.groupcells import GroupDual, mu_holds
from ..composite.parametric import Cell, ParametricLP, TermDual, mechanism_lp
from ..composite.split import SLACK, CellEnds
from ..errors import SpecError, UsageError
from ..verification.checks import Check, compare, condition
from ..verification.exact import exact_lagrangian
from .proofs import EXACT_MAX_CELLS


def lp_at(fam: ParametricLP, t: float, A=None) -> SimpleNamespace:
    """The block's LP in the t-form at ``t`` (``parametric`` module docstring), as the fields
    ``methods.lp.lagrangian_bound`` and ``verification.exact`` read; ``A``: ``fam.matrix(t)``
    when the caller has it already."""
    return SimpleNamespace(
        c=fam.c,
        A=fam.matrix(t) if A is None else A,
        row_lower=fam.lo[0] + t * fam.lo[1],
        row_upper=fam.hi[0] + t * fam.hi[1],
        col_lower=fam.col_lower,
        col_upper=fam.col_upper,
        Q=None,
    )


def point_bound(fam: ParametricLP, eps: float, y: np.ndarray, A=None) -> tuple[float, bool]:
    """``(k L(y, t) + const, exact)``: the block's proven bound at ``eps`` in its objective units
    from the t-form multipliers ``y`` (weak duality), exactly in rationals up to
    ``EXACT_MAX_CELLS`` columns (``A``: the LP's matrix at ``t = e^eps``, when known)."""
    from ..methods.lp import lagrangian_bound

    lp = lp_at(fam, math.exp(eps), A)
    k, const = fam.units
    if lp.c.size <= EXACT_MAX_CELLS:
        exact = exact_lagrangian(lp, y)
        if exact is None:
            return -math.inf, True
        return float(Fraction(k) * exact + Fraction(const)), True
    return k * lagrangian_bound(lp, y) + const, False


class PointProofs:
    """One split row's points and cells with their certificates rebuilt (module docstring):
    ``points`` (each certified point's bound replaced by ``min(recorded, proven)``), ``names``
    (per term, its block), ``checks`` (per term, its points' bounds), ``notes`` (what stays as
    recorded), ``error`` (why the record cannot be read, else None), ``cell_duals()`` (the
    ``split.CellDual``s ``split.recheck`` re-derives the pieces of)."""

    def __init__(self, model, rec: dict, points: tuple, label: str, strict: bool = False):
        self.model, self.rec, self.label, self.strict = model, rec, label, strict
        self.checks: list[Check] = []
        self.notes: list[str] = []
        self.error: str | None = None
        records = rec.get("certificates") or []
        records = list(records) + [None] * (len(points) - len(records))
        self.names = [self._name(k, r, len(points)) for k, r in enumerate(records[: len(points)])]
        self.certs: list[list[TermDual | None]] = [[None] * len(p) for p in points]  # toward the cell below
        self.above: list[list[TermDual | None]] = [[None] * len(p) for p in points]  # toward the cell above
        # points proven without multipliers: infeasible by a Farkas ray (``_rays``) or below a group's
        # proven least share (``_group_term``), or by a closed form (``_closed``)
        self.proven: list[set[int]] = [set() for _ in points]
        self.why: list[str] = ["" for _ in points]  # per term: why its points carry no certificate (``_closed``)
        out = [list(p) for p in points]
        for k, record in enumerate(records[: len(points)]):
            if isinstance(record, dict) and record.get("kind") == GROUP_KIND:
                out[k] = self._group_term(k, record, out[k])
            elif isinstance(record, dict) and record.get("kind") == RR_KIND:
                out[k] = self._closed_term(k, record, out[k])
            elif record is not None:
                out[k] = self._term(k, record, out[k])
            else:
                out[k] = self._closed(k, out[k])
            if self.error is not None:
                return
            self._uncertified(k, out[k])
        self.points = tuple(tuple(p) for p in out)

    def _name(self, k: int, record, terms: int) -> str:
        """Term ``k``'s name: its certificate's block, else the row's k-th term's (a joint Gaussian
        group is one term, at its first variable: ``gaussian.split_row``), or its position."""
        key = record.get("var") if isinstance(record, dict) else None
        var = self.model.vars.get(key) if isinstance(key, str) else None
        group = self.model.group_of(var.block) if var is not None and var.block is not None else None
        if group is not None:
            return f"joint Gaussian ({', '.join(group.blocks)})"
        if var is not None and var.block is not None:
            return f"block {var.block}"
        names, groups = [], set()
        for key in self.rec.get("vars") or []:
            var = self.model.vars.get(key)
            g = self.model.group_of(var.block) if var is not None and var.block is not None else None
            if g is None:
                names.append(f"block {var.block}" if var is not None and var.block is not None else key)
            elif g.blocks not in groups:
                groups.add(g.blocks)
                names.append(f"joint Gaussian ({', '.join(g.blocks)})")
        return names[k] if len(names) == terms else f"term {k + 1}"

    def _term(self, k: int, record: dict, pts: list) -> list:
        """Term ``k``'s certified points: their ``TermDual``s, and their bounds checked and capped."""
        name = self.names[k]
        key = record.get("var") if isinstance(record, dict) else None
        var = self.model.vars.get(key) if isinstance(key, str) else None
        row = next((r for r in self.model.rows if key in r.coefs), None)
        if var is None or var.block is None or row is None or key not in (self.rec.get("vars") or []):
            self.error = f"{name}: its certificates name {key!r}, not a chosen budget of this row"
            return pts
        fam = _family(self.model, var)
        if fam is None:
            self.error = f"{name}: its LP is not affine in e^-eps (or not an LP), so its certificates cannot be read"
            return pts
        sign = 1.0 if self.model.sense == "minimize" else -1.0
        w, scale = sign * self.model.objective.coefs.get(f"{var.block}.objective", 0.0), row.coefs[key]
        m, n = fam.A0.shape
        try:
            idx, infeasible = ([int(j) for j in record.get(f) or []] for f in ("points", "infeasible"))
            X = np.array([_dense(v, n) for v in record.get("x") or []], dtype=float).reshape(len(idx), n)
            Y = np.array([_dense(v, m) for v in record.get("y") or []], dtype=float).reshape(len(idx), m)
            below, above = (_motions(record.get(f), len(idx), m) for f in ("dy_below", "dy_above"))
            rays = [_dense(v, m) for v in record.get("rays") or []]
        except (TypeError, ValueError, AttributeError):
            self.error = (
                f"{name}: its certificates are not sparse vectors (indices, values) of {n} x, {m} y and {m} dy "
                f"(or null) per point and {m} per ray"
            )
            return pts
        for what, at in (("certificates'", idx), ("rays'", infeasible)):
            if sorted(set(at)) != at or (at and (at[0] < 0 or at[-1] >= len(pts))):
                self.error = f"{name}: its {what} point indices {at} are not its points'"
                return pts
        if len(rays) != len(infeasible):
            self.error = f"{name}: {len(infeasible)} infeasible point(s) but {len(rays)} ray(s)"
            return pts
        self._rays(k, fam, var.lo, scale, infeasible, rays, pts)
        if not (np.isfinite(X).all() and np.isfinite(Y).all()):
            self.error = f"{name}: a certificate has a non-finite entry"
            return pts
        worst, where, exact = -math.inf, None, True
        for j, x, y, dy_below, dy_above in zip(idx, X, Y, below, above):
            share, value, bound = pts[j]
            eps = var.lo + share / scale
            toward_below, toward_above = Moved(fam, eps, x, y, dy=dy_below), Moved(fam, eps, x, y, dy=dy_above)
            toward_above.memo["base"] = base = toward_below.shared()  # A(t_b) built once per point
            self.certs[k][j] = TermDual(toward_below, w, var.lo, scale)
            self.above[k][j] = TermDual(toward_above, w, var.lo, scale)
            on_side = not np.any(((y > 0) & ~np.isfinite(fam.lo[0])) | ((y < 0) & ~np.isfinite(fam.hi[0])))
            proven, ex = point_bound(fam, eps, y, base.Ab) if on_side else (-math.inf, True)
            exact &= ex
            proven *= w
            excess = (bound - proven) / max(1.0, abs(proven)) if bound != proven else 0.0
            if not excess <= worst:
                worst, where = excess, (share, eps, bound, proven)
            pts[j] = (share, value, min(bound, proven))
        if where is None:  # no point with multipliers (every certified point infeasible: ``_rays``)
            return pts
        share, eps, bound, proven = where
        how = "exact rational arithmetic" if exact else "floats"
        self.checks.append(
            compare(
                f"{self.label}: {name}: each point's bound proven by its multipliers",
                worst,
                SLACK,
                f"the point at share {share!r} (eps {eps!r}): its bound {bound!r} is not proven, its multipliers "
                f"prove {proven!r}",
                f"{len(idx)} point(s), by weak duality in {how}",
            )
        )
        return pts

    def _group_term(self, k: int, record: dict, pts: list) -> list:
        """Term ``k``, a joint Gaussian group or a lone noise block priced as a group of one
        (``Model.noise_group``; ``composite.groupcells``): each point's certificate
        rebuilt from its record and re-proven, its bound capped; the (inf, inf) points below the
        term's proven least share confirmed (``GroupProofs``)."""
        key = record.get("var")
        var = self.model.vars.get(key) if isinstance(key, str) else None
        group = self.model.noise_group(var.block) if var is not None and var.block is not None else None
        if group is None or key not in (self.rec.get("vars") or []):
            self.error = f"{self.names[k]}: its certificates name {key!r}, not a joint group's budget of this row"
            return pts
        try:
            proofs = GroupProofs(self.model, group, record, pts, f"{self.label}: {self.names[k]}")
        except (KeyError, TypeError, ValueError) as e:
            self.error = f"{self.names[k]}: its certificates cannot be read ({e})"
            return pts
        self.checks += proofs.checks
        for j, dual in proofs.duals.items():
            self.certs[k][j] = self.above[k][j] = dual
        self.proven[k] |= set(proofs.infeasible)
        return proofs.points

    def _closed_term(self, k: int, record: dict, pts: list) -> list:
        """Term ``k``, a randomized-response block in closed form (``composite.closedcells``): the
        block rebuilt must meet ``closedform/rr.py``'s theorem (its value is then ``w (k - 1) /
        (e^eps + k - 1)`` at every eps of its range), ``k`` and the weight ``w`` re-derived (the
        recorded ones must be these), each point's bound at most its exact value, and its
        ``RRDual`` rebuilt for the cells beside it; its points recorded +inf (a target's) proven
        where the target fails at the theorem's optimum (``_missed``)."""
        name = self.names[k]
        key = record.get("var")
        var = self.model.vars.get(key) if isinstance(key, str) else None
        row = next((r for r in self.model.rows if key in r.coefs), None)
        if var is None or var.block is None or row is None or key not in (self.rec.get("vars") or []):
            self.error = f"{name}: its certificates name {key!r}, not a chosen budget of this row"
            return pts
        _, match, w = self._theorem(var)
        label = f"{self.label}: {name}: randomized response in closed form"
        if not match:
            self.checks.append(condition(label, False, "the block does not meet the randomized-response theorem"))
            return pts
        kk = float(match.data["k"])
        same = record.get("k") == kk and record.get("weight") == w and w >= 0
        self.checks.append(
            condition(
                f"{label}: k and weight",
                same,
                f"the result records k {record.get('k')!r} and weight {record.get('weight')!r}; the spec gives {kk!r}, {w!r}",
                f"k = {kk:g}, weight {w:g} (theorem)",
            )
        )
        try:
            idx = [int(j) for j in record["points"]]
        except (KeyError, TypeError, ValueError):
            self.error = f"{name}: its certificates' point indices cannot be read"
            return pts
        if sorted(set(idx)) != idx or (idx and (idx[0] < 0 or idx[-1] >= len(pts))):
            self.error = f"{name}: its certificates' point indices {idx} are not its points'"
            return pts
        self._missed(k, var, kk, row.coefs[key], pts)
        worst, where = 0.0, ""
        for j in idx:
            share, value, bound = pts[j]
            d = RRDual(kk, w, var.lo, row.coefs[key], share)
            exact = d.value(share)
            excess = (bound - exact) / max(1.0, abs(exact)) if bound > exact else 0.0
            if excess > worst:
                worst, where = excess, f"the point at share {share!r}: its bound {bound!r} is above its value {exact!r}"
            pts[j] = (share, value, min(bound, exact))
            self.certs[k][j] = self.above[k][j] = d
        self.checks.append(
            compare(f"{label}: each point's bound its exact value", worst, SLACK, where, f"{len(idx)} point(s)")
        )
        return pts

    def _closed(self, k: int, pts: list) -> list:
        """Term ``k`` without LP certificates: where its block meets randomized response's
        theorem (``closedform/rr.py``: its conditions do not involve eps; the block rebuilt at its
        range's top, its other params fixed), its value at every budget is ``(k - 1) / (e^eps + k
        - 1)``, so each point's recorded bound must be at most ``w`` times that (``split.SLACK``
        relative; floats) and the row's bound is re-derived from the smaller; a point recorded +inf
        is proven so where a target on the block fails at the theorem's optimum there
        (``composite.least``). Other terms (a joint Gaussian group's, a block of no closed form) are
        left to ``_uncertified``'s note."""
        from ..closedform.rr import rr_value
        from ..composite.result import term_vars

        keys = term_vars(self.model, list(self.rec.get("vars") or []))
        var = self.model.vars.get(keys[k]) if k < len(keys) else None
        if var is None or var.block is None or self.model.group_of(var.block) is not None:
            self.why[k] = "a joint Gaussian group's points carry the joint program's certificates (docs/blocks.md)"
            return pts
        row = next((r for r in self.model.rows if keys[k] in r.coefs), None)
        try:
            problem, match, w = self._theorem(var)
        except (SpecError, UsageError):
            return pts
        if not match or row is None or self.model.blocks[var.block].linked:
            self.why[k] = (
                f"the block is a {problem.kind} program that is neither an LP affine in e^-eps (whose points "
                "record multipliers and rays) nor randomized response: a split records no certificate of its "
                "points, only of its chosen one (blocks.NAME.result)"
            )
            return pts
        scale = row.coefs[keys[k]]
        kk = float(match.data["k"])
        worst, where = -math.inf, None
        self._missed(k, var, kk, scale, pts)
        for j, (share, value, bound) in enumerate(pts):
            eps = var.lo + share / scale
            if value == bound == math.inf:
                continue
            proven = w * rr_value(kk, eps)
            excess = (bound - proven) / max(1.0, abs(proven)) if bound != proven else 0.0
            if not excess <= worst:
                worst, where = excess, (share, eps, bound, proven)
            pts[j] = (share, value, min(bound, proven))
            self.proven[k].add(j)
        if where is None:
            return pts
        share, eps, bound, proven = where
        self.checks.append(
            compare(
                f"{self.label}: {self.names[k]}: each point's bound is randomized response's optimum",
                worst,
                SLACK,
                f"the point at share {share!r} (eps {eps!r}): its bound {bound!r} is above the theorem's optimum "
                f"{proven!r}",
                f"{len(pts)} point(s): (k - 1) / (e^eps + k - 1) with k = {kk:g} (closedform/rr.py's theorem holds "
                "for the block), in floats",
            )
        )
        return pts

    def _theorem(self, var) -> tuple:
        """``(problem, match, w)``: the block of chosen budget ``var`` rebuilt at its range's top
        (randomized response's theorem, ``closedform/rr.py``, has no condition on eps; the block's
        other params fixed), the theorem's match there (None when it does not apply) and the
        block's weight ``w`` in the objective, signed by the composite's sense."""
        from ..closedform.rr import RANDOMIZED_RESPONSE

        block = self.model.blocks[var.block]
        eps0 = var.hi if math.isfinite(var.hi) else max(var.lo, 1.0)
        problem = self.model.load_block(block.spec, dict(block.fixed) | {var.param: eps0})
        in_scope = getattr(problem, "design", None) is not None and RANDOMIZED_RESPONSE.in_scope(problem)
        match = RANDOMIZED_RESPONSE.accepts(problem) if in_scope else None
        sign = 1.0 if self.model.sense == "minimize" else -1.0
        return problem, match, sign * self.model.objective.coefs.get(f"{var.block}.objective", 0.0)

    def _missed(self, k: int, var, kk: float, scale: float, pts: list) -> None:
        """Term ``k``'s points recorded +inf, a randomized-response block's (``k = kk``): proven
        where a target on the block fails at the theorem's optimum there (``composite.least``);
        the others are left to ``_uncertified``'s note."""
        from ..closedform.rr import rr_value
        from ..composite.least import meets

        targets = [t for t in self.model.targets if t.block == var.block]
        for j, (share, value, bound) in enumerate(pts):
            if value == bound == math.inf and any(
                not meets(t.op, t.bound, rr_value(kk, var.lo + share / scale)) for t in targets
            ):
                self.proven[k].add(j)

    def _rays(self, k: int, fam: ParametricLP, lo: float, scale: float, at: list[int], rays: list, pts) -> None:
        """Term ``k``'s infeasible points proven by their Farkas rays: at the point's budget
        ``eps = lo + share / scale`` the block's t-form LP at ``t = fl(e^eps)`` (``lp_at``) has
        ``verification.exact.farkas(lp, ray) > 0``, exactly (no feasible x: its bound +inf holds).
        A point with a verified value cannot be infeasible; a ray that proves nothing fails,
        named by its point."""
        from ..verification.exact import farkas

        worst, where = math.inf, None
        for j, ray in zip(at, rays):
            share, value, bound = pts[j]
            eps = lo + share / scale
            proven = farkas(lp_at(fam, math.exp(eps)), ray) if value == bound == math.inf else None
            # the margin: the bound the ray proves on 0 (positive: infeasible), never rounded to 0 when not
            margin = -math.inf if proven is None else float(proven) if proven > 0 else min(float(proven), -1e-300)
            if margin <= worst:
                worst, where = margin, (share, eps, value)
            if proven is not None and proven > 0:
                self.proven[k].add(j)
        if where is None:
            return
        share, eps, value = where
        why = "it has a verified value" if value != math.inf else "the ray proves nothing there"
        self.checks.append(
            compare(
                f"{self.label}: {self.names[k]}: each infeasible point proven by its Farkas ray",
                -worst,
                0.0,
                f"the point at share {share!r} (eps {eps!r}) is not proven infeasible: {why}",
                f"{len(at)} point(s): no feasible table there, by Farkas rays in exact rational arithmetic",
            )
        )

    def _uncertified(self, k: int, pts: list) -> None:
        """A note naming term ``k``'s points whose bounds stay as recorded; with ``strict``, a
        recorded bound of +inf among them proves nothing (-inf), and the note says so."""
        bare = [p for j, p in enumerate(pts) if self.certs[k][j] is None and j not in self.proven[k]]
        if not bare:
            return
        if self.strict:
            unproven = [j for j, p in enumerate(pts) if p[2] == math.inf and p in bare]
            for j in unproven:
                pts[j] = (pts[j][0], pts[j][1], -math.inf)
            if unproven:
                self.notes.append(
                    f"{self.label}: {self.names[k]}: {len(unproven)} point(s) recorded infeasible without a Farkas "
                    "ray prove nothing (their bound counts as -inf)"
                )
        infeasible = sum(1 for _, v, b in bare if v == math.inf and b == math.inf)
        shares = ", ".join(f"{x:.6g}" for x, _, _ in bare[:4]) + (", ..." if len(bare) > 4 else "")
        why = f" ({infeasible} where the block is infeasible)" if infeasible else ""
        because = f"; {self.why[k]}" if self.why[k] else ""
        self.notes.append(
            f"{self.label}: {self.names[k]}: {len(bare)} of {len(pts)} point(s) have no certificate{why}: "
            f"their proven bounds are taken as recorded (shares {shares}){because}"
        )

    def cell_duals(self) -> tuple:
        """Per term, per point, the ``split.CellDual`` of the cell below it: its ends'
        certificates, the recorded cut and pieces (None where no pieces are recorded). A cell
        with pieces but no certificate at either end is a ``ValueError``."""
        bounds, cuts = self.rec.get("cell_bounds") or [], self.rec.get("cell_cuts") or []
        out = []
        for k, cells in enumerate(bounds):
            certs = self.certs[k] if k < len(self.certs) else []
            row = [None]
            for j, pieces in enumerate(cells[1:] if cells else [], start=1):
                if pieces is None:
                    row.append(None)
                    continue
                above = self.above[k] if k < len(self.above) else []
                ends = CellEnds(above[j - 1] if j - 1 < len(above) else None, certs[j] if j < len(certs) else None)
                cut = (cuts[k][j] if k < len(cuts) and j < len(cuts[k]) else None) if cuts else None
                if ends.left is None and ends.right is None:
                    raise ValueError(
                        f"{self.names[k]}: a cell's pieces are recorded, but neither end has a certificate"
                    )
                if not isinstance(cut, int | float) or isinstance(cut, bool):
                    raise ValueError(f"{self.names[k]}: a cell's pieces are recorded without its cut")
                p = tuple(tuple(-math.inf if x is None else float(x) for x in piece) for piece in pieces)
                row.append((ends, float(cut), p))
            out.append(tuple(row))
        return tuple(out)


@dataclass(frozen=True)
class Moved(Cell):
    """A point's certificate toward one cell beside it with its recorded motion ``dy`` (module
    docstring), used as ``parametric.Cell`` uses the motion it computes: valid when every row
    keeps its multiplier's sign over the cell (``y_i (y_i + da dy_i) >= 0``) and that sign's
    side is finite, checked here (a ``ValueError`` otherwise, as without a recorded ``dy``)."""

    dy: np.ndarray | None = None

    def shared(self):
        """What every bound of this point shares (``Cell._base``: ``A(t_b)``, its transpose, the
        reduced costs), whichever motion ``dy`` it is moved with."""
        return self._base()

    def _dy(self, base, da: float) -> np.ndarray:  # noqa: ARG002 - the recorded motion replaces the solve's
        if self.dy is None:
            raise ValueError("no motion of the multipliers toward this cell is recorded")
        f, y, dy = self.lp, self.y, self.dy
        sign = np.where(y != 0, np.sign(y), np.sign(da) * np.sign(dy))
        bad = ((y + da * dy) * y < 0) | ((sign > 0) & ~np.isfinite(f.lo[0])) | ((sign < 0) & ~np.isfinite(f.hi[0]))
        if bad.any():
            raise ValueError(
                f"the multipliers' motion changes the sign of row {int(np.argmax(bad))}'s multiplier in the cell, "
                "or puts it on an infinite side: it proves no bound"
            )
        return dy


def _dense(record, size: int) -> np.ndarray:
    """A recorded sparse vector (``composite.result.sparse``: ``indices``, ``values``) of length
    ``size``, dense; a ``ValueError`` when it is not one (indices out of range or repeated)."""
    at = np.asarray(record["indices"], dtype=np.int64)
    values = np.asarray(record["values"], dtype=float)
    if at.ndim != 1 or at.shape != values.shape or (at.size and (at.min() < 0 or at.max() >= size)):
        raise ValueError(f"not a sparse vector of length {size}")
    if np.unique(at).size != at.size:
        raise ValueError("a sparse vector's index repeats")
    out = np.zeros(size)
    out[at] = values
    return out


def _motions(rows, count: int, m: int) -> list[np.ndarray | None]:
    """A recorded list of motions (one per certified point, each a sparse vector of ``m`` or null)."""
    rows = [None] * count if rows is None else list(rows)
    if len(rows) != count:
        raise ValueError("one motion per point")
    out = [None if r is None else _dense(r, m) for r in rows]
    if any(d is not None and not np.isfinite(d).all() for d in out):
        raise ValueError("a motion has a non-finite entry")
    return out


def _family(model, var) -> ParametricLP | None:
    """The chosen budget's block as an LP family (``ParametricLP.make``), rebuilt from its spec
    at ``PROBES`` with its other params fixed, as the split built it; None when it is not one."""
    block = model.blocks[var.block]
    try:
        return ParametricLP.make(
            lambda e: mechanism_lp(model.load_block(block.spec, dict(block.fixed) | {var.param: e}))
        )
    except (SpecError, UsageError):
        return None


class GroupProofs:
    """A joint Gaussian group's term re-proven from its recorded certificates
    (``groupcells.GroupDual.records``; ``composite.groupcells`` module docstring), with no solver:

    * each distinct dual point (``duals``): the weighted joint program rebuilt from the spec at
      its recorded (eps, delta, weights) and ``gaussian.dual_curve`` recomputed from ``(Y, mu)``
      (``ConicProgram.dual_bound``, weak duality; the targets' multipliers as ``proven_bound``
      moves them): ``p(s) >= A + P / s`` for every squared sensitivity s;
    * each point at eps: its recorded ``mu = (lo, hi)`` checked to bracket the calibration's
      largest sensitivity there (one evaluation of the condition each, ``groupcells.mu_holds``);
      ``B = A + P / hi^2`` and ``lam = P / hi^4`` recomputed: the recorded ``lam`` must be this
      (``split.SLACK`` relative: the tangent's slope, exact on both sides of the point), the
      recorded bounds (the point's and its certificate's) at most ``B``;
    * the points recorded (inf, inf) below the term's proven least share: the share re-derived
      from its recorded dual point (``gaussian._least_bound``), each such point below it.

    ``points`` (each certified point's bound capped at ``B``), ``duals`` (per point index, its
    ``GroupDual`` for ``split.CellEnds``), ``infeasible`` (the indices proven infeasible) and
    ``checks`` (named by ``label`` and, on failure, the point and the cells beside it)."""

    def __init__(self, model, group, record: dict, pts: list, label: str):
        from ..composite.gaussian import _least_bound, calibration_of, dual_curve

        idx = [int(j) for j in record["points"]]
        which = [int(i) for i in record["dual"]]
        bounds = [float(b) for b in record["bound"]]
        lams = [float(x) for x in record["lam"]]
        mus = [(float(lo), float(hi)) for lo, hi in record["mu"]]
        duals = list(record["duals"])
        if not (len(idx) == len(which) == len(bounds) == len(lams) == len(mus)):
            raise ValueError("one dual index, bound, lam and mu per certified point")
        if sorted(set(idx)) != idx or (idx and (idx[0] < 0 or idx[-1] >= len(pts))):
            raise ValueError(f"the point indices {idx} are not the term's points'")
        if any(not 0 <= i < len(duals) for i in which):
            raise ValueError("a point names a dual point the term does not record")
        calibration = calibration_of(model, group)
        curves = {i: dual_curve(model, group, duals[i]) for i in sorted(set(which))}
        self.points = [list(p) for p in pts]
        self.duals: dict[int, GroupDual] = {}
        self.checks: list[Check] = []
        xs = [p[0] for p in pts]

        def where(j: int) -> str:
            below = f"[{xs[j - 1]!r}, {xs[j]!r}]" if j > 0 else None
            above = f"[{xs[j]!r}, {xs[j + 1]!r}]" if j + 1 < len(xs) else None
            cells = " and ".join(c for c in (below, above) if c)
            return f"the point at eps {xs[j]!r} (cells {cells})"

        bad_mu, worst_bound, worst_lam = None, (-math.inf, None), (-math.inf, None)
        for j, i, b, lam, (lo, hi) in zip(idx, which, bounds, lams, mus):
            share, value, bound = pts[j]
            holds = mu_holds(share, group.delta, calibration, lo, hi)
            if bad_mu is None and not all(holds):
                side = f"mu_lo {lo!r} is not private" if not holds[0] else f"mu_hi {hi!r} is private"
                bad_mu = f"{where(j)}: {side} at (eps, delta) = ({share!r}, {group.delta!r})"
            A, P = curves[i]
            s1 = hi * hi
            proven, price = A + P / s1, P / (s1 * s1)
            excess = max(bound, b) - proven
            excess = excess / max(1.0, abs(proven)) if excess > 0 else 0.0
            if not excess <= worst_bound[0]:
                worst_bound = (
                    excess,
                    f"{where(j)}: its bound {max(bound, b)!r} is not proven, its dual proves {proven!r}",
                )
            off = abs(lam - price) / max(abs(price), 1e-300) if lam != price else 0.0
            if not off <= worst_lam[0]:
                worst_lam = (off, f"{where(j)}: its price lam {lam!r} is not its dual point's {price!r}")
            self.points[j] = [share, value, min(bound, proven)]
            self.duals[j] = GroupDual(share, group.delta, calibration, min(b, proven), price, (lo, hi), duals[i])
        n = f"{len(idx)} point(s) from {len(curves)} dual point(s)"
        self.checks += [
            condition(
                f"{label}: each point's sensitivity bounds bracket the calibration's", bad_mu is None, bad_mu or "", n
            ),
            compare(
                f"{label}: each point's bound proven by its dual point", worst_bound[0], SLACK, worst_bound[1] or "", n
            ),
            compare(
                f"{label}: each point's price of the sensitivity (lam) its dual point's",
                worst_lam[0],
                SLACK,
                worst_lam[1] or "",
                n,
            ),
        ]
        self.infeasible = self._least(model, group, record.get("least"), pts, label, _least_bound)
        self.points = tuple(tuple(p) for p in self.points)

    def _least(self, model, group, least, pts: list, label: str, least_bound) -> set[int]:
        """The (inf, inf) points below the re-derived least share (none without a record of it)."""
        dead = [j for j, (_x, v, b) in enumerate(pts) if v == math.inf and b == math.inf]
        if not dead or not isinstance(least, dict):
            return set()
        t_l = least_bound(model, group, least["record"])
        over = [pts[j][0] for j in dead if not pts[j][0] < t_l]
        self.checks.append(
            condition(
                f"{label}: its points recorded infeasible lie below the proven least share",
                not over and _number(least.get("eps")) <= t_l * (1 + SLACK),
                f"the proven least share is {t_l!r} (recorded {least.get('eps')!r}); points at {over[:4]} are not below it",
                f"{len(dead)} point(s) below {t_l!r}, re-derived from its dual point",
            )
        )
        return set(dead)


def _number(x) -> float:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else math.nan
