"""The retry-storm view's pure parts: differencing, amplification, the ring, bands."""

import dataclasses
import datetime
from operator import attrgetter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retrystorm.loadgen.readings import ClientReading, Reading, TargetReading
from retrystorm.loadgen.storm_series import (
    SERIES,
    Band,
    StormHistory,
    columns,
    merge_bands,
    outage_bands,
    point_between,
    rate,
    ratio,
    spike_bands,
)

T0 = datetime.datetime(2026, 1, 1, 12, 0, 0, tzinfo=datetime.UTC)


def client(load_factor: float | None = None, **counters: float) -> ClientReading:
    """Cumulative client counters and gauges by field name, 0 unless given."""
    names = ("attempts_started", "requests_started", "requests_ok", "requests_gave_up", "users_in_backoff")
    values = {name: counters.pop(name, 0.0) for name in (*names, "active_users")}
    assert not counters, counters
    return ClientReading(attempts={}, retries=0.0, budget_refusals=0.0, ended_buckets=(), load_factor=load_factor,
                         **values)  # fmt: skip


def reading(at_s: float, *, in_flight: float | None = None, **values: float) -> Reading:
    return Reading(0, at_s, None if in_flight is None else TargetReading(in_flight), client(**values))


def utc(seconds: float) -> datetime.datetime:
    return T0 + datetime.timedelta(seconds=seconds)


def iso(seconds: float) -> str:
    return utc(seconds).isoformat()


def test_a_rate_is_the_increase_of_a_counter_over_the_time_between_readings():
    before = reading(100.0, attempts_started=1_000, requests_ok=400)
    now = reading(102.0, attempts_started=1_300, requests_ok=500)
    assert rate(before, now, attrgetter("attempts_started")) == 150.0
    assert rate(before, now, attrgetter("requests_ok")) == 50.0


def test_no_rate_when_a_counter_or_the_clock_went_back():
    assert rate(reading(1.0, requests_ok=10), reading(2.0, requests_ok=4), attrgetter("requests_ok")) is None
    assert rate(reading(2.0), reading(2.0), attrgetter("requests_ok")) is None


def test_amplification_has_no_value_without_a_logical_request():
    assert ratio(30, 10) == 3.0
    assert ratio(30, 0) is None
    assert ratio(-1, 5) is None


def test_a_point_keeps_attempts_requests_and_goodput_apart():
    start = reading(10.0, attempts_started=100, requests_started=100, requests_ok=100)
    before = reading(20.0, attempts_started=200, requests_started=150, requests_ok=140, users_in_backoff=3)
    now = reading(21.0, attempts_started=260, requests_started=170, requests_ok=150, requests_gave_up=2,
                  users_in_backoff=7, active_users=50, in_flight=12)  # fmt: skip
    point = point_between(start, before, now)
    assert point.t_s == 11.0
    assert (point.attempts_per_s, point.requests_started_per_s, point.goodput_per_s) == (60.0, 20.0, 10.0)
    assert point.gave_up_per_s == 2.0
    assert point.amplification == 3.0  # 60 attempts for 20 requests started in that second
    assert point.amplification_total == pytest.approx(160 / 70)
    assert (point.users_in_backoff, point.active_users, point.in_flight) == (7, 50, 12)


def test_the_first_reading_only_starts_the_view_and_a_run_starts_it_again():
    history = StormHistory(window_s=10)
    assert history.add(reading(5.0, attempts_started=40), utc(0)) is None
    point = history.add(reading(6.0, attempts_started=50, requests_started=5), utc(1))
    assert point is not None
    assert (point.t_s, point.attempts_per_s, point.amplification_total) == (1.0, 10.0, 2.0)
    assert not history.run_started

    history.start_run(reading(9.0, attempts_started=80, requests_started=20), utc(4))
    assert history.run_started
    assert list(history.points) == []
    point = history.add(reading(10.0, attempts_started=83, requests_started=21), utc(5))
    assert point is not None
    assert (point.t_s, point.attempts_per_s, point.amplification_total) == (1.0, 3.0, 3.0)
    assert history.seconds_at(utc(7)) == 3.0


def test_the_ring_keeps_the_last_window_only():
    history = StormHistory(window_s=3)
    for second in range(10):
        history.add(reading(float(second), attempts_started=second * 2.0), utc(second))
    assert [p.t_s for p in history.points] == [7.0, 8.0, 9.0]
    assert [p.t_s for p in history.since(7.0)] == [8.0, 9.0]
    history.add(reading(10.0004), utc(10))
    assert [p.t_s for p in history.since(10.0)] == []  # served as 10.0: not after 10.0
    assert len(history.since(None)) == 3
    with pytest.raises(ValueError, match="window_s"):
        StormHistory(window_s=0)


