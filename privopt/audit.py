"""``privopt audit``: what a transparency report reveals, on the true D and on the release
(Chen, Golubchik & Pal, Sec. 3.2-3.3, Def. 3, App. A, Lemma 2; contract:
shared/design/audit-apply-plot.md, docs/audit.md).

For an ATR spec (a design P(outcome | public, private) and a known true mapping D), ``run_audit``
takes the release T~ (the table ``solve`` returns, or a user's long CSV in the layout
``solve --out`` writes) and computes, on D and on T~ alike:

* Sec. 3.2's inference attack per QID group (``measures.fairness.attack``): the posteriors
  P(s | g, a), the adversary's best guess and confidence per observed outcome, the group's max
  confidence (C* of Def. 7 on D, beta on T~) and its prior (Lemma 5's beta_min);
* the fairness measures a report would publish (App. A: SP, CSP, the p%-rule and rm) for every
  pair of protected labels. Sec. 3.3 shows why these must come from T~: from D's figures and one
  known rule an applicant rebuilds D, and then runs the attack;
* Lemma 2's bounds on how far the measures can move, from the fidelity T~ actually achieves
  (``measures.fairness.achieved_fidelity``), and whether the observed changes respect them.

The numbers are recomputed from the tables here, independently of the solver that made T~.
"""

from __future__ import annotations

import io
import json
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import pandas as pd

from .errors import SpecError, UsageError
from .files import NotRegularFile, describe, read_regular
from .lower.atr import ATRInstance, lower_atr
from .measures import fairness as fm
from .model.problem import Problem
from .render import visible
from .results import JSON_ROWS, json_values, plain
from .verification.tolerances import VERIFY_TOL


def at_tolerance(x):
    """``x`` as the audit's text prints it: 0 where ``|x| <= VERIFY_TOL`` (1e-9). Every figure of
    the audit is a probability, a difference of two (SP, CSP, a CSP cell's bias) or a log-ratio of
    two (rm), of magnitude at most 1 or so: a difference of equal rates that float arithmetic
    leaves at 2.08e-17 is 0 at the verification tolerance relative to the data. The JSON keeps
    every figure at full precision. None and non-numbers pass through."""
    if isinstance(x, (int, float, np.integer, np.floating)) and abs(float(x)) <= VERIFY_TOL:
        return 0.0
    return x


ROW_SUM_TOL = 1e-6  # a release record's values must sum to 1 within this (the contract)
RANGE_TOL = 1e-9  # a value this far outside [0, 1] is rounding (privopt's own tables) and is clipped


