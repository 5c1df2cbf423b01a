"""Analysis of fabricated live runs: totals, latency, peak, recoveries, verdicts."""

import pytest

from retrystorm.experiment.scenario import OutageWindow
from retrystorm.loadgen.readings import Reading
from retrystorm.runner.record import analyse, latency_summary


def test_storm_never_recovers_and_verdicts_say_so(small, record_of, storm_run):
    result = analyse(record_of("fixed:100ms", storm_run), small.assertions["fixed:100ms"])
    assert [(r.server_s, r.client_s) for r in result.recoveries] == [(None, None)]
    assert result.peak_in_flight == 2000 + 50 * 14
    assert result.attempts == 20 * 100 + 20 * 150
    assert result.succeeded == 2000
    assert result.passed is True
    assert {v.check: v.passed for v in result.verdicts} == {
        "server_recovers_within": True,
        "client_recovers_within": True,
    }


def test_recovery_times_are_measured_from_the_actual_resume(small, record_of, recovered_run):
    actual = [OutageWindow(20.0, 25.0)]
    result = analyse(record_of("smira", recovered_run, actual), small.assertions["smira"])
    (recovery,) = result.recoveries
    # in flight back to 10 at the reading of second 28 (interval 27), held for 5 s
    assert recovery.server_s == pytest.approx(3.0)
    # mean goodput over [a, a + 5) >= 90 of steady 100 first at a = 27 (80, 100 x 4)
    assert recovery.client_s == pytest.approx(2.0)
    verdicts = {v.check: (v.measured, v.passed) for v in result.verdicts}
    assert verdicts["server_recovers_within"] == (pytest.approx(3.0), True)
    assert verdicts["max_amplification"][1] is True


def test_a_late_resume_shifts_the_recovery(small, record_of, recovered_run):
    late = [OutageWindow(20.0, 26.5)]
    (recovery,) = analyse(record_of("smira", recovered_run, late)).recoveries
    assert recovery.server_s == pytest.approx(28.0 - 26.5)


def test_failed_assertion_is_reported_with_its_bound(small, record_of, storm_run):
    result = analyse(record_of("smira", storm_run), small.assertions["smira"])
    assert result.passed is False
    failed = [v.describe() for v in result.verdicts if not v.passed]
    assert "server_recovers_within 10s: measured never (FAIL)" in failed


def test_totals_are_differences_from_the_first_reading(record_of, recovered_run):
    shifted = [
        Reading(
            r.tick,
            r.time_s,
            r.target,
            type(r.client)(**{**_fields(r.client), "requests_ok": r.client.requests_ok + 1e6}),
        )
        for r in recovered_run
    ]
    assert analyse(record_of("smira", shifted)).succeeded == analyse(record_of("smira", recovered_run)).succeeded


def _fields(reading):
    return {name: getattr(reading, name) for name in reading.__dataclass_fields__}


def test_nothing_to_analyse_without_two_client_readings(record_of, storm_run):
    lonely = [storm_run[0], *(Reading(r.tick, r.time_s, r.target, None) for r in storm_run[1:])]
    with pytest.raises(ValueError, match="fewer than two readings"):
        analyse(record_of("fixed:100ms", lonely))


def test_missed_readings_and_extra_keys(record_of, storm_run):
    result = analyse(record_of("fixed:100ms", storm_run))
    document = result.to_json()
    assert document["readings_missed"] == {"target": 5, "client": 0}
    assert document["planned_outages"] == [[20.0, 25.0]]
    assert document["in_flight_end"] == 2700


def test_latency_summary_from_bucket_differences(storm_run):
    first, last = storm_run[0].client, storm_run[-1].client
    latency = {0.1: 50.0, 0.25: 80.0, 0.5: 100.0, 1.0: 100.0, float("inf"): 100.0}
    last = type(last)(**{**_fields(last), "ended_buckets": tuple(latency.items())})
    summary = latency_summary(first, last)
    assert summary.p50 == pytest.approx(0.1)
    assert summary.p75 == pytest.approx(0.1 + 0.15 * (75 - 50) / 30)
    assert summary.max == 0.5


def test_attempts_and_amplification_count_attempts_sent_as_the_simulator_does(record_of, storm_run):
    """100 attempts still await an answer at the end: sent, so counted; not timed out, so not a timeout."""
    last = storm_run[-1]
    unanswered = type(last.client)(**{**_fields(last.client), "attempts_started": last.client.attempts_started + 100})
    readings = [*storm_run[:-1], Reading(last.tick, last.time_s, last.target, unanswered)]
    before, after = analyse(record_of("fixed:100ms", storm_run)), analyse(record_of("fixed:100ms", readings))
    assert after.attempts == before.attempts + 100
    assert after.amplification == pytest.approx((before.attempts + 100) / before.requests)
    assert after.extra["timeouts"] == before.extra["timeouts"]


def test_unfinished_requests_count_at_their_age_from_the_in_progress_histogram(storm_run):
    """300 users still waiting 15-20 s at the end: the p99 is theirs, not that of the quick answers."""
    first, last = storm_run[0].client, storm_run[-1].client
    ended = {0.1: 1900.0, 0.25: 1935.0, 0.5: 1935.0, 1.0: 1935.0, float("inf"): 1935.0}
    ages = ((10.0, 0.0), (20.0, 299.0), (float("inf"), 299.0))
    last = type(last)(
        **{**_fields(last), "ended_buckets": tuple(ended.items()), "in_progress_buckets": ages, "in_progress": 299.0}
    )
    uncensored = latency_summary(first, type(last)(**{**_fields(last), "in_progress_buckets": (), "in_progress": None}))
    summary = latency_summary(first, last)
    assert uncensored.p99 < 0.25  # what the table used to show
    assert 10.0 < summary.p99 <= 20.0
    assert 10.0 < summary.p95 <= 20.0
    assert summary.censored == 299
    assert summary.max == 20.0
