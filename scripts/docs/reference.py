"""The reference pages generated from the code: ``python scripts/docs/reference.py`` writes them, ``--check`` compares.

Each page under ``docs/reference/`` that this module generates is written from what the code declares, never by
hand: the registries of strategies, presets, budgets and models (what ``retrystorm strategies`` and ``models``
print), the load generator's options as registered on Locust's parser, the Prometheus metrics as each component
registers them, the HTTP APIs from their OpenAPI documents, and the scenario schema from its pydantic models.
:func:`stale_pages` is what the site's build (``scripts/docs/hooks.py``) and the tests run: a page that differs from
what the code generates now is named with its first differing line.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Callable
from pathlib import Path

import docsite
import reference_apis
import reference_metrics
import reference_scenario
import reference_specs

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
COMMAND = "python scripts/docs/reference.py"
HEADER = (
    "<!-- Generated from the code by scripts/docs/reference.py: do not edit; change the code, then run "
    f"`{COMMAND}`. -->\n\n"
)

#: Each generated page (path under docs/) and what writes its Markdown.
PAGES: dict[str, Callable[[], str]] = {
    "reference/scenario.md": reference_scenario.scenario_page,
    "reference/strategies.md": reference_specs.strategies_page,
    "reference/models.md": reference_specs.models_page,
    "reference/locust-options.md": reference_specs.locust_options_page,
    "reference/metrics.md": reference_metrics.metrics_page,
    "reference/target-api.md": reference_apis.target_api_page,
    "reference/chaos-api.md": reference_apis.chaos_api_page,
    "reference/results-fields.md": reference_apis.results_fields_page,
}


#: Closes a generated page whose text speaks of "the seed": what it is, by name, with links.
SEED_NOTE = (
    "*The seed* on this page: the experiments retrystorm was built to reproduce, Andrey Smirnov's Go client and "
    "server ([`smira/exponential-backoff`](https://github.com/smira/exponential-backoff): 1,000 clients, a 30 s "
    '`SIGSTOP`) and Wil Yegelwel\'s simulation ["Exploring backoff"](https://wyegelwel.github.io/Exploring-backoff/) '
    f"(2016); see [Retry storms](../{docsite.SEED_SECTION})."
)


def generate() -> dict[str, str]:
    """Every generated page's text, by path under ``docs/``."""
    pages = {}
    for path, write in PAGES.items():
        body = write().rstrip("\n")
        if docsite.SEED_USE.search(body):
            body += "\n\n" + SEED_NOTE
        pages[path] = HEADER + body + "\n"
    return pages


def stale_pages(docs: Path = DOCS) -> list[str]:
    """One line per generated page that is missing or differs from what the code generates now."""
    try:
        pages = generate()
    except reference_scenario.UndocumentedFieldError as error:
        return [f"the reference cannot be generated: {error}"]
    problems = []
    for path, text in pages.items():
        page = docs / path
        shown = page.relative_to(docs.parent) if page.is_relative_to(docs.parent) else page
        if not page.is_file():
            problems.append(f"{shown}: missing; generate it with `{COMMAND}`")
            continue
        line, expected, found = _first_difference(text, page.read_text(encoding="utf-8"))
        if line is not None:
            problems.append(
                f"{shown}:{line}: out of date with the code (the code gives {expected!r}, the page has {found!r}); "
                f"regenerate with `{COMMAND}`"
            )
    return problems


def _first_difference(expected: str, found: str) -> tuple[int | None, str, str]:
    """The first line (1-based) where ``found`` departs from ``expected``, with both lines (cut to 80 characters)."""
    want, have = expected.splitlines(), found.splitlines()
    for tag, start, _, other, _ in difflib.SequenceMatcher(a=want, b=have, autojunk=False).get_opcodes():
        if tag != "equal":
            line = want[start] if start < len(want) else "(end of page)"
            page_line = have[other] if other < len(have) else "(end of page)"
            return other + 1, *_where_they_differ(line, page_line)
    return None, "", ""


def _where_they_differ(one: str, other: str, width: int = 70) -> tuple[str, str]:
    """Both lines cut to ``width`` characters around their first differing character."""
    common = next((i for i, (a, b) in enumerate(zip(one, other, strict=False)) if a != b), min(len(one), len(other)))
    start = max(0, common - width // 3)
    prefix = "..." if start else ""
    return prefix + one[start : start + width], prefix + other[start : start + width]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 naming each stale page")
    args = parser.parse_args(argv)
    if args.check:
        problems = stale_pages()
        for problem in problems:
            sys.stderr.write(problem + "\n")
        return 1 if problems else 0
    for path, text in generate().items():
        page = DOCS / path
        page.parent.mkdir(parents=True, exist_ok=True)
        if not page.is_file() or page.read_text(encoding="utf-8") != text:
            page.write_text(text, encoding="utf-8")
            sys.stdout.write(f"wrote docs/{path}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
