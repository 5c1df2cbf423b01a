"""Real processes to pause: each test gets its own, stopped by pid afterwards."""

from __future__ import annotations

import subprocess
import sys

import pytest

from retrystorm.chaos.backends import ProcessBackend
from retrystorm.chaos.targets import FaultTarget
from tests.support.http import call as http_call
from tests.support.ports import free_port
from tests.support.procfs import is_stopped
from tests.support.waiting import wait_until


def wait_for(predicate, timeout_s: float = 20.0, what: str = "condition") -> None:
    """Poll until ``predicate()`` is true; fail the test after ``timeout_s``."""
    wait_until(predicate, timeout_s=timeout_s, what=what)


@pytest.fixture
def journal_path(tmp_path, monkeypatch):
    path = tmp_path / "journal.jsonl"
    monkeypatch.setenv("RETRYSTORM_CHAOS_JOURNAL", str(path))
    return path


def call(base: str, method: str, path: str, body: object = None, headers: dict | None = None):
    """The chaos API's answer: status and JSON body (it refuses a body of another type: 415)."""
    return http_call(base, method, path, body, headers)


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


@pytest.fixture(autouse=True)
def _close_watchdog_connections():
    """After each test, this process lets go of its watchdog supervisors: one that guards nothing then exits."""
    yield
    from retrystorm.chaos.watchdog.client import close_all

    close_all()


#: The chaos tests import these from here.
__all__ = ["RecordingSwitch", "call", "free_port", "is_stopped", "process_target", "wait_for"]
