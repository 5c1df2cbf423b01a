"""A Kubernetes API stand-in on loopback that answers the pod list with a recorded-shape ``PodList``
(``tests/chaos/data/podlist.json``) and records each request it got: path, query and ``Authorization``."""

from __future__ import annotations

import contextlib
import json
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

PODLIST = Path(__file__).with_name("data") / "podlist.json"


def pod_list() -> dict[str, Any]:
    """The recorded ``PodList``: pods of namespace shop on nodes node-a and node-b (see the file)."""
    answer: dict[str, Any] = json.loads(PODLIST.read_text())
    return answer


@contextlib.contextmanager
def serving(answer: Any, status: int = 200) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """``(base URL, requests)`` of a server answering every GET with ``answer`` as JSON; stopped afterwards."""
    seen: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            url = urllib.parse.urlsplit(self.path)
            seen.append({"path": url.path, "query": urllib.parse.parse_qs(url.query),
                         "authorization": self.headers.get("Authorization")})  # fmt: skip
            body = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
