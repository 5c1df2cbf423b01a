"""The plan of a run and the phase of a moment."""

import pytest

from retrystorm.errors import UserError
from retrystorm.experiment.scenario import (
    ErrorsFault,
    ErrorWindow,
    Fault,
    OutageWindow,
    RunSpec,
    SlowFault,
    SlowWindow,
    SpikeFault,
    SpikeWindow,
)
from retrystorm.runner.live_triggers import builtin_refusal, foreign_refusal
from retrystorm.runner.plan import check_fault_targets, check_live_triggers, make_plan, phase_at, select

OUTAGES = [OutageWindow(20.0, 35.0), OutageWindow(50.0, 55.0)]


@pytest.mark.parametrize(
    ("time_s", "phase"),
    [(0.0, "ramp-up"), (9.9, "ramp-up"), (10.0, "steady"), (20.0, "outage"), (34.9, "outage"), (35.0, "recovery"),
     (50.0, "outage"), (60.0, "recovery")],
)  # fmt: skip
def test_phase_at(time_s, phase):
    assert phase_at(time_s, OUTAGES) == phase


@pytest.mark.parametrize(
    ("time_s", "phase"),
    [(9.0, "ramp-up"), (12.0, "steady"), (20.0, "slow"), (26.0, "slow and spike"), (30.0, "recovery"),
     (40.0, "errors")],
)  # fmt: skip
def test_the_phase_names_the_trigger_in_force_not_steady(time_s, phase):
    windows = [
        SlowWindow(20.0, 30.0, capacity=0.2), SpikeWindow(25.0, 28.0, "load", factor=2.0),
        ErrorWindow(40.0, 45.0, status=503, probability=0.5),
    ]  # fmt: skip
    assert phase_at(time_s, windows) == phase


def test_every_time_in_a_plan_reads_in_seconds_one_way(small):
    faults = [
        Fault.model_validate({"pause": "target", "at": 40 / 3 * 2, "for": 7.5}),
        SlowFault.model_validate({"slow": "target", "capacity": 0.4, "at": 60, "for": 60}),
    ]
    scenario = small.model_copy(update={"faults": faults, "load": small.load.model_copy(update={"duration": 150})})
    plan = make_plan(scenario, scenario.strategies)
    steps = [(step.at_s, step.what) for step in plan.strategies[0].steps]
    texts = " ".join(what for _, what in steps)
    assert "steady window until 26.667s" in texts and "pause target for 7.5s" in texts
    assert "slow target to 0.4x its capacity for 60s" in texts
    assert not any(unit in texts for unit in ("ms ", "1m", "3333"))


def test_without_outages_every_moment_is_steady():
    assert phase_at(0.0, []) == "steady"


def test_steps_in_time_order_with_checks(small):
    plan = make_plan(small, small.strategies)
    steps = [(step.at_s, step.what) for step in plan.strategies[0].steps]
    assert [at for at, _ in steps] == [0.0, 10.0, 20.0, 25.0, 40.0]
    assert steps[2][1] == "pause target for 5s"
    assert plan.strategies[0].checks == ["server_recovers_within never", "client_recovers_within never"]
    assert plan.strategies[1].checks[0] == "server_recovers_within 10s"
    assert plan.estimated_s == pytest.approx(2 * (40 + 10))
    assert plan.outages == [OutageWindow(20.0, 25.0)]


def test_select_keeps_the_scenario_order_and_names_the_labels(small):
    assert [entry.label for entry in select(small, ["smira", "fixed:100ms"])] == ["fixed:100ms", "smira"]
    assert [entry.label for entry in select(small, [])] == ["fixed:100ms", "smira"]
    with pytest.raises(UserError, match=r"no strategy labelled 'EB' in small; labels: fixed:100ms, smira"):
        select(small, ["EB"])


def test_unknown_fault_target():
    check_fault_targets([OutageWindow(1, 2, "target")], lambda _kind: ["target"], "local stack")
    with pytest.raises(UserError, match=r"'db' is not a target of the local stack; accepted: target"):
        check_fault_targets([OutageWindow(1, 2, "db")], lambda _kind: ["target"], "local stack")


def test_each_strategy_runs_its_resolved_spec(small):
    plan = make_plan(small, small.strategies)
    assert [strategy.spec for strategy in plan.strategies] == [RunSpec.of(small, entry) for entry in small.strategies]


def test_the_plan_lists_every_trigger_at_its_start_and_end(small):
    faults = [
        *small.faults,
        SlowFault.model_validate({"slow": "target", "capacity": 0.4, "at": 26, "for": 4}),
        SpikeFault.model_validate({"spike": "load", "factor": 2, "at": 30, "for": 2}),
        ErrorsFault.model_validate({"errors": "target", "status": 429, "probability": 0.5, "at": 33, "for": 1}),
    ]
    scenario = small.model_copy(update={"faults": faults})
    plan = make_plan(scenario, scenario.strategies)
    steps = [(step.at_s, step.what) for step in plan.strategies[0].steps]
    assert steps[2:10] == [
        (20.0, "pause target for 5s"),
        (25.0, "resume target"),
        (26.0, "slow target to 0.4x its capacity for 4s"),
        (30.0, "end: slow target to 0.4x its capacity"),
        (30.0, "spike the load 2x for 2s"),
        (32.0, "end: spike the load 2x"),
        (33.0, "errors from target: 429 to 0.5 of the attempts for 1s"),
        (34.0, "end: errors from target: 429 to 0.5 of the attempts"),
    ]
    assert [window.kind for window in plan.triggers] == ["slow", "spike", "errors"]


def test_a_trigger_the_stack_cannot_play_is_refused_naming_it_and_what_would_make_it_possible(small):
    errors = ErrorsFault.model_validate({"errors": "target", "status": 503, "at": 33, "for": 1})
    spike = SpikeFault.model_validate({"spike": "load", "factor": 2, "at": 30, "for": 2})
    own = small.model_copy(update={"faults": [*small.faults, errors]})
    with pytest.raises(UserError, match=r"^faults\[1\]: errors: target: your own service.*needs a fault proxy"):
        check_live_triggers(own, foreign_refusal)
    check_live_triggers(own, builtin_refusal)  # the built-in target takes an error burst
    spiking = small.model_copy(update={"faults": [spike, errors]})
    check_live_triggers(spiking, builtin_refusal)  # a spike is the load driver's to refuse
    refused = "not available live on this stack; run it with retrystorm sim run SCENARIO"
    with pytest.raises(UserError, match=r"^faults\[0\]: spike: load: not available live on this stack; run it"):
        check_live_triggers(spiking, lambda kind: refused if kind == "spike" else None)
    check_live_triggers(small, foreign_refusal)  # pauses only: every stack plays them


def test_a_slow_or_errors_trigger_names_a_target_of_the_stack(small):
    plan = make_plan(small, small.strategies)
    window = SlowWindow(1, 2, "db", capacity=0.5)
    with pytest.raises(UserError, match=r"^faults: slow: 'db' is not a target of the local stack; accepted: target$"):
        check_fault_targets([*plan.outages, window], lambda _kind: ["target"], "local stack")
    check_fault_targets([SpikeWindow(1, 2, "load", factor=2.0)], lambda _kind: ["target"], "local stack")
