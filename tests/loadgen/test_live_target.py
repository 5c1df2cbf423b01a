"""The user against the real target: timeouts, budgets, open and closed arrival.

Each test starts ``retrystorm target`` on a free port with a fixed delay, so what the
server holds and what the client sends can be counted on both sides.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.live

IN_FLIGHT = "retrystorm_target_in_flight_requests"
ABANDONED_IN_FLIGHT = "retrystorm_target_abandoned_in_flight_requests"
SERVED = "retrystorm_target_requests_total"


def test_a_timed_out_attempt_is_abandoned_and_the_server_keeps_working(target_server, run_locust, wait):
    target = target_server("--model", "fixed", "--base-delay", "6s")
    users = 2
    run = run_locust(
        target.url,
        "--attempt-timeout=300ms",
        "--retry-strategy=fixed:100ms",
        "--max-attempts=2",
        "--think-time=constant:100ms",
        users=users,
        run_time="2s",
    )
    timeouts = run.metrics.get("retrystorm_client_attempts_total", outcome="timeout")
    assert timeouts >= 4
    assert run.metrics.get("retrystorm_client_attempts_total") == timeouts
    assert run.metrics.get("retrystorm_client_requests_total", outcome="gave_up") >= 2
    assert run.metrics.get("retrystorm_client_attempt_latency_seconds_bucket", outcome="timeout", le="0.2") == 0
    # every attempt the client gave up on is still in the server, now without a client
    held = target.metrics().get(IN_FLIGHT)
    assert timeouts <= held <= timeouts + users  # attempts cut short when Locust stopped
    wait(lambda: target.metrics().get(ABANDONED_IN_FLIGHT) == held, 10, "the server to see the clients gone")
    # ... and it finishes them when their modelled delay has passed
    wait(lambda: target.metrics().get(SERVED, outcome="abandoned") == held, 30, "the abandoned requests to finish")
    assert target.metrics().get(IN_FLIGHT) == 0


def test_an_attempt_is_counted_as_started_when_sent_and_by_outcome_when_it_ends(target_server, run_locust):
    """A frozen-like server answers nothing: the attempts on the wire show only in the started counter."""
    target = target_server("--model", "fixed", "--base-delay", "60s")
    users = 2
    run = run_locust(
        target.url, "--attempt-timeout=30s", "--think-time=constant:100ms", users=users, run_time="2s"
    )  # the run ends long before any attempt could time out or be answered
    started = run.metrics.get("retrystorm_client_attempts_started_total")
    assert 1 <= started <= users  # one attempt per user that got to send before the stop
    assert run.metrics.get("retrystorm_client_attempts_total") == 0
    assert target.metrics().get(IN_FLIGHT) == started


def test_budget_exhaustion_stops_retries_for_the_whole_process(target_server, run_locust):
    target = target_server("--model", "fixed", "--base-delay", "30s")
    users = 3
    run = run_locust(
        target.url,
        "--attempt-timeout=200ms",
        "--retry-strategy=fixed:50ms",
        "--retry-budget=quota:capacity=20,timeout_cost=10",  # two retries after timeouts, then none
        "--think-time=constant:100ms",
        users=users,
        run_time="3s",
    )
    get = run.metrics.get
    assert get("retrystorm_client_retries_total") == 2
    gave_up = get("retrystorm_client_requests_total", outcome="gave_up")
    assert gave_up >= 5
    assert get("retrystorm_client_budget_refusals_total") == gave_up
    assert get("retrystorm_client_requests_total", outcome="ok") == 0
    attempts = get("retrystorm_client_attempts_total", outcome="timeout")
    assert gave_up <= attempts <= gave_up + 2 + users
    assert run.stat("/api (logical)")["num_failures"] == gave_up
    assert target.metrics().get(IN_FLIGHT) >= attempts


def test_adaptive_budget_rejects_attempts_locally(target_server, run_locust):
    """The SRE book's client-side throttling: with no successes, attempts stay in the client."""
    target = target_server("--model", "fixed", "--base-delay", "30s")
    run = run_locust(
        target.url,
        "--attempt-timeout=100ms",
        "--retry-strategy=fixed:50ms",
        "--retry-budget=adaptive",
        "--think-time=constant:100ms",
        users=2,
        run_time="3s",
    )
    sent = run.metrics.get("retrystorm_client_attempts_total")
    refused = run.metrics.get("retrystorm_client_budget_refusals_total")
    assert sent >= 2
    assert refused > 2 * sent  # rejection probability (requests - 2 accepts) / (requests + 1) -> 1
    assert run.metrics.get("retrystorm_client_requests_total", outcome="gave_up") == 0  # retries forever
    assert target.metrics().get(IN_FLIGHT) <= sent + 2  # locally rejected attempts never reached it


def test_open_arrival_keeps_offering_load_when_the_server_slows(target_server, start_locust):
    """Closed users wait for each slow response; open users start requests on schedule."""
    arrivals = {}
    pending = {}
    for arrival in ("closed", "open"):
        target = target_server("--model", "fixed", "--base-delay", "2s")
        options = ("--think-time=constant:250ms", "--attempt-timeout=10s", f"--arrival={arrival}")
        pending[arrival] = (target, start_locust(target.url, *options, users=4, run_time="5s"))
    for arrival, (target, run) in pending.items():
        result = run.finish()
        server = target.metrics()
        arrivals[arrival] = server.get(IN_FLIGHT) + server.get(SERVED)
        finished = result.metrics.get("retrystorm_client_requests_total", outcome="ok")
        assert finished == server.get(SERVED, outcome="ok")
        assert result.metrics.get("retrystorm_client_attempts_total", outcome="timeout") == 0
    # closed: about 4 users x 5 s / 2.25 s = 9 requests; open: 4 x 5 s / 0.25 s = 80
    assert arrivals["closed"] >= 4
    assert arrivals["open"] >= 4 * arrivals["closed"], arrivals
