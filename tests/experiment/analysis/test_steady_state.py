"""The steady-state rule: a run is judged only when its steady window shows the service working."""

import pytest

from retrystorm.experiment.analysis.steady_state import RequestAnswers, SteadyRule, judge

WINDOW = (10.0, 19.0)


def answers(name, ok=0.0, statuses=None, **outcomes):
    statuses = statuses if statuses is not None else ({"200": ok} if ok else {})
    return RequestAnswers(name, {"ok": ok, **outcomes}, statuses)


def test_a_working_service_is_valid_with_its_figures():
    found = judge([answers("GET /orders", ok=900.0, timeout=3.0)], 900.0, 0.0, WINDOW)
    assert found.valid and found.problem is None
    assert found.goodput_per_s == pytest.approx(100.0)
    assert found.ok_share == pytest.approx(900 / 903)


@pytest.mark.parametrize(
    ("status", "outcome", "fix"),
    [
        ("404", "client_error", "the request does not fit the service: check requests:"),
        ("405", "client_error", "the request does not fit the service"),
        ("415", "client_error", "the request does not fit the service"),
        ("503", "server_error", "the service fails under the load alone"),
        ("429", "throttled", "the service fails under the load alone"),
    ],
)
def test_a_request_answered_mostly_with_an_error_names_the_request_the_status_and_its_share(status, outcome, fix):
    mix = [
        answers("GET /health", ok=200.0),
        RequestAnswers("POST /orders", {"ok": 30.0, outcome: 570.0}, {"201": 30.0, status: 570.0}),
    ]
    found = judge(mix, 230.0, 570.0, WINDOW)
    assert not found.valid
    assert found.problem.startswith(
        f"POST /orders answered {status} on 95% of its attempts (570 of 600) in the steady window (from 10s to 19s); "
        + fix
    )
    assert found.requests == {"GET /health": 1.0, "POST /orders": 0.05}


def test_timeouts_and_refused_connections_are_named_as_such():
    found = judge([answers("GET /", ok=10.0, timeout=90.0)], 10.0, 0.0, WINDOW)
    assert found.problem.startswith("GET / timed out on 90% of its attempts (90 of 100)")
    assert "lower load.users" in found.problem
    found = judge([answers("GET /", connection_error=50.0)], 0.0, 0.0, WINDOW)
    assert found.problem.startswith("GET / could not connect on 100% of its attempts (50 of 50)")


def test_a_few_failures_of_a_rarely_drawn_request_are_not_judged():
    mix = [answers("GET /", ok=900.0), RequestAnswers("DELETE /x", {"ok": 1.0, "client_error": 4.0}, {"404": 4.0})]
    assert judge(mix, 901.0, 4.0, WINDOW).valid
    strict = SteadyRule(min_failed=4)
    assert not judge(mix, 901.0, 4.0, WINDOW, strict).valid


def test_logical_requests_that_mostly_gave_up_fail_the_rule_even_with_most_attempts_ok():
    # every request succeeds on its 5th attempt, but the deadline gives most of them up first
    found = judge([answers("GET /", ok=100.0, timeout=20.0)], 100.0, 400.0, WINDOW)
    assert found.problem.startswith("100 of the 500 logical requests that ended in the steady window")


def test_no_answer_at_all_and_no_reading_are_not_valid():
    assert judge([answers("GET /")], 0.0, 0.0, WINDOW).problem.startswith("no attempt ended in the steady window")
    missing = judge(None, 0.0, 0.0, WINDOW)
    assert not missing.valid and missing.problem.startswith("the load generator was not read at both ends")


def test_the_commonest_failure_is_chosen_over_the_others():
    mix = [RequestAnswers("GET /", {"ok": 10.0, "client_error": 60.0, "timeout": 30.0}, {"200": 10.0, "404": 60.0})]
    assert judge(mix, 10.0, 90.0, WINDOW).problem.startswith("GET / answered 404 on 60% of its attempts (60 of 100)")
