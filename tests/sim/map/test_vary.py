"""``--vary PATH=RANGE``: paths into a scenario, ranges with units and log spacing; every error names the field."""

import copy

import pytest
import yaml

from retrystorm.errors import UserError
from retrystorm.experiment.scenario import scenario_from_data
from retrystorm.sim.map.build import parse_mark
from retrystorm.sim.map.vary import parse_path, parse_vary, set_value

TEXT = """
name: t
model: linear:base_delay=10ms,slope=1ms
load: {users: 100, think_time: exponential:2s, duration: 60s}
strategies: [fixed:100ms, {label: EB, strategy: "exponential:base=100ms,jitter=full"}]
faults:
  - {slow: target, capacity: 0.4, at: 20s, for: 10s}
"""
DATA = yaml.safe_load(TEXT)
SCENARIO = scenario_from_data(copy.deepcopy(DATA))


def test_paths_read_as_the_loader_names_fields():
    assert parse_path("faults[0].for") == ("faults", 0, "for")
    assert parse_path("load.users") == ("load", "users")
    assert parse_path("strategies[1].strategy.base") == ("strategies", 1, "strategy", "base")


@pytest.mark.parametrize(
    ("text", "values", "duration", "integer", "scale"),
    [
        ("faults[0].for=5s..60s:12", (5.0, 10.0, 15.0), True, False, "linear"),
        ("faults[0].for=500ms,1s,2s", (0.5, 1.0, 2.0), True, False, "linear"),
        ("load.users=200..2000:10", (200.0, 400.0, 600.0), False, True, "linear"),
        ("load.users=10..1000:3:log", (10.0, 100.0, 1000.0), False, True, "log"),
        ("faults[0].capacity=0.1..0.5:5", (0.1, 0.2, 0.3), False, False, "linear"),
        ("faults[0].random_start=0..2s:3", (0.0, 1.0, 2.0), True, False, "linear"),  # a default counts
        ("model.slope=1ms..3ms:3", (0.001, 0.002, 0.003), True, False, "linear"),
        ("strategies[1].strategy.base=50ms..150ms:3", (0.05, 0.1, 0.15), True, False, "linear"),
    ],
)
def test_ranges_and_lists(text, values, duration, integer, scale):
    axis = parse_vary(text, SCENARIO)
    assert axis.values[: len(values)] == pytest.approx(values)
    assert (axis.duration, axis.integer, axis.scale) == (duration, integer, scale)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("load.user=1..2:2", "--vary load.user=1..2:2: load.user: no such field; fields here: users, spawn_rate"),
        ("faults[3].for=1s..2s:2", "faults[3]: faults has 1 entries here"),
        ("faults.for=1s..2s:2", "faults.for: faults is a list; give an index"),
        ("load[0].users=1..2:2", "load is not a list"),
        ("load.think_time=1s..2s:2", "load.think_time holds ExponentialThink in this scenario, not a number"),
        ("sim.accept_backlog=1..9:2", "sim.accept_backlog holds null in this scenario"),
        ("model.limit=1..9:2", "model.limit: 'linear' has no parameter 'limit'; parameters: base_delay, slope"),
        ("faults[0].for=5..60", "expected LO..HI:N or LO..HI:N:log"),
        ("faults[0].for=5x..60s:3", "got '5x'; this field takes a duration"),
        ("faults[0].for=5..60:3", "got '5'; this field takes a duration with its unit (5s, 100ms)"),
        ("faults[0].capacity=0.1s..0.5:3", "got '0.1s'; this field takes a number (no unit)"),
        ("load.users=0..100:4:log", "a log range starts above 0"),
        ("load.users=100..10:4", "expected LO < HI"),
        ("load.users=1..3:10", "takes whole numbers and these round to the same"),
        ("load.users=1..3:1000", "expected LO < HI and 2 to 200 values"),
        ("load.users=1..3:x", "N: got 'x'"),
        ("load.users=1..3:3:cubic", "got :cubic; expected :log"),
        ("load.users", "expected PATH=LO..HI:N"),
        ("9lives=1..2:2", "'9lives' is no field name"),
    ],
)
def test_bad_paths_and_ranges_name_the_field(text, message):
    with pytest.raises(UserError) as refused:
        parse_vary(text, SCENARIO)
    assert message in str(refused.value)
    assert str(refused.value).startswith(f"--vary {text}")


def test_setting_a_value_inside_specs_keeps_the_rest():
    data = copy.deepcopy(DATA)
    set_value(data, SCENARIO, ("model", "slope"), 0.002)
    set_value(data, SCENARIO, ("strategies", 0, "strategy", "delay"), 0.2)
    set_value(data, SCENARIO, ("faults", 0, "capacity"), 0.25)
    varied = scenario_from_data(data)
    assert varied.model.spec() == "linear:base_delay=10ms,slope=2ms,max_delay=10m"
    assert varied.strategies[0].label == "fixed:100ms"  # the label as written stays
    assert varied.strategies[0].strategy.spec() == "fixed:200ms"
    assert varied.faults[0].capacity == 0.25
    assert DATA["model"] == "linear:base_delay=10ms,slope=1ms"  # the original untouched


def test_marks_need_a_value_of_every_varied_field():
    axes = [parse_vary("faults[0].for=5s..15s:3", SCENARIO), parse_vary("faults[0].capacity=0.1..0.5:5", SCENARIO)]
    mark = parse_mark("published (b)@faults[0].for=10s,faults[0].capacity=0.2", axes)
    assert (mark.label, mark.at) == ("published (b)", (10.0, 0.2))
    with pytest.raises(UserError, match=r"needs a value of faults\[0\]\.capacity too"):
        parse_mark("x@faults[0].for=10s", axes)
    with pytest.raises(UserError, match=r"load\.users is not varied"):
        parse_mark("x@load.users=3,faults[0].for=1s,faults[0].capacity=0.2", axes)
    with pytest.raises(UserError, match="expected LABEL@PATH=VALUE"):
        parse_mark("faults[0].for=10s", axes)
