"""Helpers of the chaos tests: real processes to pause (each stopped by pid afterwards), and recording fakes."""

from __future__ import annotations

import subprocess
import sys

import pytest

from retrystorm.chaos.backends import ProcessBackend
from retrystorm.chaos.backends.base import FaultBackend, TargetRef, TargetState
from retrystorm.chaos.targets import FaultTarget
from retrystorm.errors import UserError
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

    try:
        wait_for(healthy, what="the chaos API to answer")
        yield base, process
    finally:  # also when it never answered: nothing is left running
        if process.poll() is None:
            process.terminate()
        process.communicate(timeout=20)  # waits, and closes the pipes


class KeepingSwitch:
    """The real dead-man switch of ``journal_path``; it keeps each watchdog it arms, for :meth:`disarm_all` to reap
    once the test has watched it act."""

    def __init__(self, journal_path) -> None:
        from retrystorm.chaos.deadman import WatchdogSwitch

        self.real = WatchdogSwitch(journal_path)
        self.armed: list = []

    def arm(self, ref, fault_id: str, hold_s: float, *, fault: str, undo: dict):
        self.armed.append(self.real.arm(ref, fault_id, hold_s, fault=fault, undo=undo))
        return self.armed[-1]

    def disarm_all(self) -> None:
        for watchdog in self.armed:
            watchdog.disarm()


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


class FakeBackend(FaultBackend):
    """Records every call; ``frozen`` is what a pause stopped (``freezes=False``: a pause that takes none)."""

    name = "process"

    def __init__(self, *, freezes: bool = True, clock: list[float] | None = None) -> None:
        self.freezes, self.clock = freezes, clock
        self.calls: list[str] = []
        self.frozen: set[str] = set()

    def targets(self) -> list[str]:
        return ["target"]

    def resolve(self, target: str) -> list[TargetRef]:
        if target == "other":
            raise UserError(f"no process target {target!r}")
        return [TargetRef(self.name, target, "100@1" if target == "target" else f"{100 + len(target)}@1")]

    def pause(self, ref: TargetRef) -> None:
        self.calls.append(f"pause {ref.ident}")
        if self.clock is not None:
            self.clock[0] += 3.0  # freezing takes 3 s (a loaded machine)
        if self.freezes:
            self.frozen.add(ref.ident)

    def resume(self, ref: TargetRef) -> None:
        self.calls.append(f"resume {ref.ident}")
        self.frozen.discard(ref.ident)

    def state(self, ref: TargetRef) -> TargetState:
        return TargetState.PAUSED if ref.ident in self.frozen else TargetState.RUNNING


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
__all__ = ["FakeBackend", "RecordingSwitch", "call", "free_port", "is_stopped", "process_target", "wait_for"]
