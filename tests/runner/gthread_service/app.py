"""A WSGI service under gunicorn's ``gthread`` worker: a thread pool whose in-flight gauge saturates at its size.

gunicorn runs it in one worker with :data:`THREADS` threads (``-k gthread --threads 2``). ``GET /orders/{id}``
holds one thread for :data:`HANDLER_S`, as an endpoint holds a database connection: about ``THREADS / HANDLER_S``
= 40 requests/s. The worker's main thread accepts every connection (up to its ``worker_connections``, 1,000) and
queues it for the threads, so a request whose client gave up still waits there and is served: abandoned work
piles up in that queue, where no thread counts it.

``app_requests_in_progress`` (prometheus_client's ``Gauge.track_inprogress`` around the handler) counts the
requests the threads hold, so it never exceeds :data:`THREADS`, however many connections queue. Its ``/metrics``
is served *beside* the app, by prometheus_client's own HTTP server on the port ``APP_METRICS_PORT`` names, in a
thread of the worker's own: every reading arrives whatever the pool's queue holds, except while the whole service
is paused. ``/healthz`` answers outside the gauge.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import CollectorRegistry, Gauge, start_http_server

THREADS = 2
HANDLER_S = 0.05

REGISTRY = CollectorRegistry()
IN_PROGRESS = Gauge("app_requests_in_progress", "Requests a thread of the pool holds.", registry=REGISTRY)
start_http_server(int(os.environ["APP_METRICS_PORT"]), addr="127.0.0.1", registry=REGISTRY)

Respond = Callable[[str, list[tuple[str, str]]], Any]


def app(environ: dict[str, Any], start_response: Respond) -> Iterable[bytes]:
    """``GET /healthz`` at once; ``GET /orders/{id}`` after :data:`HANDLER_S` of a thread, counted in flight."""
    path = environ.get("PATH_INFO", "")
    if path == "/healthz":
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"ok"]
    if environ.get("REQUEST_METHOD") != "GET" or not path.startswith("/orders/"):
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"not found"]
    with IN_PROGRESS.track_inprogress():
        time.sleep(HANDLER_S)
    start_response("200 OK", [("Content-Type", "application/json")])
    return [b'{"id": 1, "qty": 1}']
