"""What ``privopt explain`` says about each block of a composite: the budget it gets, read from
the model alone (nothing is solved).

* a block of a joint Gaussian program gets the shared ``(eps, delta)`` of its ``dp(...)``: the
  blocks together are one Gaussian mechanism (``gaussian.py``);
* a block whose budget is chosen gets it from the split of its composition row, within the
  variable's range (``split.py``), or, when the row's eps is the composite's ``t`` (accuracy
  first over a row, ``least.py``), its least eps meeting its targets;
* a block whose budget is set by ``with P = t`` gets the composite's own variable (accuracy first);
* every other param is the number the composite or the block fixes (``with``, a share of delta),
  except the delta of a row that ``deltasplit`` splits with eps (classic-calibration Gaussian
  blocks): chosen in ``[0, delta]`` with eps.
"""

from __future__ import annotations

import math
import re

from .deltasplit import row_deltas
from .model import branched


def _number(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _written(span) -> str:
    """A constraint as written, on one line, without its ``subject to``."""
    return re.sub(r"^subject\s+to\s+", "", " ".join(span.text().split()))


def _linear(form) -> str:
    """``const + sum c_k k`` as written: ``t``, ``2 * t + 0.5``."""
    terms = [k if c == 1 else f"{c:g} * {k}" for k, c in form.coefs.items()]
    if form.const or not terms:
        terms.append(f"{form.const:g}")
    return " + ".join(terms)


def budgets(c) -> list[dict]:
    """One entry per block: ``fixed`` (param -> number), ``chosen`` (param -> [lo, hi], null for
    an infinite end), ``linked`` (param -> the expression of the composite's variables), and
    ``how`` it gets them."""
    out = []
    joint = c.joint
    for name, b in c.blocks.items():
        entry = {"block": name, "file": b.file, "fixed": dict(b.fixed), "chosen": {}, "linked": {}}
        group = c.group_of(name)
        if joint is not None and name in joint.blocks and joint.var is not None:
            entry["fixed"] |= {b.budget.delta: joint.delta}
            entry["linked"] = {b.budget.eps: joint.var}
            others = [n for n in joint.blocks if n != name]
            how = f"the least {joint.var} meeting the targets, shared by one joint Gaussian program with {', '.join(others)}"
        elif joint is not None and name in joint.blocks:
            entry["fixed"] |= {b.budget.eps: joint.eps, b.budget.delta: joint.delta}
            others = [n for n in joint.blocks if n != name]
            how = f"the shared budget of one joint Gaussian program with {', '.join(others)}"
        elif group is not None and branched(c):
            entry["fixed"] |= {b.budget.delta: group.delta}
            entry["chosen"] = {b.budget.eps: [0.0, _number(group.eps)]}
            how = "its budget in each branch of the design choice, a composite of its own (its group is the blocks released)"
        else:
            chosen = [v for v in c.vars.values() if v.block == name]
            entry["chosen"] = {v.param: [_number(v.lo), _number(v.hi)] for v in chosen}
            entry["linked"] = {p: _linear(form) for p, form in b.linked.items()}
            rows = [r for r in c.rows if any(v.key in r.coefs for v in chosen)]
            if chosen and any(r.var is not None for r in rows):  # accuracy first over the row (``least``)
                what = "the group's" if group is not None else "its"
                how = f"{what} least eps meeting the targets, one term of the least {rows[0].var} in " + _written(
                    rows[0].span
                )
            elif chosen:
                how = "chosen by the split of " + "; ".join(_written(r.span) for r in rows)
                split = next((r for r in rows if row_deltas(c, r, [c.vars[k] for k in r.coefs if k in c.vars])), None)
                if split is not None:  # its delta is split with eps (``deltasplit``), not the even share
                    entry["fixed"].pop(b.budget.delta, None)
                    entry["chosen"][b.budget.delta] = [0.0, split.delta]
                    how += ", delta with eps (classic calibration; evenly if a block's eps reaches 1)"
            elif b.linked:
                how = "set by the composite's variable"
            else:
                how = "fixed"
        if c.choice and name in c.choice:
            how += "; released only if the design choice picks it"
        out.append(entry | {"how": how})
    return out


def budget_lines(entries: list[dict]) -> list[str]:
    """``explain``'s lines for ``budgets``: ``block a (FILE): eps=1, delta=1e-06; HOW``."""
    lines = []
    for e in entries:
        parts = [f"{k}={v:g}" for k, v in e["fixed"].items()]
        parts += [
            f"{k} in [{'inf' if lo is None else f'{lo:g}'}, {'inf' if hi is None else f'{hi:g}'}]"
            for k, (lo, hi) in e["chosen"].items()
        ]
        parts += [f"{k} = {text}" for k, text in e["linked"].items()]
        lines.append(f"  block {e['block']} ({e['file']}): {', '.join(parts) or 'no budget'}; {e['how']}")
    return lines
