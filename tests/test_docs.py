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
