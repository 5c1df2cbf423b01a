"""A duration in a scenario file needs its unit: a bare number is one line naming the field and the units."""

import textwrap

import pytest

from retrystorm.experiment.scenario import ScenarioError, parse_scenario, scenario_from_data

BASE = textwrap.dedent(
    """\
    name: units
    model: exponential
    load: {users: 10, attempt_timeout: 2s, duration: 60s, think_time: 5s}
    strategies: [fixed:100ms]
    faults: [{pause: target, at: 20s, for: 10s}]
    assertions: {fixed:100ms: {server_recovers_within: 15s}}
    """
)


def error_of(text):
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, source="s.yaml")
    return str(caught.value)


def test_the_base_loads():
    assert parse_scenario(BASE).load.attempt_timeout == 2.0


@pytest.mark.parametrize(
    ("written", "replacing", "field", "line"),
    [
        ("attempt_timeout: 2000", "attempt_timeout: 2s", "load.attempt_timeout", 3),
        ("duration: 60", "duration: 60s", "load.duration", 3),
        ("think_time: 5", "think_time: 5s", "load.think_time", 3),
        ("at: 20", "at: 20s", "faults[0].at", 5),
        ("for: 10.5", "for: 10s", "faults[0].for", 5),
        ("recovers_within: 15}", "recovers_within: 15s}", "assertions.fixed:100ms.server_recovers_within", 6),
    ],
)
def test_a_bare_number_is_refused_naming_the_field_and_the_units(written, replacing, field, line):
    message = error_of(BASE.replace(replacing, written))
    number = written.split(": ")[1].rstrip("}")
    assert message == (
        f"s.yaml:{line}: {field}: got {number}, a number without a unit; write {number}ms or {number}s "
        "(expected a number with a unit: 250us, 100ms, 2s, 1.5m, 1h, or a sum like 1m30s)"
    )


def test_a_spec_mapping_needs_units_for_its_durations():
    text = BASE.replace("strategies: [fixed:100ms]", "strategies: [{label: f, strategy: {name: fixed, delay: 100}}]")
    text = text.replace("fixed:100ms: {", "f: {")
    message = error_of(text)
    assert "strategies[0].strategy: strategy 'fixed': delay: got 100, a number without a unit" in message
    assert error_of(BASE.replace("model: exponential", "model: {name: exponential, base_delay: 0.1}")).startswith(
        "s.yaml:2: model: model 'exponential': base_delay: got 0.1, a number without a unit"
    )


def test_zero_needs_no_unit():
    assert parse_scenario(BASE.replace("at: 20s", "at: 0").replace("for: 10s", "for: 10s, random_start: 0")).faults


def test_a_scenario_built_in_code_takes_seconds():
    data = {"name": "c", "model": "exponential", "load": {"users": 1, "duration": 30.0, "attempt_timeout": 2.0},
            "strategies": ["fixed:100ms"]}  # fmt: skip
    assert scenario_from_data(data).load.attempt_timeout == 2.0
