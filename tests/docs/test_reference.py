"""The generated reference pages: current with the code, and a stale or missing one named with its page and line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import reference
import reference_metrics
import reference_scenario
import reference_specs
from pydantic import BaseModel, ConfigDict

from retrystorm.loadgen.options import FLAGS, OPTIONS


def test_every_generated_page_matches_what_the_code_generates() -> None:
    assert reference.stale_pages() == []


@pytest.fixture
def docs_copy(tmp_path: Path) -> Path:
    """A copy of the generated pages, as ``docs/`` of a folder of their own."""
    docs = tmp_path / "docs"
    for path, text in reference.generate().items():
        (docs / path).parent.mkdir(parents=True, exist_ok=True)
        (docs / path).write_text(text, encoding="utf-8")
    return docs


def test_a_page_edited_by_hand_is_named_with_its_first_differing_line(docs_copy: Path) -> None:
    page = docs_copy / "reference" / "models.md"
    lines = page.read_text(encoding="utf-8").splitlines()
    row = next(number for number, line in enumerate(lines) if line.startswith("| `limit` |"))
    lines[row] = lines[row].replace("`30`", "`40`")
    page.write_text("\n".join(lines) + "\n", encoding="utf-8")
    (problem,) = reference.stale_pages(docs_copy)
    assert problem.startswith(f"docs/reference/models.md:{row + 1}: out of date with the code")
    assert "`30`" in problem
    assert "python scripts/docs/reference.py" in problem


def test_a_missing_page_is_named(docs_copy: Path) -> None:
    (docs_copy / "reference" / "metrics.md").unlink()
    assert reference.stale_pages(docs_copy) == [
        "docs/reference/metrics.md: missing; generate it with `python scripts/docs/reference.py`"
    ]


def test_writing_the_pages_makes_them_current(docs_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.rmtree(docs_copy / "reference")
    monkeypatch.setattr(reference, "DOCS", docs_copy)
    assert reference.main([]) == 0
    assert reference.stale_pages(docs_copy) == []


class _Documented(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True)

    rate: float = 1.0
    """Requests per second."""
    burst: int = 3


def test_a_scenario_field_without_a_docstring_is_refused_by_name() -> None:
    with pytest.raises(reference_scenario.UndocumentedFieldError, match=r"_Documented\.burst has no docstring"):
        list(reference_scenario.rows(_Documented))


def test_every_load_generator_option_is_on_its_page() -> None:
    page = reference_specs.locust_options_page()
    for flag in [option.flag for option in OPTIONS] + [flag for flag, _ in FLAGS]:
        assert f"| `{flag}` |" in page
    assert "| `--metrics-port` |" in page
    assert "| `--target-metrics` |" in page


def test_a_labelled_metric_without_series_is_listed_with_its_labels() -> None:
    page = reference_metrics.metrics_page()
    assert "| `retrystorm_target_model_parameter` | gauge | `model`, `parameter` |" in page
    assert "| `retrystorm_client_requests_total` | counter | `strategy`, `request`, `outcome` |" in page
    assert "| `retrystorm_chaos_outage_active` | gauge | `target` |" in page


def test_an_undocumented_scenario_field_is_a_problem_of_the_check_not_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    def undocumented() -> str:
        return "\n".join(str(row) for row in reference_scenario.rows(_Documented))

    monkeypatch.setitem(reference.PAGES, "reference/scenario.md", undocumented)
    (problem,) = reference.stale_pages()
    assert problem.startswith("the reference cannot be generated: ")
    assert "_Documented.burst has no docstring" in problem
