"""How a page's links and code blocks are found: what the link check and the snippet runner read."""

from __future__ import annotations

import docsite
import pytest

PAGE = """# A page

See [the guide](guide.md#setup) and ![a plot](../assets/plot.png "Plot").
Code is not a link: `[not](a-link.md)`, nor is this:

```sh
echo "[inside](fence.md)"
```

<!-- docs-test: skip needs a cluster -->
~~~yaml
key: value
~~~

[ref]: reference.md#anchor
<a href="other.md">other</a>
"""


def test_links_are_found_with_their_line_outside_code() -> None:
    found = [(link.line, link.target) for link in docsite.links(PAGE)]
    assert found == [
        (3, "guide.md#setup"),
        (3, "../assets/plot.png"),
        (15, "reference.md#anchor"),
        (16, "other.md"),
    ]


def test_fences_carry_their_line_info_text_and_the_note_above() -> None:
    blocks = list(docsite.fences(PAGE))
    assert [(block.line, block.info, block.text, block.note) for block in blocks] == [
        (6, "sh", 'echo "[inside](fence.md)"', None),
        (11, "yaml", "key: value", "docs-test: skip needs a cluster"),
    ]


def test_an_unclosed_fence_runs_to_the_end_of_the_page() -> None:
    (block,) = docsite.fences("text\n```sh\necho one\necho two\n")
    assert (block.line, block.text) == (2, "echo one\necho two")


@pytest.mark.parametrize(
    ("target", "external"),
    [("https://locust.io", True), ("mailto:a@b.c", True), ("//cdn.example/x.js", True), ("page.md", False)],
)
def test_external_links_are_those_with_a_scheme(target: str, external: bool) -> None:
    assert docsite.is_external(target) is external


def test_a_missing_page_is_built_from_its_stand_in(tmp_path) -> None:
    docs = tmp_path / "docs"
    (docs / docsite.INTERIM / "guides").mkdir(parents=True)
    (docs / docsite.INTERIM / "guides" / "ci.md").write_text("# CI (stand-in)\n")
    assert docsite.page_source("guides/ci.md", docs) == docs / docsite.INTERIM / "guides" / "ci.md"
    (docs / "guides").mkdir()
    (docs / "guides" / "ci.md").write_text("# CI\n")
    assert docsite.page_source("guides/ci.md", docs) == docs / "guides" / "ci.md"
    assert docsite.page_source("guides/none.md", docs) is None
