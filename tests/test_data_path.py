"""The data path at scale (issue 23, goal 2): one pass over a CSV (hashed, UTF-8-checked, parsed by
pyarrow's multithreaded reader), only the columns the spec names, codes kept as arrays, no loop
per combination without records, long lists of objects written by json's C encoder. Each fast
path is checked against an independent slow one (pandas, a Python loop, json.dumps) on small
and edge inputs: many blocks with different dictionaries, empty groups, a label seen once,
quoted fields, spaces, bad bytes and bad rows."""

from __future__ import annotations

import hashlib
import json
import textwrap

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import privopt
from privopt.cli import main
from privopt.errors import SpecError
from privopt.language import datafiles
from privopt.language.datafiles import DataFiles, count_records
from privopt.language.source import Source, Span
from privopt.results import JSON_ROWS, LONG_LIST, LabelRows, _dumps, plain

SPAN = Span(Source("x", None), 0, 1)


class _Var:
    def __init__(self, name, labels):
        self.name, self.labels, self.values = name, tuple(labels), None

    @property
    def size(self):
        return len(self.labels)


def _records(n: int, seed: int) -> pd.DataFrame:
    """Records with a label seen once ('solo'), a label with a comma (quoted in the file), one
    with spaces around it, an unused number column and an unused text column."""
    rng = np.random.default_rng(seed)
    g = np.array(["a", "b, quoted", " spaced ", "NA"], dtype=object)[rng.integers(0, 4, n)]
    g[n // 2] = "solo"
    h = np.array(["x", "y", "z"], dtype=object)[rng.integers(0, 3, n)]
    h[h == "z"] = "y"  # z: a label of the domain no record has
    return pd.DataFrame({"id": np.arange(n), "g": g, "note": rng.choice(["p", "q"], n), "h": h})


def test_counts_equal_pandas_across_blocks_with_empty_groups_and_a_label_seen_once(tmp_path, monkeypatch):
    monkeypatch.setattr(datafiles, "CSV_BLOCK", 1 << 11)  # many blocks, each its own dictionary
    df = _records(5000, 1)
    df.to_csv(tmp_path / "r.csv", index=False)
    assert '"b, quoted"' in (tmp_path / "r.csv").read_text()
    g = _Var("g", ["a", "b, quoted", "spaced", "NA", "solo", "never"])
    h = _Var("h", ["x", "y", "z"])
    files = DataFiles(tmp_path)
    got = count_records(files, "r.csv", SPAN, [g, h])
    want = np.zeros((6, 3))
    for (gl, hl), n in (
        pd.read_csv(tmp_path / "r.csv", dtype=str, keep_default_na=False).value_counts(["g", "h"]).items()
    ):
        want[g.labels.index(gl.strip()), h.labels.index(hl)] = n
    assert np.array_equal(got, want)
    assert got[g.labels.index("solo")].sum() == 1 and not got[g.labels.index("never")].any() and not got[:, 2].any()
    assert files.digests["r.csv"] == hashlib.sha256((tmp_path / "r.csv").read_bytes()).hexdigest()


def test_a_spec_reads_its_file_once_and_only_the_columns_it_names(tmp_path, monkeypatch):
    """The credit spec names sex, housing, saving and risk: one pass reads those four, not age
    or amount, and the answer is the golden one."""
    from tests.conftest import SPECS

    calls = []
    read = datafiles._read_text
    monkeypatch.setattr(datafiles, "_read_text", lambda *a, **k: calls.append(a[5]) or read(*a, **k))
    problem = privopt.load(SPECS / "atr_credit_records.priv")
    assert calls == [["sex", "housing", "saving", "risk"]]
    assert (
        problem.data_sha256["data/credit_records.csv"]
        == hashlib.sha256((SPECS / "data" / "credit_records.csv").read_bytes()).hexdigest()
    )
    assert problem.solve().objective == pytest.approx(0.772609819, rel=1e-8)


def test_a_column_not_expected_is_read_in_one_more_pass_of_the_same_bytes(tmp_path):
    _records(300, 2).to_csv(tmp_path / "r.csv", index=False)
    files = DataFiles(tmp_path)
    files.expect("r.csv", labels=["g"])
    assert list(files.columns("r.csv", SPAN, ["g"], ["g"]).columns) == ["g"]
    assert list(files.columns("r.csv", SPAN, ["id"]).columns) == ["id"]  # read now, as numbers
    assert files.columns("r.csv", SPAN, ["id"])["id"].tolist() == list(range(300))
    (tmp_path / "r.csv").write_text((tmp_path / "r.csv").read_text().replace("p", "P"))
    with pytest.raises(SpecError, match="changed while it was read"):
        files.columns("r.csv", SPAN, ["note"])
    with pytest.raises(SpecError, match="(?s)has no column 'hh'.*did you mean 'h'"):
        files.columns("r.csv", SPAN, ["hh"])


def test_a_bad_byte_in_a_column_not_read_is_named_by_its_line(tmp_path, monkeypatch):
    """UTF-8 is checked over every byte, read or not, and a character split between two blocks
    is read whole."""
    monkeypatch.setattr(datafiles, "CSV_BLOCK", 64)
    rows = [f"{'a' if i % 2 else 'b'},caf\u00e9 {i}" for i in range(200)]
    good = ("g,note\n" + "\n".join(rows) + "\n").encode()
    (tmp_path / "r.csv").write_bytes(good)
    files = DataFiles(tmp_path)
    files.expect("r.csv", labels=["g"])
    assert files.columns("r.csv", SPAN, ["g"], ["g"])["g"].astype(str).tolist()[:2] == ["b", "a"]
    bad = good.replace("caf\u00e9 150".encode(), b"caf\xe9 150")
    (tmp_path / "s.csv").write_bytes(bad)
    files = DataFiles(tmp_path)
    files.expect("s.csv", labels=["g"])
    with pytest.raises(SpecError, match=r"line 152 of 's.csv': byte 0xe9 is not UTF-8"):
        files.columns("s.csv", SPAN, ["g"], ["g"])
    (tmp_path / "t.csv").write_bytes(good[:-1] + b"\xc3")
    with pytest.raises(SpecError, match="the last line of 't.csv' ends inside a UTF-8 character"):
        DataFiles(tmp_path).columns("t.csv", SPAN, ["g"], ["g"])


def test_bad_rows_stay_located_errors_across_blocks(tmp_path, monkeypatch):
    monkeypatch.setattr(datafiles, "CSV_BLOCK", 1 << 10)
    lines = ["g,h"] + [f"{'a' if i % 3 else 'b'},x" for i in range(400)]
    lines[301] = "a,x,extra"
    (tmp_path / "r.csv").write_text("\n".join(lines) + "\n")
    g, h = _Var("g", ["a", "b"]), _Var("h", ["x"])
    with pytest.raises(SpecError, match=r"row 301 of 'r.csv' has 3 field\(s\), the header has 2"):
        count_records(DataFiles(tmp_path), "r.csv", SPAN, [g, h])
    lines[301] = "c,x"
    (tmp_path / "r.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(SpecError, match=r"row 301 of 'r.csv': g = 'c' is not in its domain"):
        count_records(DataFiles(tmp_path), "r.csv", SPAN, [g, h])
    lines[301] = ",x"
    (tmp_path / "r.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(SpecError, match=r"row 301 of 'r.csv': g is empty \(an empty cell\)"):
        count_records(DataFiles(tmp_path), "r.csv", SPAN, [g, h])


def test_tables_and_domains_from_one_tally_equal_the_row_by_row_count(tmp_path, monkeypatch):
    """The file's text columns are counted once (``Tally``); each table (several labels naming
    one domain label, a label no record has) and each domain read from the file is a marginal
    of that count, equal to the row-by-row count (``TALLY_CELLS = 0``) and to pandas'."""
    monkeypatch.setattr(datafiles, "CSV_BLOCK", 1 << 11)  # many blocks, each its own dictionary
    df = _records(6000, 7)
    df.to_csv(tmp_path / "r.csv", index=False)
    g = _Var("g", ["a", "b, quoted", "spaced", "NA", "solo", "never"])
    h = _Var("h", ["x", "y", "z"])

    def count(files):
        files.expect("r.csv", labels=["g", "h", "note"])
        note = datafiles.distinct_labels(files, "r.csv", SPAN, "note")
        n = _Var("note", note)
        return note, count_records(files, "r.csv", SPAN, [h, g]), count_records(files, "r.csv", SPAN, [g, n, h])

    files = DataFiles(tmp_path)
    note, hg, gnh = count(files)
    [tally] = files._tallies["r.csv"]  # one count of the file's three text columns served all three
    assert sorted(tally.cols) == ["g", "h", "note"]
    monkeypatch.setattr(datafiles, "TALLY_CELLS", 0)
    slow = DataFiles(tmp_path)
    slow_note, slow_hg, slow_gnh = count(slow)
    assert "r.csv" not in slow._tallies  # counted row by row
    assert slow_note == note and np.array_equal(slow_hg, hg) and np.array_equal(slow_gnh, gnh)
    text = pd.read_csv(tmp_path / "r.csv", dtype=str, keep_default_na=False)
    assert note == tuple(sorted(text["note"].unique()))
    want = np.zeros((6, 2, 3))
    for (gl, nl, hl), k in text.value_counts(["g", "note", "h"]).items():
        want[g.labels.index(gl.strip()), note.index(nl), h.labels.index(hl)] = k
    assert np.array_equal(gnh, want) and np.array_equal(hg, want.sum(axis=1).T)


def test_a_tally_too_wide_for_the_file_counts_the_tables_columns_alone(tmp_path, monkeypatch):
    """A file whose text columns together have more combinations than ``TALLY_CELLS`` (an id
    read as text) is tallied over the table's own columns: the same counts."""
    df = _records(2000, 8)
    df.to_csv(tmp_path / "r.csv", index=False)
    g, h = _Var("g", ["a", "b, quoted", "spaced", "NA", "solo"]), _Var("h", ["x", "y", "z"])
    monkeypatch.setattr(datafiles, "TALLY_CELLS", 100)
    files = DataFiles(tmp_path)
    files.expect("r.csv", labels=["g", "h", "id"])
    got = count_records(files, "r.csv", SPAN, [g, h])
    assert [list(t.cols) for t in files._tallies["r.csv"]] == [["g", "h"]]
    monkeypatch.setattr(datafiles, "TALLY_CELLS", 0)
    assert np.array_equal(got, count_records(DataFiles(tmp_path), "r.csv", SPAN, [g, h]))


def test_the_hash_is_of_the_open_file_and_a_file_changed_while_read_is_refused(tmp_path):
    """pyarrow reads the file the spec opened (its descriptor), not whatever its name points
    to later; the thread hashing it checks the file did not change while it was read."""
    _records(500, 3).to_csv(tmp_path / "r.csv", index=False)
    first = (tmp_path / "r.csv").read_bytes()
    files = DataFiles(tmp_path)
    _, fh = files.open("r.csv", SPAN)
    with fh:
        (tmp_path / "other.csv").write_bytes(first.replace(b"x", b"w"))
        (tmp_path / "other.csv").replace(tmp_path / "r.csv")  # the name now names another file
        cols, digest = datafiles._read_text(fh, "csv", "r.csv", SPAN, ["h"], ["h"])
        assert digest == hashlib.sha256(first).hexdigest()
        assert "x" in cols["h"].labels and "w" not in cols["h"].labels
    with open(tmp_path / "r.csv", "rb") as fh:
        check = datafiles._Digest(fh, "r.csv", SPAN)
        check.worker.join()
        with open(tmp_path / "r.csv", "ab") as out:
            out.write(b"a,b\n")
        with pytest.raises(SpecError, match="data file 'r.csv' changed while it was read"):
            check.result()


WIDE = textwrap.dedent(
    """\
    var a : public range(0, 9)
    var b : public range(0, 9)
    var s : private {0, 1, 2, 3, 4}
    var d : outcome {no, yes}
    known P(a, b, s) = counts from "r.csv"
    known D = P(d = yes | a, b, s) from "r.csv"
    design Dt = P(d | a, b, s)
    param delta = 0.9
    subject to |Dt - D| <= 1 - delta
    minimize max_confidence(a, b, d -> s)
    """
)


def test_combinations_without_records_equal_a_loop_over_the_cells(tmp_path):
    """Many combinations without records (150 records over 500): the listed cells are those a
    Python loop over every combination finds, in C order; the JSON lists them all."""
    rng = np.random.default_rng(5)
    n = 150
    df = pd.DataFrame(
        {
            "a": rng.integers(0, 10, n),
            "b": rng.integers(0, 10, n),
            "s": rng.integers(0, 5, n),
            "d": rng.choice(["no", "yes"], n),
        }
    )
    df.to_csv(tmp_path / "r.csv", index=False)
    (tmp_path / "w.priv").write_text(WIDE)
    result = privopt.solve(tmp_path / "w.priv")
    seen = set(zip(df["a"], df["b"], df["s"]))
    want = [
        {"a": str(a), "b": str(b), "s": str(s)}
        for a in range(10)
        for b in range(10)
        for s in range(5)
        if (a, b, s) not in seen
    ]
    assert len(want) > LONG_LIST  # written on one line by the C encoder
    [nr] = result.details["no_records"]
    assert nr["cells"] == want and nr["table"] == "D"
    out = CliRunner().invoke(main, ["solve", str(tmp_path / "w.priv"), "--json", "--no-tables"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["no_records"][0]["cells"] == want


def test_long_lists_of_objects_are_written_on_one_line_as_the_same_json():
    cells = [{"a": str(i), "b": 'x\u00e9"y'} for i in range(LONG_LIST + 1)]
    body = {"status": "optimal", "no_records": [{"table": "D", "cells": cells}], "few": [{"k": 1}], "n": [1.5, None]}
    text = _dumps(body, 2)
    assert json.loads(text) == body
    assert json.dumps(cells) in text  # one line, by the C encoder
    assert '"few": [\n' in text  # a short list stays indented
    assert _dumps(body, None) == json.dumps(body)
    decoy = {"label": f"privopt-{'0' * 16}-0", "cells": cells}
    assert json.loads(_dumps(decoy, 2)) == decoy


@pytest.mark.parametrize("n", [3, LONG_LIST + 1, 3 * JSON_ROWS + 5], ids=["short", "long", "chunks"])
def test_label_rows_are_the_list_of_their_dicts(n):
    """LabelRows (codes and labels) equals, prints and writes as the list of dicts it stands for:
    the same JSON text as json.dumps (compact) and the same value (indented), chunks included."""
    rng = np.random.default_rng(n)
    labels = (("0", "1", "2"), ('x\u00e9"y', "b\\c", "{}"), tuple(str(v) for v in range(300)))
    codes = np.stack([rng.integers(0, len(lab), n) for lab in labels], axis=1)
    rows = LabelRows(("a", "b c", "d"), labels, codes)
    want = [{"a": labels[0][i], "b c": labels[1][j], "d": labels[2][k]} for i, j, k in codes]
    assert rows == want and want == rows and len(rows) == n and rows[1] == want[1] and rows[:5] == want[:5]
    assert list(rows) == want and plain({"cells": rows}) == {"cells": want} and rows.codes.dtype == np.uint16
    body = {"status": "optimal", "no_records": [{"table": "D", "cells": rows, "records": 7}], "few": [{"k": 1}]}
    plain_body = {"status": "optimal", "no_records": [{"table": "D", "cells": want, "records": 7}], "few": [{"k": 1}]}
    assert _dumps(body, None) == json.dumps(plain_body)
    text = _dumps(body, 2)
    assert json.loads(text) == plain_body
    if n > LONG_LIST:
        assert json.dumps(want) in text  # one line, as json's C encoder writes it
    else:
        assert text == json.dumps(plain_body, indent=2)  # laid out as before


def test_writing_many_combinations_without_records_holds_no_dict_per_combination(tmp_path):
    """The no_records cells stay codes in the result and are written a chunk at a time: writing
    the whole JSON of 300,000 combinations without records allocates less than a quarter of what
    their dicts alone take (before: the dicts, their plain() copy and the text, all at once)."""
    import tracemalloc

    rng = np.random.default_rng(3)
    df = pd.DataFrame({c: rng.integers(0, 100, 200) for c in ("a", "b")} | {"s": rng.integers(0, 30, 200)})
    df["d"] = rng.choice(["no", "yes"], len(df))
    df.to_csv(tmp_path / "r.csv", index=False)
    text = WIDE.replace("range(0, 9)", "range(0, 99)").replace("{0, 1, 2, 3, 4}", "range(0, 29)")
    (tmp_path / "w.priv").write_text(text)
    result = privopt.solve(tmp_path / "w.priv")
    [nr] = result.details["no_records"]
    assert isinstance(nr["cells"], LabelRows) and len(nr["cells"]) > 299_000

    def peak(run) -> int:
        tracemalloc.start()
        kept = run()
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        del kept
        return top

    dicts = peak(nr["cells"].tolist)
    with open(tmp_path / "r.json", "w") as out:  # a file: the text written is not held here
        writing = peak(lambda: result.write_json(out, tables=False))
    assert writing < dicts / 4, (writing, dicts)
    got = json.loads((tmp_path / "r.json").read_text())["no_records"][0]["cells"]
    assert got == nr["cells"].tolist() and got[0] == nr["cells"][0]


NO_PANDAS = """
import json, sys
from click.testing import CliRunner
from privopt.cli import main
r = CliRunner().invoke(main, ["solve", sys.argv[1], "--json"])
assert r.exit_code == 0, r.output
print(json.loads(r.output)["status"], "pandas" in sys.modules)
"""


def test_a_record_level_spec_is_read_counted_solved_and_written_without_pandas(tmp_path):
    """The data path keeps a CSV's columns as numpy arrays and dictionary codes from pyarrow's
    reader to the result's JSON (issue 23, goal 2): ``solve --json`` of the credit spec, which
    reads its records, two domains and a rate table from one file and lists a combination
    without records, never imports pandas (0.7 s of a 2-million-record run's 4 s)."""
    import subprocess
    import sys

    from tests.conftest import SPECS

    r = subprocess.run(
        [sys.executable, "-c", NO_PANDAS, str(SPECS / "atr_credit_records.priv")],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["optimal", "False"]


def test_columns_from_arrow_equal_what_pandas_reads(tmp_path):
    """``from_arrow`` (no pandas) against pyarrow's own ``to_pandas`` of the same columns, over
    several chunks with different dictionaries: integers (kept in the smallest type), floats,
    dictionary text, plain text and booleans give the same values; ``to_frame`` gives the
    categorical pandas would."""
    import pyarrow as pa

    from privopt.language.datafiles import Coded, from_arrow, to_frame

    chunks = {
        "i": pa.chunked_array([[1, -3, 200], [7]], type=pa.int64()),
        "big": pa.chunked_array([[1, 2**40], [3]], type=pa.int64()),
        "f": pa.chunked_array([[0.5, 1e-300], [float("nan")]], type=pa.float64()),
        "d": pa.chunked_array(  # an empty chunk, and a slice (its indices start at an offset)
            [
                pa.array(["a", "b", "a"]).dictionary_encode(),
                pa.array([], type=pa.string()).dictionary_encode(),
                pa.array(["q", "c", "a"]).dictionary_encode().slice(1),
            ]
        ),
        "s": pa.chunked_array([["x", " y "], ["x"]]),
        "b": pa.chunked_array([[True, False], [True]]),
    }
    for name, col in chunks.items():
        got = from_arrow(col)
        want = col.to_pandas()
        if name in ("d", "s"):
            assert isinstance(got, Coded)
            assert [got.cell(k) for k in range(len(got))] == [str(x) for x in want]
            assert list(to_frame({name: got})[name].astype(str)) == [str(x) for x in want]
        else:
            assert isinstance(got, np.ndarray)
            np.testing.assert_array_equal(got, want.to_numpy())
    assert from_arrow(chunks["i"]).dtype == np.int16 and from_arrow(chunks["big"]).dtype == np.int64
    d = from_arrow(chunks["d"])  # the chunks' texts in pyarrow's unified order; int8 codes
    assert list(d.labels) == chunks["d"].combine_chunks().dictionary.to_pylist() and d.codes.dtype == np.int8
    empty = from_arrow(pa.chunked_array([], type=pa.dictionary(pa.int32(), pa.string())))
    assert isinstance(empty, Coded) and len(empty) == 0


def test_a_result_is_parsed_with_the_collector_paused_and_its_state_restored(tmp_path):
    """``privopt verify`` parses a ``--json`` result (3.9 million row objects at 2 million
    records) with the cyclic collector paused, which halves the parse; the collector's state is
    the caller's again afterwards, enabled or not, also when the text is not JSON."""
    import gc

    from privopt.certify.source import _loads

    seen = []
    hook = lambda phase, info: seen.append(phase)  # noqa: E731
    gc.callbacks.append(hook)
    try:
        assert (
            _loads('{"rows": [' + ", ".join(['{"a": "x", "value": 0.5}'] * 20_000) + "]}")["rows"][-1]["value"] == 0.5
        )
        assert gc.isenabled() and seen == []  # no collection ran while 20,000 objects were made
        gc.disable()
        with pytest.raises(json.JSONDecodeError):
            _loads("{not json")
        assert not gc.isenabled()
    finally:
        gc.enable()
        gc.callbacks.remove(hook)
