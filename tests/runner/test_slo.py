"""Stop conditions (``slo:``) on the fake stack in virtual time: a breach mid-outage stops the run there, resumes
the target, skips the strategies after it, and exits 4; bad conditions are exit 2 before anything starts."""

from __future__ import annotations

import dataclasses
import json
import re
import xml.etree.ElementTree as ET

import pytest

from retrystorm.errors import UserError
from retrystorm.experiment.scenario import parse_scenario
from retrystorm.runner.cli import EXIT_SLO_BREACHED, RunOptions, run_plan
from retrystorm.runner.junit import write_junit
from retrystorm.runner.slo import SloGuard, check_guard, series_value
from tests.loadgen.conftest import free_port

from .conftest import client, fabricate, target
from .test_execute import SCENARIO, setting

BACKOFF = SCENARIO + "slo:\n  - {series: users_in_backoff, above: 50, for: 2s}\n"


def backoff_after(metrics, second_s: float) -> None:
    """The fake's readings, with 80 users in backoff from ``second_s`` of each strategy's run."""
    read = metrics.read

    async def reading(target_handle, load, *, timeout_s):
        target_part, client_part = await read(target_handle, load, timeout_s=timeout_s)
        if metrics.reads[-1][0] >= second_s:
            client_part = dataclasses.replace(client_part, users_in_backoff=80.0)
        return target_part, client_part

    metrics.read = reading


def test_a_breach_mid_outage_resumes_the_target_skips_the_rest_and_exits_4(tmp_path, capsys):
    world, stack, backend, metrics, switch, plan, _, runtime = setting(tmp_path, text=BACKOFF)
    backoff_after(metrics, 22.0)
    guard = SloGuard(plan.scenario.slo)
    options = RunOptions(journal=tmp_path / "journal.jsonl", runtime=runtime, slo=guard)
    assert run_plan(plan, stack, tmp_path / "run", options) == EXIT_SLO_BREACHED
    events = world.events
    assert ("pause target" in world.names()) and (24.0, "resume target") in events  # planned: resumed at 35 s
    assert world.names()[-4:] == ["resume target", "stop load fixed:100ms", "stop target fixed:100ms", "close metrics"]
    assert not any("smira" in name for name in world.names())
    assert backend.paused == set()
    assert [outage for _, outage, _ in switch.armed] == switch.disarmed == ["o1"]  # resumed: its switch stood down
    err = capsys.readouterr().err
    assert "retrystorm run: stopped early: users_in_backoff above 50 for 2s: 80 at 24s of fixed:100ms" in err
    assert "every fault was reverted; not run: smira" in err
    document = json.loads((tmp_path / "run" / "results.json").read_text())
    assert document["ok"] is False
    assert document["slo"]["breached"] == {
        "condition": "users_in_backoff above 50 for 2s", "query": "users_in_backoff", "strategy": "fixed:100ms",
        "at_s": 24.0, "value": 80.0,
    }  # fmt: skip
    assert document["slo"]["skipped"] == ["smira"]
    assert [row["strategy"] for row in document["results"]] == ["fixed:100ms"]
    assert document["results"][0]["outages"] == [[20.0, 24.0]]
    write_junit(tmp_path / "junit.xml", tmp_path / "run", EXIT_SLO_BREACHED, since_epoch_s=0.0)
    root = ET.parse(tmp_path / "junit.xml").getroot()  # noqa: S314 (the XML the run wrote)
    failures = [case.get("name") for case in root.iter("testcase") if case.find("failure") is not None]
    assert failures == ["slo"]
    assert [case.get("classname") for case in root.iter("testcase") if case.find("skipped") is not None] == ["smira"]


def test_a_condition_never_breached_lets_the_run_finish(tmp_path):
    _, stack, _, _, _, plan, _, runtime = setting(tmp_path, text=BACKOFF)
    options = RunOptions(journal=tmp_path / "journal.jsonl", runtime=runtime, slo=SloGuard(plan.scenario.slo))
    assert run_plan(plan, stack, tmp_path / "run", options) == 0
    document = json.loads((tmp_path / "run" / "results.json").read_text())
    assert document["slo"] == {"conditions": ["users_in_backoff above 50 for 2s"], "breached": None, "skipped": []}


def test_a_breach_shorter_than_its_for_does_not_stop_the_run(tmp_path):
    text = SCENARIO + "slo:\n  - {series: users_in_backoff, above: 50, for: 30s}\n"
    _, stack, _, metrics, _, plan, _, runtime = setting(tmp_path, text=text)
    backoff_after(metrics, 40.0)  # 20 s of breach before the run ends at 60 s
    options = RunOptions(journal=tmp_path / "journal.jsonl", runtime=runtime, slo=SloGuard(plan.scenario.slo))
    assert run_plan(plan, stack, tmp_path / "run", options) == 0


def test_series_values_are_rates_between_the_last_two_readings_and_gauges_at_the_last():
    readings = fabricate([100.0, 40.0], [100.0, 300.0], [10.0, 700.0])
    assert series_value("goodput", readings) == pytest.approx(40.0)
    assert series_value("attempts", readings) == pytest.approx(300.0)
    assert series_value("in_flight", readings) == 700.0
    assert series_value("in_flight", [*readings[:-1], dataclasses.replace(readings[-1], target=None)]) is None
    assert series_value("goodput", readings[:1]) is None
    assert target(1.0).in_flight == 1.0 and client(1.0, 1.0).requests_ok == 1.0


def condition(text: str):
    return parse_scenario(SCENARIO + "slo:\n  - " + text + "\n", source="s.yaml").slo


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("{series: inflight, above: 5}", "slo[0].series: 'inflight' is not a series of the run (did you mean"),
        ("{promql: up, above: 5}", "slo[0].prometheus: no Prometheus to send the query to"),
    ],
)
def test_bad_conditions_are_refused_before_the_run(entry, expected):
    with pytest.raises(UserError, match=r"^" + re.escape(expected)):
        check_guard(SloGuard(condition(entry)))


def test_an_unreachable_prometheus_is_refused_before_the_run():
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(UserError, match=rf"^slo\[0\]\.prometheus: cannot query {url}: "):
        check_guard(SloGuard(condition(f"{{promql: up, above: 5, prometheus: '{url}'}}")))


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("{series: in_flight}", "s.yaml:7: slo[0]: give exactly one bound: above or below"),
        ("{series: in_flight, promql: up, above: 1}", "slo[0]: give exactly one of series"),
        ("{series: in_flight, above: 1, prometheus: 'http://x'}", "slo[0]: prometheus: only with promql"),
        ("{series: in_flight, above: .nan}", "slo[0].above"),
    ],
)
def test_malformed_conditions_name_the_line_and_field(entry, expected):
    with pytest.raises(UserError, match=re.escape(expected)):
        condition(entry)
