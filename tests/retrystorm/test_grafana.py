"""The plain-HTTP Grafana client: JSON, credentials, one-line errors, against real servers on 127.0.0.1."""

from __future__ import annotations

import base64
import http.server
import json
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from retrystorm.grafana import GrafanaClient, GrafanaRequestError, GrafanaSettings, GrafanaSettingsError
from tests.grafana_stub import PASSWORD, TOKEN, USER, running_stub

Answer = tuple[int, dict[str, str], bytes]


@contextmanager
def serving(answer: Callable[[http.server.BaseHTTPRequestHandler], Answer]) -> Iterator[tuple[str, list[dict]]]:
    """A real HTTP server on 127.0.0.1 answering every request with ``answer(handler)``; what it received."""
    received: list[dict] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def _serve(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            received.append({"method": self.command, "path": self.path, "headers": dict(self.headers), "body": body})
            status, headers, data = answer(self)
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = _serve  # noqa: N815 - http.server dispatches on these names

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def json_answer(status: int = 200, body: object = None) -> Callable[[object], Answer]:
    data = json.dumps({"ok": True} if body is None else body).encode()
    return lambda _handler: (status, {"Content-Type": "application/json"}, data)


def test_token_post_and_get_round_trip_through_the_stub():
    with running_stub() as stub:
        client = GrafanaClient(GrafanaSettings(url=stub.url, token=TOKEN))
        added = client.post("/api/annotations", {"time": 1, "timeEnd": 2, "tags": ["t"], "text": "x"})
        assert added["message"] == "Annotation added"
        assert client.get("/api/annotations?tags=t")[0]["id"] == added["id"]
        (posted,) = stub.received("POST", "/api/annotations")
        assert posted.authorization == f"Bearer {TOKEN}"
        assert posted.body == {"time": 1, "timeEnd": 2, "tags": ["t"], "text": "x"}


def test_credentials_in_the_url_become_basic_auth_and_never_reach_a_message():
    with running_stub() as stub:
        host = stub.url.removeprefix("http://")
        client = GrafanaClient(GrafanaSettings(url=f"http://{USER}:{PASSWORD}@{host}"))
        assert client.get("/api/folders") == []
        (seen,) = stub.received("GET", "/api/folders")
        assert seen.authorization == "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
        wrong = GrafanaClient(GrafanaSettings(url=f"http://{USER}:not-{PASSWORD}@{host}"))
        with pytest.raises(GrafanaRequestError) as refused:
            wrong.get("/api/folders")
    message = str(refused.value)
    assert message == f"grafana at {stub.url}: GET /api/folders: HTTP 401: Unauthorized"
    assert PASSWORD not in message


def test_a_path_prefix_is_kept():
    with serving(json_answer()) as (url, received):
        assert GrafanaClient(GrafanaSettings(url=url + "/grafana/")).post("/api/annotations", {"text": "x"}) == {
            "ok": True
        }
    assert received[0]["path"] == "/grafana/api/annotations"
    assert received[0]["headers"]["Content-Type"] == "application/json"
    assert "Authorization" not in received[0]["headers"]


def test_credentials_never_follow_a_redirect():
    with serving(json_answer()) as (elsewhere, seen_elsewhere):
        redirect = lambda _handler: (302, {"Location": elsewhere + "/api/folders"}, b"")  # noqa: E731
        with serving(redirect) as (url, seen_here):
            assert GrafanaClient(GrafanaSettings(url=url, token=TOKEN)).get("/api/folders") == {"ok": True}
    assert seen_here[0]["headers"]["Authorization"] == f"Bearer {TOKEN}"
    assert seen_elsewhere and "Authorization" not in seen_elsewhere[0]["headers"]


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (json_answer(500, {"message": "database\nlocked"}), "POST /api/annotations: HTTP 500: database locked"),
        (lambda _h: (502, {}, b"<html>bad gateway</html>"), "HTTP 502: <html>bad gateway</html>"),
        (lambda _h: (503, {}, b""), "HTTP 503: Service Unavailable"),
        (lambda _h: (200, {}, b"<html>a login page</html>"), "the answer is not JSON: <html>a login page</html>"),
    ],
)
def test_failures_are_one_line_naming_the_url(answer, expected):
    with serving(answer) as (url, _), pytest.raises(GrafanaRequestError) as failed:
        GrafanaClient(GrafanaSettings(url=url, token=TOKEN)).post("/api/annotations", {"text": "x"})
    message = str(failed.value)
    assert message.startswith(f"grafana at {url}: ") and expected in message
    assert "\n" not in message and TOKEN not in message


def test_unreachable_and_silent_grafanas_are_one_line():
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # bound, never listening: connection refused
        with pytest.raises(GrafanaRequestError, match=r"GET /api/folders: cannot connect: .*refused"):
            GrafanaClient(GrafanaSettings(url=f"http://127.0.0.1:{port}", token=TOKEN)).get("/api/folders")
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)  # accepts into the backlog, never answers
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        with pytest.raises(GrafanaRequestError, match=r"(no answer within 0.2 s|cannot connect: timed out)$"):
            GrafanaClient(GrafanaSettings(url=url, token=TOKEN, timeout_s=0.2)).get("/api/folders")


def test_settings_refuse_a_bad_port_and_show_ipv6_hosts():
    with pytest.raises(GrafanaSettingsError, match="grafana url: got"):
        GrafanaSettings(url="http://127.0.0.1:99999")
    assert GrafanaSettings(url="http://u:p@[::1]:3000/g/").where() == "http://[::1]:3000/g"
