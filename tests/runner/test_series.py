"""Readings on the one-second grid: counters interpolated and differenced, gauges at each second's end."""

import dataclasses
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from retrystorm.loadgen.readings import Reading
from retrystorm.loadgen.series_names import GAUGES, RATES
from retrystorm.runner.series import build_series


def test_rates_and_gauges_of_a_regular_run(recovered_run):
    series = build_series(recovered_run, 40.0)
    assert series.length == 40
    assert series.times()[:2] == [1.0, 2.0]
    # readings 10 ms late: the first second gets 99 of its 100, the rest exactly 100
    assert series.rates["goodput"][:20] == pytest.approx([99.0] + [100.0] * 19)
    assert series.rates["goodput"][25:28] == pytest.approx([20.0, 50.0, 80.0], abs=0.5)
    assert series.gauges["in_flight"][19] == 10.0
    assert series.gauges["in_flight"][20:25] == [None] * 5  # paused: no answer
    assert series.peak("in_flight") == 300.0


def test_a_missed_client_reading_spreads_its_count_over_the_gap(recovered_run):
    gap = [r if r.tick not in (5, 6) else Reading(r.tick, r.time_s, r.target, None) for r in recovered_run]
    series = build_series(gap, 40.0)
    assert series.rates["goodput"][4:7] == pytest.approx([100.0, 100.0, 100.0])
    assert math.fsum(series.rates["attempts"]) == pytest.approx(
        math.fsum(build_series(recovered_run, 40.0).rates["attempts"])
    )


def test_samples_count_unreadable_rates_as_zero_and_keep_missing_gauges():
    readings = [Reading(0, 0.0, None, None), Reading(1, 1.0, None, None)]
    samples = build_series(readings, 1.0).samples()
    assert list(samples.goodput) == [0.0]
    assert list(samples.in_flight) == [None]


def test_rows_hold_every_series(recovered_run):
    rows = build_series(recovered_run, 40.0).rows()
    assert len(rows) == 40
    assert {"t_s", *RATES, *GAUGES, "users_in_backoff"} <= set(rows[0])  # the simulator's names


@given(
    increments=st.lists(st.floats(0, 500), min_size=2, max_size=30),
    lateness=st.lists(st.floats(0, 0.45), min_size=31, max_size=31),
)
def test_counter_total_is_kept_whatever_the_reading_times(increments, lateness):
    """The rates of a counter sum to its increase between the first and last readings."""
    from retrystorm.loadgen.readings import ClientReading

    def client(total):
        return ClientReading(
            attempts={"ok": total},
            attempts_started=total,
            requests_ok=total,
            requests_gave_up=0.0,
            requests_started=total,
            users_in_backoff=0.0,
            active_users=0.0,
            retries=0.0,
            budget_refusals=0.0,
            ended_buckets=(),
        )

    total, readings = 0.0, [Reading(0, lateness[0], None, client(0.0))]
    for tick, step in enumerate(increments, start=1):
        total += step
        readings.append(Reading(tick, tick + lateness[tick], None, client(total)))
    series = build_series(readings, float(len(increments)))
    rates = series.rates["goodput"]
    assert all(rate is not None and rate >= 0 for rate in rates)
    # the grid ends at the last tick; the last reading was taken up to 0.45 s after it
    assert math.fsum(rates) <= total + 1e-6


def frozen_server_readings():
    """50 attempts/s sent, none answered: each times out (ends) 2 s after it was sent."""
    from .conftest import client

    return [
        Reading(tick, float(tick), None, client(0.0, max(0.0, 50.0 * (tick - 2)), sent=50.0 * tick))
        for tick in range(7)
    ]


def test_attempts_are_counted_when_sent_and_timeouts_when_they_end():
    """As the simulator counts them: no dip of the attempt timeout's length when a server stops answering."""
    series = build_series(frozen_server_readings(), 6.0)
    assert series.rates["attempts"] == pytest.approx([50.0] * 6)
    assert series.rates["timeouts"] == pytest.approx([0.0, 0.0, 50.0, 50.0, 50.0, 50.0])
    assert list(series.samples().attempts) == pytest.approx([50.0] * 6)
    assert [row["attempts"] for row in series.rows()] == pytest.approx([50.0] * 6)


def test_latency_over_time_counts_the_requests_in_progress_at_their_age():
    """Quick answers for 2 s, then nobody answered: the percentiles become the waiting users' ages."""
    import dataclasses

    from .conftest import client

    def reading(tick, ended, ages):
        part = dataclasses.replace(
            client(0.0, 0.0), ended_buckets=ended, in_progress_buckets=ages, in_progress=ages[-1][1] if ages else None
        )
        return Reading(tick, float(tick), None, part)

    inf = float("inf")
    quick = lambda n: ((0.1, n), (1.0, n), (5.0, n), (inf, n))  # noqa: E731
    waiting = lambda age_bound: ((0.1, 0.0), (age_bound, 100.0), (inf, 100.0))  # noqa: E731
    readings = [
        reading(0, quick(0.0), ()),
        reading(1, quick(100.0), ()),
        reading(2, quick(200.0), waiting(1.0)),
        reading(3, quick(200.0), waiting(5.0)),
        Reading(4, 4.0, None, None),  # a missed reading: nothing to say for that second
    ]
    series = build_series(readings, 4.0)
    p50 = series.latency["latency_p50"]
    assert 0.0 < p50[0] <= 0.1
    assert p50[1] == pytest.approx(0.1)  # half quick answers, half requests up to 1 s old
    assert 0.1 < series.latency["latency_p95"][1] <= 1.0
    assert 1.0 < p50[2] <= 5.0  # nobody answered: only the ages
    assert p50[3] is None
    assert series.gauges["in_progress"][:3] == [None, 100.0, 100.0]
    assert {"latency_p50", "latency_p95", "latency_p99", "in_progress"} <= set(series.rows()[0])


def test_the_generators_lag_is_the_mean_of_what_it_observed_in_each_second():
    """Sums and counts of the lag histograms: 10 wake-ups a second, 5 ms late each, then 200 ms late each."""
    from retrystorm.runner.series import LOOP_LAG_S, SCHEDULE_LAG_S

    from .conftest import client

    def lag_reading(t, late_s):
        return dataclasses.replace(
            client(10.0 * t, 10.0 * t),
            schedule_lag_sum=late_s,
            schedule_lag_count=10.0 * t,
            loop_lag_sum=late_s / 2,
            loop_lag_count=10.0 * t,
        )

    sums = [0.0, 0.05, 0.1, 2.1, 4.1]
    readings = [Reading(t, float(t), None, lag_reading(t, total)) for t, total in enumerate(sums)]
    series = build_series(readings, 4.0)
    assert series.rates[SCHEDULE_LAG_S] == pytest.approx([0.005, 0.005, 0.2, 0.2])
    assert series.rates[LOOP_LAG_S] == pytest.approx([0.0025, 0.0025, 0.1, 0.1])
    quiet = [Reading(t, float(t), None, client(0.0, 0.0)) for t in range(3)]
    assert build_series(quiet, 2.0).rates[SCHEDULE_LAG_S] == [None, None]  # nothing observed: no lag
