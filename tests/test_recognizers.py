"""Recognizers read the math, not the spelling (issue 11, item 2).

Ding, Liu & Farokhi's closed forms apply when the spec requires eq. 3,
``P(Y | S) == (1 - alpha) * P(X | S) + alpha * P(X)``; Chen et al.'s Theorem 1 when a binary
outcome has elementwise fidelity bounds. Every spelling of the same mathematics (sides swapped,
moved to one side, scaled, a two-sided chain, the objective scaled or written as a sum) must be
recognized exactly as the canonical one (same ``explain().chosen``, same optimum), and a spelling
that is another problem must not be.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import privopt
from privopt import api
from privopt.closedform.registry import recognize
from privopt.closedform.rr import RANDOMIZED_RESPONSE, rr_value
from tests.conftest import SPECS, examples

EQ3 = "subject to P(Y | S) == (1 - alpha) * P(X | S) + alpha * P(X)"
Q = "(1 - alpha) * P(X | S) + alpha * P(X)"

# the constraint of eq. 3, spelled differently (each replaces the EQ3 line)
EQ3_SPELLINGS = [
    f"subject to {Q} == P(Y | S)",
    "subject to P(Y | S) - (1 - alpha) * P(X | S) - alpha * P(X) == 0",
    "subject to 0 == alpha * P(X) - P(Y | S) + (1 - alpha) * P(X | S)",
    f"subject to 2 * P(Y | S) == 2 * ({Q})",
    f"subject to -P(Y | S) / 4 == -({Q}) / 4",
    "subject to P(Y | S) - (1 - alpha) * P(X | S) == alpha * P(X)",
    f"subject to P(Y | S) - ({Q}) == 0",
    f"subject to {Q} <= P(Y | S) <= {Q}",
    f"subject to P(Y | S) <= {Q}\nsubject to P(Y | S) >= {Q}",
    f"subject to P(Y | S) >= {Q}\nsubject to {Q} >= P(Y | S)",
    f"subject to P(Y | S) == {Q}\nsubject to P(Y | S) == {Q}",  # the same equation twice
    f"subject to P(Y | S) == {Q}\nsubject to P(Y | S) <= {Q}",  # plus a bound it implies
    f"subject to P(Y, S) == ({Q}) * P(S)",  # P(Y, S) = P(Y | S) P(S), with P(s) > 0
    f"subject to P(Y, S) / P(S) == {Q}",
]

# spellings that are another problem: they must not get the closed form
EQ3_OTHER = [
    f"subject to P(Y | S) <= {Q}",  # one side only
    f"subject to P(Y | S) >= {Q}",
    f"subject to P(Y | S) == {Q}\nsubject to M <= 0.95",  # an extra bound on the channel (binds for Prop. 1)
    f"subject to P(Y | S) == {Q}\nsubject to P(Y | S) >= 0.2",  # an extra bound eq. 3 violates: infeasible
    "subject to P(Y) == P(X)",  # eq. 4 alone
    f"subject to P(Y, S) == {Q}",  # the joint, not the conditional
    f"subject to P(Y | S) + P(X | S) == {Q}",  # P(Y | S) fixed to something that is not a distribution
    f"subject to {Q} - 0.01 <= P(Y | S) <= {Q} + 0.01",  # a band, not the equation
]


def _spec(name: str) -> str:
    return (SPECS / name).read_text()


def _with(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new)


def _outcome(text: str):
    problem = api.loads(text)
    r = problem.solve()
    return problem, problem.explain(), r


def _same(text: str, canonical: str):
    problem, a, r = _outcome(text)
    _, a0, r0 = _outcome(canonical)
    assert a.chosen == a0.chosen, (a.chosen, a0.chosen, a.not_applicable.get(a0.chosen))
    assert r.status == r0.status == "optimal"
    assert r.objective == pytest.approx(r0.objective, rel=1e-9, abs=1e-12)
    return problem, a


# ------------------------------------------------------------------ eq. 3 (Ding et al.)

SANITIZE = {
    "sanitize_nonmarkov_tv.priv": "closed-form",  # Prop. 1
    "sanitize_markov_lemma1.priv": "closed-form",  # Lemma 1
    "sanitize_distortion.priv": "reduced-lp",  # Prop. 2
    "sanitize_markov_tv.priv": "lp",  # no full column rank: the LP decides
}


@pytest.mark.parametrize("spec", sorted(SANITIZE))
def test_canonical_sanitization_routes(spec):
    assert api.loads(_spec(spec)).explain().chosen == SANITIZE[spec]


@pytest.mark.parametrize("spelling", EQ3_SPELLINGS)
@pytest.mark.parametrize("spec", sorted(SANITIZE))
def test_eq3_spellings_are_recognized(spec, spelling):
    canonical = _spec(spec)
    problem, a = _same(_with(canonical, EQ3, spelling), canonical)
    assert all(c.induced is not None for c in problem.constraints)
    if a.chosen in ("closed-form", "reduced-lp"):
        assert "(eq. 3, alpha = " in a.applicable[a.chosen]


@pytest.mark.parametrize("spelling", EQ3_OTHER)
@pytest.mark.parametrize(
    "spec", ["sanitize_nonmarkov_tv.priv", "sanitize_markov_lemma1.priv", "sanitize_distortion.priv"]
)
def test_other_problems_are_not_eq3(spec, spelling):
    problem = api.loads(_with(_spec(spec), EQ3, spelling))
    a = problem.explain()
    assert a.chosen == "lp"
    assert "closed-form" not in a.applicable and "reduced-lp" not in a.applicable
    if "M <= 0.95" in spelling and spec == "sanitize_nonmarkov_tv.priv":  # it binds: the optimum moves
        assert problem.solve().objective > api.loads(_spec(spec)).solve().objective + 1e-6


def test_a_zero_multiple_leaves_cells_free():
    """``W * P(Y | S) == W * Q`` with a zero weight does not constrain that cell: not eq. 3."""
    text = _with(
        _spec("sanitize_nonmarkov_tv.priv"),
        "design M",
        "const w(S, X) = {\n  a b c d\n  s1: 1 1 1 1\n  s2: 1 0 2 1\n}\ndesign M",
    )
    a = api.loads(_with(text, EQ3, f"subject to w(S, X) * P(Y | S) == w(S, X) * ({Q})")).explain()
    assert a.chosen == "lp"
    ok = api.loads(
        _with(text.replace("s2: 1 0 2 1", "s2: 1 3 2 1"), EQ3, f"subject to w(S, X) * P(Y | S) == w(S, X) * ({Q})")
    )
    assert ok.explain().chosen == "closed-form"  # a nonzero weight per cell is the same equation


def test_explain_names_the_recognized_equation():
    text = _with(_spec("sanitize_nonmarkov_tv.priv"), EQ3, f"subject to {Q} <= P(Y | S) <= {Q}")
    a = api.loads(text).explain()
    why = a.applicable["closed-form"]
    assert f"'{Q} <= P(Y | S) <= {Q}'" in why
    assert "reads P(Y | S) == (1 - 0.5) * P(X | S) + 0.5 * P(X) (eq. 3, alpha = 0.5)" in why
    assert "Prop. 1" in why
    lemma = api.loads(
        _with(
            _spec("sanitize_markov_lemma1.priv"),
            EQ3,
            "subject to P(Y | S) - (1 - alpha) * P(X | S) - alpha * P(X) == 0",
        )
    )
    assert "(eq. 3, alpha = 0.3)" in lemma.explain().applicable["closed-form"]


# ------------------------------------------------------------------ objectives

HAMMING = "const h(X, Y) = {\n    a b c d\n a: 0 1 1 1\n b: 1 0 1 1\n c: 1 1 0 1\n d: 1 1 1 0\n}\n"

TV_SPELLINGS = [
    "minimize tv(X, Y) + 0",
    "minimize 0.5 * tv(X, Y) + 0.5 * tv(X, Y)",
    "minimize tv(X, Y) * 3 / 3",
    "minimize E[h(X, Y)]",  # the expected Hamming distance is tv
    "minimize sum(X, Y: h(X, Y) * P(X, Y))",
    "minimize E[h(X, Y) + 2] - 2",
    "minimize 1 - E[1 - h(X, Y)]",
]


@pytest.mark.parametrize("spelling", TV_SPELLINGS)
def test_tv_spellings(spelling):
    canonical = _spec("sanitize_nonmarkov_tv.priv")
    text = _with(canonical, "minimize tv(X, Y)", spelling).replace("design M", HAMMING + "design M")
    _, a = _same(text, canonical)
    assert a.chosen == "closed-form"


@pytest.mark.parametrize("spelling,factor", [("minimize 2 * tv(X, Y) + 1", 2.0), ("minimize 3 * E[h(X, Y)]", 3.0)])
def test_scaled_tv_keeps_prop1(spelling, factor):
    """A positive multiple of tv plus a constant has Prop. 1's minimizers."""
    canonical = _spec("sanitize_nonmarkov_tv.priv")
    text = _with(canonical, "minimize tv(X, Y)", spelling).replace("design M", HAMMING + "design M")
    _, a, r = _outcome(text)
    _, _, r0 = _outcome(canonical)
    assert a.chosen == "closed-form"
    assert "tv(X, Y)" in a.applicable["closed-form"]
    shift = 1.0 if "+ 1" in spelling else 0.0
    assert r.objective == pytest.approx(factor * r0.objective + shift, rel=1e-9)


