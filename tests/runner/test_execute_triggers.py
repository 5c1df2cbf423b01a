"""Live slow and errors triggers in the orchestration, with one-line fakes in virtual time.

Each level change of the timeline reaches the target's controls at its time; the
controls are restored before the load stops on every path (the run's end, SIGINT, a
refused change); the windows as they happened are what the run records and judges
recovery after. The real target is tested end to end in ``test_live_triggers.py``.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import textwrap

import pytest

from retrystorm.runner.errors import RunFailedError
from retrystorm.runner.orchestrate import RunInterruptedError, StrategyRun
from retrystorm.runner.record import analyse
from tests.grafana_stub import TOKEN, running_stub

from .test_execute import run, setting

TRIGGERS = textwrap.dedent(
    """\
    name: fake
    model: exponential:limit=30
    load: {users: 100, think_time: exponential:1s, attempt_timeout: 2s, duration: 60s}
    strategies: [fixed:100ms]
    faults:
      - {slow: target, capacity: 0.5, at: 20s, for: 10s}
      - {slow: target, capacity: 0.25, at: 25s, for: 10s}
      - {errors: target, status: 429, probability: 0.5, at: 40s, for: 5s}
    """
)


def test_each_level_is_set_at_its_time_and_restored_before_the_load_stops(tmp_path):
    world, stack, _, _, _, plan, journal, runtime = setting(tmp_path, text=TRIGGERS)
    [record] = run(plan, stack, journal, runtime)
    assert world.events == [
        (0.0, "start target fixed:100ms"),
        (0.0, "start load fixed:100ms"),
        (20.0, "capacity 0.5"),
        (25.0, "capacity 0.25"),  # overlapping slows: the lowest capacity holds
        (35.0, "capacity 1"),
        (40.0, "errors 429 0.5"),
        (45.0, "errors off"),
        (60.0, "restore"),
        (60.0, "stop load fixed:100ms"),
        (60.0, "stop target fixed:100ms"),
        (60.0, "close metrics"),
    ]
    assert [(w.kind, w.start_s, w.end_s, w.settings()) for w in record.triggers] == [
        ("slow", 20.0, 25.0, {"capacity": 0.5}),
        ("slow", 25.0, 35.0, {"capacity": 0.25}),
        ("errors", 40.0, 45.0, {"status": 429, "probability": 0.5}),
    ]
    result = analyse(record)
    assert [(r.outage.start_s, r.outage.end_s) for r in result.recoveries] == [(20.0, 35.0), (40.0, 45.0)]
    assert [window["kind"] for window in result.extra["triggers"]] == ["slow", "slow", "errors"]


def test_sigint_during_a_cut_restores_the_target_then_stops_everything(tmp_path):
    world, stack, _, _, _, plan, journal, runtime = setting(tmp_path, text=TRIGGERS)
    world.at[("fixed:100ms", 22.0)] = lambda: os.kill(os.getpid(), signal.SIGINT)
    with pytest.raises(RunInterruptedError):
        run(plan, stack, journal, runtime)
    names = world.names()
    assert names == [
        "start target fixed:100ms",
        "start load fixed:100ms",
        "capacity 0.5",
        "restore",
        "stop load fixed:100ms",
        "stop target fixed:100ms",
        "close metrics",
    ]
    assert 22.0 <= world.events[3][0] < 25.0  # restored when the signal came, not at the cut's end


def test_a_change_the_target_refuses_fails_the_run_after_restoring_it(tmp_path):
    world, stack, _, _, _, plan, journal, runtime = setting(tmp_path, text=TRIGGERS)
    world.fail_control_at = 2  # the second change: capacity 0.25 at 25 s
    with pytest.raises(RunFailedError, match=r"the target refused: capacity 0\.25"):
        run(plan, stack, journal, runtime)
    names = world.names()
    assert names[2:] == ["capacity 0.5", "restore", "stop load fixed:100ms", "stop target fixed:100ms", "close metrics"]
    assert 25.0 <= world.events[3][0] < 27.0  # at the next reading, not at the run's end


def test_a_first_change_that_fails_is_restored_all_the_same(tmp_path):
    """It may have reached the target before it failed (an answer lost, an interrupt mid-call)."""
    world, stack, _, _, _, plan, journal, runtime = setting(tmp_path, text=TRIGGERS)
    world.fail_control_at = 1
    with pytest.raises(RunFailedError, match=r"the target refused: capacity 0\.5"):
        run(plan, stack, journal, runtime)
    assert world.names()[2:] == ["restore", "stop load fixed:100ms", "stop target fixed:100ms", "close metrics"]


SLOWS = "".join(line for line in TRIGGERS.splitlines(keepends=True) if "errors:" not in line)


def test_a_slow_of_a_cpu_target_is_one_controller_throttle_per_level_each_guarded(tmp_path):
    """Each level a throttle of the controller, journaled and guarded, ended at the next; errors to the controls."""
    world, stack, _, _, switch, plan, journal, runtime = setting(tmp_path, text=TRIGGERS)
    world.cpu_cut = True
    [record] = run(plan, stack, journal, runtime)
    assert world.events == [
        (0.0, "start target fixed:100ms"),
        (0.0, "start load fixed:100ms"),
        (20.0, "cut target 0.5"),
        (25.0, "uncut target"),  # a change of level: the throttle in force ends, the next starts
        (25.0, "cut target 0.25"),
        (35.0, "uncut target"),
        (40.0, "errors 429 0.5"),
        (45.0, "errors off"),
        (60.0, "restore"),  # the controls' own (the errors); no throttle is in force
        (60.0, "stop load fixed:100ms"),
        (60.0, "stop target fixed:100ms"),
        (60.0, "close metrics"),
    ]
    assert [hold for _, _, hold in switch.armed] == [6.0, 11.0]  # each level's hold + 1 s: the change ends it first
    assert switch.disarmed == ["t1", "t2"]
    assert journal.pending_throttles() == []
    assert [(w.start_s, w.end_s, w.settings()) for w in record.triggers] == [
        (20.0, 25.0, {"capacity": 0.5}),
        (25.0, 35.0, {"capacity": 0.25}),
        (40.0, 45.0, {"status": 429, "probability": 0.5}),
    ]


def test_sigint_during_a_cpu_cut_ends_the_throttle_then_stops_everything(tmp_path):
    world, stack, _, _, switch, plan, journal, runtime = setting(tmp_path, text=SLOWS)
    world.cpu_cut = True
    world.at[("fixed:100ms", 22.0)] = lambda: os.kill(os.getpid(), signal.SIGINT)
    with pytest.raises(RunInterruptedError):
        run(plan, stack, journal, runtime)
    assert world.names() == [
        "start target fixed:100ms",
        "start load fixed:100ms",
        "cut target 0.5",
        "uncut target",
        "restore",
        "stop load fixed:100ms",
        "stop target fixed:100ms",
        "close metrics",
    ]
    assert 22.0 <= world.events[3][0] < 25.0  # when the signal came
    assert switch.disarmed == ["t1"]
    assert journal.pending_throttles() == []


def test_the_display_names_the_trigger_in_force_and_the_next_one(tmp_path):
    _, _, _, _, _, plan, _, runtime = setting(tmp_path, text=TRIGGERS)
    run = StrategyRun(plan.strategies[0], plan.outages, None, None, (1, 1, 0.0), runtime=runtime)
    run.triggers = list(plan.triggers)
    assert run.outage_state(10.0) == "next trigger in 10s"
    assert run.outage_state(22.0) == "slow target to 0.5x its capacity, 8s left"
    assert run.outage_state(41.0) == "errors from target: 429 to 0.5 of the attempts, 4s left"
    assert run.outage_state(50.0) == "no more triggers"


SPIKE = "  - {spike: load, factor: 2, at: 50s, for: 5s}\n"
ANNOTATED = TRIGGERS.replace("  - {errors: target", SPIKE + "  - {errors: target")
WALL_T0_S = 1_767_225_600.0  # the wall clock at the run's time 0 (virtual time runs from 0)


@pytest.fixture
def grafana(monkeypatch):
    """A Grafana stub named by GRAFANA_URL and GRAFANA_TOKEN, as a user sets them."""
    with running_stub() as stub:
        for name in ("GRAFANA_USER", "GRAFANA_PASSWORD"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("GRAFANA_URL", stub.url)
        monkeypatch.setenv("GRAFANA_TOKEN", TOKEN)
        yield stub


def test_each_trigger_window_is_posted_to_grafana_with_its_kind_once_it_ended(tmp_path, grafana):
    _, stack, _, _, _, plan, journal, runtime = setting(tmp_path, text=ANNOTATED)
    [record] = run(plan, stack, journal, dataclasses.replace(runtime, wall=lambda: WALL_T0_S))
    posted = sorted(grafana.annotations, key=lambda annotation: (annotation["time"], annotation["timeEnd"]))
    t0_ms = round(WALL_T0_S * 1000)
    assert [(a["tags"], a["time"] - t0_ms, a["timeEnd"] - t0_ms) for a in posted] == [
        (["retrystorm", "slow", "target", "fake", "fixed:100ms"], 20_000, 25_000),
        (["retrystorm", "slow", "target", "fake", "fixed:100ms"], 25_000, 35_000),
        (["retrystorm", "errors", "target", "fake", "fixed:100ms"], 40_000, 45_000),
        (["retrystorm", "spike", "fake", "fixed:100ms"], 50_000, 55_000),
    ]
    assert posted[1]["text"] == "slow target to 0.25x its capacity for 10.0 s (scenario fake, strategy fixed:100ms)"
    assert [window.kind for window in record.triggers] == ["slow", "slow", "errors", "spike"]


def test_a_failing_grafana_warns_and_the_run_goes_on(tmp_path, grafana, caplog):
    grafana.fail_with = 500
    world, stack, _, _, _, plan, journal, runtime = setting(tmp_path, text=ANNOTATED)
    with caplog.at_level(logging.WARNING, logger="retrystorm.chaos.annotations"):
        [record] = run(plan, stack, journal, runtime)
    assert len(record.triggers) == 4 and world.names()[-1] == "close metrics"
    kinds = sorted(record.message.split()[4] for record in caplog.records if "could not post" in record.message)
    assert kinds == ["errors", "slow", "slow", "spike"]
    assert not grafana.annotations


def test_without_grafana_url_nothing_is_posted(tmp_path, grafana, monkeypatch):
    monkeypatch.delenv("GRAFANA_URL")
    _, stack, _, _, _, plan, journal, runtime = setting(tmp_path, text=ANNOTATED)
    run(plan, stack, journal, runtime)
    assert not grafana.received("POST", "/api/annotations")
