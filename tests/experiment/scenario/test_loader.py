"""Scenario files: every shipped one loads; every error is one line naming file, line and field."""

import textwrap

import pytest

from retrystorm.experiment.scenario import (
    ScenarioError,
    load_scenario,
    parse_scenario,
    scenario_from_data,
    shipped_names,
)
from retrystorm.experiment.scenario.loader import MAX_ERROR_LINES
from retrystorm.loadgen.strategies import BUDGETS, STRATEGIES, ExponentialBackoff, FixedBackoff, SmiraBackoff
from retrystorm.loadgen.strategies.jitter import MODES
from retrystorm.loadgen.think import BetweenThink, ConstantThink, ExponentialThink, parse_think_time

#: What a think-time error says is accepted.
THINK_FORMS = (
    "a duration (finite, >= 0 and <= 24h: the mean of an exponential think time, like 10s) "
    "or one of exponential:10s, constant:1s, between:1s,3s"
)
BASE = textwrap.dedent(
    """\
    name: test
    seed: 7
    model: exponential:limit=30
    load:
      users: 100
      think_time: exponential:10s
      attempt_timeout: 2s
      duration: 60s
    strategies:
      - fixed:100ms
      - label: S
        strategy: smira
      - {name: exponential, base: 100ms, jitter: full}
    faults:
      - pause: target
        at: 20s
        for: 10s
    assertions:
      S:
        server_recovers_within: 15s
    """
)


def error_of(text):
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, source="s.yaml")
    message = str(caught.value)
    assert all(line.startswith("s.yaml:") for line in message.splitlines())  # one located line per problem
    return message


@pytest.mark.parametrize("name", shipped_names())
def test_every_shipped_scenario_loads(name):
    scenario = load_scenario(name)
    assert scenario.name == name
    assert scenario.strategies
    assert scenario.description.strip(), "retrystorm scenarios lists the first line of each description"


def test_jitter_shootout_has_every_strategy_family_jitter_mode_and_budget():
    """What its description promises: the same outage for every strategy `retrystorm strategies` lists.

    The presets, and the budgets only they use (Envoy's, the AWS rate limiter), are in real-clients.
    """
    entries = load_scenario("jitter-shootout").strategies
    families = {name for name, cls in STRATEGIES.items() if not cls.is_preset}
    assert {entry.strategy.name for entry in entries} == families
    jitters = {entry.strategy.jitter.mode for entry in entries if isinstance(entry.strategy, ExponentialBackoff)}
    assert jitters == set(MODES)
    budgets = {entry.budget.name for entry in entries if entry.budget is not None}
    real = load_scenario("real-clients")
    preset_budgets = {budget.name for entry in real.strategies if (budget := entry.budget_for(real.load))}
    assert budgets | preset_budgets == set(BUDGETS.names())


def test_strategy_forms_and_their_labels():
    scenario = parse_scenario(BASE)
    labels = scenario.labels()
    assert labels == ["fixed:100ms", "S", "exponential:base=100ms,factor=2,max=5m,jitter=full"]
    kinds = [type(entry.strategy) for entry in scenario.strategies]
    assert kinds == [FixedBackoff, SmiraBackoff, ExponentialBackoff]
    assert scenario.load.think_time.mean_s == 10.0
    assert [(o.start_s, o.end_s) for o in scenario.outages()] == [(20.0, 30.0)]


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ("exponential:10s", ExponentialThink(average_s=10.0)),
        ("between:1s,3s", BetweenThink(low_s=1.0, high_s=3.0)),
        ("constant:0s", ConstantThink(wait_s=0.0)),
        ("2s", ExponentialThink(average_s=2.0)),  # a bare duration: the mean, as the Locust flag reads it
        ("{name: constant, wait: 250ms}", ConstantThink(wait_s=0.25)),
    ],
)
def test_think_times_are_the_locust_users(written, expected):
    """The scenario reads ``load.think_time`` as the Locust user reads ``--think-time``: one ThinkTime."""
    scenario = parse_scenario(BASE.replace("exponential:10s", written, 1))
    assert scenario.load.think_time == expected
    assert parse_think_time(scenario.load.think_time.spec()) == expected


def test_entry_controls_override_the_load_defaults():
    text = BASE.replace("  - fixed:100ms\n", "  - {label: F, strategy: fixed:100ms, max_attempts: 3, budget: tokens}\n")
    scenario = parse_scenario(text.replace("duration: 60s", "duration: 60s\n  max_attempts: 9"))
    fixed, smira = scenario.strategies[0], scenario.strategies[1]
    assert fixed.label == "F"
    assert fixed.policy(scenario.load).max_attempts == 3
    assert smira.policy(scenario.load).max_attempts == 9
    assert fixed.budget is not None and fixed.budget.name == "tokens"


