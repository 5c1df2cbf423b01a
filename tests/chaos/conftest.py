"""Real processes to pause: each test gets its own, stopped by pid afterwards."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from retrystorm.chaos.backends import ProcessBackend
from retrystorm.chaos.targets import FaultTarget
from tests.proc import process_state_letter


def wait_for(predicate, timeout_s: float = 20.0, what: str = "condition") -> None:
    """Poll until ``predicate()`` is true; fail the test after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    pytest.fail(f"timed out waiting for {what}")


def is_stopped(pid: int) -> bool:
    return process_state_letter(pid) in ("T", "t")


@pytest.fixture
def journal_path(tmp_path, monkeypatch):
    path = tmp_path / "journal.jsonl"
    monkeypatch.setenv("RETRYSTORM_CHAOS_JOURNAL", str(path))
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def call(base: str, method: str, path: str, body: object = None, headers: dict | None = None):
    data = body if isinstance(body, bytes) else (json.dumps(body).encode() if body is not None else None)
    if data is not None and headers is None:
        headers = {"Content-Type": "application/json"}  # the chaos API refuses other bodies (415)
    request = urllib.request.Request(base + path, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            raw = response.read()
            kind = response.headers.get("Content-Type", "")
            return response.status, json.loads(raw) if "json" in kind else raw.decode()
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.fixture
def chaos_api(victim, journal_path):
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "retrystorm",
            "chaos",
            "serve",
            "--port",
            str(port),
            "--target",
            f"target={victim.pid}",
            "--max-outage",
            "2m",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"

    def healthy() -> bool:
        try:
            return call(base, "GET", "/healthz")[0] == 200
        except OSError:
            return False

    wait_for(healthy, what="the chaos API to answer")
    yield base, process
    if process.poll() is None:
        process.terminate()
    process.communicate(timeout=20)  # waits, and closes the pipes


class RecordingSwitch:
    """A dead-man switch that records what it was asked to guard (``armed``) and what was stood down."""

    def __init__(self, fail: Exception | None = None) -> None:
        self.fail = fail
        self.armed: list[tuple[str, str, float]] = []
        self.disarmed: list[str] = []
        self.counted_from: list[tuple[str, float]] = []

    def arm(self, ref, outage_id: str, hold_s: float, *, fault: str, undo: dict):
        if self.fail is not None:
            raise self.fail
        self.armed.append((ref.ident, outage_id, hold_s))
        switch = self

        class Armed:
            def disarm(self) -> None:
                switch.disarmed.append(outage_id)

            def count_from(self, start_monotonic: float) -> None:
                switch.counted_from.append((outage_id, start_monotonic))

        return Armed()


def process_target(pid: int, name: str = "target") -> FaultTarget:
    """``pid`` registered under ``name`` in a fresh process backend."""
    backend = ProcessBackend({name: pid})
    return FaultTarget(name, backend)
