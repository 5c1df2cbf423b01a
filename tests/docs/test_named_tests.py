"""The tests a page names exist: ``tests/...py`` files, and ``test_file.py::test_name`` functions.

The Safety pages say which test shows each guarantee; a test renamed or removed must not leave a page pointing at
nothing. ``test_file.py::test_a`` names a test function of a file of that name under ``tests/``; a following
``::test_b`` in the same line names another of the same file.
"""

from __future__ import annotations

import re
from pathlib import Path

import docsite
import pytest

TESTS = docsite.ROOT / "tests"
_PATH = re.compile(r"(?<![\w/.-])tests/[\w/.-]+?\.py\b")
_NAMED = re.compile(r"(?P<file>test_\w+\.py)?::(?P<name>test_\w+)")


def _defined(files: list[Path]) -> set[str]:
    names: set[str] = set()
    for path in files:
        names.update(re.findall(r"^(?:async )?def (test_\w+)", path.read_text(encoding="utf-8"), re.MULTILINE))
    return names


def named_tests(markdown: str) -> list[tuple[int, str, str]]:
    """``(line, file name, test name)`` of every ``file.py::name`` and ``::name`` (the line's last file)."""
    found = []
    for number, line in enumerate(markdown.splitlines(), start=1):
        current = None
        for match in _NAMED.finditer(line):
            current = match["file"] or current
            if current is not None:
                found.append((number, current, match["name"]))
    return found


def problems(docs: Path, tests: Path) -> list[str]:
    """One line per page, line and name of a test file or function that does not exist."""
    found = []
    for page in sorted(docs.rglob("*.md")):
        shown = page.relative_to(docs.parent)
        text = page.read_text(encoding="utf-8")
        for number, line in enumerate(text.splitlines(), start=1):
            missing = [path for path in _PATH.findall(line) if not (tests.parent / path).is_file()]
            found.extend(f"{shown}:{number}: {path}: no such file" for path in missing)
        for number, file_name, name in named_tests(text):
            files = sorted(tests.rglob(file_name))
            if not files:
                found.append(f"{shown}:{number}: {file_name}: no such test file under tests/")
            elif name not in _defined(files):
                found.append(f"{shown}:{number}: {file_name}::{name}: no such test")
    return found


def test_every_test_a_page_names_exists() -> None:
    assert problems(docsite.DOCS, TESTS) == []


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("See `tests/chaos/test_nothing_here.py`.", "docs/p.md:1: tests/chaos/test_nothing_here.py: no such file"),
        ("`test_a.py::test_one`, `::test_gone`", "docs/p.md:1: test_a.py::test_gone: no such test"),
        ("`test_b.py::test_one`", "docs/p.md:1: test_b.py: no such test file under tests/"),
    ],
)
def test_a_missing_test_is_named_with_its_page_and_line(tmp_path: Path, text: str, problem: str) -> None:
    (tmp_path / "tests" / "x").mkdir(parents=True)
    (tmp_path / "tests" / "x" / "test_a.py").write_text("def test_one():\n    pass\n", encoding="utf-8")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "p.md").write_text(text + "\n`test_a.py::test_one` is fine.\n", encoding="utf-8")
    assert problems(tmp_path / "docs", tmp_path / "tests") == [problem]
