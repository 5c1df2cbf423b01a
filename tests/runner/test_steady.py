"""The steady window of a live run, from its readings: which seconds, which counts."""

import dataclasses

import pytest

from retrystorm.loadgen.exposition import parse_client
from retrystorm.loadgen.readings import Reading
from retrystorm.runner.steady import answers_between, judge_readings, steady_ticks

from .conftest import client

TEXT = """\
retrystorm_client_attempts_total{strategy="fixed",request="GET /",outcome="ok"} 3
retrystorm_client_attempts_total{strategy="fixed",request="GET /",outcome="client_error"} 97
retrystorm_client_attempts_total{strategy="fixed",request="POST /x",outcome="ok"} 50
retrystorm_client_responses_total{strategy="fixed",request="GET /",status="200"} 3
retrystorm_client_responses_total{strategy="fixed",request="GET /",status="404"} 97
retrystorm_client_responses_total{strategy="fixed",request="POST /x",status="201"} 50
"""


def test_a_reading_counts_attempts_by_request_and_outcome_and_answers_by_status():
    reading = parse_client(TEXT)
    assert reading.outcomes_by_request == {("GET /", "ok"): 3, ("GET /", "client_error"): 97, ("POST /x", "ok"): 50}
    assert reading.statuses_by_request[("GET /", "404")] == 97


@pytest.mark.parametrize(
    ("window", "duration", "ticks"),
    [((10.0, 20.0), 60.0, (10, 19)), ((10.25, 20.5), 60.0, (11, 20)), ((0.5, 1.0), 60.0, None), (None, 60.0, (30, 60))],
)
def test_the_seconds_judged_end_before_the_first_trigger(window, duration, ticks):
    assert steady_ticks(window, duration) == ticks


def test_the_counts_are_the_differences_between_the_first_and_last_reading_in_the_window():
    first = parse_client(TEXT)
    last = dataclasses.replace(
        first,
        outcomes_by_request={**first.outcomes_by_request, ("GET /", "client_error"): 197.0},
        statuses_by_request={**first.statuses_by_request, ("GET /", "404"): 197.0},
    )
    names = {"GET /": "GET /", "POST /x": "POST /x"}
    by_name = {answers.name: answers for answers in answers_between(first, last, names)}
    assert by_name["GET /"].outcomes == {"client_error": 100.0, "ok": 0.0}
    assert by_name["GET /"].statuses == {"404": 100.0, "200": 0.0}


def test_a_generator_that_counts_by_outcome_only_is_judged_as_one_request():
    answers = answers_between(client(0.0, 0.0), client(50.0, 100.0), {})
    assert [(a.name, dict(a.outcomes)) for a in answers] == [("every request", {"ok": 50.0, "timeout": 50.0})]


def test_missing_readings_in_the_window_are_not_valid():
    readings = [Reading(t, t, None, client(10.0 * t, 10.0 * t) if t < 11 else None) for t in range(21)]
    found = judge_readings(readings, (10, 19), {})
    assert not found.valid and "not read at both ends" in found.problem
    readings[15] = Reading(15, 15.0, None, client(150.0, 150.0))
    assert judge_readings(readings, (10, 19), {}).valid  # the seconds 10 to 15 show it working


def test_a_failed_steady_window_says_when_the_load_generator_lagged_in_it():
    """Timeouts from a generator that ran 150 ms late are not the service's: the problem says so."""

    def late(t, lag_s):
        reading = client(1.0 * t, 3.0 * t)  # 2 of 3 attempts timed out
        return dataclasses.replace(reading, schedule_lag_sum=lag_s * 10 * t, schedule_lag_count=10.0 * t)

    lagging = [Reading(t, float(t), None, late(t, 0.15)) for t in range(21)]
    found = judge_readings(lagging, (10, 19), {})
    assert not found.valid and "timed out" in found.problem
    assert "the load generator ran 150 ms late against its plan on average in that window" in found.problem
    on_time = [Reading(t, float(t), None, late(t, 0.002)) for t in range(21)]
    assert "late" not in judge_readings(on_time, (10, 19), {}).problem
