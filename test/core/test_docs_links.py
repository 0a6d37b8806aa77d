"""Every relative link in the README and the documents under ``docs/`` points at a file or folder that exists.

The results live in ``docs/results/`` and the README links into them (and they link back and to images in
``bench_results/``): a moved or renamed file must not leave a user on a dead link.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", ROOT / "checkpoints" / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)\s]*)?\)")


def relative_links(text: str) -> list[str]:
    """Targets of the markdown links in ``text`` that are not URLs (anchors dropped)."""
    return [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t)]


def test_the_link_pattern():
    text = "[a](docs/x.md#y) [b](https://e.org) [c](../z.png) [d](#anchor)"
    assert relative_links(text) == ["docs/x.md", "../z.png"]


@pytest.mark.parametrize("doc", DOCUMENTS, ids=[str(d.relative_to(ROOT)) for d in DOCUMENTS])
def test_relative_links_resolve(doc):
    dead = [t for t in relative_links(doc.read_text()) if not (doc.parent / t).exists()]
    assert not dead, f"{doc.relative_to(ROOT)}: dead links {dead}"
