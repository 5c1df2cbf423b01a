"""``mkdocs build --strict`` with the project's hooks fails on a broken link or anchor, naming the page and line.

Each test builds a small site of its own in a temporary folder with the real MkDocs and the real hooks.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.live  # each builds a site with mkdocs in a child

HOOKS = Path(__file__).resolve().parents[2] / "scripts" / "docs" / "hooks.py"


def build(root: Path, pages: dict[str, str], nav: list[object]) -> subprocess.CompletedProcess[str]:
    """Write ``pages`` under ``root/docs`` with a config naming ``nav``, and build the site strictly."""
    for path, text in pages.items():
        page = root / "docs" / path
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(textwrap.dedent(text))
    nav_yaml = "".join(f"  - {item}\n" for item in nav)
    (root / "mkdocs.yml").write_text(
        f"site_name: t\nhooks:\n  - {HOOKS}\nexclude_docs: |\n  _interim/\n"
        "validation:\n  anchors: warn\nmarkdown_extensions:\n  - toc\n"
        f"nav:\n{nav_yaml}"
    )
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(root / "mkdocs.yml"), "-d", str(root / "site")],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


OTHER = "# Other\n\n## Setup\n"


def test_a_site_whose_links_all_lead_somewhere_builds(tmp_path: Path) -> None:
    index = "# Home\n\n[setup](other.md#setup), [top](#home) and [out](https://example.org).\n"
    done = build(tmp_path, {"index.md": index, "other.md": OTHER}, ["index.md", "other.md"])
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "site" / "other" / "index.html").is_file()


@pytest.mark.parametrize(
    ("link", "problem"),
    [
        ("missing.md", "link 'missing.md': no page or file 'missing.md' in the site"),
        ("other.md#nowhere", "link 'other.md#nowhere': no anchor #nowhere on other.md"),
        ("#nowhere", "link '#nowhere': no anchor #nowhere on index.md"),
        ("../README.md", "link '../README.md': leads outside docs/"),
        ("other", "link 'other': no page or file 'other' in the site (a page's link names its .md file)"),
    ],
)
def test_a_broken_link_fails_the_build_naming_page_and_line(tmp_path: Path, link: str, problem: str) -> None:
    index = f"# Home\n\nSome text.\n\nA [broken link]({link}) on line five.\n"
    done = build(tmp_path, {"index.md": index, "other.md": OTHER}, ["index.md", "other.md"])
    assert done.returncode != 0
    assert f"docs/index.md:5: {problem}" in done.stderr


def test_a_link_inside_code_is_not_checked(tmp_path: Path) -> None:
    index = "# Home\n\n`[not a link](missing.md)`\n\n```md\n[nor this](missing.md)\n```\n"
    done = build(tmp_path, {"index.md": index}, ["index.md"])
    assert done.returncode == 0, done.stderr


def test_a_nav_page_not_written_yet_is_built_from_its_stand_in(tmp_path: Path) -> None:
    pages = {
        "index.md": "# Home\n\n[CI](guides/ci.md#a-workflow)\n",
        "_interim/guides/ci.md": "# CI\n\n## A workflow\n",
    }
    done = build(tmp_path, pages, ["index.md", "guides/ci.md"])
    assert done.returncode == 0, done.stderr
    assert "A workflow" in (tmp_path / "site" / "guides" / "ci" / "index.html").read_text()
    assert not (tmp_path / "site" / "_interim").exists()


def test_the_page_itself_wins_over_its_stand_in(tmp_path: Path) -> None:
    pages = {"index.md": "# Home\n", "guides/ci.md": "# CI, the page\n", "_interim/guides/ci.md": "# CI, stand-in\n"}
    done = build(tmp_path, pages, ["index.md", "guides/ci.md"])
    assert done.returncode == 0, done.stderr
    built = (tmp_path / "site" / "guides" / "ci" / "index.html").read_text()
    assert "CI, the page" in built
    assert "stand-in" not in built


def test_a_nav_page_with_neither_page_nor_stand_in_fails(tmp_path: Path) -> None:
    done = build(tmp_path, {"index.md": "# Home\n"}, ["index.md", "guides/ci.md"])
    assert done.returncode != 0
    assert "guides/ci.md" in done.stderr
