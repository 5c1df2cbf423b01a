"""The heart of ``retrystorm run`` with one-line fakes in virtual time: minutes of runs in milliseconds.

A fake stack (targets, load, readings), a fake fault backend and a recording dead-man
switch, with :class:`~tests.runner.fakes.VirtualTime` as the clock: the order of the
steady state, pauses and resumes; SIGINT mid-outage; a child that dies; a backend that
fails to resume. The real processes are tested end to end once per backend
(``test_live_run.py``, ``compose/test_live_compose_backend.py``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import os
import signal
import textwrap

import pytest

from retrystorm.chaos.backends.base import TargetState
from retrystorm.chaos.journal import Journal
from retrystorm.experiment.scenario import parse_scenario
from retrystorm.runner.cli import RunOptions, run_plan
from retrystorm.runner.errors import RunFailedError
from retrystorm.runner.orchestrate import RunInterruptedError, execute
from retrystorm.runner.plan import make_plan
from retrystorm.runner.progress import Display
from tests.chaos.conftest import RecordingSwitch

from .fakes import VirtualTime, World, fake_runtime, fake_stack

SCENARIO = textwrap.dedent(
    """\
    name: fake
    model: exponential:limit=30
    load: {users: 100, think_time: exponential:1s, attempt_timeout: 2s, duration: 60s}
    strategies: [fixed:100ms, smira]
    faults: [{at: 20s, for: 15s}]
    """
)


class QuietConsole:
    """A console that keeps nothing (the display's lines are not what these tests check)."""

    is_terminal = False

    def print(self, *args: object, **kwargs: object) -> None:
        pass


def setting(tmp_path, *, fail_resume=False, text=SCENARIO):
    time = VirtualTime()
    world = World(time)
    stack, backend, metrics = fake_stack(world, fail_resume=fail_resume)
    switch = RecordingSwitch()
    scenario = parse_scenario(text, source="fake.yaml")
    plan = make_plan(scenario, scenario.strategies)
    journal = Journal(tmp_path / "journal.jsonl")
    return world, stack, backend, metrics, switch, plan, journal, fake_runtime(time, switch)


def run(plan, stack, journal, runtime):
    return asyncio.run(execute(plan, stack, Display(QuietConsole()), journal, runtime))


def test_each_strategy_runs_steady_state_outage_and_recovery_in_order(tmp_path):
    world, stack, _, metrics, switch, plan, journal, runtime = setting(tmp_path)
    records = run(plan, stack, journal, runtime)
    assert world.events == [
        (0.0, "start target fixed:100ms"),
        (0.0, "start load fixed:100ms"),
        (20.0, "pause target"),
        (35.0, "resume target"),
        (60.0, "stop load fixed:100ms"),
        (60.0, "stop target fixed:100ms"),
        (60.0, "start target smira"),
        (60.0, "start load smira"),
        (80.0, "pause target"),
        (95.0, "resume target"),
        (120.0, "stop load smira"),
        (120.0, "stop target smira"),
        (120.0, "close metrics"),
    ]
    assert [record.label for record in records] == ["fixed:100ms", "smira"]
    for record in records:
        assert [reading.tick for reading in record.readings] == list(range(61))
        assert [(outage.start_s, outage.end_s) for outage in record.outages] == [(20.0, 35.0)]
    paused_seconds = [second for second, paused in metrics.reads if paused]
    assert paused_seconds == [*range(20, 35), *range(20, 35)]  # the pause at 20 s before that second's reading
    assert [outage for _, outage, _ in switch.armed] == ["o1", "o2"]
    assert switch.disarmed == ["o1", "o2"]
    assert not journal.pending()


class SlowSwitch(RecordingSwitch):
    """A dead-man switch that takes 0.8 s to arm, as a watchdog's start does on a loaded machine."""

    def __init__(self, time: VirtualTime) -> None:
        super().__init__()
        self.time = time

    def arm(self, ref, outage_id: str, hold_s: float, *, fault: str, undo: dict):
        self.time.now += 0.8
        return super().arm(ref, outage_id, hold_s, fault=fault, undo=undo)


def test_the_recorded_outage_is_the_freeze_itself_not_the_arming_before_it(tmp_path):
    time = VirtualTime()
    world = World(time)
    stack, _, _ = fake_stack(world)
    scenario = parse_scenario(SCENARIO.replace("[fixed:100ms, smira]", "[fixed:100ms]"), source="fake.yaml")
    runtime = fake_runtime(time, SlowSwitch(time))
    (record,) = run(make_plan(scenario, scenario.strategies), stack, Journal(tmp_path / "journal.jsonl"), runtime)
    assert [event for event in world.events if "pause" in event[1] or "resume" in event[1]] == [
        (20.8, "pause target"),
        (35.8, "resume target"),
    ]
    assert [(outage.start_s, outage.end_s) for outage in record.outages] == [(20.8, 35.8)]


def test_sigint_mid_outage_resumes_the_target_stops_everything_and_raises(tmp_path):
    world, stack, backend, _, _, plan, journal, runtime = setting(tmp_path)
    world.at[("fixed:100ms", 25.0)] = lambda: os.kill(os.getpid(), signal.SIGINT)
    with pytest.raises(RunInterruptedError, match="every target was resumed and every process stopped"):
        run(plan, stack, journal, runtime)
    names = world.names()
    assert names[:3] == ["start target fixed:100ms", "start load fixed:100ms", "pause target"]
    assert names[3:] == ["resume target", "stop load fixed:100ms", "stop target fixed:100ms", "close metrics"]
    assert 25.0 <= world.events[3][0] < 35.0  # resumed when the signal came (a second or so), not at the outage's end
    assert not backend.paused
    assert not journal.pending()


def test_a_target_that_dies_fails_the_run_after_resuming_and_stopping_everything(tmp_path):
    world, stack, backend, _, _, plan, journal, runtime = setting(tmp_path)
    world.at[("fixed:100ms", 30.0)] = "die"
    with pytest.raises(RunFailedError, match="the target of fixed:100ms died during the run"):
        run(plan, stack, journal, runtime)
    assert world.names()[-4:] == ["resume target", "stop load fixed:100ms", "stop target fixed:100ms", "close metrics"]
    assert not backend.paused
    assert not journal.pending()
    assert "start target smira" not in world.names()


def test_a_target_that_dies_is_exit_3_on_the_command_line(tmp_path, capsys):
    world, stack, _, _, _, plan, _, runtime = setting(tmp_path)
    world.at[("smira", 40.0)] = "die"
    options = RunOptions(journal=tmp_path / "journal.jsonl", runtime=runtime)
    assert run_plan(plan, stack, tmp_path / "run", options) == 3
    assert "the target of smira died during the run" in capsys.readouterr().err
    assert not (tmp_path / "run" / "results.json").exists()


def test_a_backend_that_fails_to_resume_fails_the_run_and_leaves_the_switch_armed(tmp_path):
    _, stack, backend, _, switch, plan, journal, runtime = setting(tmp_path, fail_resume=True)
    with pytest.raises(RunFailedError, match=r"the outage of 'target' failed: cannot resume .* its watchdog"):
        run(plan, stack, journal, runtime)
    assert [outage for _, outage, _ in switch.armed] == ["o1"]
    assert switch.disarmed == []  # the dead-man switch still guards the target
    assert backend.paused  # it could not be resumed: the switch is the net
    assert journal.pending()  # and the journal says so, for `retrystorm chaos recover`


def test_a_run_without_faults_is_steady_throughout(tmp_path):
    text = SCENARIO.replace("faults: [{at: 20s, for: 15s}]\n", "")
    world, stack, _, _, switch, plan, journal, runtime = setting(tmp_path, text=text)
    records = run(plan, stack, journal, runtime)
    assert "pause target" not in world.names()
    assert switch.armed == []
    assert all(not record.outages for record in records)


def test_a_whole_run_writes_its_folder_and_exits_0(tmp_path, capsys):
    _, stack, _, _, _, plan, _, runtime = setting(tmp_path)
    options = RunOptions(journal=tmp_path / "journal.jsonl", runtime=runtime)
    assert run_plan(plan, stack, tmp_path / "run", options) == 0
    assert {path.name for path in (tmp_path / "run").iterdir()} >= {"results.json", "timeseries.csv", "report.html"}
    assert "run folder:" in capsys.readouterr().out


def test_results_give_the_wall_clock_time_of_each_strategys_time_0(tmp_path):
    _, stack, _, _, _, plan, _, runtime = setting(tmp_path)
    epoch = 1_767_225_600.0  # 2026-01-01T00:00:00Z
    runtime = dataclasses.replace(runtime, wall=lambda: epoch + runtime.clock())
    assert run_plan(plan, stack, tmp_path / "run", RunOptions(journal=tmp_path / "j.jsonl", runtime=runtime)) == 0
    details = json.loads((tmp_path / "run" / "results.json").read_text())["run"]["strategies"]
    first, second = details["fixed:100ms"], details["smira"]
    assert first["t0_utc"].startswith("2026-01-01T00:00:") and first["t0_utc"].endswith("+00:00")
    # the second strategy's time 0 is one run (60 s) and its start-up later than the first's
    assert second["t0_unix_s"] - first["t0_unix_s"] >= 60


def test_a_failed_assertion_exits_1_naming_the_measured_value_and_the_bound(tmp_path, capsys):
    text = SCENARIO + "assertions:\n  smira: {max_peak_in_flight: 5, server_recovers_within: 20s}\n"
    _, stack, _, _, _, plan, _, runtime = setting(tmp_path, text=text)
    options = RunOptions(journal=tmp_path / "journal.jsonl", runtime=runtime)
    assert run_plan(plan, stack, tmp_path / "run", options) == 1
    failed = [line for line in capsys.readouterr().err.splitlines() if line.startswith("assertion failed:")]
    assert failed == ["assertion failed: smira: max_peak_in_flight 5: measured 10 (FAIL)"]


def test_a_saturated_load_generator_marks_the_run_not_valid_and_exits_3(tmp_path, capsys):
    world, stack, _, _, _, plan, _, runtime = setting(tmp_path)
    calls = itertools.count()
    world.cpu_of["smira"] = lambda _now: 0.97 if 30 <= next(calls) < 40 else 0.3  # 10 of its 60 s at a full core
    options = RunOptions(journal=tmp_path / "journal.jsonl", runtime=runtime)
    assert run_plan(plan, stack, tmp_path / "run", options) == 3
    captured = capsys.readouterr()
    assert "retrystorm run: not valid: the load generator was saturated during smira" in captured.err
    assert (
        "NOT VALID smira: its load generator was saturated 16.7 % of the run (a Locust process at 97%" in captured.out
    )
    assert "ok    fixed:100ms: the load generator kept up (busiest process at most 20% of a core)" in captured.out
    assert "But the run of smira was not valid" in captured.out  # the winner line says so
    document = json.loads((tmp_path / "run" / "results.json").read_text())
    rows = {row["strategy"]: row["validity"] for row in document["results"]}
    assert rows["smira"]["valid"] is False and rows["smira"]["cpu_saturated_s"] == 10
    assert rows["fixed:100ms"]["valid"] is True
    assert document["valid"] is False
    assert (
        "Validity: did the service work in its steady state, and the load generator keep up?"
        in (tmp_path / "run" / "report.html").read_text()
    )


def test_allow_saturated_keeps_the_assertions_exit_status_and_still_says_so(tmp_path, capsys):
    world, stack, _, _, _, plan, _, runtime = setting(tmp_path)
    world.cpu_of["smira"] = lambda _now: 1.0
    options = RunOptions(journal=tmp_path / "journal.jsonl", runtime=runtime, allow_saturated=True)
    assert run_plan(plan, stack, tmp_path / "run", options) == 0
    assert "--allow-saturated: exit status from the assertions" in capsys.readouterr().err


def test_a_short_spell_of_saturation_within_5_percent_is_still_valid(tmp_path):
    world, stack, _, _, _, plan, _, runtime = setting(tmp_path)
    calls = itertools.count()
    world.cpu_of["smira"] = lambda _now: 0.95 if 30 <= next(calls) < 33 else 0.3  # 3 of its 60 s
    options = RunOptions(journal=tmp_path / "journal.jsonl", runtime=runtime)
    assert run_plan(plan, stack, tmp_path / "run", options) == 0
    document = json.loads((tmp_path / "run" / "results.json").read_text())
    assert document["valid"] is True


@pytest.mark.parametrize(
    ("status", "fix"),
    [
        (404, "the request does not fit the service: check requests: (method, path, headers, body) and target.url"),
        (503, "the service fails under the load alone: fix it, or lower the load"),
    ],
)
def test_a_steady_state_of_errors_stops_the_run_before_any_trigger_with_exit_3(tmp_path, capsys, status, fix):
    world, stack, _, _, switch, plan, _, runtime = setting(tmp_path)
    world.status_of["fixed:100ms"] = status
    options = RunOptions(journal=tmp_path / "journal.jsonl", runtime=runtime)
    assert run_plan(plan, stack, tmp_path / "run", options) == 3
    assert "pause target" not in world.names() and switch.armed == []  # no outage was spent on it
    assert "start target smira" not in world.names()  # nor another strategy's run
    lines = capsys.readouterr().err.splitlines()
    assert lines[-1] == (
        f"retrystorm run: not valid: fixed:100ms: GET /api answered {status} on 100% of its attempts (900 of 900) "
        f"in the steady window (from 10s to 19s); {fix} (stopped before any trigger)"
    )


def test_a_run_without_triggers_whose_steady_state_failed_is_exit_3_without_a_winner(tmp_path, capsys):
    world, stack, _, _, _, plan, _, runtime = setting(
        tmp_path, text=SCENARIO.replace("faults: [{at: 20s, for: 15s}]\n", "")
    )
    world.status_of["smira"] = 405
    options = RunOptions(journal=tmp_path / "journal.jsonl", runtime=runtime)
    assert run_plan(plan, stack, tmp_path / "run", options) == 3
    captured = capsys.readouterr()
    assert "retrystorm run: not valid: smira: GET /api answered 405 on 100% of its attempts" in captured.err
    assert "No winner: the service was not working in the steady state of smira" in captured.out
    document = json.loads((tmp_path / "run" / "results.json").read_text())
    rows = {row["strategy"]: row["steady_state"] for row in document["results"]}
    assert rows["smira"]["valid"] is False and rows["fixed:100ms"]["valid"] is True
    assert rows["fixed:100ms"]["ok_share"] == 1.0 and document["valid"] is False


def test_a_label_matplotlib_would_read_as_mathtext_still_gets_its_report(tmp_path):
    text = SCENARIO.replace("[fixed:100ms, smira]", "[{label: '$\\undefinedcmd{x}$', strategy: 'fixed:100ms'}, smira]")
    _, stack, _, _, _, plan, _, runtime = setting(tmp_path, text=text)
    assert run_plan(plan, stack, tmp_path / "run", RunOptions(journal=tmp_path / "j.jsonl", runtime=runtime)) == 0
    assert "$\\undefinedcmd{x}$" in (tmp_path / "run" / "report.html").read_text()


def test_a_report_that_cannot_be_drawn_loses_neither_the_results_nor_the_verdicts(tmp_path, capsys, monkeypatch):
    """The results and the verdicts come first; a failing report step is one line and the verdicts' status."""

    def fail(*_args, **_kwargs):
        raise ValueError("the drawing\nfailed")

    monkeypatch.setattr("retrystorm.runner.outputs.write_report_files", fail)
    text = SCENARIO + "assertions:\n  smira: {max_peak_in_flight: 5}\n"
    _, stack, _, _, _, plan, _, runtime = setting(tmp_path, text=text)
    assert run_plan(plan, stack, tmp_path / "run", RunOptions(journal=tmp_path / "j.jsonl", runtime=runtime)) == 1
    captured = capsys.readouterr()
    assert "What happened, and why" in captured.out and "report:" not in captured.out
    assert [line for line in captured.err.splitlines() if not line.startswith("[")] == [
        (
            "retrystorm: the report could not be drawn (ValueError: the drawing failed); results.json and the "
            "verdicts stand"
        ),
        "assertion failed: smira: max_peak_in_flight 5: measured 10 (FAIL)",
    ]
    document = json.loads((tmp_path / "run" / "results.json").read_text())
    assert [row["strategy"] for row in document["results"]] == ["fixed:100ms", "smira"]
    assert (tmp_path / "run" / "timeseries.csv").is_file()


def test_a_pause_that_froze_nothing_is_no_outage_and_names_no_winner(tmp_path, capsys, monkeypatch):
    """Issue 23, item 8: a target whose processes kept running through the pause (they left the group, the signal
    did not take) fails the run in one line; nothing is judged and nothing stays paused."""
    world, stack, backend, _, _, plan, journal, runtime = setting(tmp_path)
    monkeypatch.setattr(backend, "state", lambda _ref: TargetState.RUNNING)
    assert run_plan(plan, stack, tmp_path / "run", RunOptions(journal=journal.path, runtime=runtime)) == 3
    captured = capsys.readouterr()
    (line,) = [line for line in captured.err.splitlines() if not line.startswith("[")]
    assert line.startswith("retrystorm run: the outage of 'target' failed: the pause of 'target' did not freeze 1 of ")
    assert "nothing counts as an outage" in line
    assert "What happened, and why" not in captured.out
    assert not (tmp_path / "run" / "results.json").exists()
    assert "start target smira" not in world.names()
    assert not backend.paused
    assert not journal.pending()
