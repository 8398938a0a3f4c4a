"""A plain-text summary of a Problem: the IR stage of the golden files (and `explain`'s body)."""

from __future__ import annotations

import numpy as np

from .model import Problem


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
    d = problem.design
    lines.append(f"design {d.name} = P({', '.join(d.targets)} | {', '.join(d.given)})")
    for c in problem.constraints:
        lines.append(f"constraint {c.text!r} ({c.sense})")
    o = problem.objective
    m = o.measure
    lines.append(
        f"objective {o.sense} {o.kind}(public={list(m.public)}, outcome={m.outcome}, private={list(m.private)}, "
        f"prior={m.prior}, reference={m.reference})"
    )
    return "\n".join(lines) + "\n"
