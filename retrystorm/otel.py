"""OpenTelemetry export settings and providers, shared by every process that exports (off by default).

The runner's export of a run (:mod:`retrystorm.runner.otel_export`) and the processes' own instruments (the load
generator's per-request instruments, the target's HTTP server instruments, the chaos API's fault spans) all build
their SDK providers here, over the OTLP exporters: gRPC (``grpc``, port 4317) or HTTP/protobuf (``http/protobuf``,
port 4318, paths ``/v1/metrics`` and ``/v1/traces``). The SDK is the ``otel`` extra's and is imported only when an
export is asked for. A process with no flag reads the standard ``OTEL_EXPORTER_OTLP_ENDPOINT`` (and
``OTEL_EXPORTER_OTLP_PROTOCOL``; ``http/json`` is not supported) from its environment: unset, nothing is exported.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
import urllib.parse
from collections.abc import Mapping
from typing import Any

from retrystorm.errors import UserError

log = logging.getLogger(__name__)

PROTOCOLS = ("grpc", "http/protobuf")
#: Seconds an export may take before the SDK gives it up (a collector that hangs never holds up a process's end).
EXPORT_TIMEOUT_S = 5.0
ENDPOINT_VARIABLE = "OTEL_EXPORTER_OTLP_ENDPOINT"
PROTOCOL_VARIABLE = "OTEL_EXPORTER_OTLP_PROTOCOL"


@dataclasses.dataclass(frozen=True, slots=True)
class OtelSettings:
    """Where and how to export; ``flag`` is what messages call the endpoint (a flag or the variable)."""

    endpoint: str
    protocol: str = "grpc"
    interval_s: float = 1.0
    service_name: str = "retrystorm"
    flag: str = "--otel-endpoint"

    def __post_init__(self) -> None:
        parts = urllib.parse.urlsplit(self.endpoint)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UserError(
                f"{self.flag}: {self.endpoint!r} is not a collector's URL; expected http(s)://HOST:PORT "
                "(e.g. http://127.0.0.1:4317 for grpc, http://127.0.0.1:4318 for http/protobuf)"
            )
        if self.protocol not in PROTOCOLS:
            raise UserError(f"--otel-protocol: {self.protocol!r}; accepted: {', '.join(PROTOCOLS)}")

    @property
    def address(self) -> tuple[str, int]:
        """The collector's host and port."""
        parts = urllib.parse.urlsplit(self.endpoint)
        default = 4317 if self.protocol == "grpc" else 4318
        return str(parts.hostname), parts.port or default


def from_environment(
    service_name: str, environ: Mapping[str, str] | None = None, *, endpoint: str | None = None
) -> OtelSettings | None:
    """Settings from a flag's ``endpoint``, else ``OTEL_EXPORTER_OTLP_ENDPOINT``; ``None``: no export."""
    environ = os.environ if environ is None else environ
    given = endpoint or environ.get(ENDPOINT_VARIABLE, "").strip()
    if not given or given.lower() == "none":
        return None
    flag = "--otel-endpoint" if endpoint else ENDPOINT_VARIABLE
    protocol = environ.get(PROTOCOL_VARIABLE, "grpc").strip() or "grpc"
    return OtelSettings(given, protocol, service_name=service_name, flag=flag)


def require_sdk(flag: str = "--otel-endpoint") -> None:
    """Refuse an export without the ``otel`` extra (:class:`UserError`, exit 2)."""
    try:
        import opentelemetry.exporter.otlp.proto.grpc
        import opentelemetry.exporter.otlp.proto.http
        import opentelemetry.sdk  # noqa: F401
    except ImportError:
        raise UserError(
            f"{flag}: needs the otel extra (the OpenTelemetry SDK): pip install 'retrystorm[otel]'"
        ) from None


def warn_if_unreachable(settings: OtelSettings) -> str | None:
    """A warning when nothing accepts connections at the collector's address (the run goes on); ``None``: it does."""
    try:
        with socket.create_connection(settings.address, timeout=2.0):
            return None
    except OSError as error:
        return (
            f"warning: the OpenTelemetry collector at {settings.endpoint} does not answer ({error.strerror or error}); "
            "the run goes on, its export may be lost"
        )


def exporters(settings: OtelSettings) -> tuple[Any, Any]:
    """The SDK's OTLP metric and span exporters for ``settings``."""
    if settings.protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        insecure = settings.endpoint.startswith("http://")
        return (
            OTLPMetricExporter(endpoint=settings.endpoint, insecure=insecure, timeout=EXPORT_TIMEOUT_S),
            OTLPSpanExporter(endpoint=settings.endpoint, insecure=insecure, timeout=EXPORT_TIMEOUT_S),
        )
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
        OTLPMetricExporter as HttpMetricExporter,
    )
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
        OTLPSpanExporter as HttpSpanExporter,
    )

    base = settings.endpoint.rstrip("/")
    return (
        HttpMetricExporter(endpoint=base + "/v1/metrics", timeout=EXPORT_TIMEOUT_S),
        HttpSpanExporter(endpoint=base + "/v1/traces", timeout=EXPORT_TIMEOUT_S),
    )


@dataclasses.dataclass(slots=True)
class Providers:
    """A meter provider (metrics every ``interval_s``) and a tracer provider (batched spans) over OTLP."""

    meters: Any
    tracers: Any

    def shutdown(self) -> None:
        """Export what is left and stop (each export bounded by :data:`EXPORT_TIMEOUT_S`)."""
        self.meters.shutdown(timeout_millis=EXPORT_TIMEOUT_S * 1000)
        self.tracers.shutdown()


def providers(settings: OtelSettings, attributes: Mapping[str, str] | None = None) -> Providers:
    """The SDK's providers for ``settings``: resource ``service.name``, ``service.version`` and ``attributes``."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from retrystorm import __version__

    resource = Resource.create(
        {"service.name": settings.service_name, "service.version": __version__, **(attributes or {})}
    )
    metric_exporter, span_exporter = exporters(settings)
    reader = PeriodicExportingMetricReader(
        metric_exporter,
        export_interval_millis=settings.interval_s * 1000,
        export_timeout_millis=EXPORT_TIMEOUT_S * 1000,
    )
    tracers = TracerProvider(resource=resource)
    tracers.add_span_processor(BatchSpanProcessor(span_exporter, export_timeout_millis=EXPORT_TIMEOUT_S * 1000))
    return Providers(MeterProvider(resource=resource, metric_readers=[reader]), tracers)


def start(endpoint: str | None, service_name: str, attributes: Mapping[str, str] | None = None) -> Providers | None:
    """A process's providers when ``endpoint`` (a flag, else ``OTEL_EXPORTER_OTLP_ENDPOINT``) asks for an export;
    ``None`` otherwise. A bad endpoint or a missing extra is a :class:`UserError` (one line); a collector that does not
    answer is logged as a warning and the process goes on."""
    settings = from_environment(service_name, endpoint=endpoint)
    if settings is None:
        return None
    require_sdk(settings.flag)
    warning = warn_if_unreachable(settings)
    if warning is not None:
        log.warning("%s", warning)
    return providers(settings, {"service.instance.id": f"{socket.gethostname()}:{os.getpid()}", **(attributes or {})})