@dataclass(frozen=True, eq=False)
class Audit:
    """The audit of one release. ``write_json`` writes ``privopt audit --json``'s object,
    streaming the per-group attack and the CSP cells (millions of entries at scale) a chunk at a
    time; ``to_dict`` is that object parsed back. ``groups(which)`` is one table's attack per
    group as a DataFrame; ``fairness`` holds the measures and Lemma 2 without the CSP cells."""

    spec: dict[
        str, Any
    ]  # what was audited: Problem.provenance() {path, title, sha256, params, data}, as in every command's JSON
    release_from: str
    public: tuple[str, ...]
    private: tuple[str, ...]
    outcome: str
    attacks: dict[str, fm.Attack]  # "D", "release"
    fairness: dict[str, Any]  # {"protected", "given", "D", "release", "lemma2"}; pairs without "csp_cells"
    instance: ATRInstance = field(repr=False)
    cells: dict[str, list[fm.Pair]] = field(repr=False)  # "D", "release": every pair's CSP cells
    score_labels: tuple[tuple[str, ...], ...] = field(repr=False)  # labels of each --given variable

    def groups(self, which: str) -> pd.DataFrame:
        """Per populated group of ``which`` ("D" or "release"): the public labels, ``prior``,
        ``max_confidence`` and the inference attaining it (``outcome``, ``private``)."""
        inst, a = self.instance, self.attacks[which]
        live = np.flatnonzero(a.live)
        frame = _key_frame(inst, live)
        best = a.outcome[live]
        frame["prior"] = a.prior[live]
        frame["max_confidence"] = a.max_confidence[live]
        frame["outcome"] = pd.Categorical.from_codes(best, categories=list(inst.outcome_labels))
        frame["private"] = pd.Categorical.from_codes(a.guess[live, best], categories=_private_labels(inst))
        return frame

    def write_json(self, out: TextIO, indent: int | None = 2) -> None:
        """The contract's object as strict JSON text on ``out``."""
        big: dict[str, Callable[[], None]] = {}
        nonce = secrets.token_hex(8)  # no title or label of the spec can spell a placeholder

        def slot(writer: Callable[[], None]) -> str:
            token = f"\x00{nonce}:{len(big)}\x00"
            big[json.dumps(token)] = writer
            return token

        attack = {
            which: {
                "max_confidence": float(a.max_confidence.max(initial=0.0)),
                "groups": slot(lambda which=which: self._write_groups(out, which)),
            }
            for which, a in self.attacks.items()
        }
        fairness = dict(self.fairness)
        for which in ("D", "release"):
            m = dict(fairness[which])
            m["pairs"] = [
                p | {"csp_cells": slot(lambda pair=pair: self._write_cells(out, pair))}
                for p, pair in zip(m["pairs"], self.cells[which])
            ]
            fairness[which] = m
        head = plain(
            {
                "spec": self.spec,
                "release_from": self.release_from,
                "public": list(self.public),
                "private": self.private[0] if len(self.private) == 1 else list(self.private),
                "outcome": self.outcome,
                "attack": attack,
                "fairness": fairness,
            }
        )
        text = json.dumps(head, indent=indent, allow_nan=False)
        pattern = "|".join(re.escape(t) for t in big)
        pos = 0
        for match in re.finditer(pattern, text) if big else ():
            out.write(text[pos : match.start()])
            big[match.group(0)]()
            pos = match.end()
        out.write(text[pos:])

    def to_json(self, indent: int | None = 2) -> str:
        buf = io.StringIO()
        self.write_json(buf, indent)
        return buf.getvalue()

    def to_dict(self) -> dict[str, Any]:
        """The --json object as Python values (built by parsing ``to_json``: one renderer)."""
        return json.loads(self.to_json(indent=None))

    def _write_groups(self, out: TextIO, which: str) -> None:
        """[GROUP, ...] of the contract, JSON_ROWS groups at a time: each column rendered by
        ``results.json_values`` and joined by ``str.format``; no Python code per group beyond
        joining its inferences."""
        inst, a = self.instance, self.attacks[which]
        live = np.flatnonzero(a.live)
        private = _private_labels(inst)
        private_json = np.array([json.dumps(s) for s in private], dtype=object)
        outcome_json = [json.dumps(o) for o in inst.outcome_labels]
        posterior_fmt = (
            "{{" + ", ".join(f"{json.dumps(s).replace('{', '{{').replace('}', '}}')}: {{}}" for s in private) + "}}"
        )
        inference_fmt = (
            '{{"outcome": {}, "private": {}, "confidence": {}, "posterior": ' + posterior_fmt + "}}"
        ).format
        keys = [json.dumps(v) for v in inst.public]
        group_fmt = (
            '{{"key": {{'
            + ", ".join(k.replace("{", "{{").replace("}", "}}") + ": {}" for k in keys)
            + '}}, "prior": {}, "max_confidence": {}, "outcome": {}, "private": {}, "inferences": [{}]}}'
        ).format
        out.write("[")
        for start in range(0, live.size, JSON_ROWS):
            g = live[start : start + JSON_ROWS]
            keys_json = [json_values(_key_frame(inst, g)[v]) for v in inst.public]
            best = a.outcome[g]
            parts = []
            for o in range(inst.n_outcomes):  # outcomes: a handful
                guess = a.guess[g, o]
                text = np.array(
                    list(
                        map(
                            inference_fmt,
                            [outcome_json[o]] * g.size,
                            private_json[guess],
                            _floats(a.confidence[g, o]),
                            *(_floats(a.posterior[g, o, s]) for s in range(len(private))),
                        )
                    ),
                    dtype=object,
                )
                parts.append(np.where(a.observed[g, o], text, None))
            inferences = [", ".join(t for t in row if t is not None) for row in zip(*parts)]
            rows = map(
                group_fmt,
                *keys_json,
                _floats(a.prior[g]),
                _floats(a.max_confidence[g]),
                np.array(outcome_json, dtype=object)[best],
                private_json[a.guess[g, best]],
                inferences,
            )
            out.write((", " if start else "") + ", ".join(rows))
        out.write("]")

    def _write_cells(self, out: TextIO, pair: fm.Pair) -> None:
        """[{"given": {var: label, ...}, "bias": b}, ...] for one pair's populated cells."""
        names = self.fairness["given"]
        sizes = tuple(len(labels) for labels in self.score_labels)
        fmt = (
            '{{"given": {{'
            + ", ".join(json.dumps(n).replace("{", "{{").replace("}", "}}") + ": {}" for n in names)
            + '}}, "bias": {}}}'
        ).format
        out.write("[")
        for start in range(0, pair.cells.size, JSON_ROWS):
            cells = pair.cells[start : start + JSON_ROWS]
            idx = np.unravel_index(cells, sizes) if names else ()
            labels = [np.array([json.dumps(x) for x in lab], dtype=object)[i] for lab, i in zip(self.score_labels, idx)]
            out.write(
                (", " if start else "") + ", ".join(map(fmt, *labels, _floats(pair.bias[start : start + JSON_ROWS])))
            )
        out.write("]")


