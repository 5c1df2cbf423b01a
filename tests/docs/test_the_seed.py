"""A page that speaks of "the seed" links to where the seed is named: the experiments retrystorm reproduces."""

from __future__ import annotations

import posixpath
from pathlib import Path

import docsite
import pytest

#: The page that names the seed (its section is the link target).
DEFINING_PAGE = docsite.SEED_SECTION.split("#")[0]


def unexplained(docs: Path) -> list[str]:
    """Pages (with the line of their first use) whose prose says "the seed" without a link to its section."""
    found = []
    for page in sorted(docs.rglob("*.md")):
        relative = page.relative_to(docs).as_posix()
        if relative.startswith(docsite.INTERIM + "/") or relative == DEFINING_PAGE:
            continue
        text = page.read_text(encoding="utf-8")
        uses = [number for number, line in docsite.prose_lines(text) if docsite.SEED_USE.search(line)]
        folder = posixpath.dirname(relative)
        targets = {posixpath.normpath(posixpath.join(folder, link.target)) for link in docsite.links(text)}
        if uses and docsite.SEED_SECTION not in targets:
            found.append(
                f"{page.relative_to(docs.parent)}:{uses[0]}: says 'the seed' without a link to {docsite.SEED_SECTION}"
            )
    return found


def test_every_page_that_says_the_seed_links_to_what_it_is() -> None:
    assert unexplained(docsite.DOCS) == []


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("As in the seed, it stalls.\n", ["docs/guides/g.md:1: says 'the seed' without a link"]),
        ("As in [the seed](../concepts/retry-storms.md#the-seed-and-the-published-experiments).\n", []),
        ("```sh\nretrystorm sim smira   # the seed\n```\n", []),
    ],
)
def test_a_page_is_checked_by_its_prose_and_links(tmp_path: Path, text: str, found: list[str]) -> None:
    (tmp_path / "docs" / "guides").mkdir(parents=True)
    (tmp_path / "docs" / "guides" / "g.md").write_text(text, encoding="utf-8")
    assert [line.split(" to ")[0] for line in unexplained(tmp_path / "docs")] == found
