"""The small markup the report's own prose uses, as HTML for the page and as plain text for a terminal.

The subset: paragraphs (separated by a blank line), numbered items (``1. ...``) and
bullets (``- ...``), each item continued by indented lines; inline ``**bold**``,
``*emphasis*`` and code in single or double backticks (the docstring convention).
Nothing else is markup: ``_`` stays a character, and a ``*`` with a space after it is
an asterisk.

:func:`to_html` escapes every piece of text first and only then adds its own tags
(``p``, ``ol``, ``ul``, ``li``, ``strong``, ``em``, ``code``), so the text cannot add
any. :func:`to_plain` gives the same text without the marks, for a terminal.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Literal

from markupsafe import Markup, escape

#: A list item: ``1. text``, ``- text`` or ``* text`` at the start of a line.
_ITEM = re.compile(r"^(?:(\d+)\.|[-*])\s+(.*)$")
#: Code in double or single backticks; nothing inside it is markup.
_CODE = re.compile(r"``(.+?)``|`([^`]+)`")
#: Bold and emphasis: the text inside starts and ends with a non-space.
_STRONG = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_EM = re.compile(r"\*(?=[^\s*])(.+?)(?<=[^\s*])\*")

Kind = Literal["p", "ol", "ul"]


@dataclasses.dataclass(slots=True)
class Block:
    """A paragraph (one entry in ``items``) or a list (one entry per item), lines joined by spaces."""

    kind: Kind
    items: list[str]


def blocks(text: str) -> list[Block]:
    """The paragraphs and lists of ``text``, in order."""
    found: list[Block] = []
    current: Block | None = None
    for line in text.strip("\n").splitlines():
        stripped = line.strip()
        item = _ITEM.match(stripped)
        if not stripped:
            current = None
        elif item is not None:
            kind: Kind = "ol" if item.group(1) else "ul"
            if current is None or current.kind != kind:
                current = Block(kind, [])
                found.append(current)
            current.items.append(item.group(2))
        elif current is not None and (current.kind == "p" or line[:1].isspace()):
            current.items[-1] += " " + stripped  # a paragraph's next line, or an item continued
        else:
            current = Block("p", [stripped])
            found.append(current)
    return found


def _emphasis_html(text: str) -> str:
    """Bold and emphasis in already escaped ``text``."""
    text = _STRONG.sub(r"<strong>\1</strong>", text)
    return _EM.sub(r"<em>\1</em>", text)


def inline_html(text: str) -> Markup:
    """``text`` escaped, with its code, bold and emphasis as tags."""
    parts: list[str] = []
    position = 0
    for code in _CODE.finditer(text):
        parts.append(_emphasis_html(str(escape(text[position : code.start()]))))
        parts.append(f"<code>{escape(code.group(1) or code.group(2))}</code>")
        position = code.end()
    parts.append(_emphasis_html(str(escape(text[position:]))))
    return Markup("".join(parts))  # noqa: S704 - every piece of text was escaped above


def to_html(text: str) -> Markup:
    """``text`` as HTML: paragraphs and lists of escaped text with inline tags."""
    html: list[str] = []
    for block in blocks(text):
        if block.kind == "p":
            html.append(f"<p>{inline_html(block.items[0])}</p>")
        else:
            items = "".join(f"<li>{inline_html(item)}</li>" for item in block.items)
            html.append(f"<{block.kind}>{items}</{block.kind}>")
    return Markup("\n".join(html))  # noqa: S704 - built from inline_html only


def inline_plain(text: str) -> str:
    """``text`` without its backticks and asterisks of markup."""
    parts: list[str] = []
    position = 0
    for code in _CODE.finditer(text):
        parts.append(_EM.sub(r"\1", _STRONG.sub(r"\1", text[position : code.start()])))
        parts.append(code.group(1) or code.group(2))
        position = code.end()
    parts.append(_EM.sub(r"\1", _STRONG.sub(r"\1", text[position:])))
    return "".join(parts)


def to_plain(text: str) -> str:
    """``text`` for a terminal: one line per paragraph or item, items numbered or dashed, no markup."""
    lines: list[str] = []
    for block in blocks(text):
        if lines:
            lines.append("")
        if block.kind == "p":
            lines.append(inline_plain(block.items[0]))
        else:
            for number, item in enumerate(block.items, start=1):
                mark = f"{number}." if block.kind == "ol" else "-"
                lines.append(f"{mark} {inline_plain(item)}")
    return "\n".join(lines)