def _floats(x: np.ndarray) -> np.ndarray:
    """Floats as exact JSON text (``results.json_values``); -0.0 written as 0.0."""
    return json_values(pd.Series(np.asarray(x, dtype=float) + 0.0))


def _key_frame(inst: ATRInstance, groups: np.ndarray) -> pd.DataFrame:
    """The public labels of ``groups`` (indices), one categorical column per public variable."""
    sizes = tuple(len(labels) for labels in inst.public_labels)
    idx = np.unravel_index(groups, sizes) if inst.public else ()
    return pd.DataFrame(
        {
            v: pd.Categorical.from_codes(i, categories=list(labels))
            for v, labels, i in zip(inst.public, inst.public_labels, idx)
        },
        index=pd.RangeIndex(len(groups)),
    )


def run_audit(
    problem: Problem,
    release: str | Path | None = None,
    protected: str | None = None,
    given: list[str] | None = None,
    result=None,
) -> Audit:
    """Audit ``problem``'s release: the table in the CSV ``release`` (``solve --out``'s
    layout), else ``result``'s design table, else the table ``problem.solve()`` returns.
    ``protected`` is Z (default: the first public variable), ``given`` the CSP score variables
    (default: every other input variable). Raises UsageError for a spec that is not a
    transparency report or has no true mapping D, SpecError (exit 2) for a malformed release
    file naming its first bad row, InfeasibleError when the spec must be solved and cannot."""
    if problem.objective.atom not in ("max_confidence", "min_uncertainty"):  # the attack reads this measure
        raise UsageError(
            "audit needs a transparency-report (ATR) spec: a design P(outcome | public, private) and "
            f"minimize max_confidence(...) or maximize min_uncertainty(...); this spec is a {problem.kind} problem"
        )
    m = problem.objective.measure
    if m.reference is None:
        raise UsageError(
            "audit compares the release with the true decision mapping, and this spec gives none: "
            f"add 'known D = P({m.outcome} | {', '.join(m.public + m.private)}) = ...'"
        )
    inputs = m.public + m.private
    z, v = _protected(problem, inputs, protected, given)
    _check_prior_covers(problem, z, v)
    inst = lower_atr(problem, bounds=False)  # the prior and D: a given release needs no feasible spec
    if release is not None:
        table = read_release(problem, Path(release))
        release_from = str(release)
    else:
        if result is None:
            from .errors import InfeasibleError

            result = problem.solve()
            if result.status != "optimal":
                raise InfeasibleError("infeasible: the spec admits no release to audit", result.reasons)
        frame = result.tables[problem.design.name]
        table = frame["value"].to_numpy(dtype=float).reshape(problem.shape(problem.design.axes))
        release_from = "solved"
    T = _dense(problem, inst, table)
    D = inst.reference
    attacks = {"D": fm.attack(inst.p, D), "release": fm.attack(inst.p, T)}

    sizes = tuple(len(labels) for labels in inst.public_labels + inst.private_labels)
    k = {name: i for i, name in enumerate(inputs)}
    codes = np.unravel_index(np.arange(inst.p.size), sizes) if sizes else ()
    zc = codes[k[z]]
    v_sizes = tuple(sizes[k[n]] for n in v)
    vc = np.ravel_multi_index(tuple(codes[k[n]] for n in v), v_sizes) if v else np.zeros(inst.p.size, dtype=np.intp)
    del codes
    n_v = int(np.prod(v_sizes, dtype=np.int64)) if v else 1
    w = inst.p.ravel()
    A = inst.n_outcomes
    fair = {
        "D": fm.fairness(w, D.reshape(-1, A), zc, sizes[k[z]], vc, n_v),
        "release": fm.fairness(w, T.reshape(-1, A), zc, sizes[k[z]], vc, n_v),
    }
    labels = dict(zip(inputs, inst.public_labels + inst.private_labels))
    measures = {which: _measures_dict(f, labels[z], inst.outcome_labels) for which, f in fair.items()}
    delta, alpha = fm.achieved_fidelity(T, D)
    tv_bound, rm_bound = fm.lemma2(delta, alpha)
    oD, oT = fair["D"].overall(), fair["release"].overall()
    lemma = {
        "delta": delta,
        "alpha": alpha,
        "tv_bound": tv_bound,
        "rm_bound": rm_bound,
        "sp_change": _change(oT["sp"], oD["sp"]),
        "csp_change": _change(oT["csp"], oD["csp"]),
        "rm_change": _change(oT["rm"], oD["rm"]),
        "pairs": [
            _pair_changes(pD, pT, labels[z], tv_bound, rm_bound)
            for pD, pT in zip(fair["D"].pairs, fair["release"].pairs)
        ],
    }
    lemma["holds"] = (
        _holds(oT["sp"], oD["sp"], tv_bound)
        and _holds(oT["csp"], oD["csp"], tv_bound)
        and _holds(oT["rm"], oD["rm"], rm_bound)
        and all(p["holds"] for p in lemma["pairs"])
    )
    return Audit(
        spec=problem.provenance(),
        release_from=release_from,
        public=m.public,
        private=m.private,
        outcome=m.outcome,
        attacks=attacks,
        fairness={"protected": z, "given": list(v)} | measures | {"lemma2": lemma},
        instance=inst,
        cells={which: f.pairs for which, f in fair.items()},
        score_labels=tuple(labels[n] for n in v),
    )


