"""The curated public API."""

import pandas as pd
import pytest

import privopt
from tests.conftest import SPECS


def test_exported_members():
    assert sorted(privopt.__all__) == sorted(
        [
            "load",
            "loads",
            "solve",
            "verify",
            "Problem",
            "Result",
            "PrivoptError",
            "SpecError",
            "UnsupportedError",
            "UsageError",
            "InfeasibleError",
            "SolverError",
            "VerificationError",
            "__version__",
        ]
    )
    for name in privopt.__all__:
        assert hasattr(privopt, name)


def test_error_tree():
    assert issubclass(privopt.SpecError, privopt.PrivoptError) and issubclass(privopt.SpecError, ValueError)
    assert issubclass(privopt.UnsupportedError, privopt.SpecError)
    assert issubclass(privopt.VerificationError, privopt.SolverError)
    assert issubclass(privopt.SolverError, RuntimeError)


def test_loads_and_table_frame():
    text = (SPECS / "atr_table4.priv").read_text()
    result = privopt.loads(text).solve()
    df = result.table("Dt")
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns) == ["gender", "income", "decision", "value"]
    with pytest.raises(KeyError, match="no table 'X'"):
        result.table("X")
    assert '"status": "optimal"' in result.to_json()


def test_solve_shortcut():
    assert privopt.solve(SPECS / "atr_table4.priv").beta == pytest.approx(0.675)


def test_spec_error_str_has_location_and_caret():
    with pytest.raises(privopt.SpecError) as info:
        privopt.loads("var x : public {a, b}\nvar x : private {c}\n")
    text = str(info.value)
    assert text.startswith("<spec>:2:5: error: 'x' is already declared (line 1)")
    assert "    2 | var x : private {c}" in text and "^" in text


def test_infeasible_is_a_boolean_not_a_method():
    import privopt

    result = privopt.load(SPECS / "atr_table4.priv").solve()
    assert result.infeasible is False
    assert not result.infeasible


def test_readme_python_example_prints_what_it_says(monkeypatch):
    """Run README's Python block; each ``print(...)  # TEXT`` line must print exactly TEXT (the
    JSON one must be strict JSON recording the param)."""
    import json
    import re

    from tests.conftest import ROOT

    block = re.search(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S).group(1)
    prints = [line for line in block.splitlines() if line.startswith("print(")]
    printed: list[str] = []

    def record(*args):
        printed.append(" ".join(str(a) for a in args))

    monkeypatch.chdir(ROOT)
    exec(compile(block, "README.md", "exec"), {"print": record})
    assert len(printed) == len(prints) >= 3
    for text, line in zip(printed, prints):
        if "to_json()" in line:
            data = json.loads(text, parse_constant=lambda t: pytest.fail(f"non-standard JSON {t}"))
            assert data["spec"]["params"] == {"delta": 0.95}
        else:
            assert text == line.split("#", 1)[1].strip()


def test_readme_spec_and_quickstart_numbers():
    """README's spec block solves, and the quickstart's beta* is what `privopt solve` prints."""
    import re

    from click.testing import CliRunner

    from privopt.cli import main
    from tests.conftest import ROOT

    readme = (ROOT / "README.md").read_text()
    quoted = re.search(r"Table 4\): beta\* = ([0-9]+\.[0-9]+)", readme).group(1)
    spec = re.search(r'```\n(spec ".*?)```', readme, re.S).group(1)
    assert privopt.loads(spec).solve().beta == pytest.approx(float(quoted), abs=5e-4)
    r = CliRunner().invoke(main, ["solve", str(SPECS / "atr_table4.priv")])
    assert r.exit_code == 0 and f"max confidence: {quoted}\n" in r.output, r.output
