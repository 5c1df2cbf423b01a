"""The chaos-API fault backend against a real ``retrystorm chaos serve`` pausing a real process."""

from __future__ import annotations

import asyncio

import pytest

from retrystorm.chaos.backends import BackendError, TargetState, UnknownTargetError
from retrystorm.chaos.backends.api import ChaosApiBackend
from retrystorm.chaos.client import ChaosClient
from retrystorm.chaos.controller import OutageController
from retrystorm.chaos.journal import Journal
from retrystorm.chaos.targets import FaultTarget

from .conftest import RecordingSwitch, call, free_port, is_stopped, wait_for

pytestmark = [pytest.mark.live, pytest.mark.signals]


def test_pause_and_resume_through_the_api(chaos_api, victim):
    base, _ = chaos_api
    backend = ChaosApiBackend(ChaosClient(base), hold_s=60)
    assert backend.targets() == ["target"]
    (ref,) = backend.resolve("target")
    backend.pause(ref)
    assert is_stopped(victim.pid)
    assert backend.state(ref) is TargetState.PAUSED
    (outage,) = call(base, "GET", "/outages")[1]
    assert outage["status"] == "active"
    assert outage["duration_s"] == 60
    backend.resume(ref)
    assert not is_stopped(victim.pid)
    assert backend.state(ref) is TargetState.RUNNING
    backend.resume(ref)  # nothing active any more: a no-op, not an error
    [listed] = ChaosClient(base).outages()  # what the web UI's Retry storm tab shades
    assert (listed["id"], listed["status"]) == (outage["id"], "resumed")
    assert listed["started_utc"] < listed["ended_utc"]


def test_the_chaos_service_resumes_when_the_hold_runs_out(chaos_api, victim):
    """A runner killed mid-outage never calls resume: the service's own timer does."""
    base, _ = chaos_api
    backend = ChaosApiBackend(ChaosClient(base), hold_s=0.5)
    (ref,) = backend.resolve("target")
    backend.pause(ref)
    assert is_stopped(victim.pid)
    wait_for(lambda: not is_stopped(victim.pid), what="the chaos service to resume the target")
    assert call(base, "GET", "/outages")[1][0]["end_reason"] == "scheduled"


def test_a_controller_over_the_api_resumes_on_schedule(chaos_api, victim, tmp_path):
    base, _ = chaos_api
    backend = ChaosApiBackend(ChaosClient(base), hold_s=60)
    switch = RecordingSwitch()

    async def scenario() -> str | None:
        journal = Journal(tmp_path / "journal.jsonl")
        async with OutageController(journal, dead_man=switch, recovery_backends=[backend]) as controller:
            outage = await controller.pause(FaultTarget("target", backend), 0.3)
            assert is_stopped(victim.pid)
            while outage.status == "active":
                await asyncio.sleep(0.05)
            return outage.end_reason

    assert asyncio.run(scenario()) == "scheduled"
    assert not is_stopped(victim.pid)
    assert [ident for ident, *_ in switch.armed] == ["target"]  # the switch decides; the real one arms nothing here
    assert call(base, "GET", "/outages")[1][0]["end_reason"] == "early"  # ended by the runner, before its hold


def test_unknown_targets_and_an_unreachable_api_are_clear_errors(chaos_api):
    base, _ = chaos_api
    backend = ChaosApiBackend(ChaosClient(base), hold_s=10)
    with pytest.raises(UnknownTargetError, match="has no target 'db'; it can pause: target"):
        backend.resolve("db")
    nobody = ChaosApiBackend(ChaosClient(f"http://127.0.0.1:{free_port()}", timeout_s=2), hold_s=10)
    with pytest.raises(BackendError, match="cannot reach the chaos API"):
        nobody.targets()
    with pytest.raises(ValueError, match="hold_s"):
        ChaosApiBackend(ChaosClient(base), hold_s=0)
