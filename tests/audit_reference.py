"""An independent reference for `privopt audit`, written from Chen, Golubchik & Pal (JDIQ 2022)
Sec. 3.2-3.3, Def. 3, Def. 5-6, Lemma 2, App. A Def. 9-11 (eq. 25-32) and the contract in
docs/design (audit-apply-plot.md section 1). It uses no privopt code: the model is given as
plain numpy arrays (the adversary's prior P(x) over the inputs, the true decision mapping D and
a release T, both P(outcome | inputs)), every label as text.

Layout: the inputs are the public variables (in the spec's order) then the private variable;
``prior`` has one axis per input, a table (``D``, ``T``) one more axis, the outcome, last.
"""

from __future__ import annotations

import csv
import itertools
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ZERO = 1e-12  # the contract: rates, probabilities and cells <= 1e-12 count as 0


@dataclass
class Model:
    public: list[tuple[str, list[str]]]  # (name, labels) per public variable, in spec order
    private: tuple[str, list[str]]
    outcome: tuple[str, list[str]]
    prior: np.ndarray  # P(x) over public... x private (need not sum to 1 across groups, see census)
    D: np.ndarray  # the true mapping P(a | x), shape prior.shape + (|A|,)

    @property
    def inputs(self) -> list[tuple[str, list[str]]]:
        return [*self.public, self.private]

    def axis(self, name: str) -> int:
        names = [n for n, _ in self.inputs]
        return names.index(name)

    def labels(self, name: str) -> list[str]:
        return self.inputs[self.axis(name)][1]


# --------------------------------------------------------------------------- loading tables


def table_from_rows(model: Model, rows) -> np.ndarray:
    """A table P(a | x) from (labels..., value) rows: labels of the inputs then the outcome."""
    dims = [len(labs) for _, labs in model.inputs] + [len(model.outcome[1])]
    out = np.full(dims, np.nan)
    index = [{lab: i for i, lab in enumerate(labs)} for _, labs in model.inputs] + [
        {lab: i for i, lab in enumerate(model.outcome[1])}
    ]
    for row in rows:
        *labs, value = row
        out[tuple(ix[str(lab)] for ix, lab in zip(index, labs))] = float(value)
    assert not np.isnan(out).any(), "table misses a cell"
    return out


def table_from_frame(model: Model, frame) -> np.ndarray:
    """A released table (``Result.tables[name]``: a column per variable plus ``value``)."""
    cols = [n for n, _ in model.inputs] + [model.outcome[0], "value"]
    return table_from_rows(model, frame[cols].itertuples(index=False, name=None))


def binary_table(approve: np.ndarray) -> np.ndarray:
    """P(a | x) for outcomes (other, approve) from P(approve | x) (the binary shorthand)."""
    approve = np.asarray(approve, dtype=float)
    return np.stack([1.0 - approve, approve], axis=-1)


def write_release_csv(model: Model, T: np.ndarray, path: Path) -> None:
    """T in the long layout `solve --out` writes: a column per design variable, then value."""
    names = [n for n, _ in model.inputs] + [model.outcome[0]]
    domains = [labs for _, labs in model.inputs] + [model.outcome[1]]
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([*names, "value"])
        for idx in itertools.product(*(range(len(d)) for d in domains)):
            w.writerow([*(d[i] for d, i in zip(domains, idx)), repr(float(T[idx]))])


# --------------------------------------------------------------------------- the attack


