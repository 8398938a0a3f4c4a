"""Start-up (issue 23, item 1): ``privopt --help`` and ``--version`` import no numerical or solver
package, so they cost about what Python needs to start (the figures are in docs/performance.md,
measured by a benchmark, not here). The API imports them when a spec is first loaded."""

from __future__ import annotations

import subprocess
import sys

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
    import os
    from pathlib import Path

    spec = Path(__file__).resolve().parents[1] / "specs" / "atr_table4.priv"
    env = {**os.environ, **env_extra}
    return subprocess.run(
        [sys.executable, "-c", CACHED_PARSE, str(spec)], capture_output=True, text=True, timeout=120, env=env
    )


def test_the_grammar_is_cached_in_the_users_folder_and_a_damaged_cache_is_rebuilt(tmp_path):
    """Lark's analysed grammar is kept in ``$PRIVOPT_CACHE_DIR`` (issue 23, item 1); a run reads it,
    and a damaged or foreign file is rebuilt silently (nothing on either stream)."""
    cache = tmp_path / "cache"
    first = _parse_in(tmp_path, {"PRIVOPT_CACHE_DIR": str(cache)})
    assert first.returncode == 0, first.stderr
    (file,) = cache.iterdir()
    assert file.name == "grammar.lark-cache" and file.stat().st_size > 1000
    assert (cache.stat().st_mode & 0o077) == 0  # the user's own folder: a pickle others cannot plant
    for damage in (b"", b"not a hash\n", file.read_bytes()[:200]):
        file.write_bytes(damage)
        again = _parse_in(tmp_path, {"PRIVOPT_CACHE_DIR": str(cache)})
        assert again.returncode == 0 and again.stdout == first.stdout and again.stderr == "", again.stderr
        assert file.stat().st_size > 1000  # rewritten whole


def test_an_unwritable_cache_folder_means_no_cache_and_no_message(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder would be")
    r = _parse_in(tmp_path, {"PRIVOPT_CACHE_DIR": str(blocker / "sub")})
    assert r.returncode == 0 and r.stderr == "", r.stderr
