"""Whole-pipeline properties: random specs with several public attributes, solved by both
methods; Remark 4's special case."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import privopt
from tests.conftest import examples


def spec_text(counts: np.ndarray, rule: np.ndarray, delta: float) -> str:
    """A spec with public attributes u1..uk (sizes counts.shape[:-1]) and private s."""
    *pub_sizes, m = counts.shape
    lines = [f"var u{k} : public {{{', '.join(f'v{j}' for j in range(n))}}}" for k, n in enumerate(pub_sizes)]
    lines += [f"var s : private {{{', '.join(f's{j}' for j in range(m))}}}", "var d : outcome {no, yes}"]
    pub = ", ".join(f"u{k}" for k in range(len(pub_sizes)))
    entries = []
    rule_entries = []
    for idx in np.ndindex(counts.shape):
        key = " ".join(f"v{j}" for j in idx[:-1]) + f" s{idx[-1]}"
        entries.append(f"{key}: {int(counts[idx])}")
        rule_entries.append(f"{key}: {float(rule[idx])!r}")
    lines.append(f"known P({pub}, s) = counts {{ {', '.join(entries)} }}")
    lines.append(f"known R = P(d = yes | {pub}, s) = {{ {', '.join(rule_entries)} }}")
    lines += [
        f"design T = P(d | {pub}, s)",
        f"param delta = {delta!r}",
        "subject to |T - R| <= 1 - delta",
        f"minimize max_confidence({pub}, d -> s)",
    ]
    return "\n".join(lines) + "\n"


@st.composite
def specs(draw):
    k = draw(st.integers(1, 3))
    sizes = tuple(draw(st.integers(1, 3)) for _ in range(k)) + (draw(st.integers(1, 6)),)
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 20, size=sizes) * (rng.random(sizes) > 0.2)
    if counts.sum() == 0:
        counts.flat[0] = 1
    rule = rng.choice([0.0, 0.25, 0.5, 1.0, 0.9], size=sizes)
    delta = draw(st.sampled_from([0.0, 0.5, 0.8, 0.9, 0.95, 1.0]))
    return spec_text(counts, rule, delta)


@settings(max_examples=examples(40), deadline=None)
@given(specs())
def test_methods_agree_through_the_pipeline(text):
    problem = privopt.loads(text)
    cf = problem.solve(method="closed-form")
    lf = problem.solve(method="lfp")
    assert cf.status == lf.status == "optimal"
    assert abs(cf.beta - lf.beta) <= 1e-8
    np.testing.assert_allclose(cf.groups["beta"], lf.groups["beta"], atol=1e-8)
    # Lemmas 5 and 4 per group: beta_min <= beta* <= C* (the rule itself meets the bounds)
    g = cf.groups
    assert (g["beta_min"] <= g["beta"] + 1e-12).all() and (g["beta"] <= g["c_star"] + 1e-12).all()


def test_remark_4_x0_equals_x1():
    """One record dominates both outcomes' floors: x^0 = x^1, and then beta_p = beta_min."""
    text = spec_text(np.array([[8, 1, 1]]), np.array([[0.5, 0.5, 0.5]]), 0.9)
    result = privopt.loads(text).solve()
    g = result.groups.iloc[0]
    assert g["beta"] == 0.8 and g["beta_min"] == 0.8
    assert g["case"] in ("beta_p", "beta_min")


def test_group_of_one_record_and_empty_group():
    """A one-record group is fully exposed (beta = 1); a group with no population is skipped."""
    counts = np.array([[5], [0]])
    result = privopt.loads(spec_text(counts, np.array([[0.5], [0.5]]), 0.9)).solve()
    g = result.groups.set_index("u0")
    assert g.loc["v0", "beta"] == 1.0
    assert g.loc["v1", "beta"] == 0.0
    assert result.beta == 1.0
