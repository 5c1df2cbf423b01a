"""Triggers in scenarios: pause, slow, spike and errors, their windows, levels and episodes; bad ones refused."""

import random
import textwrap

import pytest

from retrystorm.experiment.scenario import (
    Episode,
    ErrorWindow,
    FaultPlan,
    OutageWindow,
    ScenarioError,
    SlowWindow,
    SpikeWindow,
    Timeline,
    expand_faults,
    parse_scenario,
)
from retrystorm.experiment.scenario.timeline import highest_probability, levels, lowest_capacity

HEAD = textwrap.dedent(
    """\
    name: t
    model: fixed
    load: {users: 10, duration: 100s}
    strategies: [none]
    faults:
    """
)


def scenario(*faults: str):
    return parse_scenario(HEAD + "".join(f"  - {fault}\n" for fault in faults), source="t.yaml")


def error_of(*faults: str) -> str:
    with pytest.raises(ScenarioError) as refused:
        scenario(*faults)
    return str(refused.value)


def test_each_kind_becomes_its_own_window_and_pauses_still_merge():
    timeline = scenario(
        "{pause: target, at: 20s, for: 10s}",
        "{at: 25s, for: 10s}",  # no kind: a pause of target, as before
        "{slow: target, capacity: 0.4, at: 60s, for: 10s}",
        "{spike: load, factor: 2, at: 20s, for: 5s}",
        "{errors: target, status: 429, probability: 0.5, at: 30s, for: 5s}",
        "{errors: target, at: 40s, for: 5s}",
    ).timeline()
    assert timeline.outages == (OutageWindow(20, 35),)
    assert timeline.triggers == (
        SpikeWindow(20, 25, "load", factor=2),
        ErrorWindow(30, 35, "target", status=429, probability=0.5),
        ErrorWindow(40, 45, "target", status=503, probability=1.0),  # the target's fault rule's defaults
        SlowWindow(60, 70, "target", capacity=0.4),
    )
    assert [w.kind for w in timeline.windows()] == ["spike", "pause", "errors", "errors", "slow"]
    assert timeline.triggers[-1].to_json() == {
        "kind": "slow", "target": "target", "start_s": 60, "end_s": 70, "capacity": 0.4,
    }  # fmt: skip


def test_repeat_and_random_start_apply_to_every_kind_and_follow_the_seed():
    plan = FaultPlan("target", 10, 5, every_s=30, times=3, random_start_s=4, window=SlowWindow,
                     settings=(("capacity", 0.5),))  # fmt: skip
    windows = expand_faults([plan], 200, random.Random(3))
    assert windows == expand_faults([plan], 200, random.Random(3))
    assert len(windows) == 3
    for index, window in enumerate(windows):
        assert isinstance(window, SlowWindow)
        assert window.capacity == 0.5
        assert 10 + 30 * index <= window.start_s < 14 + 30 * index
        assert window.duration_s == pytest.approx(5)


def test_a_pause_only_scenario_draws_the_same_outages_as_before():
    text = "{at: 10s, for: 10s, repeat: {every: 30s, times: 2}, random_start: 3s}"
    alone = scenario(text).timeline()
    with_others = scenario(text, "{slow: target, capacity: 0.5, at: 80s, for: 5s}").timeline()
    assert alone.outages == with_others.outages
    assert alone.episodes() == list(alone.outages)


def test_overlapping_slows_the_lowest_capacity_holds():
    windows = [SlowWindow(10, 30, capacity=0.5), SlowWindow(20, 25, capacity=0.2), SlowWindow(25, 40, capacity=0.8)]
    found = [(level.at_s, level.window and level.window.capacity) for level in levels(windows, lowest_capacity)]
    assert found == [(10, 0.5), (20, 0.2), (25, 0.5), (30, 0.8), (40, None)]


def test_overlapping_errors_the_highest_probability_holds_with_its_status():
    windows = [ErrorWindow(0, 10, status=503, probability=0.3), ErrorWindow(5, 8, status=429, probability=0.9)]
    found = [(level.at_s, level.window and level.window.settings()) for level in levels(windows, highest_probability)]
    assert found == [
        (0, {"status": 503, "probability": 0.3}),
        (5, {"status": 429, "probability": 0.9}),
        (8, {"status": 503, "probability": 0.3}),
        (10, None),
    ]


