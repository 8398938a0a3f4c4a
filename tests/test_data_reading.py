"""Reading long tables compactly (issue 13, item 2): a CSV is streamed in blocks and kept in the
smallest integer types, integer labels are looked up in a table; answers and errors are the
same as a whole-file read."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from privopt.errors import SpecError
from privopt.language import datafiles
from privopt.language.datafiles import DataFiles, read_long_table
from privopt.language.source import Source, Span


class _Var:
    def __init__(self, name, labels):
        self.name, self.labels = name, tuple(labels)
        try:
            self.values = np.array([float(x) for x in labels])
        except ValueError:
            self.values = None

    @property
    def size(self):
        return len(self.labels)

    def index_of(self, text, value=None):
        return self.labels.index(text) if text in self.labels else None


SPAN = Span(Source("x", None), 0, 1)


def _write(tmp_path, df, name="t.csv"):
    df.to_csv(tmp_path / name, index=False)
    return DataFiles(tmp_path)


def test_streamed_csv_equals_pandas_and_keeps_integers_small(tmp_path, monkeypatch):
    monkeypatch.setattr(datafiles, "CSV_BLOCK", 1 << 12)  # many blocks
    rng = np.random.default_rng(0)
    n = 20_000
    df = pd.DataFrame({"a": rng.integers(0, 5, n), "b": rng.integers(-3, 300, n), "w": rng.random(n)})
    files = _write(tmp_path, df)
    got = files.frame("t.csv", SPAN)
    assert got["a"].dtype == np.int8 and got["b"].dtype == np.int16 and got["w"].dtype == np.float64
    pd.testing.assert_frame_equal(got, pd.read_csv(tmp_path / "t.csv"), check_dtype=False)


def test_a_column_that_changes_type_after_the_first_block_falls_back_to_pandas(tmp_path, monkeypatch):
    monkeypatch.setattr(datafiles, "CSV_BLOCK", 1 << 10)
    df = pd.DataFrame({"a": ["1"] * 3000 + ["x"], "w": np.ones(3001)})
    files = _write(tmp_path, df)
    got = files.frame("t.csv", SPAN)
    assert list(got["a"].astype(str).iloc[-2:]) == ["1", "x"] and len(got) == 3001


def test_integer_labels_are_looked_up_and_unknown_ones_named(tmp_path):
    df = pd.DataFrame({"a": [1, 5, 9, 5], "w": [1.0, 2.0, 3.0, 4.0]})
    files = _write(tmp_path, df)
    a = _Var("a", ["1", "5", "9", "12"])
    with pytest.raises(SpecError, match="duplicate|rows for"):
        read_long_table(files, "t.csv", SPAN, [a], "w", 0.0)
    df = pd.DataFrame({"a": [1, 5, 9, 7], "w": [1.0, 2.0, 3.0, 4.0]})
    files = _write(tmp_path, df, "u.csv")
    with pytest.raises(SpecError, match="row 4 of 'u.csv': a = '7' is not in its domain"):
        read_long_table(files, "u.csv", SPAN, [a], "w", 0.0)
    df = pd.DataFrame({"a": [12, 5, 9, 1], "w": [1.0, 2.0, 3.0, 4.0]})
    files = _write(tmp_path, df, "v.csv")
    assert read_long_table(files, "v.csv", SPAN, [a], "w", 0.0).tolist() == [4.0, 2.0, 3.0, 1.0]


def test_the_flat_index_matches_ravel_multi_index(tmp_path):
    rng = np.random.default_rng(1)
    a, b, c = _Var("a", ["0", "1", "2"]), _Var("b", ["x", "y"]), _Var("c", [str(v) for v in range(-2, 5)])
    rows = pd.MultiIndex.from_product([range(3), ["x", "y"], range(-2, 5)]).to_frame(index=False)
    rows.columns = ["a", "b", "c"]
    rows = rows.sample(frac=1.0, random_state=2).reset_index(drop=True)
    rows["w"] = rng.random(len(rows))
    files = _write(tmp_path, rows)
    got = read_long_table(files, "t.csv", SPAN, [a, b, c], "w", None)
    want = np.zeros((3, 2, 7))
    idx = (rows["a"].to_numpy(), (rows["b"] == "y").to_numpy().astype(int), rows["c"].to_numpy() + 2)
    want[idx] = rows["w"].to_numpy()
    assert np.array_equal(got, want)


def test_reading_reports_progress_to_the_hook_the_cli_sets(tmp_path, monkeypatch):
    """One pass reads, hashes and checks the file: one task, its bytes rising to the size."""
    monkeypatch.setattr(datafiles, "CSV_BLOCK", 1 << 12)
    df = pd.DataFrame({"a": np.arange(20_000) % 5, "w": np.ones(20_000)})
    files = _write(tmp_path, df)
    seen = []
    token = datafiles.READING.set(lambda what, done, total: seen.append((what, done, total)))
    try:
        files.frame("t.csv", SPAN)
    finally:
        datafiles.READING.reset(token)
    size = (tmp_path / "t.csv").stat().st_size
    reads = [d for w, d, t in seen if w == "read t.csv"]
    assert {w for w, _, _ in seen} == {"read t.csv"}
    assert len(reads) > 5 and reads == sorted(reads) and reads[-1] == size
    assert all(t == size for _, _, t in seen)


def test_text_labels_are_read_as_dictionary_codes_across_blocks(tmp_path, monkeypatch):
    monkeypatch.setattr(datafiles, "CSV_BLOCK", 1 << 10)  # blocks whose dictionaries differ
    labels = np.array(["low", " mid", "high"])
    rng = np.random.default_rng(3)
    col = labels[rng.integers(0, 3, 5000)]
    col[-1] = "top"
    df = pd.DataFrame({"g": col, "w": np.arange(5000.0)})
    files = _write(tmp_path, df)
    frame = files.frame("t.csv", SPAN)
    assert isinstance(frame["g"].dtype, pd.CategoricalDtype)
    assert list(frame["g"].astype(str)) == list(pd.read_csv(tmp_path / "t.csv")["g"].astype(str))
    g = _Var("g", ["high", "low", "mid"])
    with pytest.raises(SpecError, match="row 5000 of 't.csv': g = 'top' is not in its domain"):
        read_long_table(files, "t.csv", SPAN, [g], "w", 0.0)