def attack(model: Model, T: np.ndarray) -> dict:
    """Sec. 3.2 / Def. 3: per QID group g (public combination with positive population), for
    every outcome a with P(a | g) > 1e-12, the posterior P(s | g, a) = P(g, s) T_a(g, s) /
    sum_s' P(g, s') T_a(g, s'); conf = its max; the group's max confidence the max over a; the
    prior max_s P(s | g)."""
    pub_dims = [range(len(labs)) for _, labs in model.public]
    priv_labels = model.private[1]
    out_labels = model.outcome[1]
    groups = []
    for idx in itertools.product(*pub_dims):
        pg = model.prior[idx]  # P(g, s) over s
        total = float(pg.sum())
        if not total > 0:
            continue
        ps = pg / total  # P(s | g)
        inferences = []
        for a, a_label in enumerate(out_labels):
            joint = ps * T[idx][:, a]  # P(s, a | g)
            pa = float(joint.sum())
            if not pa > ZERO:
                continue
            post = joint / pa
            conf = float(post.max())
            inferences.append(
                {
                    "outcome": a_label,
                    "confidence": conf,
                    "posterior": {s: float(p) for s, p in zip(priv_labels, post)},
                    "best": {s for s, p in zip(priv_labels, post) if p >= conf - 1e-9},
                }
            )
        mc = max(i["confidence"] for i in inferences)
        groups.append(
            {
                "key": {name: labels[i] for (name, labels), i in zip(model.public, idx)},
                "prior": float(ps.max()),
                "max_confidence": mc,
                "inferences": inferences,
            }
        )
    return {"max_confidence": max(g["max_confidence"] for g in groups), "groups": groups}


# --------------------------------------------------------------------------- fairness


def _rates(model: Model, T: np.ndarray, mask: np.ndarray) -> np.ndarray | None:
    """E[T_a(X) | mask] under P(X), or None when the mask has no population."""
    w = model.prior * mask
    tot = float(w.sum())
    if not tot > 0:
        return None
    return (w[..., None] * T).reshape(-1, T.shape[-1]).sum(axis=0) / tot


def _tv(r1: np.ndarray, r2: np.ndarray) -> float:
    """eq. 26: (1/|A|) sum_a |r1(a) - r2(a)|."""
    return float(np.abs(r1 - r2).sum() / len(r1))


def _p_rule(r1: np.ndarray, r2: np.ndarray) -> float:
    """eq. 29/32: min over a of min(r1/r2, r2/r1); both rates 0 skipped, one zero gives 0."""
    p = 1.0
    for x, y in zip(r1, r2):
        x = 0.0 if x <= ZERO else float(x)
        y = 0.0 if y <= ZERO else float(y)
        if x == 0 and y == 0:
            continue
        if x == 0 or y == 0:
            return 0.0
        p = min(p, x / y, y / x)
    return p


def _rm(p: float) -> float | None:
    return None if p == 0 else -math.log(p)


def fairness(model: Model, T: np.ndarray, protected: str | None = None, given: list[str] | None = None) -> dict:
    """App. A: rates per protected label, and per pair of labels (domain order) sp, csp (with
    every score cell), p_rule, rm; overall the largest sp/csp/rm and the smallest p_rule."""
    names = [n for n, _ in model.inputs]
    z = protected or model.public[0][0]
    if given is None:
        given = [n for n in names if n != z]
    zax = model.axis(z)
    shape = model.prior.shape

    def mask_of(fixed: dict[int, int]) -> np.ndarray:
        m = np.ones(shape, dtype=bool)
        for ax, i in fixed.items():
            sel = np.zeros(shape[ax], dtype=bool)
            sel[i] = True
            m &= sel.reshape([-1 if k == ax else 1 for k in range(len(shape))])
        return m

    zlabels = model.labels(z)
    rates = {}
    for i, lab in enumerate(zlabels):
        r = _rates(model, T, mask_of({zax: i}))
        if r is not None:
            rates[lab] = r
    gax = [model.axis(g) for g in given]
    cells = list(itertools.product(*(range(shape[ax]) for ax in gax)))
    pairs = []
    present = [lab for lab in zlabels if lab in rates]
    for l1, l2 in itertools.combinations(present, 2):
        i1, i2 = zlabels.index(l1), zlabels.index(l2)
        csp_cells = []
        for v in cells:
            fixed = dict(zip(gax, v))
            r1 = _rates(model, T, mask_of({**fixed, zax: i1}))
            r2 = _rates(model, T, mask_of({**fixed, zax: i2}))
            if r1 is None or r2 is None:
                continue
            csp_cells.append(
                {
                    "given": {g: model.labels(g)[i] for g, i in zip(given, v)},
                    "bias": _tv(r1, r2),
                }
            )
        p = _p_rule(rates[l1], rates[l2])
        pairs.append(
            {
                "groups": [l1, l2],
                "sp": _tv(rates[l1], rates[l2]),
                "csp": max(c["bias"] for c in csp_cells) if csp_cells else None,
                "p_rule": p,
                "rm": _rm(p),
                "csp_cells": csp_cells,
            }
        )
    p_overall = min(p["p_rule"] for p in pairs)
    csps = [p["csp"] for p in pairs if p["csp"] is not None]
    return {
        "protected": z,
        "given": list(given),
        "rates": {lab: dict(zip(model.outcome[1], map(float, r))) for lab, r in rates.items()},
        "sp": max(p["sp"] for p in pairs),
        "csp": max(csps) if csps else None,
        "p_rule": p_overall,
        "rm": _rm(p_overall),
        "pairs": pairs,
    }


