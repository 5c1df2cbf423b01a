"""The proxy as its own process: started, adopted by a later owner with its toxics ended, stopped by pid."""

from __future__ import annotations

import http.server
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

from retrystorm.chaos.network.process import adopt, start_proxy
from retrystorm.chaos.network.toxics import Delay

pytestmark = pytest.mark.live


@pytest.fixture
def upstream():
    """A real HTTP server on loopback, answering 200."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def fetch(port: int) -> bytes:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as response:
        return response.read()


def test_a_proxy_process_serves_is_adopted_with_its_toxics_ended_and_stops(tmp_path, upstream):
    control = tmp_path / "proxy" / "control.sock"
    proxy = start_proxy(("127.0.0.1", 0), ("127.0.0.1", upstream), control, log_path=tmp_path / "proxy.log")
    try:
        assert fetch(proxy.port) == b"ok"
        proxy.control_client().set("d", Delay(latency_s=30.0), time.monotonic() + 60)
        adopted = adopt(control)  # what a restarted agent does: the same process, no toxic left
        assert adopted == proxy
        assert proxy.control_client().status()["toxics"] == []
        assert fetch(proxy.port) == b"ok"
    finally:
        proxy.stop()
    assert adopt(control) is None
    assert not control.exists()


def test_a_proxy_that_cannot_listen_fails_in_one_line_naming_its_log(tmp_path, upstream):
    first = start_proxy(("127.0.0.1", 0), ("127.0.0.1", upstream), tmp_path / "a.sock", log_path=tmp_path / "a.log")
    try:
        with pytest.raises(Exception, match=r"did not start: .*--listen 127\.0\.0\.1:\d+: .*\(log .*b\.log\)$"):
            start_proxy(
                ("127.0.0.1", first.port), ("127.0.0.1", upstream), tmp_path / "b.sock", log_path=tmp_path / "b.log"
            )
    finally:
        first.stop()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--listen", "nowhere", "--upstream", "127.0.0.1:1"], "--listen: got 'nowhere', expected HOST:PORT"),
        (["--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:99999"], "--upstream: got '127.0.0.1:99999'"),
        (["--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:1", "--exit-after", "200h"], "--exit-after: got"),
    ],
)
def test_bad_proxy_options_exit_2_in_one_line(tmp_path, args, message):
    done = subprocess.run(
        [sys.executable, "-m", "retrystorm", "chaos", "proxy", "--control", str(tmp_path / "c.sock"), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
