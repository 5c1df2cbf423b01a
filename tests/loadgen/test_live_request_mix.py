"""The user's request mix on the wire: methods, paths, headers, bodies and weights a real server receives.

A recording HTTP server on 127.0.0.1 (standard library, in a thread) keeps what each
request carried; a real headless Locust sends the mix of ``--request``. Its own
statistics and the client metrics must name each request, and ``--retry-on`` must leave
the outcomes it does not list unretried.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

pytestmark = pytest.mark.live


class Recorder(BaseHTTPRequestHandler):
    seen: ClassVar[list[tuple[str, str, str | None, bytes]]] = []  # each test's subclass has its own

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.seen.append((self.command, self.path, self.headers.get("Content-Type"), body))
        status = 503 if self.path == "/fail" else 200
        self.send_response(status)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"OK")

    do_GET = do_POST = _answer  # noqa: N815 - http.server's names

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def recorder() -> Iterator[tuple[str, list[tuple[str, str, str | None, bytes]]]]:
    seen: list[tuple[str, str, str | None, bytes]] = []
    handler = type("Handler", (Recorder,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", seen
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


def test_the_mix_sends_each_request_as_written_in_proportion_and_names_it(recorder, run_locust):
    host, seen = recorder
    done = run_locust(
        host,
        "--request", 'POST /orders weight=3 header=Content-Type:application/json body={"qty": 1}',
        "--request", "GET /orders/1 weight=7",
        "--think-time", "constant:20ms", "--random-seed", "3",
        users=2, run_time="3s",
    )  # fmt: skip
    kinds = Counter((method, path) for method, path, _, _ in seen)
    assert set(kinds) == {("POST", "/orders"), ("GET", "/orders/1")}
    assert kinds[("GET", "/orders/1")] > 1.5 * kinds[("POST", "/orders")]  # 7:3 drawn, with room for chance
    posts = {(kind, body) for method, _, kind, body in seen if method == "POST"}
    assert posts == {("application/json", b'{"qty": 1}')}
    names = {entry["name"] for entry in done.stats}
    assert {"POST /orders", "GET /orders/1", "POST /orders (logical)", "GET /orders/1 (logical)"} <= names
    started = done.metrics.get("retrystorm_client_attempts_started_total", request="POST /orders")
    assert kinds[("POST", "/orders")] <= started <= kinds[("POST", "/orders")] + 2  # one per user may be cut off
    assert done.metrics.get("retrystorm_client_requests_total", request="GET /orders/1", outcome="ok") > 0


def test_retry_on_leaves_the_outcomes_it_does_not_list_unretried(recorder, run_locust):
    host, seen = recorder
    done = run_locust(
        host, "--request", "GET /fail", "--retry-on", "timeout,connection_error",
        "--think-time", "constant:50ms", users=1, run_time="2s",
    )  # fmt: skip
    requests = done.metrics.get("retrystorm_client_requests_started_total")
    gave_up = done.metrics.get("retrystorm_client_requests_total", outcome="gave_up")
    assert done.metrics.get("retrystorm_client_attempts_started_total") == requests  # one attempt per request
    assert len(seen) >= gave_up >= requests - 1 > 0  # each 503 ended its request (the last may be cut off)
    assert done.metrics.get("retrystorm_client_retries_total") == 0
