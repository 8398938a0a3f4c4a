"""The installed package carries every file privopt reads at run time.

CI installs privopt non-editably (``pip install '.[test]'``), so a data file that lives under
``privopt/`` but is not matched by ``[tool.setuptools.package-data]`` is missing at run time
(stop 16: the grammar moved to ``privopt/language/`` while the glob still said ``spec/*.lark``,
and every CLI subprocess failed). This test fails on such a file before CI does.
"""

from __future__ import annotations

import tomllib
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "privopt"


def _package_data_globs() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return list(config["tool"]["setuptools"]["package-data"]["privopt"])


def _matches(relative: PurePosixPath, pattern: str) -> bool:
    if pattern.startswith("**/"):
        # setuptools' recursive glob: any depth, including the package root
        return relative.match(pattern[3:]) or relative.match(pattern)
    return relative.match(pattern) and len(relative.parts) == len(PurePosixPath(pattern).parts)


def test_every_data_file_under_the_package_is_declared_as_package_data():
    globs = _package_data_globs()
    data_files = [
        PurePosixPath(p.relative_to(PKG).as_posix())
        for p in PKG.rglob("*")
        if p.is_file() and p.suffix not in {".py", ".pyc"} and "__pycache__" not in p.parts
    ]
    assert data_files, "expected at least the grammar file under privopt/"
    missing = [str(f) for f in data_files if not any(_matches(f, g) for g in globs)]
    assert not missing, f"not in [tool.setuptools.package-data]: {missing} (globs: {globs})"


def test_the_grammar_the_parser_loads_is_a_declared_data_file():
    from privopt.language import parser

    text = Path(parser.__file__).read_text(encoding="utf-8")
    assert "grammar.lark" in text
    assert (PKG / "language" / "grammar.lark").is_file()
    assert any(_matches(PurePosixPath("language/grammar.lark"), g) for g in _package_data_globs())
