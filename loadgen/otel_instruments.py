"""The load generator's own OpenTelemetry instruments, recorded where each attempt and logical request ends.

Off by default: a Locust process builds them only when ``--otel-endpoint`` or ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set
(:mod:`retrystorm.loadgen.plugin`). They sit beside the Prometheus metrics (:mod:`retrystorm.loadgen.metrics`), fed
by the same calls, so a process's exported totals are its Prometheus totals:

* ``retrystorm.client.attempts`` (counter, by ``retrystorm.outcome``) = ``retrystorm_client_attempts_total``;
* ``retrystorm.client.requests`` (counter, by outcome) = ``retrystorm_client_requests_total``;
* ``http.client.request.duration`` (histogram, s): each attempt's duration, as OpenTelemetry's HTTP semantic
  conventions name it, with ``http.request.method`` and ``error.type`` (the outcome) when it failed; its count is the
  attempts that ended (over gRPC it is ``rpc.client.duration``);
* ``retrystorm.client.retry.delay`` (histogram, s) = ``retrystorm_client_backoff_delay_seconds``: each backoff;
* ``retrystorm.client.request.attempts`` (histogram, ``{attempt}``): attempts per logical request that ended (new:
  Prometheus has only the totals);
* gRPC's A96 per-call metrics where the call's retries are retrystorm's (the gRPC user's ``emulated`` mode):
  ``grpc.client.call.retries`` (retries per call) and ``grpc.client.call.retry_delay`` (the call's total backoff,
  s), with ``grpc.method``. ``grpc.client.call.transparent_retries`` is not recorded: emulated mode turns grpcio's
  retries off, transparent ones included, and in ``real`` mode grpcio retries inside its C core, where Python sees
  no call's retries (its attempts are read from channelz instead).

Every series carries ``retrystorm.strategy`` (the strategy's family, as the Prometheus label) and
``retrystorm.request``. Histograms use the Prometheus buckets (:data:`~retrystorm.loadgen.buckets.LATENCY_BUCKETS_S`)
as explicit bucket boundaries.
"""

from __future__ import annotations

from typing import Any

from retrystorm.loadgen.buckets import LATENCY_BUCKETS_S
from retrystorm.loadgen.outcomes import AttemptOutcome, RequestOutcome

SCOPE = "retrystorm.loadgen"
#: Attempts per logical request: the bucket boundaries (1, 2, 3, ... 10, then wider).
ATTEMPT_BUCKETS = (1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0, 50.0, 100.0)


class ClientInstruments:
    """The instruments of one Locust process, made on ``meter`` (an OpenTelemetry SDK meter)."""

    def __init__(self, meter: Any, *, grpc: bool = False) -> None:
        self.grpc = grpc
        latency = list(LATENCY_BUCKETS_S)
        self.attempts = meter.create_counter(
            "retrystorm.client.attempts", unit="{attempt}", description="Attempts ended."
        )
        self.requests = meter.create_counter(
            "retrystorm.client.requests", unit="{request}", description="Logical requests ended."
        )
        self.duration = meter.create_histogram(
            "rpc.client.duration" if grpc else "http.client.request.duration",
            unit="s",
            description="Duration of each attempt, until its answer or its timeout.",
            explicit_bucket_boundaries_advisory=latency,
        )
        self.retry_delay = meter.create_histogram(
            "retrystorm.client.retry.delay",
            unit="s",
            description="Each backoff delay before a retry.",
            explicit_bucket_boundaries_advisory=latency,
        )
        self.attempts_per_request = meter.create_histogram(
            "retrystorm.client.request.attempts",
            unit="{attempt}",
            description="Attempts per logical request that ended.",
            explicit_bucket_boundaries_advisory=list(ATTEMPT_BUCKETS),
        )
        self.call_retries = meter.create_histogram(
            "grpc.client.call.retries",
            unit="{retry}",
            description="Retries per call (gRFC A96), where the retries are retrystorm's.",
            explicit_bucket_boundaries_advisory=[0.0, *ATTEMPT_BUCKETS],
        )
        self.call_retry_delay = meter.create_histogram(
            "grpc.client.call.retry_delay",
            unit="s",
            description="Total backoff of a call (gRFC A96), where the retries are retrystorm's.",
            explicit_bucket_boundaries_advisory=latency,
        )

    def for_request(self, strategy: str, request: str, method: str) -> RequestInstruments:
        """The instruments bound to one strategy and one request of the mix (``method``: its HTTP method)."""
        return RequestInstruments(self, strategy, request, method)


class RequestInstruments:
    """One request's attribute sets, made once; each call records with them."""

    __slots__ = ("_attempt", "_duration", "_per_request", "_request", "_strategy", "a96", "parent")

    def __init__(self, parent: ClientInstruments, strategy: str, request: str, method: str) -> None:
        self.parent = parent
        base = {"retrystorm.strategy": strategy, "retrystorm.request": request}
        self._strategy = {"retrystorm.strategy": strategy}
        self._attempt = {o: {**base, "retrystorm.outcome": o.value} for o in AttemptOutcome}
        key = "grpc.method" if parent.grpc else "http.request.method"
        self._duration = {
            o: {**base, key: method, **({} if o is AttemptOutcome.OK else {"error.type": o.value})}
            for o in AttemptOutcome
        }
        self._request = {o: {**base, "retrystorm.outcome": o.value} for o in RequestOutcome}
        self._per_request = base
        #: A96's attributes: the call's method and its status (ok or the failure).
        self.a96 = {o: {"grpc.method": method, "grpc.status": o.value, **self._strategy} for o in RequestOutcome}

    def attempt(self, outcome: AttemptOutcome, latency_s: float) -> None:
        """An attempt ended."""
        self.parent.attempts.add(1, self._attempt[outcome])
        self.parent.duration.record(latency_s, self._duration[outcome])

    def request(self, outcome: RequestOutcome, attempts: int | None, backoff_s: float) -> None:
        """A logical request ended after ``attempts`` attempts (``None``: not known to the user, as with grpcio's own
        retries) and ``backoff_s`` of backoff in all."""
        self.parent.requests.add(1, self._request[outcome])
        if attempts is None:
            return
        self.parent.attempts_per_request.record(attempts, self._per_request)
        if self.parent.grpc:
            self.parent.call_retries.record(max(0, attempts - 1), self.a96[outcome])
            self.parent.call_retry_delay.record(backoff_s, self.a96[outcome])

    def retry(self, delay_s: float) -> None:
        """A backoff of ``delay_s`` before a retry."""
        self.parent.retry_delay.record(delay_s, self._strategy)