DISTORTION_SPELLINGS = [
    ("minimize E[|Y - X|]", 1.0, 0.0),
    ("minimize sum(X, Y: |X - Y| * P(X, Y))", 1.0, 0.0),
    ("minimize 0.5 * E[|X - Y|] + 0.5 * E[|Y - X|]", 1.0, 0.0),
    ("minimize 3 * E[|X - Y|]", 3.0, 0.0),
    ("minimize E[|X - Y|] + 2", 1.0, 2.0),
    ("minimize E[|X - Y| + 1]", 1.0, 1.0),
]


@pytest.mark.parametrize("spelling,factor,shift", DISTORTION_SPELLINGS)
def test_distortion_spellings(spelling, factor, shift):
    canonical = _spec("sanitize_distortion.priv")
    _, a, r = _outcome(_with(canonical, "minimize E[|X - Y|]", spelling))
    _, a0, r0 = _outcome(canonical)
    assert a.chosen == a0.chosen == "reduced-lp"
    assert r.objective == pytest.approx(factor * r0.objective + shift, rel=1e-9)
    assert r.objective == pytest.approx(
        api.loads(_with(canonical, "minimize E[|X - Y|]", spelling)).solve(method="lp").objective, rel=1e-7
    )


def test_distortion_plus_a_function_of_x_is_prop2():
    """E[|X - Y| + X] = E[|X - Y|] + E[X], and E[X] is fixed by P(X): Prop. 2 still applies."""
    canonical = _spec("sanitize_distortion.priv")
    _, a, r = _outcome(_with(canonical, "minimize E[|X - Y|]", "minimize E[|X - Y| + X]"))
    _, _, r0 = _outcome(canonical)
    ex = float(np.dot([1, 2, 3, 4], 0.3 * np.array([0.2, 0.1, 0.5, 0.2]) + 0.7 * np.array([0.5, 0.3, 0.1, 0.1])))
    assert a.chosen == "reduced-lp"
    assert "shifted" in a.applicable["reduced-lp"]
    assert r.objective == pytest.approx(r0.objective + ex, rel=1e-9)


