"""retrystorm-healthcheck against a real HTTP server on loopback, and heartbeat files."""

from __future__ import annotations

import http.server
import os
from collections.abc import Iterator

import pytest

from retrystorm.healthcheck import check_fresh, check_url, main
from tests.support.http import serving


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        status = 200 if self.path == "/healthz" else 503
        self.send_response(status)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"OK")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    with serving(_Handler) as url:
        yield url


def test_a_2xx_answer_is_healthy_anything_else_is_not(server):
    assert check_url(server + "/healthz") is None
    assert check_url(server + "/other") == f"{server}/other answered 503"
    assert main([server + "/healthz"]) == 0
    assert main([server + "/other"]) == 1


def test_a_closed_port_or_a_bad_url_is_unhealthy(server, capsys):
    with http.server.HTTPServer(("127.0.0.1", 0), _Handler) as closed:
        port = closed.server_address[1]
    assert main([f"http://127.0.0.1:{port}/healthz"]) == 1
    assert capsys.readouterr().err.startswith(f"unhealthy: http://127.0.0.1:{port}/healthz:")
    assert check_url("file:///etc/passwd") == "expected an http:// or https:// URL, got 'file:///etc/passwd'"


def test_a_heartbeat_file_is_fresh_until_it_is_older_than_the_limit(tmp_path):
    beat = tmp_path / "heartbeat"
    assert check_fresh(str(beat), 10.0) is not None  # missing
    beat.touch()
    os.utime(beat, (1000.0, 1000.0))
    assert check_fresh(str(beat), 10.0, now=1009.0) is None
    assert check_fresh(str(beat), 10.0, now=1011.0) == f"{beat} last touched 11 s ago (limit 10 s)"
    assert main(["--fresh", str(beat), "--max-age", "5"]) == 1


def test_exactly_one_of_url_and_fresh_is_required(tmp_path):
    with pytest.raises(SystemExit) as neither:
        main([])
    with pytest.raises(SystemExit) as both:
        main(["http://127.0.0.1:1/", "--fresh", str(tmp_path)])
    assert neither.value.code == both.value.code == 2