# ----------------------------------------------------------------------------- options


def _protected(problem: Problem, inputs: tuple[str, ...], protected: str | None, given: list[str] | None):
    """(Z, V): the protected variable and the CSP score variables, checked."""
    listed = ", ".join(inputs)
    z = protected if protected is not None else inputs[0]
    if z not in inputs:
        raise UsageError(f"--protected {visible(z)}: not an input variable of the design; its inputs: {listed}")
    if given is None:
        v = [n for n in inputs if n != z]
    else:
        v = []
        for n in given:
            if n not in inputs:
                raise UsageError(f"--given {visible(n)}: not an input variable of the design; its inputs: {listed}")
            if n == z:
                raise UsageError(f"--given {visible(n)}: the protected variable cannot also be a score variable")
            if n not in v:
                v.append(n)
    return z, tuple(v)


def _check_prior_covers(problem: Problem, z: str, v: tuple[str, ...]) -> None:
    """Rates E[T(X) | Z, V] need P(X | Z, V). A prior given as P(private | public) says
    nothing about how the public combinations are weighted, so every variable it is
    conditioned on must be among Z (for SP and the p%-rule)."""
    m = problem.objective.measure
    prior = problem.known[m.prior]
    missing = [n for n in prior.given if n != z]
    if missing:
        written = f"P({', '.join(prior.targets)} | {', '.join(prior.given)})"
        named = written if prior.name == written else f"{prior.name} = {written}"
        raise UsageError(
            f"the fairness rates condition on {z} alone, but the spec's prior {named} leaves the weights of "
            f"{', '.join(missing)} unknown: give the joint P({', '.join(prior.axes)}) or protect {', '.join(prior.given)}"
        )


# ----------------------------------------------------------------------------- the release file


