"""The seed client's backoff, quirks included."""

import math
import random
import statistics

import pytest

from retrystorm.loadgen.strategies import RetryPolicy, RetrySession, SmiraBackoff


def test_constants_are_the_go_clients():
    strategy = SmiraBackoff()
    assert strategy.factor == 2.71828
    assert strategy.max_s == 300
    assert strategy.jitter_s == 0.1


def test_next_delay_is_e_times_previous_plus_absolute_normal_jitter():
    strategy = SmiraBackoff()
    rng = random.Random(11)
    samples = [strategy.delay(3, 2.0, rng) for _ in range(20_000)]
    assert statistics.fmean(samples) == pytest.approx(2.0 * 2.71828, abs=0.004)
    assert statistics.stdev(samples) == pytest.approx(0.1, rel=0.03)


def test_cap_applies_before_the_jitter():
    strategy = SmiraBackoff()
    rng = random.Random(12)
    samples = [strategy.delay(9, 200.0, rng) for _ in range(5000)]
    assert statistics.fmean(samples) == pytest.approx(300.0, abs=0.01)
    assert max(samples) > 300.0


def test_first_backoff_grows_from_the_think_time_not_from_100ms():
    """The quirk: lastDelay still holds the think time when the first retry is computed."""
    rng = random.Random(13)
    session = RetrySession(RetryPolicy(strategy=SmiraBackoff()), rng=rng)
    first_backoffs = []
    for _ in range(20_000):
        think = rng.expovariate(1 / 10.0)
        session.start_request(0.0, slept_s=think)
        first_backoffs.append(session.on_failure(0.0, timed_out=True).delay_s)
        session.on_success(1.0)
    mean = statistics.fmean(first_backoffs)
    assert mean == pytest.approx(10.0 * math.e, rel=0.03)  # about 27 s, not 0.27 s
    assert mean > 20


def test_second_backoff_grows_from_the_first():
    rng = random.Random(14)
    session = RetrySession(RetryPolicy(strategy=SmiraBackoff(jitter_s=0.0)), rng=rng)
    session.start_request(0.0, slept_s=4.0)
    first = session.on_failure(0.0).delay_s
    second = session.on_failure(first).delay_s
    assert first == pytest.approx(4.0 * 2.71828)
    assert second == pytest.approx(4.0 * 2.71828**2)