@settings(max_examples=200, deadline=1000, derandomize=True)
@given(st.lists(st.tuples(st.floats(0.01, 5), st.integers(0, 1000), st.integers(0, 1000)), min_size=1, max_size=60))
def test_rates_are_never_negative_and_the_ring_never_overflows(steps):
    history = StormHistory(window_s=20)
    at_s, attempts, requests = 0.0, 0.0, 0.0
    history.add(reading(at_s), utc(0))
    for gap_s, new_attempts, new_requests in steps:
        at_s += gap_s
        attempts += new_attempts
        requests += new_requests
        point = history.add(reading(at_s, attempts_started=attempts, requests_started=requests), utc(at_s))
        assert point is not None
        assert point.attempts_per_s is not None
        assert point.attempts_per_s >= 0
        assert point.amplification is None or point.amplification >= 0
    assert len(history.points) <= 20


def test_columns_carry_every_series_with_its_unit_and_gaps_as_none():
    history = StormHistory()
    history.add(reading(0.0), utc(0))
    history.add(reading(1.0, attempts_started=5, requests_started=5, in_flight=4), utc(1))
    history.add(reading(2.0, attempts_started=9, requests_started=5), utc(2))  # paused: no in-flight reading
    data = columns(history.since(None))
    assert data["t_s"] == [1.0, 2.0]
    assert set(data["series"]) == {series.key for series in SERIES}
    assert data["series"]["in_flight"] == {"label": "in flight on the target", "unit": "requests", "values": [4, None]}
    assert data["series"]["attempts"]["values"] == [5.0, 4.0]
    assert data["series"]["attempts"]["unit"] == "attempts/s"
    assert data["series"]["goodput"]["unit"] == "requests/s"
    assert data["series"]["amplification"]["values"] == [1.0, None]  # no request started in the second second


def history_started_at(seconds: float) -> StormHistory:
    history = StormHistory()
    history.start_run(reading(0.0), utc(seconds))
    return history


def test_outages_land_on_the_runs_axis():
    outages = [
        {"target": "target", "status": "resumed", "started_utc": iso(10), "ended_utc": iso(40)},
        {"target": "db", "status": "active", "started_utc": iso(50), "ended_utc": None},
        {"target": "target", "status": "failed", "started_utc": iso(20), "ended_utc": iso(21)},  # paused nothing
        {"target": "target", "status": "resumed", "started_utc": iso(-90), "ended_utc": iso(-60)},  # before the run
        {"target": "target", "status": "resumed", "started_utc": "not a time"},
        {"target": "cpu", "kind": "slow", "status": "resumed", "started_utc": iso(12), "ended_utc": iso(13)},
    ]
    bands = outage_bands(outages, history_started_at(0))
    assert bands == [
        Band(10.0, 40.0, "pause", ("target",)),
        Band(50.0, None, "pause", ("db",)),
        Band(12.0, 13.0, "slow", ("cpu",)),
    ]
    assert outage_bands(outages, StormHistory()) == []  # no reading yet: no axis
    assert bands[0].to_json() == {"start_s": 10.0, "end_s": 40.0, "kind": "pause", "labels": ["target"]}


def test_an_outage_that_began_before_the_run_starts_before_zero():
    [band] = outage_bands([{"target": "t", "status": "active", "started_utc": iso(5)}], history_started_at(8))
    assert (band.start_s, band.end_s) == (-3.0, None)


def test_overlapping_and_touching_bands_of_a_kind_merge():
    bands = [
        Band(30.0, 35.0, "pause", ("b",)),
        Band(0.0, 10.0, "pause", ("a",)),
        Band(5.0, 12.0, "pause", ("b",)),
        Band(12.0, 14.0, "pause", ("a",)),  # touches the one before
        Band(6.0, 8.0, "slow", ("c",)),  # another kind stays apart
    ]
    assert merge_bands(bands) == [
        Band(0.0, 14.0, "pause", ("a", "b")),
        Band(6.0, 8.0, "slow", ("c",)),
        Band(30.0, 35.0, "pause", ("b",)),
    ]


def test_a_band_still_going_swallows_the_later_ones():
    bands = [Band(0.0, 5.0, "pause", ("a",)), Band(3.0, None, "pause", ("b",)), Band(40.0, 50.0, "pause", ("c",))]
    assert merge_bands(bands) == [Band(0.0, None, "pause", ("a", "b", "c"))]
    assert merge_bands([]) == []


def test_a_reading_is_immutable():
    with pytest.raises(dataclasses.FrozenInstanceError):
        reading(0.0).time_s = 1.0  # type: ignore[misc]


def points_with_factors(factors):
    history = StormHistory()
    for t, factor in enumerate([1.0, *factors]):
        history.add(reading(float(t), load_factor=factor), utc(t))
    return list(history.points)


def test_a_load_spike_is_shaded_from_the_second_its_factor_rose_to_its_last_second_above_1():
    bands = spike_bands(points_with_factors([1.0, 1.0, 3.0, 3.0, 3.0, 1.0, 1.0, 1.5, 1.0]))
    assert bands == [Band(2.0, 5.0, "spike", ("x3",)), Band(7.0, 8.0, "spike", ("x1.5",))]


def test_a_spike_still_in_force_has_no_end_and_no_factor_no_band():
    assert spike_bands(points_with_factors([1.0, 2.0, 2.0])) == [Band(1.0, None, "spike", ("x2",))]
    assert spike_bands(points_with_factors([None, None, 1.0])) == []
