"""The documented commands run: the shell snippets of Get started, Concepts, Guides and Safety; every page's scenarios.

Each page's snippets run in a network namespace of their own (``scripts/docs/snippets.py``); a failing one is
named with its page and line. The small pages below check the runner itself: it can fail, and says where.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import snippets


@pytest.fixture(autouse=True)
def _network_namespaces(request: pytest.FixtureRequest) -> None:
    """Live snippets run in a network namespace of their own; where none can be made, they cannot run."""
    if request.node.get_closest_marker("live") is not None and (problem := snippets.isolation_problem()):
        pytest.skip(f"no network namespace for the snippets ({problem}): they would share this host's ports")


def _page_params() -> list[object]:
    params = []
    for page in snippets.pages():
        live = any(item.kind in ("run", "instead", "serve") for item in snippets.snippets(page))
        params.append(pytest.param(page, id=page, marks=[pytest.mark.live] if live else []))
    return params


@pytest.mark.parametrize("page", _page_params())
def test_the_snippets_of_the_page_run(page: str) -> None:
    assert snippets.run_page(page) == []


def write_page(docs: Path, path: str, text: str) -> str:
    page = docs / path
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(text, encoding="utf-8")
    return path


def run(tmp_path: Path, path: str, text: str) -> list[str]:
    """Write one page into a ``docs/`` of its own and run its snippets: the failures."""
    docs = tmp_path / "docs"
    return snippets.run_page(write_page(docs, path, text), docs)


@pytest.mark.live
def test_a_failing_snippet_is_named_with_its_page_line_and_output(tmp_path: Path) -> None:
    text = (
        "# Guide\n\n```sh\necho fine\n```\n\nThen:\n\n"
        "```sh\necho 'about to fail'\nretrystorm strategies show no-such\n```\n"
    )
    (failure,) = run(tmp_path, "guides/broken.md", text)
    assert failure.startswith("docs/guides/broken.md:9: the snippet (run) exited 2:")
    assert "about to fail" in failure
    assert "no-such" in failure


@pytest.mark.live
def test_instead_runs_the_shortened_command_and_skip_runs_nothing(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    text = (
        "# Guide\n\n<!-- docs-test: instead test \"$DOCS_BLOCK\" = 'sleep 3600' -->\n```sh\nsleep 3600\n```\n\n"
        "<!-- docs-test: skip needs a cluster -->\n```sh\nfalse\n```\n"
    )
    page = write_page(docs, "guides/short.md", text)
    assert [item.kind for item in snippets.snippets(page, docs)] == ["instead", "skip"]
    assert snippets.run_page(page, docs) == []


@pytest.mark.live
def test_a_server_that_never_answers_fails_the_serve_snippet(tmp_path: Path) -> None:
    text = "# Guide\n\n<!-- docs-test: serve http://127.0.0.1:8070/healthz -->\n```sh\nsleep 1\n```\n"
    (failure,) = run(tmp_path, "guides/serve.md", text)
    assert failure.startswith("docs/guides/serve.md:4: the snippet (serve) exited 1:")
    assert "did not answer" in failure


def test_a_scenario_that_does_not_load_is_named_with_its_page_and_line(tmp_path: Path) -> None:
    text = (
        "# Scenarios\n\n<!-- docs-test: scenario -->\n```yaml\nname: s\n"
        "load: {users: 10, duration: 60}\nstrategies: [fixed]\n```\n"
    )
    (failure,) = run(tmp_path, "concepts/scenarios.md", text)
    assert failure.startswith("docs/concepts/scenarios.md:6: the scenario does not load: load.duration: got 60,")


@pytest.mark.parametrize(
    ("note", "problem"),
    [
        ("docs-test: skip", "docs-test: skip needs a reason"),
        ("docs-test: later maybe", "unknown docs-test directive 'later'"),
    ],
)
def test_a_malformed_directive_is_an_error_naming_page_and_line(tmp_path: Path, note: str, problem: str) -> None:
    docs = tmp_path / "docs"
    page = write_page(docs, "guides/odd.md", f"# Odd\n\n<!-- {note} -->\n```sh\ntrue\n```\n")
    with pytest.raises(snippets.SnippetError, match=f"guides/odd.md:4: {problem}"):
        snippets.snippets(page, docs)
