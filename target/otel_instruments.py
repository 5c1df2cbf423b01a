"""The target's own OpenTelemetry instruments, recorded where each request ends (off by default).

Built when ``retrystorm target --otel-endpoint`` (or ``OTEL_EXPORTER_OTLP_ENDPOINT``) asks for an export, beside the
Prometheus metrics and fed by the same call (:class:`~retrystorm.target.metrics.Traffic`), so the exported totals
are the Prometheus totals:

* ``http.server.request.duration`` (histogram, s), OpenTelemetry's HTTP server convention: each request to ``/api``
  from its arrival to its release by the model, with ``http.request.method``, ``http.route``,
  ``http.response.status_code`` (200 ok, 503 rejected) or ``error.type`` (``abandoned``: the client went away
  first), and ``retrystorm.outcome``; its count by outcome is ``retrystorm_target_requests_total`` and its buckets
  are ``retrystorm_target_response_time_seconds``' (gRPC calls of the gRPC front are counted here too, as in
  Prometheus);
* ``http.server.active_requests`` (up-down counter, read when exported): the requests admitted to the model and not
  released, abandoned ones included, as ``retrystorm_target_in_flight_requests``.

``POST /admin/reset`` zeroes the Prometheus counters; the exported ones, cumulative from the process's start as
OpenTelemetry's counters are, go on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from retrystorm.target.metrics import OUTCOMES, RESPONSE_TIME_BUCKETS_S

SCOPE = "retrystorm.target"
_STATUS = {"ok": 200, "rejected": 503}


class TargetInstruments:
    """The instruments of one target process, made on ``meter`` (an OpenTelemetry SDK meter)."""

    def __init__(self, meter: Any, in_flight: Callable[[], float]) -> None:
        from opentelemetry.metrics import Observation  # noqa: PLC0415 - the otel extra, imported when asked for

        base = {"http.request.method": "GET", "http.route": "/api", "url.scheme": "http"}
        self._attributes = {
            outcome: {
                **base,
                "retrystorm.outcome": outcome,
                **({"http.response.status_code": _STATUS[outcome]} if outcome in _STATUS else {"error.type": outcome}),
            }
            for outcome in OUTCOMES
        }
        self.duration = meter.create_histogram(
            "http.server.request.duration",
            unit="s",
            description="Time from a request's arrival to its release by the model.",
            explicit_bucket_boundaries_advisory=list(RESPONSE_TIME_BUCKETS_S),
        )

        def active(_options: Any) -> Iterable[Any]:
            yield Observation(in_flight(), {"http.request.method": "GET", "url.scheme": "http"})

        meter.create_observable_up_down_counter(
            "http.server.active_requests",
            [active],
            unit="{request}",
            description="Requests admitted to the model and not yet released, abandoned ones included.",
        )

    def request(self, outcome: str, elapsed_s: float) -> None:
        """A request ended with ``outcome`` after ``elapsed_s`` in the service."""
        self.duration.record(elapsed_s, self._attributes[outcome])
