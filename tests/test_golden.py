"""Golden files per stage for every spec in specs/: the IR summary and the optimum.

Regenerate after an intended change with PRIVOPT_UPDATE_GOLDEN=1 and review the diff.
"""

import json
import os
from pathlib import Path

import pytest

import privopt
from privopt.model.summary import summarize
from tests.conftest import PROGRAM_SPECS

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("PRIVOPT_UPDATE_GOLDEN") == "1"
# composites (specs/blocks_*.priv) have no single problem class: tests/test_composite_specs.py
SPEC_FILES = PROGRAM_SPECS


def check(path: Path, text: str) -> None:
    if UPDATE or not path.exists():
        if not UPDATE:
            pytest.fail(f"no golden file {path.name}; run with PRIVOPT_UPDATE_GOLDEN=1 and review it")
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert text == path.read_text(), f"{path.name} changed; if intended, regenerate with PRIVOPT_UPDATE_GOLDEN=1"


def optimum(result) -> str:
    groups = [{"key": g["key"], "beta": round(g["beta"], 9), "case": g.get("case")} for g in result.group_records()]
    if result.beta is not None:
        out = {
            "status": result.status,
            "beta": round(result.beta, 9),
            "objective": round(result.objective, 9),
            "groups": groups,
        }
    else:  # mechanism problems have no groups
        digits = 6 if result.method in ("qp", "conic") else 9  # interior-point answers (Clarabel)
        out = {"status": result.status, "objective": round(result.objective, digits), "method": result.method}
    if result.method == "closed-form":  # deterministic; an LP's optimal table need not be unique
        table = result.tables[next(iter(result.tables))]
        out["cells"] = [round(float(v), 8) for v in table["value"]]
    return json.dumps(out, indent=1) + "\n"


@pytest.mark.parametrize("spec", SPEC_FILES, ids=lambda p: p.stem)
def test_ir_summary(spec):
    check(GOLDEN / f"{spec.stem}.ir.txt", summarize(privopt.load(spec)))


# interior-point answers are certified to a relative accuracy, not to the last digit: their
# objective is compared at that accuracy (a 1e-9 change of the solver's path must not fail)
INTERIOR_POINT_RTOL = {"qp": 1e-7, "conic": 1e-6}


@pytest.mark.parametrize("spec", SPEC_FILES, ids=lambda p: p.stem)
def test_optimum(spec):
    result = privopt.load(spec).solve()
    path = GOLDEN / f"{spec.stem}.optimum.json"
    rtol = INTERIOR_POINT_RTOL.get(result.method)
    if rtol is None or UPDATE or not path.exists():
        check(path, optimum(result))
        return
    got, want = json.loads(optimum(result)), json.loads(path.read_text())
    assert got["objective"] == pytest.approx(want["objective"], rel=rtol), f"{path.name}: the optimum moved"
    assert {**got, "objective": None} == {**want, "objective": None}, f"{path.name} changed"
