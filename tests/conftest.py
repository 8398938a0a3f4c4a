import os
from pathlib import Path

import pytest

# privopt lays text out for COLUMNS when it is set (the reader's width); pytest-xdist's workers
# set COLUMNS=80 for themselves, which would make every in-process run wrap at 80. Tests that
# want a width set COLUMNS themselves, in a subprocess's environment.
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "specs"
# the specs of one program (one block kind); composites (specs/blocks_*.priv, issue 21) combine
# such specs and have no single problem class or plan: tests/test_composite*.py walk them (solve,
# check, explain, sweep, --out, with goldens), and tests/test_outputs.py (strict JSON, sweep rows)
PROGRAM_SPECS = sorted(p for p in SPECS.glob("*.priv") if not p.name.startswith("blocks_"))
COMPOSITE_SPECS = sorted(SPECS.glob("blocks_*.priv"))


@pytest.fixture
def specs_dir() -> Path:
    return SPECS


# Hypothesis profiles: CI runs derandomized (the same examples every run); "fuzz" searches long.
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile(
    "fuzz", max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "default"))


def invoke(*args):
    """``privopt ARGS`` in this process (click's runner), each argument as text."""
    from click.testing import CliRunner

    from privopt.cli import main

    return CliRunner().invoke(main, [str(a) for a in args])


def strict_json(text: str):
    """``json.loads`` that refuses NaN and Infinity (``--json`` output is strict JSON)."""
    import json

    def refuse(token):
        raise ValueError(f"non-standard JSON token {token}")

    return json.loads(text, parse_constant=refuse)
