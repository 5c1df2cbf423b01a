"""Each fault of ``retrystorm chaos serve`` as an OpenTelemetry span with its real start and end (off by default).

With ``--otel-endpoint`` (or ``OTEL_EXPORTER_OTLP_ENDPOINT``), every pause, CPU cut and network fault that ends is
one span, ``chaos.pause``, ``chaos.throttle`` or ``chaos.<kind>``, from the moment it took effect (the target frozen,
the quota in force) for as long as it was in force, as the controller measured it; attributes
``retrystorm.target``, ``retrystorm.backend``, ``retrystorm.fault_id``, ``retrystorm.requested_s``,
``retrystorm.end_reason`` and, for a cut, ``retrystorm.capacity``. A fault whose injection or revert failed is a span
with an error status and the error. Spans are batched and sent by the SDK's exporter thread, never on the event loop.
"""

from __future__ import annotations

import datetime
from typing import Any

from retrystorm.chaos.controller import Outage, OutageListener
from retrystorm.chaos.lifecycle import Fault
from retrystorm.chaos.throttles import Throttle

SCOPE = "retrystorm.chaos"


def _ns(utc: str) -> int:
    return round(datetime.datetime.fromisoformat(utc).timestamp() * 1e9)


def kind_of(fault: Fault) -> str:
    """``pause``, ``throttle``, or the fault's own kind's name."""
    if isinstance(fault, Outage):
        return "pause"
    if isinstance(fault, Throttle):
        return "throttle"
    return str(getattr(fault, "kind", type(fault).__name__.lower()))


class FaultSpans(OutageListener):
    """An outage listener that makes a span of each fault that ends, and passes every event on to ``inner``."""

    def __init__(self, tracer: Any, inner: OutageListener | None = None) -> None:
        self.tracer = tracer
        self.inner = inner or OutageListener()

    def outage_started(self, outage: Outage) -> None:
        self.inner.outage_started(outage)

    def outage_ended(self, outage: Outage, paused_s: float) -> None:
        self.inner.outage_ended(outage, paused_s)

    def fault_ended(self, fault: Fault) -> None:
        self.inner.fault_ended(fault)
        from opentelemetry.trace import Status, StatusCode  # noqa: PLC0415 - the otel extra, imported when asked for

        attributes: dict[str, Any] = {
            "retrystorm.target": fault.target,
            "retrystorm.backend": fault.backend,
            "retrystorm.fault_id": fault.id,
            "retrystorm.requested_s": fault.requested_s,
            "retrystorm.end_reason": fault.end_reason or "",
        }
        if isinstance(fault, Throttle):
            attributes["retrystorm.capacity"] = fault.capacity
        if fault.in_force_utc is not None and fault.in_force_s is not None:
            start_ns = _ns(fault.in_force_utc)
            end_ns = start_ns + round(fault.in_force_s * 1e9)
        else:  # it never took effect, or its revert failed: from its start to its end as recorded
            start_ns = _ns(fault.started_utc)
            end_ns = _ns(fault.ended_utc) if fault.ended_utc else start_ns
        span = self.tracer.start_span(f"chaos.{kind_of(fault)}", start_time=start_ns, attributes=attributes)
        if fault.error:
            span.set_status(Status(StatusCode.ERROR, fault.error))
        span.end(end_time=max(start_ns, end_ns))
