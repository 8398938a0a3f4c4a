"""Start-up (issue 23, item 1): ``privopt --help`` and ``--version`` import no numerical or solver
package, so they cost about what Python needs to start (the figures are in docs/performance.md,
measured by a benchmark, not here). The API imports them when a spec is first loaded."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from privopt.records import Identity, Record
from tests.conftest import examples

HEAVY = ("numpy", "pandas", "pyarrow", "scipy", "highspy", "cvxpy", "pyomo", "dask", "matplotlib", "lark")

PROBE = """
import sys
from click.testing import CliRunner
from privopt.cli import main
for args in (["--help"], ["--version"], ["solve", "--help"]):
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, (args, r.output)
print(" ".join(sorted({m.split(".")[0] for m in sys.modules} & set(sys.argv[1:]))))
"""


def _heavy_after(code: str) -> set[str]:
    r = subprocess.run([sys.executable, "-c", code, *HEAVY], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return set(r.stdout.split())


def test_help_and_version_import_no_numerical_package():
    assert _heavy_after(PROBE) == set()


# modules a small solve's text does not need: the LFP method and the report's other routes (a
# closed form answers), the composite's model (asked only whether the spec is one), the
# package versions' reader, numpy's polynomials (a Gaussian accountant's quadrature),
# difflib (a parse error's "did you mean") and the atoms the spec does not write
NOT_USED = (
    "privopt.methods.lfp",
    "privopt.blocks.routes_report",
    "privopt.composite.model",
    "importlib.metadata",
    "email",
    "numpy.polynomial",
    "multiprocessing",
    "difflib",
    "rich.progress",  # the progress display is off off a terminal: cli._NoProgress, nothing imported
    "rich.live",
    # atoms neither spec writes (builder.atoms.ATOMS imports an atom's module when it is used)
    "privopt.builder.atoms.gaussian",
    "privopt.builder.atoms.krcc",
    "privopt.builder.atoms.mutual_info",
    "privopt.builder.atoms.matmul",
)
# and what a transparency report's closed form does not use: an LP's budget rows and its
# lowering, the measures and checks of mechanisms, obfuscations and noise placements
NOT_USED_BY_A_REPORT = (
    "privopt.methods.lp",
    "privopt.lower.mechanism",
    "privopt.measures.sanitization",
    "privopt.measures.obfuscation",
    "privopt.measures.gaussian",
)

SOLVE = """
import sys
from click.testing import CliRunner
from privopt.cli import main
r = CliRunner().invoke(main, ["solve", sys.argv[1]])
assert r.exit_code == 0 and "status: optimal (verified)" in r.output, r.output
print(r.output.splitlines()[1])
print(" ".join(sorted({m.split(".")[0] for m in sys.modules} & set(sys.argv[2:]))))
print(" ".join(sorted(m for m in sys.modules if m.count(".") == 1 and m.startswith("scipy.") and m[6] != "_")))
"""
SOLVE += f"print(' '.join(sorted(set(sys.modules) & {set(NOT_USED)!r})))\n"
SOLVE += f"print(' '.join(sorted(set(sys.modules) & {set(NOT_USED_BY_A_REPORT)!r})))\n"


# both specs are answered by a closed form: the default backend (highs) is named, not imported
UNUSED_BY_A_SMALL_SOLVE = ("pandas", "pyarrow", "cvxpy", "pyomo", "dask", "matplotlib", "lark", "highspy")


@pytest.mark.parametrize(
    "spec, status, scipy, report",
    [  # a transparency report by Theorem 1 (closed form): numpy alone; a mechanism LP: its sparse rows
        ("atr_table4.priv", "max confidence: 0.675", set(), True),
        ("randomized_response.priv", "minimize tv(X, Y): 0.595390324808", {"scipy.sparse", "scipy.version"}, False),
    ],
)
def test_solving_a_small_table_spec_imports_only_what_it_uses(spec, status, scipy, report):
    """``privopt solve`` of a small spec, printed as text, needs numpy (issue 23, goal 1): no
    solver for a closed form (highspy is not imported to check the default backend it does not
    use), no lark (the grammar's stand-alone parser is cached, ``language/lalr.py``), no pandas
    or pyarrow (the result's groups and tables print from their columns; a DataFrame is built
    only when one is read), no cvxpy, pyomo, dask or matplotlib; scipy only where a sparse LP is
    built (a report's tables are one entry a row: ``model.linear.OneEach``)."""
    path = Path(__file__).resolve().parents[1] / "specs" / spec
    r = subprocess.run([sys.executable, "-c", SOLVE, str(path), *HEAVY], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    line, heavy, scipy_parts, unused, mechanism_parts = (r.stdout.splitlines() + ["", "", "", ""])[:5]
    assert status in line
    assert (mechanism_parts == "") if report else ("privopt.methods.lp" in mechanism_parts.split())
    assert [m for m in unused.split() if m.startswith("privopt.")] == []
    if not scipy:  # scipy itself imports importlib.metadata and numpy.polynomial
        assert unused == ""
    assert set(heavy.split()) & set(UNUSED_BY_A_SMALL_SOLVE) == set()
    assert "numpy" in heavy.split() and set(scipy_parts.split()) == scipy
    assert ("scipy" in heavy.split()) == bool(scipy)


def test_a_result_builds_its_dataframes_when_they_are_read():
    """The groups and the released table of a solve are pandas DataFrames when read (the API
    is unchanged), built from the columns the text was printed from."""
    code = (
        "import sys\n"
        "import privopt\n"
        "r = privopt.solve(sys.argv[1])\n"
        "before = 'pandas' in sys.modules\n"
        "g, t = r.groups, r.table('Dt')\n"
        "print(before, type(g).__name__, type(t).__name__, list(g['gender'].astype(str)), len(t))\n"
    )
    spec = Path(__file__).resolve().parents[1] / "specs" / "atr_table4.priv"
    r = subprocess.run([sys.executable, "-c", code, str(spec)], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split(maxsplit=3) == ["False", "DataFrame", "DataFrame", "['F', 'M'] 12\n"]


def test_the_package_imports_its_api_when_first_used():
    code = (
        "import sys, privopt\n"
        "before = {m.split('.')[0] for m in sys.modules}\n"
        "assert callable(privopt.load) and privopt.Result.__name__ == 'Result'\n"
        "from privopt import loads, solve, Problem\n"
        "after = {m.split('.')[0] for m in sys.modules}\n"
        "print(' '.join(sorted(before & set(sys.argv[1:]))), '|', 'numpy' in after)\n"
    )
    r = subprocess.run([sys.executable, "-c", code, *HEAVY], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    before, loaded = r.stdout.split("|")
    assert before.split() == [] and loaded.strip() == "True"


def test_an_unknown_attribute_is_an_attribute_error():
    r = subprocess.run(
        [sys.executable, "-c", "import privopt; privopt.nonesuch"], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 1 and "AttributeError: module 'privopt' has no attribute 'nonesuch'" in r.stderr


CACHED_PARSE = """
import sys
from privopt.language import parser
spec = parser.parse_file(sys.argv[1])
print(spec.title if hasattr(spec, "title") else "parsed")
"""


def _parse_in(tmp_path, env_extra: dict) -> subprocess.CompletedProcess:
    spec = Path(__file__).resolve().parents[1] / "specs" / "atr_table4.priv"
    env = {**os.environ, **env_extra}
    return subprocess.run(
        [sys.executable, "-c", CACHED_PARSE, str(spec)], capture_output=True, text=True, timeout=120, env=env
    )


def test_the_grammar_is_cached_in_the_users_folder_and_a_damaged_cache_is_rebuilt(tmp_path):
    """The grammar's stand-alone parser is kept in ``$PRIVOPT_CACHE_DIR`` (issue 23, item 1); a
    run reads it, and a damaged or foreign file is rebuilt silently (nothing on either stream)."""
    cache = tmp_path / "cache"
    first = _parse_in(tmp_path, {"PRIVOPT_CACHE_DIR": str(cache)})
    assert first.returncode == 0, first.stderr
    (file,) = cache.iterdir()
    assert file.name == "grammar.lalr" and file.stat().st_size > 1000
    assert (cache.stat().st_mode & 0o077) == 0  # the user's own folder: code others cannot plant
    whole = file.read_bytes()
    head, payload = whole.split(b"\n", 1)
    flipped = payload[:-100] + bytes([payload[-100] ^ 1]) + payload[-99:]
    foreign = b"0" * 64 + head[64:]  # made from another grammar, Lark or Python
    for damage in (b"", b"not a hash\n", whole[:200], head + b"\n" + flipped, foreign + b"\n" + payload):
        file.write_bytes(damage)
        again = _parse_in(tmp_path, {"PRIVOPT_CACHE_DIR": str(cache)})
        assert again.returncode == 0 and again.stdout == first.stdout and again.stderr == "", again.stderr
        new_head, new_payload = file.read_bytes().split(b"\n", 1)  # rewritten whole: same key, its own hash
        assert new_head[:64] == head[:64] and new_head[65:] == hashlib.sha256(new_payload).hexdigest().encode()
        assert [f.name for f in cache.iterdir()] == ["grammar.lalr"]  # no file left beside it


def test_a_run_with_the_cache_imports_no_lark(tmp_path):
    """With the cache in place, parsing a spec imports neither ``lark`` nor its grammar compiler:
    the parser is the cached stand-alone module (``privopt.language.lalr``)."""
    env = {"PRIVOPT_CACHE_DIR": str(tmp_path / "cache")}
    code = CACHED_PARSE + "print(sorted(m for m in sys.modules if m == 'lark' or m.startswith('lark.')))\n"
    assert _parse_in(tmp_path, env).returncode == 0
    spec = Path(__file__).resolve().parents[1] / "specs" / "atr_table4.priv"
    r = subprocess.run(
        [sys.executable, "-c", code, str(spec)], capture_output=True, text=True, timeout=120, env={**os.environ, **env}
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "[]"


def test_an_unwritable_cache_folder_means_no_cache_and_no_message(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder would be")
    r = _parse_in(tmp_path, {"PRIVOPT_CACHE_DIR": str(blocker / "sub")})
    assert r.returncode == 0 and r.stderr == "", r.stderr


@settings(max_examples=examples(60, few=10), deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 2),
            st.integers(0, 1),
            st.integers(0, 2),
            st.floats(-1e3, 1e3, allow_nan=False),
        ),
        min_size=1,
        max_size=30,
    )
)
def test_the_wide_table_printed_without_pandas_is_pandas_pivot_table(rows):
    """``Columns.wide`` (the released table as printed, in numpy) is ``pivot_table(index=keys,
    columns=outcome, values="value", observed=True, sort=False)`` for any long table of finite
    values (a released table has no NaN): labels missing or repeated, cells averaged, any order
    of the keys."""
    import numpy as np

    from privopt.results import Columns, Labels

    a, b, y, v = (np.array(c) for c in zip(*rows))
    table = Columns(
        {
            "A": Labels(a.astype(np.int8), ("a0", "a1", "a2")),
            "B": Labels(b.astype(np.int8), ("b0", "b1")),
            "Y": Labels(y.astype(np.int8), ("y0", "y1", "y2")),
            "value": v.astype(float),
        }
    )
    for keys in (["A", "B"], ["B", "A"], ["A"]):
        got_rows, got_outcomes, got = table.wide(keys, "Y")
        want = table.frame().pivot_table(index=keys, columns="Y", values="value", observed=True, sort=False)
        want_rows = [i if isinstance(i, tuple) else (i,) for i in want.index]
        assert got_rows == want_rows and got_outcomes == [str(c) for c in want.columns]
        np.testing.assert_allclose(got, want.to_numpy(), rtol=1e-12, atol=1e-9)


@dataclasses.dataclass(frozen=True)
class Generated:
    x: int
    y: str = "d"
    z: tuple = dataclasses.field(default_factory=tuple)
    w: int = dataclasses.field(default=3, repr=False, compare=False)


class Shared(Record):
    x: int
    y: str = "d"
    z: tuple = dataclasses.field(default_factory=tuple)
    w: int = dataclasses.field(default=3, repr=False, compare=False)


class Made(Identity):
    a: int
    seen: bool = dataclasses.field(default=False, init=False)

    def __post_init__(self):
        object.__setattr__(self, "seen", True)


def test_a_record_behaves_as_the_frozen_dataclass_it_replaces():
    """``privopt.records.Record`` (the syntax tree's and the sets' classes, made without
    generating code per class) against ``@dataclass(frozen=True)`` of the same fields: the same
    constructor, defaults, repr, equality, hash, ``replace``, ``asdict``, pickling and
    ``FrozenInstanceError``; ``Identity`` against ``eq=False``."""
    import copy
    import pickle

    for args, kwargs in [((1,), {}), ((1, "q"), {"z": (2,)}), ((), {"x": 5, "w": 9}), ((1, "a", (), 4), {})]:
        g, s = Generated(*args, **kwargs), Shared(*args, **kwargs)
        assert repr(s) == repr(g).replace("Generated(", "Shared(", 1)
        assert hash(s) == hash(g) and s == Shared(*args, **kwargs) and s != g
        assert dataclasses.asdict(s) == dataclasses.asdict(g) and vars(s) == vars(g)
        assert dataclasses.replace(s, y="k") == Shared(s.x, "k", s.z, s.w)
        assert pickle.loads(pickle.dumps(s)) == s == copy.deepcopy(s)
        with pytest.raises(dataclasses.FrozenInstanceError):
            s.x = 2  # type: ignore[misc]
        with pytest.raises(dataclasses.FrozenInstanceError):
            del s.y
    assert Shared(1, w=1) == Shared(1, w=2)  # compare=False, as the dataclass
    assert Shared.__match_args__ == Generated.__match_args__ and dataclasses.is_dataclass(Shared)
    for bad in (lambda: Shared(), lambda: Shared(1, 2, 3, 4, 5), lambda: Shared(1, x=2), lambda: Shared(q=1)):
        with pytest.raises(TypeError):
            bad()

    m = Made(1)
    assert m.seen and m == m and m != Made(1) and hash(m) == object.__hash__(m) and repr(m) == "Made(a=1, seen=True)"


CREDIT_JSON = (
    f"NOT_USED = {NOT_USED + NOT_USED_BY_A_REPORT!r}\n"
    + """
import sys
from click.testing import CliRunner
from privopt.cli import main
r = CliRunner().invoke(main, ["solve", sys.argv[1], "--json", "--no-tables"])
assert r.exit_code == 0 and '"status": "optimal"' in r.output, r.output
print(" ".join(sorted(m for m in sys.modules if m.split(".")[0] in sys.argv[2:] or m in NOT_USED)))
"""
)


def test_solving_the_record_level_credit_spec_as_json_imports_only_what_it_uses():
    """``privopt solve --json`` of a spec that reads a record-level CSV (the data path of issue
    23, goal 2, whose fixed cost at 2 million records is mostly start-up): numpy and pyarrow's
    CSV reader, no pandas, no solver for its closed form, no lark, no ``pyarrow.compute``; the
    result's package versions are read without ``importlib.metadata`` (and the ``email``
    package it imports), and the composite's model and the LFP method are not imported."""
    spec = Path(__file__).resolve().parents[1] / "specs" / "atr_credit_records.priv"
    names = (*HEAVY, "email", "privopt")
    r = subprocess.run(
        [sys.executable, "-c", CREDIT_JSON, str(spec), *names], capture_output=True, text=True, timeout=180
    )
    assert r.returncode == 0, r.stderr
    loaded = set(r.stdout.split())
    assert {"numpy", "pyarrow", "pyarrow.csv"} <= loaded
    top = {m.split(".")[0] for m in loaded}
    assert top & {"pandas", "scipy", "highspy", "cvxpy", "pyomo", "dask", "matplotlib", "lark", "email"} == set()
    assert loaded & {"pyarrow.compute", *NOT_USED, *NOT_USED_BY_A_REPORT} == set()


def test_the_versions_a_result_records_are_importlib_metadatas():
    """``results.installed_versions`` (read from the installed metadata without
    ``importlib.metadata``) gives what ``importlib.metadata.version`` gives, for every package a
    result records, privopt itself, a name spelled with other case and separators, and one that
    is not installed (left out)."""
    import importlib.metadata

    from privopt.results import VERSIONED_PACKAGES, installed_versions

    names = (*VERSIONED_PACKAGES, "privopt", "Lark", "dp_accounting", "no-such-package-here")
    want = {}
    for name in names:
        try:
            want[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    assert installed_versions(names) == want and "no-such-package-here" not in want and "numpy" in want
