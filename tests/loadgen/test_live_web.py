"""The web UI: the options in its start form, refusals of bad specs, /metrics after a run."""

from __future__ import annotations

import json

import pytest

from .conftest import get_text

pytestmark = pytest.mark.live

GOOD = {
    "user_count": "2",
    "spawn_rate": "10",
    "retry_strategy": "fixed:50ms",
    "think_time": "constant:100ms",
}

#: (field, bad value, words the refusal must contain)
BAD_FIELDS = [
    ("retry_strategy", "bogus", ["--retry-strategy", "unknown strategy 'bogus'", "exponential", "smira"]),
    ("retry_strategy", "exponential:factor=0.5", ["--retry-strategy", "factor", ">= 1"]),
    ("retry_budget", "tokens:max=-1", ["--retry-budget", "max"]),
    ("think_time", "sometimes", ["--think-time", "exponential:10s"]),
    ("think_time", "forever", ["--think-time", "finite", "exponential:10s"]),
    ("attempt_timeout", "2", ["--attempt-timeout", "unit"]),
    ("max_attempts", "0", ["--max-attempts", ">= 1"]),
    ("request_deadline", "soon", ["--request-deadline"]),
    ("arrival", "sideways", ["--arrival", "closed, open"]),
    ("retry_preset", "envoy", ["--retry-preset envoy and --retry-strategy fixed:50ms", "give one"]),
]


def test_start_form_refuses_bad_specs_then_runs_a_good_one(target_server, web_locust, wait):
    target = target_server("--model", "fixed", "--base-delay", "10ms")
    web = web_locust(target.url)
    page = web.get_index()
    fields = ("retry_strategy", "retry_preset", "retry_budget", "think_time", "attempt_timeout", "arrival")
    for field in (*fields, "keep_backoff"):
        assert field in page, f"{field} missing from the start form"
    assert "metrics_port" not in page

    for field, value, words in BAD_FIELDS:
        answer = web.swarm(**{**GOOD, field: value})
        assert answer["success"] is False, (field, answer)
        for word in words:
            assert word in answer["message"], (field, answer["message"])
        assert web.stats()["state"] == "ready", "a refused swarm must not start"
    assert web.metrics().get("retrystorm_client_attempts_total") == 0

    answer = web.swarm(**GOOD)
    assert answer["success"] is True, answer
    ok = "retrystorm_client_requests_total"
    wait(lambda: web.metrics().get(ok, strategy="fixed", outcome="ok") >= 5, 30, "requests with the form's strategy")
    assert web.stop()["success"] is True
    wait(lambda: web.stats()["state"] == "stopped", 30, "the run to stop")
    after_stop = web.metrics()
    served = after_stop.get("retrystorm_client_attempts_total", strategy="fixed", outcome="ok")
    assert served >= 5
    # the endpoint keeps serving the last values after the run
    assert web.metrics().get("retrystorm_client_attempts_total", strategy="fixed", outcome="ok") == served
    assert web.metrics().get("retrystorm_client_active_users", strategy="fixed") == 0
    assert web.metrics().get("retrystorm_client_users_in_backoff", strategy="fixed") == 0
    received = target.metrics().get("retrystorm_target_requests_total")
    received += target.metrics().get("retrystorm_target_in_flight_requests")
    assert served <= received <= served + 2  # an attempt cut short by the stop
    assert "Traceback" not in web.log.read_text()


def test_the_start_form_takes_a_request_mix_and_retry_on(target_server, web_locust, wait):
    target = target_server("--model", "fixed", "--base-delay", "10ms")
    web = web_locust(target.url)
    page = web.get_index()
    assert "request" in page and "retry_on" in page
    refused = web.swarm(**{**GOOD, "request": "FETCH /api"})
    assert refused["success"] is False and "--request: request 1: method: got 'FETCH'" in refused["message"]
    refused = web.swarm(**{**GOOD, "retry_on": "sometimes"})
    assert refused["success"] is False and "--retry-on" in refused["message"]
    mix = "GET /api name=read weight=3 ;; GET /api name=write weight=1 header=X-Kind:write"
    answer = web.swarm(**{**GOOD, "request": mix, "retry_on": "timeout,5xx"})
    assert answer["success"] is True, answer
    ok = "retrystorm_client_requests_total"
    # both kinds, whichever comes first: with weights 3:1 the first two writes may come before two reads
    wait(
        lambda: min(web.metrics().get(ok, request=kind, outcome="ok") for kind in ("read", "write")) >= 2,
        30,
        "requests of both kinds",
    )
    assert web.stop()["success"] is True
    wait(lambda: web.stats()["state"] == "stopped", 30, "the run to stop")


def test_a_load_spike_from_the_start_form_raises_the_users_shades_the_storm_view_and_ends_with_the_test(
    target_server, web_locust, wait
):
    """A spike typed in the form: 2 users, three times as many from 2 s for 30 s; stopped while it is in force."""
    target = target_server("--model", "fixed", "--base-delay", "10ms")
    web = web_locust(target.url)
    assert "load_spikes" in web.get_index()
    refused = web.swarm(**{**GOOD, "load_spikes": "soon"})
    assert refused["success"] is False and "--load-spikes: got 'soon'" in refused["message"]
    assert web.swarm(**{**GOOD, "load_spikes": "2s+30s:x3"})["success"] is True
    active = "retrystorm_client_active_users"
    wait(lambda: web.metrics().get(active, strategy="fixed") == 6, 30, "the spike's users")
    assert web.metrics().get("retrystorm_client_load_factor", strategy="fixed") == 3.0

    def spike_band() -> list[dict]:
        series = json.loads(get_text(web.url + "/storm/series"))
        return [band for band in series["bands"] if band["kind"] == "spike"]

    [band] = wait(spike_band, 30, "a spike band in the Retry storm tab")
    assert band["labels"] == ["x3"] and band["end_s"] is None  # still in force
    assert web.stop()["success"] is True
    wait(lambda: web.stats()["state"] == "stopped", 30, "the run to stop")
    assert web.metrics().get("retrystorm_client_load_factor", strategy="fixed") == 1.0  # not left at 3
    assert "Traceback" not in web.log.read_text()
