"""Golden files per stage for every spec in specs/: the IR summary and the optimum.

Regenerate after an intended change with PRIVOPT_UPDATE_GOLDEN=1 and review the diff.
"""

import json
import os
from pathlib import Path

import pytest

import privopt
from privopt.model.summary import summarize
from tests.conftest import SPECS

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("PRIVOPT_UPDATE_GOLDEN") == "1"
SPEC_FILES = sorted(SPECS.glob("*.priv"))


def check(path: Path, text: str) -> None:
    if UPDATE or not path.exists():
        if not UPDATE:
            pytest.fail(f"no golden file {path.name}; run with PRIVOPT_UPDATE_GOLDEN=1 and review it")
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert text == path.read_text(), f"{path.name} changed; if intended, regenerate with PRIVOPT_UPDATE_GOLDEN=1"


def optimum(result) -> str:
    groups = [
        {"key": g["key"], "beta": round(g["beta"], 9), "case": g.get("case")} for g in result.group_records()
    ]
    if result.beta is not None:
        out = {"status": result.status, "beta": round(result.beta, 9), "objective": round(result.objective, 9), "groups": groups}
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


@pytest.mark.parametrize("spec", SPEC_FILES, ids=lambda p: p.stem)
def test_optimum(spec):
    check(GOLDEN / f"{spec.stem}.optimum.json", optimum(privopt.load(spec).solve()))