def test_overrides_reach_into_sections():
    scenario = parse_scenario(BASE, overrides={"load.users": 5, "seed": 3})
    assert (scenario.load.users, scenario.seed) == (5, 3)


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("users: 100", "users: 0", "s.yaml:5: load.users: got 0; expected greater than or equal to 1"),
        (
            "users: 100",
            "userz: 100",
            "s.yaml:5: load.userz: unknown field (did you mean 'users'?); accepted: users, spawn_rate,",
        ),
        (
            "exponential:10s",
            "exp:10s",
            f"s.yaml:6: load.think_time: got 'exp:10s', an unknown kind 'exp'; expected {THINK_FORMS}",
        ),
        (
            "exponential:10s",
            "soon",
            f"s.yaml:6: load.think_time: got 'soon'; expected {THINK_FORMS}",
        ),
        ("exponential:10s", "between:3s,1s", "s.yaml:6: load.think_time: think time 'between': max: must be at least"),
        ("exponential:10s", "constant:10", "s.yaml:6: load.think_time: think time 'constant': wait: got '10' (add a"),
        (
            "exponential:10s",
            "exponential:inf",
            "s.yaml:6: load.think_time: think time 'exponential': mean: got inf; expected a finite duration >= 0",
        ),
        ("attempt_timeout: 2s", "attempt_timeout: two", "s.yaml:7: load.attempt_timeout: got 'two'; expected"),
        ("- fixed:100ms", "- bogus:1s", "s.yaml:10: strategies[0].strategy: unknown strategy 'bogus'; valid:"),
        ("strategy: smira", "strategy: smira:factor=0.5", "s.yaml:12: strategies[1].strategy: strategy 'smira': "),
        ("for: 10s", "for: 300s", "s.yaml:15: faults[0]: may end at 320s, after the run ends"),
        ("  S:\n", "  T:\n", "s.yaml:19: assertions.T: no strategy labelled 'T'; labels: fixed:100ms, S,"),
        ("exponential:limit=30", "expo", "s.yaml:3: model: unknown model 'expo' (did you mean 'exponential'?); valid:"),
        ("for: 10s", "for: 10s\n    for: 5s", "s.yaml:18: faults[0].for: given twice; keep one"),
        ("users: 100", "users: [1", "s.yaml:6: not valid YAML:"),
        ("within: 15s", "within: soon", "s.yaml:20: assertions.S.server_recovers_within: got 'soon'; expected"),
        ("duration: 60s", "duration: 60s\n  arrival: open", "s.yaml:9: load.arrival: open arrivals need load.rate"),
        ("duration: 60s", "duration: 60s\n  rate: 5", "s.yaml:9: load.rate: only used with arrival: open"),
        ("seed: 7", "seed: one", "s.yaml:2: seed: got 'one'; expected a valid integer"),
        ("    at: 20s\n", "", "s.yaml:15: faults[0].at: missing; this field is required"),
        ("label: S", "label: fixed:100ms", "s.yaml:11: strategies[1].label: duplicate label 'fixed:100ms'"),
        ("for: 10s", "for: 10s\n    repeat: {every: 0s}", "s.yaml:18: faults[0].repeat.every: got '0s'; expected"),
    ],
)
def test_bad_scenarios_name_file_line_field_and_what_is_accepted(old, new, expected):
    assert old in BASE
    assert error_of(BASE.replace(old, new, 1)).startswith(expected)


def test_recovery_assertions_need_a_trigger():
    text = BASE.split("faults:")[0] + "assertions:\n  S:\n    client_recovers_within: never\n"
    assert error_of(text) == (
        "s.yaml:16: assertions.S.client_recovers_within: needs a trigger to recover from; add one under faults"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "s.yaml:1: the file is empty; expected a scenario mapping"),
        ("- a\n- b\n", "s.yaml:1: expected a mapping with name, model, load, strategies; got ['a', 'b']"),
        (
            "name: x\n",
            ("s.yaml:1: load: missing; this field is required\ns.yaml:1: strategies: missing; this field is required"),
        ),
    ],
)
def test_files_that_are_not_scenarios(text, expected):
    assert error_of(text) == expected


def test_unreadable_file(tmp_path):
    with pytest.raises(ScenarioError, match=r"nope\.yaml: cannot read the scenario"):
        load_scenario(tmp_path / "nope.yaml")


def test_data_from_flags_is_validated_without_line_numbers():
    data = {"name": "x", "model": "fixed", "load": {"users": 1, "duration": "10s", "arrival": "open"}}
    data["strategies"] = ["none"]
    with pytest.raises(ScenarioError, match=r"^command line: load\.arrival: open arrivals need load\.rate"):
        scenario_from_data(data)


def test_every_problem_is_listed_one_line_each_with_the_closest_name():
    text = "name: x\nmodel: exponential:limt=30\nlod: {users: 3}\nstrategies: [fixed:100ms]\n"
    assert error_of(text).splitlines() == [
        (
            "s.yaml:3: lod: unknown field (did you mean 'load'?); accepted: "
            "name, description, seed, model, target, grpc, requests, retry_on, load, strategies, faults, assertions, "
            "slo, sim, hosts"
        ),
        "s.yaml:1: load: missing; this field is required",
        (
            "s.yaml:2: model: model 'exponential': unknown parameter 'limt' (did you mean 'limit'?); "
            "accepted: base_delay, limit, factor, k, tick, max_delay, overflow"
        ),
    ]


def test_cross_field_problems_are_all_listed():
    text = BASE.split("faults:")[0] + "assertions:\n  SS: {min_success_ratio: 0.5}\n  T: {min_success_ratio: 0.5}\n"
    lines = error_of(text).splitlines()
    assert len(lines) == 2
    assert "no strategy labelled 'SS' (did you mean 'S'?)" in lines[0]
    assert "no strategy labelled 'T'" in lines[1]


def test_a_file_with_many_problems_lists_a_bounded_number():
    strategies = "".join(f"  - nosuch{index}\n" for index in range(MAX_ERROR_LINES + 5))
    lines = error_of(
        f"name: x\nmodel: fixed\nload: {{users: 1, duration: 10s}}\nstrategies:\n{strategies}"
    ).splitlines()
    assert len(lines) == MAX_ERROR_LINES + 1
    assert lines[-1] == "s.yaml: and 5 more problems"
