"""Latency summaries count unfinished requests at their age (censored); percentiles over time likewise."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from retrystorm.experiment.analysis import LatencySummary
from retrystorm.experiment.analysis.latency_series import interval_quantile, latency_over_time
from retrystorm.experiment.analysis.quantiles import combine, histogram_of
from retrystorm.experiment.analysis.results import RunResult
from retrystorm.loadgen.buckets import LATENCY_BUCKETS_S

INF = math.inf


def test_unfinished_requests_count_at_their_age():
    # the fixed:100ms: 1,935 fast answers and 299 requests that never finished
    finished = [0.1] * 1935
    ages = [40.0] * 299
    honest = LatencySummary.of(finished, ages)
    assert LatencySummary.of(finished).p99 == pytest.approx(0.1)  # what the tables used to say
    assert honest.p99 == pytest.approx(40.0)
    assert honest.p95 == pytest.approx(40.0)
    assert honest.p50 == pytest.approx(0.1)
    assert honest.max == 40.0
    assert honest.censored == 299


def test_no_request_gives_an_empty_summary():
    assert LatencySummary.of([], []) == LatencySummary()


@given(
    finished=st.lists(st.floats(0, 100), min_size=1, max_size=50),
    ages=st.lists(st.floats(0, 1000), max_size=50),
)
def test_counting_old_unfinished_requests_never_lowers_a_percentile(finished, ages):
    older = [max(finished) + age for age in ages]  # unfinished requests older than every finished one
    plain, censored = LatencySummary.of(finished), LatencySummary.of(finished, older)
    for name in ("p50", "p75", "p90", "p95", "p99", "max"):
        assert getattr(censored, name) >= getattr(plain, name) - 1e-9
    assert censored.censored == len(ages)


def test_a_histogram_summary_holds_the_same_percentiles_to_the_bucket():
    values = [0.05] * 90 + [3.0] * 10
    summary = LatencySummary.of_histogram(histogram_of(values, LATENCY_BUCKETS_S), censored=10)
    assert 0.02 < summary.p50 <= 0.05
    assert 2.0 < summary.p95 <= 5.0
    assert summary.max == 5.0  # the upper bound of the highest non-empty bucket
    assert summary.censored == 10


def test_results_carry_p95_and_the_censored_count():
    latency = LatencySummary.of([0.1, 0.2], [9.0])
    row = RunResult("s", "fixed:100ms", 3, 3, 2, 0, 1, latency, 5).to_json()
    assert row["latency_p95"] == pytest.approx(latency.p95)
    assert row["latency_censored"] == 1
    assert row["latency_max"] == 9.0


def test_combining_histograms_keeps_every_value_under_a_bound_at_least_its_own():
    a = [(0.1, 1.0), (1.0, 2.0), (INF, 3.0)]
    b = [(0.5, 1.0), (INF, 2.0)]
    assert combine(a, b) == [(0.1, 1.0), (0.5, 2.0), (1.0, 3.0), (INF, 5.0)]
    assert combine(None, a) == a
    assert combine(None, None) == []


def test_latency_over_time_counts_the_requests_in_progress_at_their_age():
    bounds = LATENCY_BUCKETS_S
    quick = histogram_of([0.1] * 100, bounds)
    stuck = histogram_of([15.0] * 300, bounds)  # 300 users waiting 15 s at the second's end
    series = latency_over_time([quick, quick, None], [None, stuck, stuck])
    assert 0.05 < series["latency_p50"][0] <= 0.1  # interpolated within its bucket
    assert 10.0 < series["latency_p50"][1] <= 20.0  # most of what users waited is the stuck ones
    assert 10.0 < series["latency_p99"][2] <= 20.0  # nobody finished: the ages alone
    assert interval_quantile(0.5, None, None) is None
    with pytest.raises(ValueError, match="one histogram per interval"):
        latency_over_time([quick], [])
