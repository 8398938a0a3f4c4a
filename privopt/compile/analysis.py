"""Problem classification: a pure pass that says what kind of program a Problem is and which
methods apply, with the reason for each. No matrices are built and nothing is solved here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..ir.model import Problem

METHODS = ("closed-form", "lfp")


@dataclass(frozen=True)
class Analysis:
    problem_class: str  # e.g. "atr-max-confidence"
    program: str  # "generalized linear-fractional program"
    applicable: dict[str, str]  # method -> why it applies
    not_applicable: dict[str, str]  # method -> why not
    chosen: str
    why: str
    size: dict[str, int] = field(default_factory=dict)

    def summary_lines(self) -> list[str]:
        lines = [f"class:   {self.problem_class} ({self.program})"]
        lines.append(f"method:  {self.chosen} - {self.why}")
        for m, why in self.applicable.items():
            lines.append(f"  can use {m}: {why}")
        for m, why in self.not_applicable.items():
            lines.append(f"  cannot use {m}: {why}")
        lines.append("size:    " + ", ".join(f"{k} {v:,}" for k, v in self.size.items()))
        return lines


def analyse(problem: Problem) -> Analysis:
    m = problem.objective.measure
    n_out = problem.variables[m.outcome].size
    groups = int(np.prod([problem.variables[v].size for v in m.public], dtype=np.int64)) if m.public else 1
    per_group = int(np.prod([problem.variables[v].size for v in m.private], dtype=np.int64))
    size = {
        "groups": groups,
        "records per group": per_group,
        "outcomes": n_out,
        "design cells": groups * per_group * n_out,
    }
    applicable = {
        "lfp": "any number of outcomes: Dinkelbach-type steps, one block LP over all groups per step (Sec. 6, Lemma 3)"
    }
    not_applicable = {}
    if n_out == 2:
        applicable["closed-form"] = (
            "binary outcome with elementwise fidelity bounds: Theorem 1 (with beta_min, Lemma 5), "
            "vectorized over groups"
        )
        chosen, why = "closed-form", "a theorem gives the optimum for binary outcomes; no solver needed"
    else:
        not_applicable["closed-form"] = f"Theorem 1 covers two outcomes; {m.outcome} has {n_out}"
        chosen, why = "lfp", f"{m.outcome} has {n_out} outcomes, beyond the closed form"
    return Analysis(
        problem_class="atr-" + problem.objective.kind.replace("_", "-"),
        program="generalized linear-fractional program, separable by QID group",
        applicable=applicable,
        not_applicable=not_applicable,
        chosen=chosen,
        why=why,
        size=size,
    )
