"""Think-time distributions."""

import random
import statistics

import pytest

from experiment.scenario import ThinkTime
from retrystorm.errors import SpecError


@pytest.mark.parametrize("text", ["exponential:10s", "constant:1s", "between:1s,3s", "constant:0s"])
def test_text_round_trip(text):
    assert ThinkTime.parse(text).text() == text


@pytest.mark.parametrize(("text", "mean"), [("exponential:10s", 10.0), ("constant:2s", 2.0), ("between:1s,3s", 2.0)])
def test_sample_mean(text, mean):
    think = ThinkTime.parse(text)
    rng = random.Random(3)
    assert think.mean_s == mean
    assert statistics.fmean(think.sample(rng) for _ in range(20_000)) == pytest.approx(mean, rel=0.03)


def test_between_stays_in_bounds():
    think = ThinkTime.parse("between:1s,3s")
    rng = random.Random(4)
    assert all(1 <= think.sample(rng) <= 3 for _ in range(1000))


@pytest.mark.parametrize("text", ["exp:10s", "exponential", "between:1s", "between:3s,1s", "constant:10", 5])
def test_bad_think_times(text):
    with pytest.raises(SpecError, match="expected"):
        ThinkTime.parse(text)


@pytest.mark.parametrize("text", ["exponential:inf", "constant:forever", "between:1s,inf", "exponential:1e400s"])
def test_a_think_time_that_never_ends_is_refused(text):
    with pytest.raises(SpecError, match="finite durations >= 0"):
        ThinkTime.parse(text)


def test_a_negative_think_time_is_refused_when_built_directly():
    with pytest.raises(SpecError, match="finite durations >= 0"):
        ThinkTime("constant", -1.0)
