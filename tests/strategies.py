"""Hypothesis strategies for ATR instances (dense groups)."""

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays


@st.composite
def binary_instances(draw, max_groups=6, max_records=8):
    G = draw(st.integers(1, max_groups))
    m = draw(st.integers(1, max_records))
    probs = st.one_of(st.just(0.0), st.floats(1e-6, 1.0), st.sampled_from([0.5, 1.0, 1e-4]))
    p = draw(arrays(np.float64, (G, m), elements=probs))
    # bounds are exactly 0, 1/2 or 1, or 1e-6 away from 0 and 1: an LP resolves values to ~1e-9, so
    # 1e-203 or 1 - 1e-16 are beyond the LFP route (it then reports an open gap, never "optimal")
    unit = st.one_of(st.sampled_from([0.0, 1.0, 0.5]), st.floats(1e-6, 1.0 - 1e-6))
    x = draw(arrays(np.float64, (G, m), elements=unit))
    y = draw(arrays(np.float64, (G, m), elements=unit))
    lo, hi = np.minimum(x, y), np.maximum(x, y)
    pin = draw(arrays(np.bool_, (G, m)))
    lo = np.where(pin & draw(st.booleans()), hi, lo)
    D = draw(arrays(np.float64, (G, m), elements=unit))
    return p, lo, hi, D
