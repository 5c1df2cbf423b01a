"""A local HTTP server that answers from a script and records when each request arrived.

The drift checks drive a real client library against it and replay the same answers through
the library's preset (:class:`~retrystorm.loadgen.strategies.RetrySession`, virtual time), then
compare what each did: attempts per call, the delay before each retry, when a budget ran dry.
"""

from __future__ import annotations

import itertools
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

#: What the server sends for the n-th request (0-based): status, headers, body.
Answer = tuple[int, dict[str, str], bytes]


class ScriptedServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, script: Callable[[int], Answer]) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script = script
        self.arrivals: list[float] = []
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def next_answer(self) -> Answer:
        with self.lock:
            index = len(self.arrivals)
            self.arrivals.append(time.monotonic())
        return self.script(index)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # one segment per answer, sent at once: a head and a body in two writes would wait out the
    # client's delayed ACK (40 ms) behind Nagle's algorithm, which reads as a later retry
    disable_nagle_algorithm = True
    wbufsize = 64 * 1024
    server: ScriptedServer

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        status, headers, body = self.server.next_answer()
        self.send_response(status)
        for name, value in {"Content-Length": str(len(body)), **headers}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    do_GET = do_POST = _answer  # noqa: N815 - http.server's names

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - http.server's signature
        pass


@contextmanager
def scripted_server(script: Callable[[int], Answer]) -> Iterator[ScriptedServer]:
    """Serve ``script`` on a free loopback port until the block ends."""
    server = ScriptedServer(script)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def gaps(arrivals: list[float]) -> list[float]:
    """Seconds between consecutive arrivals."""
    return [later - earlier for earlier, later in itertools.pairwise(arrivals)]


def medians_by_retry(calls: list[list[float]]) -> list[float]:
    """The median delay before retry 1, 2, ... over calls, each a list of its retries' delays."""
    longest = max(len(call) for call in calls)
    return [statistics.median(call[n] for call in calls if len(call) > n) for n in range(longest)]
