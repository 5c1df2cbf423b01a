"""The target service's Prometheus metrics, built per registry (never at import).

Names follow ``retrystorm_target_<what>_<unit>`` with base units (seconds) and
``_total`` counters. State gauges (in flight, abandoned in flight, modelled delay,
open connections) are read from the service when Prometheus scrapes, so serving a
request never touches them; traffic metrics (requests by outcome, response time, bad
requests) are updated as requests end and can be reset between scenario runs.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import time
from collections.abc import Callable, Iterator
from typing import Protocol

from prometheus_client import CollectorRegistry, Gauge, Info
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

from retrystorm.spec import params_of
from retrystorm.target.models import OverloadModel

PREFIX = "retrystorm_target"
#: Response-time buckets, seconds: 10 ms to 10 min, roughly 1-2.5-5 per decade.
RESPONSE_TIME_BUCKETS_S = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 600)
_BUCKET_LABELS = (*(repr(float(bound)) for bound in RESPONSE_TIME_BUCKETS_S), "+Inf")
OUTCOMES = ("ok", "rejected", "abandoned")


class RequestObserver(Protocol):
    """What else sees each request end (the OpenTelemetry instruments, :mod:`retrystorm.target.otel_instruments`)."""

    def request(self, outcome: str, elapsed_s: float) -> None:
        """A request ended with ``outcome`` after ``elapsed_s`` in the service."""
        ...


class Traffic(Collector):
    """Requests by outcome, response times, bad requests and injected failures: what
    ``POST /admin/reset`` clears.

    Outcomes: ``ok`` (200), ``rejected`` (503 from the model), ``abandoned`` (the
    client went away first). Kept as plain numbers and exposed when Prometheus
    scrapes, because prometheus-client's own counters take a lock per update and the
    service updates these once per request (the event loop is the only writer).
    """

    def __init__(self) -> None:
        #: The process's OpenTelemetry instruments, fed by :meth:`observe` too (``None``: no export, the default).
        self.otel: RequestObserver | None = None
        self.reset()

    def reset(self) -> None:
        """Zero everything and restart the counters' ``_created`` time."""
        self.created = time.time()
        self.sums_s = dict.fromkeys(OUTCOMES, 0.0)
        self.buckets = {outcome: [0] * (len(RESPONSE_TIME_BUCKETS_S) + 1) for outcome in OUTCOMES}
        self.bad_requests: dict[int, int] = {}
        self.injected: dict[int, int] = {}

    def observe(self, outcome: str, elapsed_s: float) -> None:
        """A request to /api ended with ``outcome`` after ``elapsed_s`` in the service."""
        self.sums_s[outcome] += elapsed_s  # the count is the sum of the buckets
        self.buckets[outcome][bisect.bisect_left(RESPONSE_TIME_BUCKETS_S, elapsed_s)] += 1
        if self.otel is not None:
            self.otel.request(outcome, elapsed_s)

    def bad_request(self, status: int) -> None:
        """A request was answered with 4xx ``status``."""
        self.bad_requests[status] = self.bad_requests.get(status, 0) + 1

    def injected_failure(self, status: int) -> None:
        """A request to /api was failed on purpose with ``status`` (see :mod:`retrystorm.target.faults`)."""
        self.injected[status] = self.injected.get(status, 0) + 1

    def collect(self) -> Iterator[Metric]:
        requests = CounterMetricFamily(
            f"{PREFIX}_requests",
            "Requests to /api that ended, by outcome: ok (200), rejected (503), abandoned (client gone first).",
            labels=["outcome"],
        )
        response_time = HistogramMetricFamily(
            f"{PREFIX}_response_time_seconds",
            "Time from a request's arrival to its release by the model, by outcome.",
            labels=["outcome"],
        )
        for outcome in OUTCOMES:
            cumulative = list(itertools.accumulate(self.buckets[outcome]))
            requests.add_metric([outcome], cumulative[-1], created=self.created)
            buckets = list(zip(_BUCKET_LABELS, cumulative, strict=True))
            response_time.add_metric([outcome], buckets, self.sums_s[outcome])
        yield from (requests, response_time)
        yield self._by_status(
            "bad_requests",
            "Requests answered with a 4xx status (malformed, unknown path or method, bad admin input), by status.",
            self.bad_requests,
        )
        yield self._by_status(
            "injected_failures",
            "Requests to /api answered with an error on purpose by the fault rule (PUT /admin/faults), by status.",
            self.injected,
        )

    def _by_status(self, what: str, documentation: str, counts: dict[int, int]) -> CounterMetricFamily:
        family = CounterMetricFamily(f"{PREFIX}_{what}", documentation, labels=["status"])
        for status, count in sorted(counts.items()):
            family.add_metric([str(status)], count, created=self.created)
        return family


