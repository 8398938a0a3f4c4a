"""What every family's stages share: labelled long tables and timings."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd


def label_column(labels: tuple[str, ...], shape: tuple[int, ...], axis: int) -> pd.Categorical:
    """The labels of one axis for every cell of a C-ordered array of ``shape`` (no unravel)."""
    inner = int(np.prod(shape[axis + 1 :], dtype=np.int64))
    outer = int(np.prod(shape[:axis], dtype=np.int64))
    dtype = np.int8 if len(labels) < 128 else np.int32
    codes = np.tile(np.repeat(np.arange(len(labels), dtype=dtype), inner), outer)
    return pd.Categorical.from_codes(codes, dtype=pd.CategoricalDtype(list(labels)), validate=False)


def timings(parse_s: float, solve_s: float, t_start: float) -> dict[str, float]:
    """{"parse_s", "solve_s", "total_s"}: total counts parsing and everything since ``t_start``."""
    return {"parse_s": parse_s, "solve_s": solve_s, "total_s": parse_s + time.perf_counter() - t_start}
