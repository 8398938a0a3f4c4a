"""The docs stand on their own: every relative link resolves inside the repository, nothing
points at files outside it, and the papers are cited in full in one place."""

import re

import pytest

from tests.conftest import ROOT

DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md", ROOT / "benchmarks" / "README.md"]
LINK = re.compile(r"\]\(([^)\s]+)\)")


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_resolve_inside_the_repository(doc):
    text = doc.read_text()
    assert not re.search(r"(?<![\w.-])(shared|work)/(seeds|design|shared)\b|/work/", text), "path outside the repository"
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = (doc.parent / target.split("#", 1)[0]).resolve()
        assert path.is_relative_to(ROOT) and path.exists(), f"{doc.name}: broken link {target}"


def test_the_four_papers_are_cited_in_full():
    refs = " ".join((ROOT / "docs" / "references.md").read_text().split())  # one line
    for authors, title, venue in [
        ("Chien-Lun Chen, Leana Golubchik and Ranjan Pal", "Achieving Transparency Report Privacy in Linear Time", "14(2)"),
        ("Ni Ding, Yucheng Liu and Farhad Farokhi", "A Linear Reduction Method", "arXiv:2101.09689"),
        ("Jan Ramon and Moitree Basu", "Interpretable privacy with optimizable utility", "ECML PKDD 2020"),
        ("Mahshad Shariatnasab, Farhad Shirani and S. Sitharama Iyengar", "Rank-Preserving Dataset Obfuscation", "arXiv:2305.07079"),
    ]:
        assert authors in refs and title in refs and venue in refs
    for anchor in re.findall(r"references\.md#(\w+)", " ".join(d.read_text() for d in DOCS)):
        assert f'<a id="{anchor}"></a>' in refs, anchor


# ---------------------------------------------------------------------------------------------
# Every path a page names exists (issue 19, item 8).
#
# What counts as a path, anywhere on a page (prose, backticks, code blocks, link targets):
#   * a token rooted at a top-level folder of the repository: privopt/..., docs/..., specs/...,
#     tests/..., benchmarks/... ; it is resolved from the repository root;
#   * a relative path with a folder, `pipeline/common.py` or `builder/`, or a bare file name of
#     the repository's own kinds (.py .md .priv .lark .jsonl .svg .toml), `build.py`; it must
#     exist from the page's folder, the repository root or privopt/, and a bare file name (no
#     folder) anywhere in the repository's folders above;
#   * a glob (`routes_*.py`) must match at least one file.
# Not paths: placeholders (a part in capitals, `privopt/backends/NAME.py`, `FILE.csv`), the file
# named at the start of an example error message (`bad.priv:17:1: error: ...`), user files of
# other kinds (`records.csv`), and files under a generated folder (GENERATED: ignored by git,
# written by a named script, which the page must name too).
# ---------------------------------------------------------------------------------------------

TOP = r"(?:privopt|docs|specs|tests|benchmarks)/"
EXT = r"(?:py|md|priv|lark|jsonl|svg|toml)"
PATH_TOKEN = re.compile(
    r"(?<![\w./~:@-])("
    + TOP + r"[\w./*-]*"  # rooted
    + r"|[A-Za-z_][\w-]*(?:/[\w*-]+)*/[\w*.-]*\." + EXT  # relative, with a folder
    + r"|[A-Za-z_][\w-]*/(?:[\w-]+/)*(?=[\s`*),]|$)"  # a relative folder: builder/
    + r"|[A-Za-z_][\w*-]*\." + EXT  # a bare file name
    + r")(?![\w(/.-])"
)
ERROR_LOCATION = re.compile(r":\d+:\d+:|: error:")  # after the file of an example error message
PLACEHOLDER = re.compile(r"(?:^|[/.])[A-Z][A-Z0-9_]+(?=[/.]|$)")
SEARCHED = ("privopt", "specs", "tests", "benchmarks", "docs")
GENERATED = {"benchmarks/data/": "benchmarks/bench_closed_form.py"}  # folder -> the script that writes it


def doc_paths(text: str) -> list[tuple[int, str]]:
    """``(line number, path)`` for every path ``text`` names (the rules above)."""
    found = []
    for n, line in enumerate(text.splitlines(), 1):
        for m in PATH_TOKEN.finditer(line):
            path = m.group(1).rstrip(".")
            if path and not PLACEHOLDER.search(path) and not ERROR_LOCATION.match(line, m.end()):
                found.append((n, path))
    return found


def path_exists(path: str, page_dir) -> bool:
    """Whether ``path``, named on a page in ``page_dir``, names something in the repository."""
    if re.match(TOP, path):
        bases = [ROOT]
    elif "/" in path:
        bases = [page_dir, ROOT, ROOT / "privopt"]
    else:  # a bare file name: anywhere in the repository's own folders
        return any(next((ROOT / d).rglob(path), None) is not None for d in SEARCHED)
    for base in bases:
        if "*" in path:
            if next(base.glob(path.rstrip("/")), None) is not None:
                return True
        elif (base / path).exists():
            return True
    return False


PAGE_PATHS = [(doc, n, path) for doc in DOCS for n, path in doc_paths(doc.read_text())]


@pytest.mark.parametrize(
    "doc, line, path", PAGE_PATHS, ids=[f"{d.relative_to(ROOT)}:{n}:{p}" for d, n, p in PAGE_PATHS]
)
def test_every_path_a_page_names_exists(doc, line, path):
    generated = next((folder for folder in GENERATED if path.startswith(folder)), None)
    if generated:
        script = GENERATED[generated]
        assert script in doc.read_text(), f"{doc.name}:{line}: {path} is generated; say that {script} writes it"
        return
    assert path_exists(path, doc.parent), f"{doc.relative_to(ROOT)}:{line}: names {path}, which does not exist"


def test_generated_folders_are_ignored_and_written_by_their_script():
    ignored = (ROOT / ".gitignore").read_text().split()
    for folder, script in GENERATED.items():
        assert folder in ignored
        source = (ROOT / script).read_text()
        assert f'"{folder.split("/")[-2]}"' in source, f"{script} does not write {folder}"


def test_the_path_rules_catch_what_they_should():
    page = "\n".join([
        "privopt/spec/      grammar (Lark)",  # a code-block layout line
        "see `pipeline/common.py` and **builder/**, and `pipeline.py` too;",
        "[sanitization](docs/verification.md#x), docs/figures/a.svg",
        "`privopt/backends/NAME.py` and FILE.csv and records.csv are placeholders or user files",
        "bad.priv:17:1: error: unknown statement 'subjet'",
        "specs/bad.priv: error: the spec has no objective",
        "fractions `a/b`, `delta/|A|`, 1/2, https://example.org/x/y.py",
    ])
    assert [p for _, p in doc_paths(page)] == [
        "privopt/spec/", "pipeline/common.py", "builder/", "pipeline.py", "docs/verification.md", "docs/figures/a.svg",
    ]
    assert not path_exists("privopt/spec/", ROOT) and not path_exists("pipeline.py", ROOT)
    assert path_exists("pipeline/common.py", ROOT / "docs") and path_exists("build.py", ROOT / "docs")
    assert path_exists("routes_*.py", ROOT) and not path_exists("nosuch_*.py", ROOT)
    # the README's layout is among the paths checked
    assert {p for d, _, p in PAGE_PATHS if d.name == "README.md"} >= {"privopt/builder/", "privopt/pipeline/"}
