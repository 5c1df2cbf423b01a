"""Plain HTTP calls to the project's own servers on loopback (urllib: no client library between test and server)."""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def serving(handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[str]:
    """A threaded HTTP server answering with ``handler`` on a free loopback port, for the block; yields its base
    URL (``http://127.0.0.1:PORT``) and stops it after."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def get_text(url: str, timeout_s: float = 5.0) -> str:
    """The body of ``GET url`` as text (an HTTP error status raises ``urllib.error.HTTPError``)."""
    with urllib.request.urlopen(url, timeout=timeout_s) as response:
        return str(response.read().decode())


def get_json(url: str, timeout_s: float = 5.0) -> Any:
    """The JSON body of ``GET url``."""
    return json.loads(get_text(url, timeout_s))


def answers(url: str, timeout_s: float = 1.0) -> bool:
    """Whether ``GET url`` answers 200 now (a server that does not listen yet: ``False``)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def call(
    base: str, method: str, path: str, body: object = None, headers: dict[str, str] | None = None
) -> tuple[int, Any]:
    """``METHOD base+path`` with ``body`` (JSON unless bytes): the status and the body, JSON-decoded when it is JSON.

    An error status is returned, not raised, so a test can check a refusal's status and message.
    """
    data = body if isinstance(body, bytes) else (json.dumps(body).encode() if body is not None else None)
    if data is not None and headers is None:
        headers = {"Content-Type": "application/json"}
    request = urllib.request.Request(base + path, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, _decoded(response.read(), response.headers.get("Content-Type", ""))
    except urllib.error.HTTPError as error:
        return error.code, _decoded(error.read(), error.headers.get("Content-Type", "") if error.headers else "")


def _decoded(raw: bytes, content_type: str) -> Any:
    if "json" in content_type:
        return json.loads(raw)
    return raw.decode()


def post_json(url: str, body: object, timeout_s: float = 10.0) -> Any:
    """``POST url`` with a JSON body; the JSON answer (an error status raises ``HTTPError``)."""
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), method="POST", headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=timeout_s) as response:
        return json.loads(response.read())


def post_form(url: str, form: dict[str, str], timeout_s: float = 10.0) -> dict[str, Any]:
    """``POST url`` with a form body (as a browser's form sends it); the JSON answer."""
    data = urllib.parse.urlencode(form).encode()
    request = urllib.request.Request(url, data=data, method="POST")
    with urllib.request.urlopen(request, timeout=timeout_s) as response:
        return dict(json.loads(response.read()))