@pytest.mark.parametrize(
    "spelling",
    [
        "minimize E[(X - Y)^2]",  # not a metric: Prop. 2 could miss the optimum
        "maximize tv(X, Y)",
        "minimize -tv(X, Y)",
        "minimize E[w(S) * |X - Y|]",  # weighted by S: not a distortion of (X, Y)
    ],
)
def test_other_objectives_are_not_matched(spelling):
    text = _with(_spec("sanitize_distortion.priv"), "minimize E[|X - Y|]", spelling)
    text = text.replace("design M", "const w(S) = { s1: 1, s2: 2 }\ndesign M")
    a = api.loads(text).explain()
    assert a.chosen == "lp"


# ------------------------------------------------------------------ Theorem 1 (Chen et al.)

FIDELITY = "subject to |Dt - D| <= 1 - delta               # delta-fidelity (Def. 5)"
FIDELITY_SPELLINGS = [
    "subject to Dt <= D + 0.1\nsubject to Dt >= D - 0.1",
    "subject to D - Dt >= -0.1\nsubject to Dt - D >= -0.1",
    "subject to |Dt - D| <= 0.1",
    "subject to 0.1 >= |D - Dt|",
    "subject to D - 0.1 <= Dt <= D + 0.1",
    "subject to D - (1 - delta) <= Dt <= D + (1 - delta)",
    "subject to abs(D - Dt) <= 1 - delta",
    "subject to 2 * Dt - 2 * D <= 0.2\nsubject to -Dt <= 0.1 - D",
    "subject to Dt - D <= 1 - delta\nsubject to D - Dt <= 1 - delta\nsubject to 0 <= Dt <= 1",
]


