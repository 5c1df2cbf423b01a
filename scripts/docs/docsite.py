"""The documentation site's pages as files: where each page's source is, and what links it holds.

Used by the MkDocs hooks (``scripts/docs/hooks.py``), the snippet runner (``scripts/docs/snippets.py``) and the
tests, so that all three read a page from the same file and count its lines the same way.

A page of the site is ``docs/<path>``. A page another part of the project documents (its path is in the nav)
may not exist yet; until it does, ``docs/_interim/<path>`` stands in for it, built at the page's own address.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
#: Where a page's stand-in waits while its own page does not exist.
INTERIM = "_interim"
#: "The seed" (the experiments retrystorm was built to reproduce) in a page's prose; each page that says it links to
#: :data:`SEED_SECTION`, which names and links them.
SEED_USE = re.compile(r"\bthe seed\b", re.IGNORECASE)
SEED_SECTION = "concepts/retry-storms.md#the-seed-and-the-published-experiments"

_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
# [text](target) and ![alt](target); the target may be <...>-quoted and followed by a "title"
_INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?(?P<target>[^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE_DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(?P<target>\S+?)>?(?:\s+.*)?$")
_HTML_LINK = re.compile(r"<(?:a|img)\s[^>]*?(?:href|src)=\"(?P<target>[^\"]*)\"", re.IGNORECASE)
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")


@dataclasses.dataclass(frozen=True, slots=True)
class Link:
    """A link in a page's Markdown: its 1-based line and its target as written."""

    line: int
    target: str


@dataclasses.dataclass(frozen=True, slots=True)
class Fence:
    """A fenced code block: the line of its opening fence (1-based), its info string, its text."""

    line: int
    info: str
    text: str
    #: The HTML comment on the line just above the fence, if any (without ``<!--`` and ``-->``).
    note: str | None = None


def page_source(src_uri: str, docs: Path = DOCS) -> Path | None:
    """The file a page is built from: ``docs/<path>``, else its stand-in ``docs/_interim/<path>``, else none."""
    own = docs / src_uri
    if own.is_file():
        return own
    interim = docs / INTERIM / src_uri
    return interim if interim.is_file() else None


def fences(markdown: str) -> Iterator[Fence]:
    """Every fenced code block of a page, in order."""
    lines = markdown.splitlines()
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        fence = opening["fence"]
        body: list[str] = []
        end = index + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            body.append(lines[end].removeprefix(opening["indent"]))
            end += 1
        yield Fence(line=index + 1, info=opening["info"].strip(), text="\n".join(body), note=_note_above(lines, index))
        index = end + 1


def _note_above(lines: list[str], index: int) -> str | None:
    above = lines[index - 1].strip() if index > 0 else ""
    if above.startswith("<!--") and above.endswith("-->"):
        return above.removeprefix("<!--").removesuffix("-->").strip()
    return None


def prose_lines(markdown: str) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of every line outside fenced code, with inline code spans blanked out."""
    inside: str | None = None
    for number, line in enumerate(markdown.splitlines(), start=1):
        opening = _FENCE.match(line)
        if inside is None and opening is not None:
            inside = opening["fence"]
            continue
        if inside is not None:
            if line.strip().startswith(inside):
                inside = None
            continue
        yield number, _CODE_SPAN.sub(lambda span: " " * len(span.group(0)), line)


def links(markdown: str) -> list[Link]:
    """Every link target of a page outside code: inline links and images, reference definitions, HTML a/img."""
    found: list[Link] = []
    for number, line in prose_lines(markdown):
        for pattern in (_INLINE_LINK, _HTML_LINK):
            found.extend(Link(number, match["target"]) for match in pattern.finditer(line))
        definition = _REFERENCE_DEFINITION.match(line)
        if definition is not None:
            found.append(Link(number, definition["target"]))
    return found


def is_external(target: str) -> bool:
    """A link that leaves the site: a scheme (``https:``, ``mailto:``) or a protocol-relative address."""
    return bool(re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target)) or target.startswith("//")