class ConnectionCounters(Collector):
    """Connections the limits closed (:mod:`retrystorm.target.service.limits`), read from the server when
    Prometheus scrapes: refused past ``--max-connections``, and timed out, by timeout. Not
    cleared by ``POST /admin/reset``: they are about the process, not about one run's traffic."""

    def __init__(self, refused: Callable[[], int], timed_out: Callable[[], dict[str, int]]) -> None:
        self.refused = refused
        self.timed_out = timed_out
        self.created = time.time()

    def collect(self) -> Iterator[Metric]:
        refused = CounterMetricFamily(
            f"{PREFIX}_refused_connections",
            "Connections closed at once, unread, because --max-connections were open.",
        )
        refused.add_metric([], self.refused(), created=self.created)
        timed_out = CounterMetricFamily(
            f"{PREFIX}_timed_out_connections",
            "Connections closed by a timeout: header (a request too slow to arrive) or idle (nothing owed or sent).",
            labels=["timeout"],
        )
        for timeout, count in sorted(self.timed_out().items()):
            timed_out.add_metric([timeout], count, created=self.created)
        yield from (refused, timed_out)


class GrpcAttempts(Collector):
    """gRPC attempts as they arrived, by attempt number (``grpc-previous-rpc-attempts`` + 1; 5 and above
    as ``5+``), read from the gRPC front when Prometheus scrapes: the retries grpcio made, seen on the wire."""

    def __init__(self, counts: Callable[[], dict[int, int]]) -> None:
        self.counts = counts
        self.created = time.time()

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily(
            f"{PREFIX}_grpc_attempts",
            "gRPC calls of Target/Echo as they arrived, by attempt number (1 + grpc-previous-rpc-attempts; 5+).",
            labels=["attempt"],
        )
        for attempt, count in sorted(self.counts().items()):
            family.add_metric([str(attempt) if attempt < 5 else "5+"], count, created=self.created)
        yield family


@dataclasses.dataclass(slots=True)
class TargetMetrics:
    """Every metric of one target service, registered in one registry."""

    registry: CollectorRegistry
    in_flight: Gauge
    abandoned_in_flight: Gauge
    delay: Gauge
    connections: Gauge
    model_info: Info
    model_parameter: Gauge
    capacity_ratio: Gauge
    injected_error_probability: Gauge
    traffic: Traffic

    def bind_state(
        self,
        *,
        in_flight: Callable[[], float],
        abandoned_in_flight: Callable[[], float],
        delay_s: Callable[[], float],
        connections: Callable[[], float],
    ) -> None:
        """Read the state gauges from these functions at scrape time."""
        self.in_flight.set_function(in_flight)
        self.abandoned_in_flight.set_function(abandoned_in_flight)
        self.delay.set_function(delay_s)
        self.connections.set_function(connections)

    def bind_triggers(self, *, capacity_ratio: Callable[[], float], error_probability: Callable[[], float]) -> None:
        """Read the trigger gauges (a ``slow``'s capacity, an ``errors`` burst's rule) at scrape time."""
        self.capacity_ratio.set_function(capacity_ratio)
        self.injected_error_probability.set_function(error_probability)

    def bind_connection_counters(self, refused: Callable[[], int], timed_out: Callable[[], dict[str, int]]) -> None:
        """Expose the connections the limits closed, read from these functions at scrape time."""
        self.registry.register(ConnectionCounters(refused, timed_out))

    def bind_grpc_attempts(self, counts: Callable[[], dict[int, int]]) -> None:
        """Expose the gRPC attempts by attempt number, read from ``counts`` at scrape time."""
        self.registry.register(GrpcAttempts(counts))

    def show_model(self, model: OverloadModel) -> None:
        """Publish the running model: its spec as info, numeric parameters in base units."""
        self.model_info.info({"model": model.name, "spec": model.spec()})
        self.model_parameter.clear()
        for info in params_of(type(model)):
            value = getattr(model, info.field)
            if isinstance(value, int | float) and not isinstance(value, bool):
                self.model_parameter.labels(model.name, info.key).set(value)


def build_metrics(registry: CollectorRegistry) -> TargetMetrics:
    """Create and register every target metric, plus prometheus-client's process,
    platform and GC collectors, in ``registry``."""
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    traffic = Traffic()
    registry.register(traffic)
    return TargetMetrics(
        registry=registry,
        in_flight=Gauge(
            f"{PREFIX}_in_flight_requests",
            "Requests admitted to the model and not yet released, abandoned ones included.",
            registry=registry,
        ),
        abandoned_in_flight=Gauge(
            f"{PREFIX}_abandoned_in_flight_requests",
            "Requests still in the model whose client has disconnected.",
            registry=registry,
        ),
        delay=Gauge(f"{PREFIX}_delay_seconds", "The model's delay at the current load.", registry=registry),
        connections=Gauge(f"{PREFIX}_open_connections", "Client connections currently open.", registry=registry),
        model_info=Info(f"{PREFIX}_model", "The running overload model and its full spec.", registry=registry),
        model_parameter=Gauge(
            f"{PREFIX}_model_parameter",
            "Numeric parameters of the running model, durations in seconds.",
            ["model", "parameter"],
            registry=registry,
        ),
        capacity_ratio=Gauge(
            f"{PREFIX}_capacity_ratio",
            "The fraction of its capacity the model runs at (PUT /admin/capacity, a slow trigger): 1 when whole.",
            registry=registry,
        ),
        injected_error_probability=Gauge(
            f"{PREFIX}_injected_error_probability",
            "The armed fault rule's probability of failing an attempt (PUT /admin/faults, an errors trigger): "
            "0 when none is armed.",
            registry=registry,
        ),
        traffic=traffic,
    )