@pytest.mark.parametrize("spelling", FIDELITY_SPELLINGS)
@pytest.mark.parametrize("spec", ["atr_table4.priv", "atr_min_uncertainty.priv"])
def test_fidelity_spellings(spec, spelling):
    canonical = _spec(spec)
    fidelity = FIDELITY if FIDELITY in canonical else "subject to |Dt - D| <= 1 - delta"
    _, a = _same(_with(canonical, fidelity, spelling), canonical)
    assert a.chosen == "closed-form"
    assert "read as bounds" in a.applicable["closed-form"]


def test_alpha_fidelity_spellings():
    canonical = _spec("atr_alpha_fidelity.priv")
    old = "subject to Dt >= alpha * D\nsubject to Dt <= D / alpha"
    for new in [
        "subject to alpha * D <= Dt <= D / alpha",
        "subject to alpha * Dt <= D\nsubject to D * alpha - Dt <= 0",
    ]:
        _same(_with(canonical, old, new), canonical)


def test_three_outcomes_is_not_theorem1():
    a = api.load(SPECS / "atr_three_outcomes.priv").explain()
    assert a.chosen == "lfp" and "closed-form" not in a.applicable


def test_looser_fidelity_is_another_problem():
    canonical = _spec("atr_table4.priv")
    looser = api.loads(_with(canonical, FIDELITY, "subject to |Dt - D| <= 0.2")).solve()
    assert looser.objective < api.loads(canonical).solve().objective - 1e-6


# ------------------------------------------------------------------ random rearrangements

TERMS = (("P(Y | S)", "1"), ("P(X | S)", "-(1 - alpha)"), ("P(X)", "-alpha"))  # sum == 0 is eq. 3


@st.composite
def eq3_rearrangements(draw):
    """eq. 3 as ``sum_k c_k T_k == 0`` times a nonzero factor, each term on a random side (the
    right side negated), in a random order, as one equation or a two-sided chain."""
    factor = draw(st.sampled_from(["1", "2", "(-3)", "0.25", "(-1 / 7)"]))
    sides = draw(st.lists(st.booleans(), min_size=3, max_size=3))
    order = draw(st.permutations(range(3)))
    left, right = [], []
    for k in order:
        term, coef = TERMS[k]
        (left if sides[k] else right).append(
            f"({factor} * {coef}) * {term}" if sides[k] else f"(-{factor} * {coef}) * {term}"
        )
    lhs = " + ".join(left) or "0"
    rhs = " + ".join(right) or "0"
    if draw(st.booleans()):
        lhs, rhs = rhs, lhs
    form = draw(st.sampled_from(["eq", "chain", "two"]))
    if form == "eq":
        return f"subject to {lhs} == {rhs}"
    if form == "chain":
        return f"subject to {rhs} <= {lhs} <= {rhs}"
    return f"subject to {lhs} <= {rhs}\nsubject to {rhs} <= {lhs}"


@settings(deadline=None, max_examples=examples(40), suppress_health_check=[HealthCheck.too_slow])
@given(
    spec=st.sampled_from(sorted(SANITIZE)),
    alpha=st.one_of(st.sampled_from([0.0, 0.5, 1.0]), st.floats(0.0, 1.0)),
    spelling=eq3_rearrangements(),
)
def test_random_rearrangements_of_eq3(spec, alpha, spelling):
    canonical = _spec(spec)
    canonical = canonical.replace(
        canonical[canonical.index("param alpha") :].split("\n", 1)[0], f"param alpha = {alpha!r}"
    )
    problem, a, r = _outcome(_with(canonical, EQ3, spelling))
    _, a0, r0 = _outcome(canonical)
    assert a.chosen == a0.chosen, (spelling, a.not_applicable.get(a0.chosen))
    assert r.objective == pytest.approx(r0.objective, rel=1e-9, abs=1e-12)
    san_text = a.applicable.get(a.chosen, "")
    if a.chosen != "lp":
        shown = float(san_text.split("(eq. 3, alpha = ", 1)[1].split(")", 1)[0])
        assert shown == pytest.approx(alpha, rel=1e-5, abs=1e-9)


