"""results.json against its published JSON Schema; timeseries.csv's pinned columns.

A run of the fake stack (virtual time, :mod:`tests.runner.fakes`) writes a real run folder; its results.json must
satisfy the schema generated from :mod:`retrystorm.runner.results_schema` (checked by a JSON Schema validator, not by
the models that made it), and the published copy must be that schema.
"""

from __future__ import annotations

import csv
import dataclasses
import json
from pathlib import Path

import jsonschema_rs
import pytest

from retrystorm.experiment.analysis.mechanism import AfterResume
from retrystorm.runner.cli import RunOptions, run_plan
from retrystorm.runner.results_schema import (
    AFTER_RESUME_FIELDS,
    SCHEMA_VERSION,
    TIMESERIES_COLUMNS,
    results_schema,
    schema_text,
)

from .test_execute import SCENARIO, setting

PUBLISHED = Path(__file__).resolve().parents[2] / "docs" / "reference" / "results.schema.json"
ASSERTIONS = "assertions:\n  smira: {max_peak_in_flight: 50, server_recovers_within: 20s, min_success_ratio: 0.5}\n"
TRIGGERS = SCENARIO.replace(
    "faults: [{at: 20s, for: 15s}]\n",
    "faults:\n  - {at: 20s, for: 5s}\n  - {slow: target, capacity: 0.5, at: 30s, for: 5s}\n"
    "  - {errors: target, status: 503, probability: 0.5, at: 40s, for: 5s}\n",
)


def run_folder(tmp_path: Path, text: str) -> Path:
    _, stack, _, _, _, plan, _, runtime = setting(tmp_path, text=text)
    assert run_plan(plan, stack, tmp_path / "run", RunOptions(journal=tmp_path / "j.jsonl", runtime=runtime)) == 0
    return tmp_path / "run"


@pytest.mark.parametrize("text", [SCENARIO, SCENARIO + ASSERTIONS, TRIGGERS], ids=["plain", "assertions", "triggers"])
def test_a_runs_results_json_satisfies_the_published_schema(tmp_path, text):
    document = json.loads((run_folder(tmp_path, text) / "results.json").read_text())
    assert document["schema_version"] == SCHEMA_VERSION
    errors = [error.message for error in jsonschema_rs.validator_for(results_schema()).iter_errors(document)]
    assert errors == []


def test_a_field_the_schema_does_not_describe_is_refused(tmp_path):
    document = json.loads((run_folder(tmp_path, SCENARIO) / "results.json").read_text())
    validator = jsonschema_rs.validator_for(results_schema())
    document["results"][0]["surprise"] = 1
    assert not validator.is_valid(document)
    del document["results"][0]["surprise"]
    document["results"][0]["validity"]["valid"] = "yes"
    assert not validator.is_valid(document)


def test_the_published_schema_is_current():
    assert PUBLISHED.read_text(encoding="utf-8") == schema_text(), (
        "regenerate: python -m retrystorm.runner.results_schema > docs/reference/results.schema.json"
    )


def test_timeseries_csv_has_the_pinned_columns_whatever_was_read(tmp_path):
    folder = run_folder(tmp_path, SCENARIO)
    with (folder / "timeseries.csv").open(newline="") as handle:
        header = next(csv.reader(handle))
    assert header == [
        "strategy", "t_s", "goodput", "attempts", "timeouts", "gave_up", "started", "attempt_latency_s", "in_flight",
        "delay_s", "connections", "abandoned_in_flight", "users_in_backoff", "active_users", "in_progress",
        "latency_p50", "latency_p95", "latency_p99", "generator_cpu", "fresh_in_time", "repeat", "schedule_lag_s",
        "loop_lag_s",
    ]  # fmt: skip
    assert header == list(TIMESERIES_COLUMNS)


def _undescribed(node: object, where: str) -> list[str]:
    """Every property of the schema, at any depth, that has no description."""
    found: list[str] = []
    if isinstance(node, dict):
        for name, field in (node.get("properties") or {}).items():
            if "description" not in field:
                found.append(f"{where}.{name}")
        for key, value in node.items():
            found += _undescribed(value, f"{where}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _undescribed(value, f"{where}[{index}]")
    return found


def test_every_field_of_the_schema_says_what_it_means():
    assert _undescribed(results_schema(), "") == []


def test_the_after_resume_descriptions_are_those_of_its_fields():
    assert set(AFTER_RESUME_FIELDS) == {field.name for field in dataclasses.fields(AfterResume)}
