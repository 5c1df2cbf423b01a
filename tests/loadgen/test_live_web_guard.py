"""Real Locust web UIs with retrystorm's locustfile: where they bind, when they refuse to start, and their token.

The UI that binds every interface runs inside a network namespace this test makes (only its own loopback
is up there) and removes, so nothing is reachable beyond this machine even for the length of the test.
"""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import subprocess
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from .conftest import Processes, free_port, locust_argv, wait_until

pytestmark = pytest.mark.live

TOKEN = "web-ui-test-token"
#: The environment of a Locust without any of the project's tokens.
NO_TOKENS = {"RETRYSTORM_CHAOS_TOKEN": "", "RETRYSTORM_WEB_TOKEN": "", "RETRYSTORM_CHAOS_URL": ""}


def status_of(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str]]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers)


def listening(pid: int) -> list[str]:
    """The addresses process ``pid`` listens on."""
    sockets = psutil.Process(pid).net_connections(kind="inet")
    return sorted({sock.laddr.ip for sock in sockets if sock.status == psutil.CONN_LISTEN})


def test_the_web_ui_binds_to_loopback_by_default(processes: Processes):
    port = free_port()
    process, log = processes.start(
        "locust", locust_argv("--host", "http://127.0.0.1:9", "--web-port", str(port)), NO_TOKENS
    )
    wait_until(lambda: status_of(f"http://127.0.0.1:{port}/")[0] == 200, 60, f"the web UI (log: {log})")
    assert listening(process.pid) == ["127.0.0.1"]


def test_beyond_loopback_without_a_token_it_refuses_to_start_in_one_line(processes: Processes):
    port = free_port()
    argv = locust_argv("--host", "http://127.0.0.1:9", "--web-host", "0.0.0.0", "--web-port", str(port))  # noqa: S104
    process, log = processes.start("locust", argv, NO_TOKENS)
    assert process.wait(timeout=60) == 2
    errors = [line for line in log.read_text().splitlines() if "ERROR" in line or "Traceback" in line]
    assert len(errors) == 1, log.read_text()
    assert "--web-host 0.0.0.0 is not loopback only" in errors[0]
    assert "set --web-token or RETRYSTORM_WEB_TOKEN" in errors[0]


def basic(password: str) -> str:
    return "Basic " + base64.b64encode(f"me:{password}".encode()).decode()


def test_with_a_token_the_ui_asks_every_client_for_it_but_metrics(processes: Processes):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    argv = locust_argv("--host", "http://127.0.0.1:9", "--web-port", str(port), "--web-token", TOKEN)
    _, log = processes.start("locust", argv, NO_TOKENS)
    wait_until(lambda: status_of(base + "/metrics")[0] == 200, 60, f"the web UI (log: {log})")
    status, headers = status_of(base + "/")
    assert status == 401
    assert headers["WWW-Authenticate"].startswith('Basic realm="retrystorm web UI"')
    for path in ("/", "/chaos/targets", "/storm/series", "/stats/requests"):
        assert status_of(base + path)[0] == 401, path
        assert status_of(base + path, {"Authorization": basic(TOKEN)})[0] == 200, path
        assert status_of(base + path, {"Authorization": f"Bearer {TOKEN}"})[0] == 200, path
        assert status_of(base + path, {"Authorization": basic("wrong")})[0] == 401, path
    assert TOKEN not in log.read_text()


@contextlib.contextmanager
def namespace() -> Iterator[str]:
    """A network namespace with only its loopback up; removed at the end."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("network namespaces need root and iproute2")
    name = f"rs-webui-{uuid.uuid4().hex[:8]}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        subprocess.run(["ip", "-n", name, "link", "set", "lo", "up"], check=True)
        yield name
    finally:
        subprocess.run(["ip", "netns", "delete", name], check=False)


def inside(name: str, url: str, headers: dict[str, str]) -> int:
    """The status of GET ``url`` from inside namespace ``name``."""
    code = (
        "import sys, urllib.request, urllib.error\n"
        "request = urllib.request.Request(sys.argv[1], headers=dict(h.split(': ', 1) for h in sys.argv[2:]))\n"
        "try:\n    print(urllib.request.urlopen(request, timeout=10).status)\n"
        "except urllib.error.HTTPError as error:\n    print(error.code)\n"
        "except OSError:\n    print(0)\n"
    )
    argv = ["ip", "netns", "exec", name, "python3", "-c", code, url, *(f"{k}: {v}" for k, v in headers.items())]
    return int(subprocess.run(argv, capture_output=True, text=True, timeout=30, check=True).stdout.strip())


def test_the_compose_masters_bind_works_with_the_chaos_token(processes: Processes, tmp_path: Path):
    """The stack's master binds 0.0.0.0 in its container with RETRYSTORM_CHAOS_TOKEN set: it starts, guarded."""
    with namespace() as name:
        port = free_port()
        argv = locust_argv("--host", "http://127.0.0.1:9", "--web-host", "0.0.0.0", "--web-port", str(port))  # noqa: S104
        process, log = processes.start(
            "locust", ["ip", "netns", "exec", name, *argv], {**NO_TOKENS, "RETRYSTORM_CHAOS_TOKEN": TOKEN}
        )
        try:
            url = f"http://127.0.0.1:{port}"
            wait_until(lambda: inside(name, url + "/metrics", {}) == 200, 60, f"the web UI (log: {log})")
            assert inside(name, url + "/", {}) == 401
            assert inside(name, url + "/", {"Host": f"locust-master:{port}", "Authorization": basic(TOKEN)}) == 200
            assert inside(name, url + "/chaos/targets", {"Authorization": f"Bearer {TOKEN}"}) == 200
        finally:
            process.terminate()
            process.wait(timeout=30)
