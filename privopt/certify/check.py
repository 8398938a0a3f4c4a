"""``verify``: a result re-checked (``privopt verify``, ``privopt.verify``), as a ``Report``.

The checks are the in-process verification's, by the same verifiers
(``verification.problems``: every constraint, every budget, the objective recomputed from the
released point and compared with the recorded one), then the certificate re-proven
(``proofs``). A point that cannot be read back (a label changed, a cell missing) fails as one
check naming the table and the row.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path
from typing import Any

import numpy as np

from ..results import plain
from ..verification.checks import Check, compare, condition
from ..verification.problems import verify_channel, verify_mechanism, verify_noise, verify_transparency
from ..verification.tolerances import CONF_RTOL, CONIC_RTOL, OBJ_RTOL
from . import points, proofs
from .source import Source, load, read_result


@dataclass
class Report:
    """What ``verify`` checked: the result and the spec it was checked against, each check
    (name, passed, margin: allowed - measured, detail) in order, and notes on the arithmetic."""

    result: str
    spec: str
    spec_from: str
    problem_class: str
    certificate: str | None
    params: dict[str, float] = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.passed for c in self.checks)

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]

    def to_dict(self) -> dict[str, Any]:
        """Strict JSON values (a non-finite margin is null)."""
        return plain(
            {
                "passed": self.passed,
                "result": self.result,
                "spec": {"path": self.spec, "from": self.spec_from},
                "problem_class": self.problem_class,
                "certificate": self.certificate,
                "params": self.params,
                "checks": [
                    {"name": c.name, "passed": c.passed, "margin": c.margin, "detail": c.detail} for c in self.checks
                ],
                "notes": self.notes,
                "failures": [f"{c.name}: {c.detail}" for c in self.failed],
            }
        )

    def text_lines(self) -> list[str]:
        """What ``privopt verify`` prints: the sign convention of the margins, a line per check
        (ok/FAIL, name, margin, detail; checks of one name that all hold, such as the two sides
        of ``|Dt - D| <= b``, as one line, the tightest), the notes, and the verdict."""
        head = [
            f"result: {self.result}",
            f"spec:   {self.spec} ({self.spec_from}; SHA-256 and data files match)",
            f"class:  {self.problem_class}; certificate: {self.certificate}",
        ]
        if self.params:
            head.append("params: " + ", ".join(f"{k} = {v!r}" for k, v in self.params.items()))
        lines = [MARGINS] + [
            line for _, same in groupby(self.checks, key=lambda c: c.name) for line in _lines(list(same))
        ]
        verdict = "verified: every check holds" if self.passed else f"NOT verified: {len(self.failed)} check(s) fail"
        return head + lines + [f"note: {n}" for n in self.notes] + [verdict]


MARGINS = "each check: measured <= allowed; margin = allowed - measured (>= 0: holds; negative: violated)"


def _lines(same: list[Check]) -> list[str]:
    """The lines of consecutive checks of one name: one line, the tightest (least margin), when
    all hold; otherwise each, numbered ``[i of n]``, so a failure is never hidden by its twin."""

    def line(c: Check, name: str) -> str:
        return f"{'ok  ' if c.passed else 'FAIL'}  {name}  (margin {c.margin:.3g})  {c.detail}"

    if len(same) == 1:
        return [line(same[0], same[0].name)]
    if all(c.passed for c in same):
        tight = min(same, key=lambda c: c.margin)
        return [line(tight, f"{tight.name} ({len(same)} checks of this name, the tightest shown)")]
    return [line(c, f"{c.name} [{i} of {len(same)}]") for i, c in enumerate(same, 1)]


def verify(
    path_or_dict: str | Path | dict,
    spec: str | Path | None = None,
    allow_paths: bool = False,
    folder: Path | None = None,
) -> Report:
    """Re-check a single-program result (a path to ``result.json`` / ``solve --json`` output, or
    its dict) without a solver. ``spec``: the spec file to check against (default: the recorded
    one); ``folder``: where a dict's ``--out`` CSV files are. Raises ``UsageError`` (unreadable,
    unknown format, changed spec or data) or ``SpecError``; returns the ``Report`` (``passed``)."""
    result, name, where = read_result(path_or_dict)
    return verify_read((result, name, folder or where), spec, allow_paths)


def verify_read(read: tuple[dict, str, Path | None], spec: str | Path | None, allow_paths: bool) -> Report:
    """``verify`` of a result already read (``source.read_result``)."""
    src = load(read, spec, allow_paths)
    result = src.result
    cert = result.get("certificate") or {}
    report = Report(
        src.name,
        src.spec_name,
        src.spec_from,
        str(result.get("problem_class")),
        cert.get("kind"),
        dict(src.problem.params),
    )
    objective = result.get("objective")
    number = isinstance(objective, (int, float)) and not isinstance(objective, bool)
    if not number:  # the kinds compare a recorded number with the point's
        report.checks.append(condition("objective", False, f"the result records no objective ({objective!r})"))
    try:
        checks = KINDS[src.problem.kind](src, report.notes)
    except points.PointError as e:
        checks = [condition("released point", False, str(e))]
    report.checks.extend(checks)
    report.notes.append(
        "constraints, budgets and the objective: floats, at the tolerances of docs/verification.md "
        f"(objective {OBJ_RTOL:g} relative)"
    )
    report.notes.append("informative figures (measures, baselines, comparisons, timings) are not re-checked")
    return report


def _objective(name: str, recorded, value: float, rtol: float) -> Check:
    """The recorded objective against the one recomputed from the point, relative to max(1, |value|)."""
    ok = isinstance(recorded, (int, float)) and not isinstance(recorded, bool)
    diff = abs(float(recorded) - value) if ok else math.inf
    return compare(
        name,
        diff,
        rtol * max(1.0, abs(value)),
        f"the recorded objective {recorded!r} is not the point's, {value!r} (off by {diff:.3g})",
        f"the point's objective {value!r} is the recorded one",
    )


def _mechanism(src: Source, notes: list[str]) -> list[Check]:
    problem, result = src.problem, src.result
    cert = result.get("certificate") or {}
    x = points.table_point(problem, result, src.folder)
    checks: list[Check] = []
    evidence: dict = {"kind": "none"}
    if cert.get("kind") == "dual-bound":
        proof, bound = proofs.lp_multipliers(problem, cert, x, notes)
        checks += proof
        if bound is not None:
            scale = (cert.get("data") or {}).get("scale", 1.0)
            evidence = {"kind": "dual bound", "bound": bound, "side": cert.get("side") or "lower", "scale": scale}
    elif cert.get("kind") == "theorem":
        recorded = result.get("objective")
        proof, more = proofs.theorem(
            problem, result, lambda o: [proofs.same_optimum(problem.objective.evaluate(o.point), recorded)]
        )
        checks += proof
        notes += more
    else:
        checks.append(_unknown(cert))
    v = verify_mechanism(problem, x, result.get("objective"), evidence)
    return v.checks + checks


def _report(src: Source, notes: list[str]) -> list[Check]:
    problem, result = src.problem, src.result
    cert = result.get("certificate") or {}
    inst, table, beta = points.report_point(problem, result, src.folder)
    order = inst.public + inst.private + (inst.outcome,)
    design = np.transpose(table.reshape(problem.shape(order)), [order.index(a) for a in problem.design.axes])
    v = verify_transparency(problem, inst.p, table, beta, design, inst.group_key)
    live = np.isfinite(beta)
    top = float(beta[live].max()) if live.any() else 0.0
    checks = [*v.checks, _objective("objective", result.get("objective"), problem.objective.value(top), CONF_RTOL)]
    if cert.get("kind") == "theorem":

        def judge(outcome) -> list[Check]:
            b = np.asarray(outcome.point[1], dtype=float)
            off = np.abs(b - beta)[live]
            g = int(np.argmax(off)) if off.size else 0
            allowed = CONF_RTOL * max(1.0, float(np.max(np.abs(b), initial=0.0)))
            per_group = compare(
                "certificate theorem's beta per group",
                float(off.max(initial=0.0)),
                allowed,
                f"QID group {inst.group_key(int(np.flatnonzero(live)[g]))}: the theorem's beta* is "
                f"{b[live][g]!r}, the result records {beta[live][g]!r}",
            )
            top_b = float(b.max()) if b.size else 0.0
            return [per_group, proofs.same_optimum(problem.objective.value(top_b), result.get("objective"))]

        proof, more = proofs.theorem(problem, result, judge)
        checks += proof
        notes += more
    elif cert.get("kind") == "lfp-brackets":
        checks += proofs.lfp_brackets(inst, result, beta, notes)
    else:
        checks.append(_unknown(cert))
    return checks


def _noise(src: Source, notes: list[str]) -> list[Check]:
    from ..lower.noise import lower_noise

    problem, result = src.problem, src.result
    cert = result.get("certificate") or {}
    cov = points.noise_point(problem, result)
    program = lower_noise(problem.noise)
    proof, program_bound = (
        proofs.conic_dual(program, cert) if cert.get("kind") == "dual-bound" else ([_unknown(cert)], None)
    )
    v = verify_noise(problem.noise, cov, program, program_bound)
    checks = [*v.checks, *proof, _objective("objective", result.get("objective"), v.values["loss"], OBJ_RTOL)]
    if program_bound is not None:
        checks.append(proofs.same("certificate bound", cert.get("bound"), v.values["lower_bound"], "bound"))
    notes.append(f"the dual point's bound: floats, the loss within {CONIC_RTOL:g} relative of it")
    return checks


def _channel(src: Source, notes: list[str]) -> list[Check]:
    problem, result = src.problem, src.result
    cert = result.get("certificate") or {}
    W = points.channel_point(problem, result, src.folder)
    v = verify_channel(problem.obfuscation, W, result.get("objective"))
    checks = list(v.checks)
    if cert.get("kind") == "global-bound":
        checks += proofs.global_bound(problem, result)
    elif cert.get("kind") == "theorem":
        recorded = result.get("objective")
        proof, more = proofs.theorem(problem, result, lambda o: [proofs.same_optimum(o.point.q_value, recorded)])
        checks += proof
        notes += more
    else:
        checks.append(_unknown(cert))
    return checks


def _unknown(cert: dict) -> Check:
    return condition("certificate", False, f"a certificate of kind {cert.get('kind')!r} cannot be re-checked here")


KINDS = {"mechanism": _mechanism, "atr": _report, "noise": _noise, "obfuscation": _channel}
