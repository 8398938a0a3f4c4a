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
