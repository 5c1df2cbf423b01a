"""The processes' own OpenTelemetry instruments: a real target and a real headless Locust export over OTLP to a real
receiver (:mod:`tests.support.otlp`), and once the load has stopped, the exported totals equal the Prometheus readings
of the same processes: attempts and logical requests by outcome, each attempt's duration, each backoff, attempts per
logical request, and the target's requests by outcome and their durations."""

import os
import time

import pytest

from tests.loadgen.conftest import LOCUSTFILE, Processes, free_port, locust_argv, scrape, target_starter, wait_until
from tests.support.otlp import GrpcReceiver, HttpReceiver

pytestmark = pytest.mark.live


def _key(**attributes):
    return tuple(sorted(attributes.items()))


def _sums(received, name, attribute):
    """The last exported value of counter ``name`` by ``attribute`` (summed over the rest)."""
    found = {}
    for key, value in received.last_values(name).items():
        label = dict(key).get(attribute)
        found[label] = found.get(label, 0.0) + value
    return found


def _histogram_by(received, name, attribute):
    found = {}
    for key, (count, total) in received.last_histograms(name).items():
        label = dict(key).get(attribute)
        before = found.get(label, (0, 0.0))
        found[label] = (before[0] + count, before[1] + total)
    return found


def exported_client(received):
    return {
        "attempts": {
            k: c for k, (c, _) in _histogram_by(received, "http.client.request.duration", "error.type").items()
        },
        "requests": _histogram_by(received, "retrystorm.client.request.attempts", "retrystorm.strategy"),
        "backoff": _histogram_by(received, "retrystorm.client.retry.delay", "retrystorm.strategy"),
        "target": _histogram_by(received, "http.server.request.duration", "retrystorm.outcome"),
    }


@pytest.mark.parametrize(("receiver_type", "protocol"), [(GrpcReceiver, "grpc"), (HttpReceiver, "http/protobuf")])
def test_the_exported_totals_equal_the_prometheus_readings(tmp_path, monkeypatch, receiver_type, protocol):
    receiver = receiver_type()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
    processes = Processes(tmp_path)
    try:
        target = target_starter(processes)(
            "--model", "fixed", "--base-delay", "20ms", "--otel-endpoint", receiver.endpoint
        )
        target.fail(first_attempts=1, status=503)  # every logical request needs a retry
        metrics_port = free_port()
        argv = locust_argv(
            "--headless", "--host", target.url, "-u", "10", "-r", "10", "-t", "6s", "--only-summary",
            "--metrics-port", str(metrics_port), "--metrics-linger", "60s", "--think-time", "constant:100ms",
            "--retry-strategy", "fixed:50ms", "--otel-endpoint", receiver.endpoint, locustfile=LOCUSTFILE,
        )  # fmt: skip
        processes.start("locust", argv)

        def settled():
            """Both sides read alike once the users stopped (Locust lingers; each side exports every second)."""
            client, server = scrape(metrics_port), target.metrics()
            exported = exported_client(receiver.received)
            attempts = {o: client.get("retrystorm_client_attempts_total", outcome=o) for o in ("ok", "server_error")}
            prometheus = (attempts, client.get("retrystorm_client_requests_total"))
            got = (exported["attempts"].get(None, 0), exported["attempts"].get("server_error", 0))
            done = client.get("retrystorm_client_active_users") == 0 and sum(attempts.values()) > 0
            return done and got == (attempts["ok"], attempts["server_error"]) and (client, server, exported, prometheus)

        client, server, exported, _ = wait_until(settled, 90, "the exported totals to equal Prometheus'")
        time.sleep(1.5)  # one more export of each side: nothing moved
        client, server, exported = scrape(metrics_port), target.metrics(), exported_client(receiver.received)
    finally:
        processes.stop_all()
        receiver.stop()
    received = receiver.received
    by_outcome = _sums(received, "retrystorm.client.attempts", "retrystorm.outcome")
    assert by_outcome["server_error"] == client.get("retrystorm_client_attempts_total", outcome="server_error") > 0
    assert by_outcome["ok"] == client.get("retrystorm_client_attempts_total", outcome="ok") > 0
    requests = _sums(received, "retrystorm.client.requests", "retrystorm.outcome")
    assert requests["ok"] == client.get("retrystorm_client_requests_total", outcome="ok") > 0
    ((count, total),) = exported["requests"].values()
    assert count == client.get("retrystorm_client_requests_total")
    assert total == 2 * count  # the first attempt of each failed, the second succeeded
    assert total <= client.get("retrystorm_client_attempts_total")  # less the attempts of requests stopped midway
    ((backoffs, delay_s),) = exported["backoff"].values()
    assert backoffs == client.get("retrystorm_client_backoff_delay_seconds_count") > 0
    assert delay_s == pytest.approx(client.get("retrystorm_client_backoff_delay_seconds_sum"))
    for outcome, (count, total) in exported["target"].items():
        assert count == server.get("retrystorm_target_requests_total", outcome=outcome), outcome
        assert total == pytest.approx(server.get("retrystorm_target_response_time_seconds_sum", outcome=outcome))
    assert exported["target"]["ok"][0] > 0  # the injected 503s are not the model's: counted apart, as in Prometheus
    resources = {
        a.value.string_value
        for request in received.metrics
        for r in request.resource_metrics
        for a in r.resource.attributes
        if a.key == "service.name"
    }
    assert resources == {"retrystorm-loadgen", "retrystorm-target"}
    assert os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") == protocol
