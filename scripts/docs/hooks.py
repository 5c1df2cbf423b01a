"""MkDocs hooks (``mkdocs.yml``: ``hooks:``): ``mkdocs build --strict`` fails on a broken page, by page and line.

* A nav page that does not exist yet is built from its stand-in in ``docs/_interim/`` (see :mod:`docsite`).
* Every internal link and image of every page is checked: the page or file it names must be in the site and the
  anchor it names must be on that page once rendered (generated sections such as the CLI reference's included).
  A broken one is a warning ``docs/PAGE.md:LINE: ...``, which fails a strict build.
* The generated reference pages must match what the code generates now (:mod:`reference`): a stale one is a
  warning naming the page, its first differing line and the command that regenerates it.
"""

from __future__ import annotations

import logging
import posixpath
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import docsite
import reference
from mkdocs.structure.files import File, Files

log = logging.getLogger("mkdocs.hooks.retrystorm")

_ID = re.compile(r"""\sid=["']([^"']+)["']""")
_links: dict[str, list[docsite.Link]] = {}
_anchors: dict[str, set[str]] = {}
_shown_path: dict[str, str] = {}
_site_files: set[str] = set()


def _nav_pages(nav: Any) -> list[str]:
    """Every ``.md`` path the nav names, in order."""
    if isinstance(nav, str):
        return [nav] if nav.endswith(".md") else []
    if isinstance(nav, list):
        return [path for item in nav for path in _nav_pages(item)]
    if isinstance(nav, dict):
        return [path for value in nav.values() for path in _nav_pages(value)]
    return []


def on_files(files: Files, *, config: Any, **_: Any) -> Files:
    """Build each nav page that does not exist yet from its stand-in under ``docs/_interim/``."""
    docs = Path(config["docs_dir"])
    for src_uri in _nav_pages(config["nav"]):
        if files.get_file_from_path(src_uri) is not None:
            continue
        source = docsite.page_source(src_uri, docs)
        if source is not None:
            files.append(File.generated(config, src_uri, abs_src_path=str(source)))
    _site_files.clear()
    _site_files.update(file.src_uri for file in files if file.inclusion.is_included())
    return files


def on_pre_build(**_: Any) -> None:
    """Start afresh (``mkdocs serve`` rebuilds in one process); a stale reference page is a warning."""
    _links.clear()
    _anchors.clear()
    _shown_path.clear()
    for problem in reference.stale_pages():
        log.warning(problem)


def on_page_markdown(markdown: str, *, page: Any, **_: Any) -> str:
    """Note the page's links, with their lines, to check once every page is rendered."""
    src_uri = page.file.src_uri
    _links[src_uri] = docsite.links(markdown)
    source = page.file.abs_src_path
    _shown_path[src_uri] = _shown(Path(source)) if source else f"docs/{src_uri}"
    return markdown


def on_page_content(html: str, *, page: Any, **_: Any) -> str:
    """Note the anchors the rendered page has; help text generated here names ``~``, not this machine's home."""
    _anchors[page.file.src_uri] = set(_ID.findall(html))
    return html.replace(f"{Path.home()}/", "~/")


def on_post_build(**_: Any) -> None:
    """Every link noted must lead to a page or file of the site, and to an anchor on that page."""
    for src_uri, page_links in sorted(_links.items()):
        for link in page_links:
            problem = link_problem(src_uri, link.target, _site_files, _anchors)
            if problem is not None:
                log.warning("%s:%d: link %r: %s", _shown_path[src_uri], link.line, link.target, problem)


def link_problem(src_uri: str, target: str, site_files: set[str], anchors: dict[str, set[str]]) -> str | None:
    """What is wrong with ``target`` as a link from page ``src_uri``, or ``None`` when it leads somewhere."""
    if not target or docsite.is_external(target):
        return None
    path, _, anchor = target.partition("#")
    if path.startswith("/"):
        return "an absolute path; link to the page's .md file relative to this page"
    destination = src_uri if not path else posixpath.normpath(posixpath.join(posixpath.dirname(src_uri), path))
    if destination.startswith("../") or destination == "..":
        return "leads outside docs/; name a repository file as `code`, or link a page of the site"
    if destination not in site_files:
        hint = " (a page's link names its .md file)" if destination + ".md" in site_files else ""
        return f"no page or file {destination!r} in the site{hint}"
    if anchor and destination.endswith(".md") and anchor not in anchors.get(destination, set()):
        return f"no anchor #{anchor} on {destination}"
    return None


def _shown(path: Path) -> str:
    try:
        return path.resolve().relative_to(docsite.ROOT).as_posix()
    except ValueError:
        return str(path)
