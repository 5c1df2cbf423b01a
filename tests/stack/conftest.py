"""The compose stack, up for real: the offline images, the loopback override, a project of its own.

One stack per test module (it takes about half a minute to come up). All of it runs
with host networking on 127.0.0.1 (the override's ports), so nothing is sent to a
Docker bridge address. Taken down with its volumes at the end, whatever happened; its
logs are kept under the test's temporary folder for a failure's diagnosis.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import subprocess
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import waiting

from .compose import BASE_FILE, LOOPBACK_FILE, LOOPBACK_PORTS, ROOT, compose_binary

IMAGES = ("retrystorm:local", "retrystorm-prometheus:local")
UP_TIMEOUT_S = 240
TOKEN = "retrystorm"  # the compose file's default chaos token


def _docker_unusable() -> str | None:
    """Why the stack cannot run here, or ``None``."""
    try:
        done = subprocess.run(["docker", "info"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"no docker client: {error}"
    if done.returncode != 0:
        return "no Docker engine answers (scripts/test starts one)"
    for image in IMAGES:
        found = subprocess.run(["docker", "image", "inspect", image], capture_output=True, timeout=30, check=False)
        if found.returncode != 0:
            return f"image {image} is missing: run scripts/offline-images"
    return None


def require_docker() -> None:
    """Skip without Docker; fail instead when ``RETRYSTORM_REQUIRE_DOCKER=1`` (CI)."""
    problem = _docker_unusable()
    if problem is None:
        return
    if os.environ.get("RETRYSTORM_REQUIRE_DOCKER") == "1":
        pytest.fail(f"Docker is required here but unusable: {problem}")
    pytest.skip(problem)


def port_in_use(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


@dataclasses.dataclass
class Stack:
    """A running compose project and ways to talk to it."""

    project: str
    logs: Path
    #: More override files, after the loopback one.
    overrides: tuple[Path, ...] = ()

    @property
    def argv(self) -> list[str]:
        files = [arg for path in (BASE_FILE, LOOPBACK_FILE, *self.overrides) for arg in ("-f", str(path))]
        return [compose_binary(), "-p", self.project, *files]

    def compose(self, *args: str, timeout_s: float = 120, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [*self.argv, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout_s, check=False
        )
        if check and done.returncode != 0:
            pytest.fail(f"docker compose {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
        return done

    def containers(self) -> list[dict[str, Any]]:
        """``docker compose ps --all`` as dicts (Service, State, Health, ID, ...)."""
        out = self.compose("ps", "--all", "--format", "json").stdout
        rows = [json.loads(line) for line in out.splitlines() if line.strip()]
        return rows[0] if len(rows) == 1 and isinstance(rows[0], list) else rows

    def container_id(self, service: str) -> str:
        (found,) = [row["ID"] for row in self.containers() if row["Service"] == service]
        return str(found)

    def inspect(self, service: str) -> dict[str, Any]:
        done = subprocess.run(
            ["docker", "inspect", self.container_id(service)], capture_output=True, text=True, timeout=30, check=True
        )
        info: dict[str, Any] = json.loads(done.stdout)[0]
        return info

    def status(self, service: str) -> str:
        return str(self.inspect(service)["State"]["Status"])

    def url(self, service: str, path: str = "") -> str:
        return f"http://127.0.0.1:{LOOPBACK_PORTS[service]}{path}"

    def save_logs(self, name: str) -> Path:
        path = self.logs / f"{name}.log"
        path.write_text(self.compose("logs", "--no-color", "--timestamps", check=False).stdout)
        return path


def http(url: str, *, method: str = "GET", body: Any = None, token: str = "", timeout_s: float = 10) -> Any:
    """One JSON call on loopback; ``(status, decoded body)``."""
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"} if data else {}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            raw = response.read()
            status = response.status
    except urllib.error.HTTPError as error:
        raw, status = error.read(), error.code
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw.decode()


def prometheus_query(stack: Stack, query: str, *, at: float | None = None) -> list[dict[str, Any]]:
    """An instant query's result vector."""
    params = {"query": query, **({"time": f"{at:.3f}"} if at is not None else {})}
    status, body = http(stack.url("prometheus", "/api/v1/query?" + urllib.parse.urlencode(params)))
    assert status == 200, f"{query}: {body}"
    return list(body["data"]["result"])


def wait_until(predicate, timeout_s: float, what: str, interval_s: float = 0.5) -> None:
    """Poll ``predicate`` until true; fail naming ``what`` after ``timeout_s``."""
    waiting.wait_until(predicate, timeout_s=timeout_s, what=what, every_s=interval_s)


@pytest.fixture(scope="module")
def stack(tmp_path_factory) -> Iterator[Stack]:
    """The stack with two Locust workers, healthy; down with its volumes afterwards."""
    yield from running_stack(tmp_path_factory)


def running_stack(tmp_path_factory, overrides: tuple[Path, ...] = ()) -> Iterator[Stack]:
    """A stack (with ``overrides``) and two Locust workers, healthy; down with its volumes afterwards."""
    require_docker()
    busy = [f"{name} {port}" for name, port in LOOPBACK_PORTS.items() if port_in_use(port)]
    if busy:
        pytest.fail(f"loopback ports the stack needs are in use: {', '.join(busy)}")
    running = Stack(f"rstest{uuid.uuid4().hex[:8]}", tmp_path_factory.mktemp("stack-logs"), overrides)
    try:
        running.compose(
            "up", "-d", "--no-build", "--wait", "--wait-timeout", str(UP_TIMEOUT_S), "--scale", "locust-worker=2",
            timeout_s=UP_TIMEOUT_S + 30,
        )  # fmt: skip
        yield running
    finally:
        running.save_logs("stack")
        running.compose("down", "-v", "--timeout", "20", check=False, timeout_s=180)