@settings(deadline=None, max_examples=examples(25), suppress_health_check=[HealthCheck.too_slow])
@given(
    delta=st.floats(0.5, 1.0),
    form=st.sampled_from(
        [
            "subject to |Dt - D| <= 1 - delta",
            "subject to 1 - delta >= |D - Dt|",
            "subject to D - (1 - delta) <= Dt <= D + (1 - delta)",
            "subject to Dt - D <= 1 - delta\nsubject to D - Dt <= 1 - delta",
            "subject to {k} * (Dt - D) <= {k} * (1 - delta)\nsubject to {k} * (D - Dt) <= {k} * (1 - delta)",
        ]
    ),
    k=st.sampled_from(["1", "2.5", "0.1"]),
)
def test_random_fidelity_rearrangements(delta, form, k):
    canonical = _with(_spec("atr_table4.priv"), "param delta = 0.9", f"param delta = {delta!r}")
    _same(_with(canonical, FIDELITY, form.format(k=k)), canonical)


# ------------------------------------------------------------------ k-ary randomized response (Kairouz et al.)

RR_SPEC = """spec "rr"
var X : data {{{labels}}}
var Y : release over X
known P(X) = {prior}
design R = P(Y | X)
param eps = {eps!r}
subject to {budget} <= {bound}
{objective}
"""

RR_OBJECTIVES = ["minimize tv(X, Y)", "minimize tv(X, Y) + 0", "minimize 0.5 * tv(X, Y) + 0.5 * tv(X, Y)"]


def rr_text(k, eps, prior="uniform", budget="ldp(X -> Y)", bound="eps", objective=RR_OBJECTIVES[0], numeric=False):
    """A randomized-response spec over k labels (v0.. or 0..k-1); ``prior``: "uniform" or weights per label."""
    labels = [str(i) if numeric else f"v{i}" for i in range(k)]
    if prior != "uniform":
        prior = "{ " + ", ".join(f"{a}: {w!r}" for a, w in zip(labels, prior)) + " }"
    head = f"range(0, {k - 1})" if numeric else None
    text = RR_SPEC.format(
        labels=", ".join(labels), prior=prior, eps=eps, budget=budget, bound=bound, objective=objective
    )
    return text.replace("{" + ", ".join(labels) + "}", head) if head else text


def _rr_plan(problem) -> list[str]:
    return [s.name for s in problem.plan().steps]


@settings(deadline=None, max_examples=examples(30), suppress_health_check=[HealthCheck.too_slow])
@given(
    k=st.integers(2, 12),
    eps=st.one_of(st.sampled_from([0.0, math.log(2), 5.0]), st.floats(0.0, 8.0)),
    budget=st.sampled_from(["ldp(X -> Y)", "dp(X -> Y)"]),
    explicit=st.booleans(),
    objective=st.sampled_from(RR_OBJECTIVES),
)
def test_randomized_response_is_the_closed_form_and_the_lps_optimum(k, eps, budget, explicit, objective):
    """Wherever its conditions hold (a uniform prior, written as ``uniform`` or as equal weights;
    one pure budget over all pairs; tv however spelled), the recognizer answers, its table
    verifies, and its value is the generic LP's to 1e-8 and ``(k - 1) / (e^eps + k - 1)``."""
    prior = [1.0 / k] * k if explicit else "uniform"
    problem = api.loads(rr_text(k, eps, prior, budget, objective=objective))
    a = problem.explain()
    assert a.chosen == "closed-form" and "randomized response" in a.applicable["closed-form"]
    assert _rr_plan(problem) == ["randomized-response"]
    r = problem.solve()
    assert r.status == "optimal" and r.method == "closed-form"
    assert r.verification["passed"] and r.certificate["kind"] == "theorem"
    lp = problem.solve(method="lp")
    assert lp.status == "optimal" and lp.method == "lp"
    assert r.objective == pytest.approx(lp.objective, rel=1e-8, abs=1e-8)
    assert r.objective == pytest.approx(rr_value(k, eps), rel=1e-12, abs=1e-15)


@st.composite
def non_uniform(draw, k):
    w = draw(st.lists(st.integers(1, 20), min_size=k, max_size=k).filter(lambda w: len(set(w)) > 1))
    return [x / sum(w) for x in w]