def test_back_to_back_windows_change_level_once_per_instant():
    windows = [SlowWindow(10, 20, capacity=0.5), SlowWindow(20, 30, capacity=0.5)]
    assert [level.at_s for level in levels(windows, lowest_capacity)] == [10, 30]


def test_episodes_merge_overlapping_or_touching_triggers_of_any_kind():
    timeline = Timeline.of(
        [OutageWindow(20, 30), SlowWindow(25, 40, capacity=0.5), SpikeWindow(40, 45, "load", factor=2),
         ErrorWindow(60, 65, status=503, probability=1.0)]
    )  # fmt: skip
    found = timeline.episodes()
    assert [(e.start_s, e.end_s) for e in found] == [(20, 45), (60, 65)]
    assert isinstance(found[0], Episode)
    assert found[0].kinds == ["pause", "slow", "spike"]


@pytest.mark.parametrize(
    ("fault", "expected"),
    [
        (
            "{freeze: target, at: 20s, for: 10s}",
            "t.yaml:6: faults[0]: 'freeze' is no kind of trigger; kinds: pause, slow, spike, errors",
        ),
        ("{pause: target, spike: load, at: 2s, for: 1s}", "t.yaml:6: faults[0]: names pause and spike: one trigger"),
        (
            "{slow: target, capcity: 0.4, at: 60s, for: 10s}",
            "t.yaml:6: faults[0].capcity: unknown field (did you mean 'capacity'?); accepted:",
        ),
        ("{slow: target, capacity: 0, at: 60s, for: 10s}", "t.yaml:6: faults[0].capacity: got 0; expected greater"),
        (
            "{slow: target, capacity: 5e-324, at: 60s, for: 10s}",
            "faults[0].capacity: got '5e-324'; expected greater than or equal to 0.001",
        ),
        (
            "{slow: target, capacity: 0.0009, at: 60s, for: 10s}",
            "capacity: got 0.0009; expected greater than or equal to 0.001",
        ),
        ("{slow: target, capacity: 1.5, at: 60s, for: 10s}", "faults[0].capacity: got 1.5; expected less than or"),
        ("{slow: target, at: 60s, for: 10s}", "faults[0].capacity: missing"),
        ("{spike: users, factor: 2, at: 2s, for: 1s}", "faults[0].spike: got 'users'; expected 'load'"),
        (
            "{spike: load, factor: 101, at: 2s, for: 1s}",
            "faults[0].factor: got 101; expected less than or equal to 100",
        ),
        ("{spike: load, factor: 0.5, at: 2s, for: 1s}", "faults[0].factor: got 0.5; expected greater than or equal"),
        ("{errors: target, status: 404, at: 2s, for: 1s}", "faults[0].status: got 404; expected 429 or 500 to 599"),
        ("{errors: target, probability: 1.2, at: 2s, for: 1s}", "faults[0].probability: got 1.2; expected less"),
        ("{slow: target, capacity: 0.5, at: 2s, for: 2h}", "faults[0].for: got 7200.0; expected less than or equal"),
        ("{spike: load, factor: 2, at: 95s, for: 10s}", "faults[0]: may end at 105s, after the run ends"),
        ("pause", "t.yaml:6: faults[0]: got 'pause'; expected a trigger, e.g."),
    ],
)
def test_bad_triggers_are_one_line_naming_file_line_and_field(fault, expected):
    assert expected in error_of(fault)


def test_unknown_field_lists_the_kinds_own_fields():
    assert error_of("{errors: target, stats: 503, at: 2s, for: 1s}").endswith(
        "faults[0].stats: unknown field (did you mean 'status'?); "
        "accepted: at, for, repeat, random_start, errors, status, probability"
    )


def test_a_spike_may_not_take_the_load_past_the_ceilings():
    text = HEAD.replace("users: 10", "users: 600000") + "  - {spike: load, factor: 2, at: 2s, for: 1s}\n"
    with pytest.raises(ScenarioError, match=r"faults\[0\]\.factor: load.users x factor is above 1,000,000 users"):
        parse_scenario(text, source="t.yaml")
