"""The README is the front door: short, and every link in it leads to a file of the repository."""

from __future__ import annotations

from pathlib import Path

import docsite

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
#: The README is a front door, not the documentation: what does not fit goes to a page of docs/.
MAX_LINES = 200


def test_the_readme_is_at_most_200_lines() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= MAX_LINES


def test_every_link_of_the_readme_leads_to_a_file_of_the_repository() -> None:
    broken = []
    for link in docsite.links(README.read_text(encoding="utf-8")):
        path = link.target.partition("#")[0]
        if docsite.is_external(link.target) or not path:
            continue
        if not (ROOT / path).exists():
            broken.append(f"README.md:{link.line}: {link.target}")
    assert broken == []


def test_the_readme_gives_the_two_set_up_commands() -> None:
    text = README.read_text(encoding="utf-8")
    assert "pip install -e '.[live]' && .venv/bin/retrystorm demo" in text
    assert "./scripts/test" in text