def read_release(problem: Problem, path: Path) -> np.ndarray:
    """The release in ``solve --out``'s long layout (one column per design variable, named
    after it, and ``value``) as an array over the design's axes. Every cell present exactly
    once, values numbers in [0, 1], each record's values summing to 1 within ROW_SUM_TOL;
    otherwise SpecError naming the first bad row (1-based, header not counted)."""
    design = problem.design
    axes = design.axes
    shown = visible(str(path))
    try:
        raw = read_regular(path)  # a FIFO or device is refused at once, never waited on
    except (FileNotFoundError, IsADirectoryError, NotRegularFile) as e:
        raise UsageError(
            f"--release {shown}: {describe(e)}; name a CSV file (solve --out's {design.name}.csv)"
        ) from None
    except OSError as e:
        raise UsageError(f"--release {shown}: cannot read it ({describe(e)})") from None
    try:
        # header=None: the header is read as a row, so a column named twice is seen as written
        # (pandas would rename the second 'value' to 'value.1')
        frame = pd.read_csv(
            io.BytesIO(raw),
            header=None,
            dtype=str,
            keep_default_na=False,
            na_filter=False,
            encoding="utf-8",
            skipinitialspace=True,
        )
    except UnicodeDecodeError as e:
        raise SpecError(
            f"the file is not UTF-8 text (byte {e.start})", file=str(path), hint="save it as UTF-8"
        ) from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as e:
        raise SpecError(f"not a CSV table: {' '.join(str(e).split())}", file=str(path)) from None
    header = [str(c).strip() for c in frame.iloc[0]]
    twice = next((c for i, c in enumerate(header) if c in header[:i]), None)
    if twice is not None:
        raise SpecError(
            f"the header names the column {visible(repr(twice))} twice; name each column once "
            f"({', '.join([*axes, 'value'])})",
            file=str(path),
        )
    frame = frame.iloc[1:].reset_index(drop=True)
    frame.columns = header
    want = [*axes, "value"]
    absent = [c for c in want if c not in frame.columns]
    if absent:
        raise SpecError(
            f"no column {', '.join(repr(c) for c in absent)}; the release of {design.name} has the columns "
            f"{', '.join(want)} (the layout of solve --out's {design.name}.csv)",
            file=str(path),
        )
    extra = [c for c in frame.columns if c not in want]
    if extra:
        raise SpecError(
            f"column {visible(repr(extra[0]))} is not a variable of {design.name} nor 'value'; "
            f"the columns are {', '.join(want)}",
            file=str(path),
        )
    n = len(frame)
    shape = problem.shape(axes)
    bad: list[tuple[int, str]] = []  # (first bad row index, message) per kind
    codes = []
    for name in axes:
        labels = problem.variables[name].labels
        col = frame[name].str.strip()
        idx = pd.Index(labels).get_indexer(col)
        codes.append(idx)
        if (idx < 0).any():
            r = int(np.argmax(idx < 0))
            bad.append((r, f"{name} = {visible(repr(col.iloc[r]))} is not one of its labels ({', '.join(labels)})"))
    text = frame["value"].str.strip()
    value = pd.to_numeric(text, errors="coerce").to_numpy(dtype=float)
    not_number = ~np.isfinite(value)
    if not_number.any():
        r = int(np.argmax(not_number))
        bad.append((r, f"value {visible(repr(text.iloc[r]))} is not a number"))
    outside = np.isfinite(value) & ((value < -RANGE_TOL) | (value > 1 + RANGE_TOL))
    if outside.any():
        r = int(np.argmax(outside))
        bad.append((r, f"value {text.iloc[r]} is outside [0, 1]"))
    known = np.all([c >= 0 for c in codes], axis=0) if codes else np.ones(n, dtype=bool)
    flat = np.full(n, -1, dtype=np.int64)
    if known.any():
        flat[known] = np.ravel_multi_index(tuple(c[known] for c in codes), shape)
    dup = known & pd.Series(flat).duplicated().to_numpy()
    if dup.any():
        r = int(np.argmax(dup))
        first = int(np.argmax(flat == flat[r]))
        bad.append((r, f"the cell {_cell(problem, axes, flat[r])} appears again (first in row {first + 1})"))
    if bad:
        r, message = min(bad, key=lambda b: b[0])
        raise SpecError(
            f"row {r + 1}: {message}", file=str(path), hint="each cell of the design once, as solve --out writes it"
        )
    size = int(np.prod(shape, dtype=np.int64))
    seen = np.zeros(size, dtype=bool)
    seen[flat] = True
    if not seen.all():
        raise SpecError(
            f"no row for the cell {_cell(problem, axes, int(np.argmin(seen)))} "
            f"({int(size - seen.sum())} cell(s) missing)",
            file=str(path),
            hint="each cell of the design once, as solve --out writes it",
        )
    table = np.empty(size)
    table[flat] = np.clip(value, 0.0, 1.0)
    table = table.reshape(shape)
    # rows of a conditional table: the target axes are last
    k = len(design.targets)
    sums = table.reshape(-1, int(np.prod(shape[len(shape) - k :], dtype=np.int64))).sum(axis=1)
    off = np.abs(sums - 1.0) > ROW_SUM_TOL
    if off.any():
        record = flat // int(np.prod(shape[len(shape) - k :], dtype=np.int64))
        rows = np.flatnonzero(off[record])
        r = int(rows[0])
        raise SpecError(
            f"row {r + 1}: the values of the record {_record(problem, axes[: len(axes) - k], int(record[r]))} sum to "
            f"{sums[record[r]]:.12g}, not 1 (within {ROW_SUM_TOL:g})",
            file=str(path),
            hint=f"each record's values are a distribution over {', '.join(design.targets)}",
        )
    return table


