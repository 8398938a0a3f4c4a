"""The registries import their entries when first consulted (issue 23, goal 1), and say the
same as when every entry is imported: ``closedform.registry`` names each recognizer by where it
lives and the objective words it can be about; a recognizer's own ``in_scope`` decides within
those, so the words must cover every problem the recognizer is about."""

from __future__ import annotations

import subprocess
import sys

import pytest

import privopt
from privopt.closedform import registry
from privopt.closedform.registry import ENTRIES, RECOGNIZERS, by_name, recognize
from tests.conftest import PROGRAM_SPECS


def test_the_entries_name_the_recognizers_they_load_in_order():
    assert [(e.name, e.method) for e in ENTRIES] == [(r.name, r.method) for r in RECOGNIZERS]
    assert all(by_name(e.name) is r for e, r in zip(ENTRIES, RECOGNIZERS))
    with pytest.raises(KeyError):
        by_name("theorem-9")
    with pytest.raises(AttributeError, match="no attribute 'NONESUCH'"):
        registry.NONESUCH  # noqa: B018


@pytest.mark.parametrize("spec", PROGRAM_SPECS, ids=lambda p: p.stem)
def test_an_entrys_words_cover_every_problem_its_recognizer_is_about(spec):
    """``Entry.about`` (read without importing) holds wherever the recognizer's ``in_scope``
    does, so the lazy ``recognize`` gives what trying every recognizer gives."""
    problem = privopt.load(spec)
    for e, r in zip(ENTRIES, RECOGNIZERS):
        if r.in_scope(problem):
            assert e.about(problem), (e.name, spec.name)
    for method in ("closed-form", "reduced-lp"):
        eager = [(r, r.accepts(problem)) for r in RECOGNIZERS if r.method == method and r.in_scope(problem)]
        want = next(((r, m) for r, m in eager if m), (None, eager[0][1] if eager else None))
        got = recognize(problem, method)
        assert got[0] is want[0] and (got[1] is None) == (want[1] is None)
        assert got[1] is None or (bool(got[1]), got[1].why) == (bool(want[1]), want[1].why)


def test_a_transparency_report_imports_no_other_closed_form():
    """Planning Table 4 consults Theorem 1 only: the randomized-response, sanitization and
    obfuscation theorems are not imported."""
    code = (
        "import sys, privopt\n"
        "privopt.solve(sys.argv[1])\n"
        "print(sorted(m for m in sys.modules if m.startswith('privopt.closedform.')))\n"
    )
    spec = next(p for p in PROGRAM_SPECS if p.name == "atr_table4.priv")
    r = subprocess.run([sys.executable, "-c", code, str(spec)], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["['privopt.closedform.atr',", "'privopt.closedform.registry']"]
