"""A real OTLP receiver for tests: gRPC (grpcio, the collector's MetricsService and TraceService from
``opentelemetry-proto``) and HTTP/protobuf (``POST /v1/metrics``, ``/v1/traces``), on free loopback ports.

No OpenTelemetry Collector binary is available from PyPI, Debian or npm as an official build, so the tests decode
what the SDK's OTLP exporters send with the protocol's own messages. Every request is kept, decoded.
"""

from __future__ import annotations

import threading
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import grpc
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2, metrics_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc


class Received:
    """What a receiver got: metric export requests and trace export requests, in order."""

    def __init__(self) -> None:
        self.metrics: list[metrics_service_pb2.ExportMetricsServiceRequest] = []
        self.traces: list[trace_service_pb2.ExportTraceServiceRequest] = []
        self.lock = threading.Lock()

    def last_values(self, name: str) -> dict[tuple[tuple[str, Any], ...], float]:
        """The last exported value of metric ``name`` for each attribute set."""
        found: dict[tuple[tuple[str, Any], ...], float] = {}
        with self.lock:
            requests = list(self.metrics)
        for request in requests:
            for resource in request.resource_metrics:
                for scope in resource.scope_metrics:
                    for metric in scope.metrics:
                        if metric.name != name:
                            continue
                        points = metric.sum.data_points if metric.HasField("sum") else metric.gauge.data_points
                        for point in points:
                            key = tuple(sorted((a.key, a.value.string_value) for a in point.attributes))
                            found[key] = point.as_double if point.HasField("as_double") else float(point.as_int)
        return found

    def last_histograms(self, name: str) -> dict[tuple[tuple[str, Any], ...], tuple[int, float]]:
        """The last exported ``(count, sum)`` of histogram ``name`` for each attribute set (every scope, every
        resource: summed over the processes that export it)."""
        by_resource: dict[tuple[Any, ...], dict[tuple[tuple[str, Any], ...], tuple[int, float]]] = {}
        with self.lock:
            requests = list(self.metrics)
        for request in requests:
            for resource in request.resource_metrics:
                who = tuple(sorted((a.key, str(a.value)) for a in resource.resource.attributes))
                for scope in resource.scope_metrics:
                    for metric in scope.metrics:
                        if metric.name != name or not metric.HasField("histogram"):
                            continue
                        for point in metric.histogram.data_points:
                            key = tuple(sorted((a.key, _value(a.value)) for a in point.attributes))
                            by_resource.setdefault(who, {})[key] = (int(point.count), float(point.sum))
        found: dict[tuple[tuple[str, Any], ...], tuple[int, float]] = {}
        for points in by_resource.values():
            for key, (count, total) in points.items():
                before = found.get(key, (0, 0.0))
                found[key] = (before[0] + count, before[1] + total)
        return found

    def spans(self) -> list[Any]:
        """Every span received."""
        with self.lock:
            requests = list(self.traces)
        return [span for request in requests for r in request.resource_spans for s in r.scope_spans for span in s.spans]


def _value(value: Any) -> Any:
    """An attribute's value: its string, integer or double."""
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


class _Metrics(metrics_service_pb2_grpc.MetricsServiceServicer):
    def __init__(self, received: Received) -> None:
        self.received = received

    def Export(self, request, context):  # noqa: N802 (the service's method name)
        with self.received.lock:
            self.received.metrics.append(request)
        return metrics_service_pb2.ExportMetricsServiceResponse()


class _Traces(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, received: Received) -> None:
        self.received = received

    def Export(self, request, context):  # noqa: N802
        with self.received.lock:
            self.received.traces.append(request)
        return trace_service_pb2.ExportTraceServiceResponse()


class GrpcReceiver:
    """An OTLP/gRPC receiver on ``127.0.0.1``; :attr:`endpoint` is its URL."""

    def __init__(self) -> None:
        self.received = Received()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(_Metrics(self.received), self.server)
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(_Traces(self.received), self.server)
        port = self.server.add_insecure_port("127.0.0.1:0")
        self.endpoint = f"http://127.0.0.1:{port}"
        self.server.start()

    def stop(self) -> None:
        self.server.stop(grace=None)


class HttpReceiver:
    """An OTLP/HTTP (protobuf) receiver on ``127.0.0.1``; :attr:`endpoint` is its base URL."""

    def __init__(self) -> None:
        received = self.received = Received()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.path == "/v1/metrics":
                    request = metrics_service_pb2.ExportMetricsServiceRequest.FromString(body)
                    reply = metrics_service_pb2.ExportMetricsServiceResponse()
                    with received.lock:
                        received.metrics.append(request)
                elif self.path == "/v1/traces":
                    request = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
                    reply = trace_service_pb2.ExportTraceServiceResponse()
                    with received.lock:
                        received.traces.append(request)
                else:
                    self.send_error(404)
                    return
                payload = reply.SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