def _cell(problem: Problem, axes: tuple[str, ...], flat: int) -> str:
    idx = np.unravel_index(flat, problem.shape(axes))
    return visible(", ".join(f"{a}={problem.variables[a].labels[i]}" for a, i in zip(axes, idx)))


def _record(problem: Problem, axes: tuple[str, ...], flat: int) -> str:
    return _cell(problem, axes, flat) if axes else "(the only record)"


# ----------------------------------------------------------------------------- layout


def _dense(problem: Problem, inst: ATRInstance, arr: np.ndarray) -> np.ndarray:
    """An array over the design's axes as the instance's (G, m, A) blocks."""
    order = inst.public + inst.private + (inst.outcome,)
    axes = problem.design.axes
    return np.transpose(arr, [axes.index(a) for a in order]).reshape(inst.lower.shape)


def _private_labels(inst: ATRInstance) -> list[str]:
    """The label of each private combination, in the group's order (several private variables:
    their labels joined by ',')."""
    sizes = tuple(len(labels) for labels in inst.private_labels)
    idx = np.unravel_index(np.arange(inst.group_size), sizes)
    return [",".join(labels[j] for labels, j in zip(inst.private_labels, combo)) for combo in zip(*idx)]


def _measures_dict(f: fm.Fairness, z_labels, outcomes) -> dict[str, Any]:
    """MEASURES of the contract without the CSP cells (``Audit.write_json`` streams those):
    rates per populated label, the overall values and every pair."""
    rates = {z_labels[k]: dict(zip(outcomes, f.rates[k])) for k in range(len(z_labels)) if f.mass[k] > 0}
    pairs = [
        {"groups": [z_labels[p.z1], z_labels[p.z2]], "sp": p.sp, "csp": p.csp, "p_rule": p.p_rule, "rm": p.rm}
        for p in f.pairs
    ]
    return {"rates": rates} | f.overall() | {"pairs": pairs}


def _change(a: float | None, b: float | None) -> float | None:
    """|a - b|; None when either is None (no value, or an unbounded rm)."""
    return None if a is None or b is None else abs(a - b)


def _holds(a: float | None, b: float | None, bound: float | None) -> bool:
    """Lemma 2 for one measure that is ``b`` on D and ``a`` on the release: no bound, or both
    undefined (an unbounded rm on both sides, no CSP cell) holds; finite on one side only is an
    unbounded change."""
    if bound is None or (a is None and b is None):
        return True
    if a is None or b is None:
        return False
    return fm.within(abs(a - b), bound)


def _pair_changes(pD: fm.Pair, pT: fm.Pair, z_labels, tv_bound: float, rm_bound: float | None) -> dict[str, Any]:
    """One pair's changes from D to the release, each against Lemma 2's bound."""
    return {
        "groups": [z_labels[pD.z1], z_labels[pD.z2]],
        "sp_change": abs(pT.sp - pD.sp),
        "csp_change": _change(pT.csp, pD.csp),
        "rm_change": _change(pT.rm, pD.rm),
        "holds": _holds(pT.sp, pD.sp, tv_bound) and _holds(pT.csp, pD.csp, tv_bound) and _holds(pT.rm, pD.rm, rm_bound),
    }
