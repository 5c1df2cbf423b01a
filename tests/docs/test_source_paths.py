"""Every path of the repository a page quotes (`chaos/watchdog/`, `runner/orchestrate.py`) is there.

A module that becomes a package, or moves, leaves pages pointing at nothing; this reads README.md, every page under
docs/ and every folder's README.md for code spans that start with a top-level folder of the repository.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = sorted(path.name for path in ROOT.iterdir() if path.is_dir() and not path.name.startswith((".", "_")))
_PATH = re.compile(r"`((?:" + "|".join(map(re.escape, FOLDERS)) + r")/[\w./-]*)`")
#: Paths quoted as examples of a name a user chooses, not as files of the repository.
EXAMPLES = {"scenarios/x.yaml"}


def pages() -> list[Path]:
    found = [ROOT / "README.md", *ROOT.glob("*/README.md"), *ROOT.glob("*/*/README.md"), *(ROOT / "docs").rglob("*.md")]
    return [page for page in found if ".venv" not in page.parts and "site" not in page.relative_to(ROOT).parts[:1]]


def quoted_paths() -> list[tuple[str, int, str]]:
    """(page, line, path) for each repository path in a code span, globs and placeholders (``*``, ``<``) aside."""
    quoted = []
    for page in pages():
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
            for match in _PATH.finditer(line):
                path = match.group(1).split("::")[0].rstrip("/.")
                if not any(mark in path for mark in "*<{") and path not in EXAMPLES:
                    quoted.append((str(page.relative_to(ROOT)), number, path))
    return quoted


def test_pages_quote_many_paths():
    assert len(quoted_paths()) > 100


def test_every_path_a_page_quotes_exists():
    missing = [f"{page}:{line}: {path}" for page, line, path in quoted_paths() if not (ROOT / path).exists()]
    assert not missing, "\n".join(missing)
