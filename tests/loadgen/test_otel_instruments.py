"""The load generator's OpenTelemetry instruments beside its Prometheus metrics, fed by the same calls, read with the
SDK's in-memory reader: the same totals, the semantic conventions' names, and gRFC A96's per-call metrics for a gRPC
call whose retries are retrystorm's."""

import dataclasses

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from prometheus_client import CollectorRegistry

from retrystorm.loadgen.metrics import build_metrics
from retrystorm.loadgen.otel_instruments import ClientInstruments
from retrystorm.loadgen.outcomes import AttemptOutcome, RequestOutcome


def points(reader):
    found = {}
    for resource in reader.get_metrics_data().resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                for point in metric.data.data_points:
                    found.setdefault(metric.name, []).append(point)
    return found


def instrumented(grpc=False):
    reader = InMemoryMetricReader()
    instruments = ClientInstruments(MeterProvider(metric_readers=[reader]).get_meter("t"), grpc=grpc)
    registry = CollectorRegistry()
    metrics = dataclasses.replace(build_metrics(registry), otel=instruments)
    return reader, registry, metrics


def test_the_exported_totals_are_the_prometheus_totals():
    reader, registry, metrics = instrumented()
    bound = metrics.for_strategy("fixed", ["/api", "POST /orders"], {"POST /orders": "POST"})
    orders = bound.by_request["POST /orders"]
    bound.attempt(AttemptOutcome.TIMEOUT, 2.0)
    bound.retry(0.1)
    bound.attempt(AttemptOutcome.OK, 0.05)
    bound.by_request["/api"].request(RequestOutcome.OK, 2.2, 2)
    orders.attempt(AttemptOutcome.SERVER_ERROR, 0.01)
    orders.request(RequestOutcome.GAVE_UP, 0.01, 1)
    found = points(reader)
    durations = {tuple(sorted(p.attributes.items())): p for p in found["http.client.request.duration"]}
    timeout = durations[(("error.type", "timeout"), ("http.request.method", "GET"), ("retrystorm.request", "/api"),
                         ("retrystorm.strategy", "fixed"))]  # fmt: skip
    assert (timeout.count, timeout.sum) == (1, 2.0)
    post = [p for p in found["http.client.request.duration"] if p.attributes["http.request.method"] == "POST"]
    assert [p.attributes["error.type"] for p in post] == ["server_error"]
    counted = {(p.attributes["retrystorm.request"], p.attributes["retrystorm.outcome"]): p.value
               for p in found["retrystorm.client.attempts"]}  # fmt: skip
    for (request, outcome), value in counted.items():
        labels = {"strategy": "fixed", "request": request, "outcome": outcome}
        assert value == registry.get_sample_value("retrystorm_client_attempts_total", labels)
    (delay,) = found["retrystorm.client.retry.delay"]
    assert (delay.count, delay.sum) == (1, registry.get_sample_value(
        "retrystorm_client_backoff_delay_seconds_sum", {"strategy": "fixed"}))  # fmt: skip
    per_request = {
        p.attributes["retrystorm.request"]: (p.count, p.sum) for p in found["retrystorm.client.request.attempts"]
    }
    assert per_request == {"/api": (1, 2.0), "POST /orders": (1, 1.0)}
    assert "grpc.client.call.retries" not in found  # HTTP: A96 is gRPC's


def test_a_grpc_call_retried_by_a_strategy_has_a96s_metrics():
    reader, _, metrics = instrumented(grpc=True)
    bound = metrics.for_strategy("exponential", ["/api"], {"/api": "/retrystorm.target.v1.Target/Echo"})
    for outcome in (AttemptOutcome.SERVER_ERROR, AttemptOutcome.SERVER_ERROR, AttemptOutcome.OK):
        bound.attempt(outcome, 0.01)
    bound.first.request(RequestOutcome.OK, 0.5, 3, 0.35)
    bound.first.request(RequestOutcome.OK, 0.5, None)  # grpcio's own retries: the call's attempts are not seen
    found = points(reader)
    (retries,) = found["grpc.client.call.retries"]
    assert (retries.count, retries.sum) == (1, 2)
    assert retries.attributes["grpc.method"] == "/retrystorm.target.v1.Target/Echo"
    (delay,) = found["grpc.client.call.retry_delay"]
    assert (delay.count, delay.sum) == (1, 0.35)
    assert sum(p.count for p in found["rpc.client.duration"]) == 3
    assert sum(p.value for p in found["retrystorm.client.requests"]) == 2
    assert "grpc.client.call.transparent_retries" not in found


def test_without_an_export_nothing_is_built():
    metrics = build_metrics(CollectorRegistry())
    assert metrics.otel is None
    assert metrics.for_strategy("fixed").first.otel is None
