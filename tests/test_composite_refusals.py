"""Refusals that stay (issue 21; docs/blocks.md, "Built, and not built yet"): two chosen params of
one block. Each is a located error (file:line:col, a caret under the statement, what to write
instead) with exit 2."""

from __future__ import annotations

import shutil

import pytest

import privopt
from privopt.errors import SpecError
from tests.conftest import SPECS, invoke

USES = 'use "blocks/gaussian_pairs.priv" as pairs\nuse "blocks/gaussian_totals.priv" as totals\n'


@pytest.mark.parametrize(
    "lines, where, message, fix",
    [
        (
            "choose pairs.eps, pairs.delta\nsubject to pairs.eps + totals.eps <= 1\n",
            (3, 19, "^^^^^^^^^^^"),
            "choosing two of one block's params (its eps and its delta) is not built",
            "write dp(pairs, ...) <= (eps, delta): it chooses each block's eps and splits delta too",
        ),
        (
            "choose pairs.delta in [0, 1e-6]\nsubject to dp(pairs, totals) <= (0.8, 2e-6)\n",
            (4, 1, "^" * 43),
            "block 'pairs' already has a chosen param ('pairs.delta'), and dp(...) chooses its eps",
            "drop `choose pairs.delta`",
        ),
    ],
    ids=["two-chosen", "chosen-then-dp"],
)
def test_two_chosen_params_of_one_block_say_what_to_write(tmp_path, lines, where, message, fix):
    shutil.copytree(SPECS / "blocks", tmp_path / "blocks")
    path = tmp_path / "c.priv"
    path.write_text(USES + lines + "minimize pairs.objective + totals.objective\n")
    with pytest.raises(SpecError, match=message.replace("(", r"\(").replace(")", r"\)")) as e:
        privopt.solve(path)
    assert fix in str(e.value)
    r = invoke("solve", path)
    line, col, caret = where
    assert r.exit_code == 2 and f"c.priv:{line}:{col}: error" in r.output, r.output
    assert f"      | {' ' * (col - 1)}{caret}\n" in r.output and fix in r.output and "Traceback" not in r.output