@settings(deadline=None, max_examples=examples(30), suppress_health_check=[HealthCheck.too_slow])
@given(k=st.integers(2, 8), eps=st.floats(0.05, 5.0), data=st.data())
def test_randomized_response_declines_where_its_conditions_fail(k, eps, data):
    """Each condition broken alone: the recognizer declines with its reason, the LP answers, and
    where randomized response stays feasible (another prior: its tv is still the value, since
    its diagonal is constant) the LP's optimum is no larger."""
    case = data.draw(st.sampled_from(["prior", "maximize", "constraint", "delta", "loglift", "pairs", "objective"]))
    rr = rr_value(k, eps)
    edits = {
        "prior": (dict(prior=data.draw(non_uniform(k))), "uniform prior"),
        "maximize": (dict(objective="maximize tv(X, Y)"), "minimizes tv"),
        "constraint": (dict(objective="subject to tv(X, Y) <= 0.999\nminimize tv(X, Y)"), "other constraints"),
        "delta": (dict(budget="dp(X -> Y)", bound="(eps, 0.01)"), "pure dp or ldp"),
        "loglift": (dict(budget="loglift(X -> Y)"), "pure dp or ldp"),
        "pairs": (dict(budget="dp(X -> Y, adjacent: |X - X'| <= 1)", numeric=True), "every pair"),
        "objective": (dict(objective="minimize 2 * tv(X, Y)"), None),  # not tv itself: out of its scope
    }
    kwargs, why = edits[case]
    problem = api.loads(rr_text(k, eps, **kwargs))
    rec, match = recognize(problem, "closed-form")
    a = problem.explain()
    if case == "pairs" and k == 2:  # |x - x'| <= 1 is every pair of two labels: the theorem holds
        assert rec is RANDOMIZED_RESPONSE and a.chosen == "closed-form"
        assert problem.solve().objective == pytest.approx(rr, rel=1e-12, abs=1e-15)
        return
    assert rec is None and a.chosen == "lp" and "closed-form" not in a.applicable
    if why is not None:
        assert not match and why in match.why and a.not_applicable["closed-form"] == match.why
    else:
        assert not RANDOMIZED_RESPONSE.in_scope(problem)
    r = problem.solve()
    assert r.status == "optimal" and r.method == "lp"
    if case in ("prior", "delta", "constraint"):
        assert r.objective <= rr + 1e-8  # randomized response is feasible
    if case == "constraint":
        assert r.objective == pytest.approx(rr, rel=1e-8, abs=1e-8)  # a bound it meets does not bind


def test_a_skewed_prior_beats_randomized_response():
    """Why the uniform prior is a condition: with P(X) = (0.9, 0.1) and eps = 0.5, releasing v0
    always (tv = 0.1) beats randomized response's 1 / (e^0.5 + 1) = 0.378."""
    r = api.loads(rr_text(2, 0.5, [0.9, 0.1])).solve()
    assert r.objective == pytest.approx(0.1, abs=1e-9)
    assert r.objective < rr_value(2, 0.5) - 0.2


def test_randomized_response_verifies_and_a_tampered_result_does_not(tmp_path):
    """``privopt verify`` re-checks the theorem: its conditions on the rebuilt spec, the cited
    theorem and the optimum recomputed; a changed citation, a changed eps and a changed
    objective each fail, naming the check."""
    import json

    result = json.loads(api.load(SPECS / "randomized_response.priv").solve().to_json())
    assert result["method"] == "closed-form" and result["certificate"]["data"]["theorem"] == RANDOMIZED_RESPONSE.cites
    report = privopt.verify(result)
    assert report.passed
    assert any(c.name == "certificate theorem" and c.passed for c in report.checks)
    assert any(c.name == "certificate theorem's optimum" and c.passed for c in report.checks)

    def failed(edit) -> list[str]:
        tampered = json.loads(json.dumps(result))
        edit(tampered)
        rep = privopt.verify(tampered)
        assert not rep.passed
        return [c.name for c in rep.failed]

    assert "certificate theorem" in failed(lambda r: r["certificate"]["data"].update(theorem="Lemma 1"))
    assert "certificate theorem's optimum" in failed(lambda r: r["spec"]["params"].update(eps=1.2))
    assert "certificate theorem's optimum" in failed(lambda r: r.update(objective=r["objective"] * 1.001))
