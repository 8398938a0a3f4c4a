"""A plain-text summary of a Problem: the IR stage of the golden files (and `explain`'s body),
printed from the parts the problem holds (a noise model, an obfuscation model, the design's
constraints and budgets, the objective's measure)."""

from __future__ import annotations

import numpy as np

from .problem import Problem


def summarize(problem: Problem, max_cells: int = 24) -> str:
    lines = [f"title: {problem.title}"]
    for v in problem.variables.values():
        lines.append(f"var {v.name}: {v.role.value} [{', '.join(v.labels)}]")
    for name, value in problem.params.items():
        lines.append(f"param {name} = {value:.12g}")
    for t in problem.known.values():
        given = f" | {', '.join(t.given)}" if t.given else ""
        cells = np.round(t.data.ravel()[:max_cells], 10).tolist()
        lines.append(f"known {t.name} = P({', '.join(t.targets)}{given}) axes={list(t.axes)} cells={cells}")
    if problem.noise is not None:
        nm = problem.noise
        x, req = nm.input, nm.requirement
        lines.append(f"input {x.name}: {x.role} real[{x.size}] widths={np.round(x.widths[:max_cells], 10).tolist()}")
        lines.append(
            f"release {nm.release}: F={np.round(nm.F.ravel()[:max_cells], 10).tolist()} shape={list(nm.F.shape)}"
        )
        for n in nm.noises:
            lines.append(
                f"noise {n.name}: gaussian[{n.size}]{' correlated' if n.correlated else ''} G={np.round(n.G.ravel()[:max_cells], 10).tolist()}"
            )
        lines.append(
            f"requirement dp({req.source} -> {req.release}) eps={req.eps:.12g} delta={req.delta:.12g} calibration={req.calibration}"
        )
        lines.append(f"objective {problem.objective.text!r} offset={problem.objective.offset:.12g}")
        return "\n".join(lines) + "\n"
    d = problem.design
    lines.append(f"design {d.name} = P({', '.join(d.targets)} | {', '.join(d.given)})")
    for c in problem.constraints:
        extra = ""
        if getattr(c, "expr", None) is not None:
            extra = f" axes={list(c.expr.axes)} cells={int(c.expr.defined_mask().sum())}" + (
                " induced" if c.induced else ""
            )
        lines.append(f"constraint {c.text!r} ({c.sense}){extra}")
    for b in problem.budgets:
        pairs = "all" if b.pairs is None else len(b.pairs)
        lines.append(
            f"budget {b.kind}({', '.join(b.source)} -> {b.target}) eps={b.eps:.12g} delta={b.delta:.12g} pairs={pairs}"
        )
    o = problem.objective
    if problem.obfuscation is not None:
        ob = problem.obfuscation
        if ob.leakage is not None:
            lines.append(f"leakage mutual_info({ob.leakage.release}; {ob.leakage.other}) <= {ob.eps:.12g} bits")
        lines.append(
            f"symmetric {ob.symmetric}; P_X(1) = {ob.px1:.12g}; P(F | X) = {np.round(ob.F_given_X.ravel(), 10).tolist()}"
        )
        lines.append(f"objective {o.sense} {o.text!r} kind={o.kind}")
        return "\n".join(lines) + "\n"
    if o.curvature != "ratio":  # an affine or quadratic objective over the design
        lines.append(f"objective {o.sense} {o.text!r} kind={o.kind} pair={o.pair}")
        return "\n".join(lines) + "\n"
    m = o.measure  # a max-confidence ratio: the measure it reads
    lines.append(
        f"objective {o.sense} {o.kind}(public={list(m.public)}, outcome={m.outcome}, private={list(m.private)}, "
        f"prior={m.prior}, reference={m.reference})"
    )
    return "\n".join(lines) + "\n"
