"""Think-time specs: the forms users write, their errors, and their distributions.

The one ThinkTime of the project: the Locust user, the scenario format and the simulator read it.
"""

import random
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from retrystorm.errors import SpecError
from retrystorm.loadgen.think import BetweenThink, ConstantThink, ExponentialThink, parse_think_time


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10s", ExponentialThink(average_s=10.0)),
        ("exponential:10s", ExponentialThink(average_s=10.0)),
        ("exponential:mean=250ms", ExponentialThink(average_s=0.25)),
        ("constant:1s", ConstantThink(wait_s=1.0)),
        ("constant:0", ConstantThink(wait_s=0.0)),
        ("between:1s,3s", BetweenThink(low_s=1.0, high_s=3.0)),
        ("between:min=1s,max=3s", BetweenThink(low_s=1.0, high_s=3.0)),
        ("0", ExponentialThink(average_s=0.0)),
    ],
)
def test_accepted_forms(text, expected):
    assert parse_think_time(text) == expected


@pytest.mark.parametrize(
    "text", ["exponential:10s", "constant:1s", "between:1s,3s", "constant:250ms", "constant:0s", "exponential:0s"]
)
def test_round_trip(text):
    """Printed as written (reports and the runner's Locust flags show it), and parsed back to an equal one."""
    think = parse_think_time(text)
    assert think.spec() == text
    assert parse_think_time(think.spec()) == think


@pytest.mark.parametrize(
    "think", [ExponentialThink(average_s=10.0), BetweenThink(low_s=1.0, high_s=3.0), ConstantThink(wait_s=2.0)]
)
def test_a_parsed_think_time_passes_through(think):
    assert parse_think_time(think) is think


def test_yaml_number_is_an_exponential_mean():
    assert parse_think_time(10) == ExponentialThink(average_s=10.0)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("10", ["expected a duration", "exponential:10s"]),
        ("soon", ["think time", "constant:1s", "between:1s,3s"]),
        ("between:3s,1s", ["max", "at least min"]),
        ("gaussian:1s", ["unknown kind 'gaussian'", "exponential:10s, constant:1s, between:1s,3s"]),
        ("exponential:inf", ["finite"]),
        ("between:1s,inf", ["finite"]),
        ("exp:10s", ["got 'exp:10s'", "unknown kind 'exp'", "exponential:10s", "between:1s,3s"]),
        ("constant:10", ["wait", "add a unit"]),
        ("between:1s,3s,5s", ["'5s' needs a key", "min, max"]),
        ([1, 2], ["got [1, 2]", "exponential:10s"]),
        (None, ["got None", "exponential:10s"]),
        (True, ["got True", "exponential:10s"]),
        ({"wait": "1s"}, ["'name' key", "exponential, constant, between"]),
    ],
)
def test_errors_say_what_is_accepted(text, words):
    with pytest.raises(SpecError) as caught:
        parse_think_time(text)
    message = str(caught.value)
    assert "\n" not in message
    for word in words:
        assert word in message


@pytest.mark.parametrize(
    "spec",
    [
        "inf",
        "forever",
        " Forever ",
        "1e400s",
        "exponential:forever",
        "exponential:mean=inf",
        "exponential:1e400s",
        "constant:inf",
        float("inf"),
        float("nan"),
        -1.0,
        "-1s",
        {"name": "constant", "wait": "inf"},
    ],
)
def test_non_finite_or_negative_is_refused_on_every_path(spec):
    """A think time that never ends crashed every user at its first wait; refuse it here."""
    with pytest.raises(SpecError) as caught:
        parse_think_time(spec)
    message = str(caught.value)
    assert "\n" not in message
    for word in ("think time", "finite", ">= 0", "exponential:10s"):
        assert word in message


def test_exponential_mean_and_spread():
    rng = random.Random(7)
    draws = [ExponentialThink(average_s=10.0).sample(rng) for _ in range(20_000)]
    assert statistics.fmean(draws) == pytest.approx(10.0, rel=0.05)
    # an exponential distribution's standard deviation equals its mean
    assert statistics.pstdev(draws) == pytest.approx(10.0, rel=0.07)
    assert min(draws) >= 0


def test_a_negative_think_time_is_refused_when_built_directly():
    with pytest.raises(
        SpecError, match=r"^think time 'constant': wait: got -1s, expected a duration .*>= 0 and <= 24h$"
    ):
        ConstantThink(wait_s=-1.0)


@pytest.mark.parametrize(
    ("text", "mean"), [("exponential:10s", 10.0), ("constant:2s", 2.0), ("between:1s,3s", 2.0), ("4s", 4.0)]
)
def test_sample_mean(text, mean):
    think = parse_think_time(text)
    rng = random.Random(3)
    assert think.mean_s == mean
    assert statistics.fmean(think.sample(rng) for _ in range(20_000)) == pytest.approx(mean, rel=0.03)


@given(seed=st.integers(0, 2**32), mean=st.floats(0.001, 100), low=st.floats(0, 10), width=st.floats(0, 10))
def test_draws_are_the_documented_formulas(seed, mean, low, width):
    """One draw per sample, from the formulas the simulator's seeded runs were made with (same seed, same draws)."""
    draws = random.Random(seed)
    expected = [draws.expovariate(1.0 / mean), low, draws.uniform(low, low + width)]
    rng = random.Random(seed)
    thinks = [ExponentialThink(average_s=mean), ConstantThink(wait_s=low), BetweenThink(low_s=low, high_s=low + width)]
    assert [think.sample(rng) for think in thinks] == expected


def test_zero_mean_never_waits():
    assert ExponentialThink(average_s=0.0).sample(random.Random(1)) == 0.0


@given(
    low=st.floats(0, 100, allow_nan=False),
    width=st.floats(0, 100, allow_nan=False),
    seed=st.integers(0, 2**32),
)
def test_between_stays_within_bounds(low, width, seed):
    think = BetweenThink(low_s=low, high_s=low + width)
    draw = think.sample(random.Random(seed))
    assert low <= draw <= low + width
    assert think.mean_s == pytest.approx(low + width / 2)


def test_open_arrivals_keep_their_schedule_whatever_the_loop_costs_between_waits():
    from retrystorm.loadgen.think import MAX_ARRIVAL_LAG_S, open_arrival_wait

    planned, now = None, 100.0
    for _ in range(1000):  # each wait ends late and the loop takes 1 ms before the next: 2 ms lost per arrival
        planned, wait_s = open_arrival_wait(planned, now, 0.008)
        now += wait_s + 0.002
    assert planned == pytest.approx(100.0 + 1000 * 0.008)  # 1,000 arrivals at 125/s, not at 100/s
    stalled = planned + 5.0  # a 5 s stall: the schedule restarts a second behind, that second's arrivals at once
    planned, wait_s = open_arrival_wait(planned, stalled, 0.008)
    assert wait_s == 0.0 and planned == pytest.approx(stalled - MAX_ARRIVAL_LAG_S + 0.008)
    later, wait_s = open_arrival_wait(100.0, 200.0, 0.5)
    assert later == pytest.approx(200.0 - MAX_ARRIVAL_LAG_S + 0.5) and wait_s == 0.0
    assert open_arrival_wait(None, 7.0, 0.25) == (7.25, 0.25)
