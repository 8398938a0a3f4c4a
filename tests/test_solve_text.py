"""What ``privopt solve SPEC`` prints, pinned: one spec of each problem class (and the variants
each section prints differently: a closed form, an LFP, no records in the data, correlated
noise, a symmetric channel), at 160 columns and at 60 (where the summary lines wrap), with the
tables or without. The slower solves are pinned at 160 columns only, where a timing of more
digits cannot move a line break.

The CLI prints a result through its sections (privopt.sections); these files were written by
the printers the sections replaced, so the text is byte for byte what it was. The timings are
the only figures that change between runs: they are compared as ``T.TTTs``.

Regenerate after an intended change with PRIVOPT_UPDATE_GOLDEN=1 and review the diff.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.conftest import SPECS, invoke

GOLDEN = Path(__file__).parent / "golden" / "text"
UPDATE = os.environ.get("PRIVOPT_UPDATE_GOLDEN") == "1"
TIMING = re.compile(r"\d+\.\d{3}s")

CASES = [  # (spec, COLUMNS, --no-tables)
    ("atr_table4", 160, False),
    ("atr_min_uncertainty", 160, False),
    ("atr_credit_records", 160, False),
    ("atr_table4", 60, True),
    ("atr_three_outcomes", 60, True),
    ("randomized_response", 160, False),
    ("shaped_noise_soft_moments", 60, True),
    ("sanitize_markov_lemma1", 160, False),
    ("noise_placement_correlated", 160, False),
    ("noise_placement", 160, True),
    ("obfuscation_general", 160, False),
    ("obfuscation_symmetric", 60, True),
]


@pytest.mark.parametrize(("spec", "columns", "no_tables"), CASES, ids=lambda c: str(c))
def test_solve_prints_what_it_printed(spec, columns, no_tables, monkeypatch):
    """In this process (the CLI reads COLUMNS per command; the console script's own start is
    tested in test_hostile_cli and test_outputs)."""
    path = GOLDEN / f"{spec}.{columns}{'.no-tables' if no_tables else ''}.txt"
    monkeypatch.chdir(SPECS.parent)
    args = ["solve", f"specs/{spec}.priv", "--quiet"] + (["--no-tables"] if no_tables else [])
    run = invoke(*args, env={"COLUMNS": str(columns)})
    assert run.exit_code == 0, run.output
    text = TIMING.sub("T.TTTs", run.stdout)
    if UPDATE:
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert text == path.read_text(), f"{path.name} changed; if intended, regenerate with PRIVOPT_UPDATE_GOLDEN=1"
