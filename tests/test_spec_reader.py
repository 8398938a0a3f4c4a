"""The spec reader at the extremes (issue 10, items 3 and 6): counts near the largest double,
flat sums of any length, the nesting limit, and caret excerpts of hostile lines."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import SPECS
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import privopt
from privopt.builder.build import normalize_counts
from privopt.errors import SpecError
from privopt.language.parser import MAX_DEPTH
from privopt.language.source import Source

TABLE4 = (SPECS / "atr_table4.priv").read_text()


def scaled_table4(scale: str) -> str:
    """Table 4 with every count multiplied by ``scale`` (the counts' sum overflows a double
    from scale ~ 1e307 on: 40 counts summing to 40e307 > 1.8e308)."""
    text = TABLE4.replace("F:   12   5    3", f"F:   12{scale}   5{scale}    3{scale}")
    return text.replace("M:   9    7    4", f"M:   9{scale}    7{scale}    4{scale}")


@pytest.mark.parametrize("scale", ["e307", "e300", "e-300"])
def test_table4_counts_of_any_size_give_table4(scale):
    base = privopt.loads(TABLE4).solve()
    big = privopt.loads(scaled_table4(scale)).solve()
    assert big.status == base.status == "optimal"
    assert big.objective == pytest.approx(base.objective, rel=1e-12)
    assert big.objective == pytest.approx(0.675, abs=1e-12)  # Chen et al. Sec. 8, Table 4


def test_conditional_counts_near_the_largest_double():
    text = TABLE4.replace("known P(gender, income) = counts {", "known P(income | gender) = counts {")
    text = text.replace("F:   12   5    3", "F:   1.7e308 1.7e308 1.7e308").replace("M:   9    7    4", "M:   1 1 1")
    prior = privopt.loads(text).known["P(income | gender)"].data
    assert np.allclose(prior, 1 / 3, rtol=1e-15)


@given(
    arrays(
        np.float64,
        st.tuples(st.integers(1, 4), st.integers(1, 5)),
        elements=st.one_of(st.just(0.0), st.floats(1, 1e6)),
    ),
    st.floats(1e-200, 1e300),
)
def test_normalize_counts_is_scale_free(counts, scale):
    """P(x | s) of counts c equals that of k c for any k that keeps k c finite, and each row
    with a positive count is a distribution."""
    rows = counts.sum(axis=1) > 0
    scaled = counts * scale
    if not np.all(np.isfinite(scaled)):
        return
    a, b = normalize_counts(counts, 1), normalize_counts(scaled, 1)
    np.testing.assert_allclose(a[rows], b[rows], rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(a[rows].sum(axis=1), 1.0, rtol=1e-12)
    assert np.all(np.isnan(b[~rows]))


def test_normalize_counts_joint_near_overflow():
    counts = np.full((3, 4), np.finfo(float).max / 2)
    np.testing.assert_allclose(normalize_counts(counts, 0), 1 / 12)


def test_flat_sum_of_ten_thousand_terms():
    text = TABLE4.replace("param delta = 0.9", "param delta = 0" + " + 0.00009" * 10_000)
    assert privopt.loads(text).params["delta"] == pytest.approx(0.9)


def test_long_product_and_difference_chains():
    text = TABLE4.replace("param delta = 0.9", "param delta = 0.9" + " * 1" * 3000 + " - 0" * 3000 + " / 1" * 3000)
    assert privopt.loads(text).params["delta"] == pytest.approx(0.9)


def test_nesting_limit_is_located_at_the_level_past_it():
    expr = "abs(" * (MAX_DEPTH + 5) + "0.9" + ")" * (MAX_DEPTH + 5)
    text = TABLE4.replace("param delta = 0.9", "param delta = " + expr)
    with pytest.raises(SpecError, match=f"nested more than {MAX_DEPTH} levels") as info:
        privopt.loads(text)
    col = len("param delta = ") + 1 + 4 * MAX_DEPTH  # the call that is one level too deep
    assert info.value.span.column == col
    assert info.value.span.line == 18


def test_excerpt_caret_under_the_character_after_escapes():
    src = Source("a\x1b\x07b\tc = $\n")
    span = src.span(src.text.index("$"))
    line, caret = span.excerpt().splitlines()
    assert line[caret.index("^")] == "$"
    assert "\x1b" not in line and "\\x1b" in line and "\\x07" in line


def test_excerpt_of_a_five_megabyte_line_is_one_window():
    text = "x" * 5_000_000 + "$" + "y" * 100
    src = Source(text)
    excerpt = src.span(5_000_000).excerpt()
    assert len(excerpt) < 400
    line, caret = excerpt.splitlines()
    assert line[caret.index("^")] == "$"


def test_location_shows_a_hostile_file_name_as_escapes(tmp_path):
    src = Source("x", tmp_path / "a\x1b[2Jb.priv")
    assert "\x1b" not in src.span(0).location()
    assert "\\x1b[2Jb.priv:1:1" in src.span(0).location()
