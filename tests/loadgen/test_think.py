"""Think-time specs: the forms users write, their errors, and their distributions."""

import random
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loadgen.think import BetweenThink, ConstantThink, ExponentialThink, parse_think_time
from retrystorm.errors import SpecError


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


@pytest.mark.parametrize("text", ["exponential:10s", "constant:1s", "between:1s,3s", "constant:250ms"])
def test_round_trip(text):
    think = parse_think_time(text)
    assert parse_think_time(think.spec()) == think


def test_yaml_number_is_an_exponential_mean():
    assert parse_think_time(10) == ExponentialThink(average_s=10.0)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("10", ["expected a duration", "exponential:10s"]),
        ("soon", ["think time", "constant:1s", "between:1s,3s"]),
        ("between:3s,1s", ["max", "at least min"]),
        ("gaussian:1s", ["unknown think time", "exponential, constant, between"]),
        ("exponential:inf", ["finite"]),
        ("between:1s,inf", ["finite"]),
    ],
)
def test_errors_say_what_is_accepted(text, words):
    with pytest.raises(SpecError) as caught:
        parse_think_time(text)
    for word in words:
        assert word in str(caught.value)


@pytest.mark.parametrize(
    "spec",
    [
        "inf",
        "forever",
        " Forever ",
        "1e400s",
        "exponential:forever",
        "exponential:mean=inf",
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
