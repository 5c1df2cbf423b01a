"""The one rule that turns cumulative counters into rates (the runner's grid and the storm tab's points)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from retrystorm.loadgen.readings import Counter, Reading, client_counter
from tests.runner.conftest import client


def test_a_counter_between_at_and_beyond_its_readings():
    counter = Counter([(0.2, 0.0), (1.2, 10.0), (3.2, 30.0)])
    assert counter.at(1.2) == 10.0
    assert counter.at(2.2) == pytest.approx(20.0)
    assert counter.at(0.0) == 0.0  # first reading 0.2 s late: its value
    assert counter.at(3.5) == 30.0  # within half a second after the last
    assert counter.at(4.0) is None
    assert Counter([(1.0, 1.0)]).at(0.2) is None
    assert Counter([]).at(1.0) is None


def test_between_two_readings_a_rate_is_the_increase_over_the_time_that_passed():
    counter = Counter([(100.0, 1_000.0), (102.5, 1_300.0)])
    assert counter.per_second(100.0, 102.5) == 120.0
    assert counter.per_second(100.0, 100.0) is None  # no time passed: no rate


def test_a_missing_reading_spreads_its_count_over_the_seconds_it_covers():
    counter = Counter([(0.0, 0.0), (1.0, 10.0), (4.0, 70.0), (5.0, 80.0)])  # no reading at 2 and 3
    assert counter.on_grid(5) == [10.0, 20.0, 20.0, 20.0, 10.0]


def test_an_uneven_reading_shares_its_count_between_the_seconds_it_touches():
    counter = Counter([(0.0, 0.0), (1.25, 125.0), (2.0, 200.0)])  # the second reading 0.25 s late
    assert counter.on_grid(2) == pytest.approx([100.0, 100.0])


def test_a_counter_that_went_down_has_no_rate_over_the_seconds_that_span_the_fall():
    counter = Counter([(0.0, 0.0), (1.0, 100.0), (2.0, 40.0), (3.0, 90.0), (4.0, 140.0)])  # a worker left at ~2
    assert counter.on_grid(4) == [100.0, None, 50.0, 50.0]
    assert counter.per_second(1.0, 2.0) is None
    assert counter.increase(0.5, 2.5) is None  # a net rise of 15 over the fall is no rate either


def test_the_client_counter_skips_readings_without_a_client_part():
    readings = [Reading(0, 0.0, None, client(0, 0)), Reading(1, 1.0, None, None), Reading(2, 2.0, None, client(40, 40))]
    assert client_counter(readings, lambda c: c.requests_ok).on_grid(2) == [20.0, 20.0]


@given(st.lists(st.tuples(st.floats(0.05, 3.0), st.integers(0, 500)), min_size=2, max_size=40))
def test_a_rising_counter_keeps_every_count_on_the_grid_and_none_is_negative(steps):
    time_s, total, points = 0.0, 0.0, [(0.0, 0.0)]
    for gap_s, added in steps:
        time_s, total = time_s + gap_s, total + added
        points.append((time_s, total))
    length = int(time_s)
    rates = Counter(points).on_grid(length)
    assert all(rate is not None and rate >= 0 for rate in rates)
    assert sum(rates) == pytest.approx(Counter(points).at(float(length)), abs=1e-6)