# --------------------------------------------------------------------------- Lemma 2


def achieved_fidelity(D: np.ndarray, T: np.ndarray) -> tuple[float, float]:
    """Def. 5-6 over every cell (values <= 1e-12 count as 0): delta = 1 - max |T - D|, alpha =
    min over cells of min(T/D, D/T) with 0/0 = 1 and x/0 = 0."""
    D = np.where(D <= ZERO, 0.0, D)
    T = np.where(T <= ZERO, 0.0, T)
    delta = 1.0 - float(np.abs(T - D).max())
    alpha = 1.0
    for d, t in zip(D.ravel(), T.ravel()):
        if d == 0 and t == 0:
            r = 1.0
        elif d == 0 or t == 0:
            r = 0.0
        else:
            r = min(t / d, d / t)
        alpha = min(alpha, r)
    return delta, alpha


def lemma2(model: Model, T: np.ndarray, fair_D: dict, fair_T: dict) -> dict:
    delta, alpha = achieved_fidelity(model.D, T)
    tv_bound = min(2 * (1 - delta), 1.0)
    rm_bound = None if alpha == 0 else -2 * math.log(alpha)
    sp_change = abs(fair_T["sp"] - fair_D["sp"])
    csp_change = abs(fair_T["csp"] - fair_D["csp"])
    rm_D, rm_T = fair_D["rm"], fair_T["rm"]
    rm_change = None if rm_D is None or rm_T is None else abs(rm_T - rm_D)
    eps = 1e-12
    holds_tv = sp_change <= tv_bound + eps and csp_change <= tv_bound + eps
    if rm_bound is None:
        holds_rm = True  # an infinite bound
    elif rm_change is None:
        holds_rm = None  # ambiguous in the contract (an infinite rm on one side or both)
    else:
        holds_rm = rm_change <= rm_bound + eps
    pairs = []
    for pD, pT in zip(fair_D["pairs"], fair_T["pairs"], strict=True):
        assert pD["groups"] == pT["groups"]
        both = pD["rm"] is not None and pT["rm"] is not None
        pairs.append(
            {
                "groups": pD["groups"],
                "sp_change": abs(pT["sp"] - pD["sp"]),
                "csp_change": abs(pT["csp"] - pD["csp"]),
                "rm_change": abs(pT["rm"] - pD["rm"]) if both else None,
            }
        )
    return {
        "pairs": pairs,
        "delta": delta,
        "alpha": alpha,
        "tv_bound": tv_bound,
        "rm_bound": rm_bound,
        "sp_change": sp_change,
        "csp_change": csp_change,
        "rm_change": rm_change,
        "holds": (holds_tv and holds_rm) if holds_rm is not None else (False if not holds_tv else None),
    }


def audit(model: Model, T: np.ndarray, protected: str | None = None, given: list[str] | None = None) -> dict:
    """Everything `privopt audit --json` reports, from the definitions."""
    fD = fairness(model, model.D, protected, given)
    fT = fairness(model, T, protected, given)
    return {
        "public": [n for n, _ in model.public],
        "private": model.private[0],
        "outcome": model.outcome[0],
        "attack": {"D": attack(model, model.D), "release": attack(model, T)},
        "fairness": {
            "protected": fD["protected"],
            "given": fD["given"],
            "D": fD,
            "release": fT,
            "lemma2": lemma2(model, T, fD, fT),
        },
    }


# --------------------------------------------------------------------------- the repo's specs

ROOT = Path(__file__).resolve().parent.parent
GENDER = ("gender", ["F", "M"])
INCOME3 = ("income", ["low", "mid", "high"])
TABLE4_COUNTS = np.array([[12, 5, 3], [9, 7, 4]], dtype=float)
TABLE4_D = np.array([[0, 0, 1], [0, 0.5, 1]])
BANDS = ("income", ["<100k", "100k-200k", ">200k"])


def table4_model() -> Model:
    """specs/atr_table4.priv, atr_alpha_fidelity.priv and atr_min_uncertainty.priv (Sec. 8)."""
    return Model(
        public=[GENDER],
        private=INCOME3,
        outcome=("decision", ["deny", "approve"]),
        prior=TABLE4_COUNTS / TABLE4_COUNTS.sum(),
        D=binary_table(TABLE4_D),
    )


def census_model() -> Model:
    """specs/atr_census_table1.priv: the adversary's prior is P(income | gender) (census), P(gender)
    unknown. Every audited number with Z = gender depends on P(income | gender) only, so any
    positive P(gender) gives the same figures (here 1/2 each)."""
    cond = np.array([[0.931, 0.057, 0.012], [0.842, 0.123, 0.035]])
    return Model(
        public=[GENDER],
        private=BANDS,
        outcome=("decision", ["negative", "positive"]),
        prior=cond / 2,
        D=binary_table(TABLE4_D),
    )


TABLE1_COUNTS = np.array([[139, 9, 2], [117, 18, 5]], dtype=float)


def table1_model() -> Model:
    """Table 1 with Remark 1's populations (specs/atr_table1_populations.priv)."""
    return Model(
        public=[GENDER],
        private=BANDS,
        outcome=("decision", ["negative", "positive"]),
        prior=TABLE1_COUNTS / TABLE1_COUNTS.sum(),
        D=binary_table(TABLE4_D),
    )


TABLE1_SPEC = """spec "Table 1 with Remark 1's populations"
var gender   : public  {F, M}
var income   : private {"<100k", "100k-200k", ">200k"}
var decision : outcome {negative, positive}
known P(gender, income) = counts {
        "<100k"  "100k-200k"  ">200k"
    F:   139      9            2
    M:   117      18           5
}
known d = P(decision = positive | gender, income) = {
        "<100k"  "100k-200k"  ">200k"
    F:   0        0            1
    M:   0        0.5          1
}
design dt = P(decision | gender, income)
param delta = 0.9
subject to |dt - d| <= 1 - delta
minimize max_confidence(gender, decision -> income)
"""


def three_outcomes_model() -> Model:
    """specs/atr_three_outcomes.priv: counts from data/loans.csv, D from data/loans_rules.csv."""
    gender, age, income = ("gender", ["F", "M"]), ("age", ["young", "old"]), INCOME3
    outcome = ("decision", ["deny", "refer", "approve"])
    counts = np.zeros((2, 2, 3))
    with open(ROOT / "specs/data/loans.csv", newline="") as fh:
        for row in csv.DictReader(fh):
            counts[gender[1].index(row["gender"]), age[1].index(row["age"]), income[1].index(row["income"])] += float(
                row["population"]
            )
    model = Model(public=[gender, age], private=income, outcome=outcome, prior=counts / counts.sum(), D=None)
    with open(ROOT / "specs/data/loans_rules.csv", newline="") as fh:
        rows = [(r["gender"], r["age"], r["income"], r["decision"], r["rate"]) for r in csv.DictReader(fh)]
    model.D = table_from_rows(model, rows)
    return model
