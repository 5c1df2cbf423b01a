"""The outage controller against real processes: every path resumes the target."""

import asyncio

import pytest

from retrystorm.chaos.backends import BackendError, ProcessBackend
from retrystorm.chaos.controller import OutageController, OutageListener, OutageStatus
from retrystorm.chaos.journal import Journal
from retrystorm.chaos.targets import FaultTarget
from retrystorm.errors import UserError

from .conftest import RecordingSwitch, is_stopped, process_target

pytestmark = pytest.mark.signals


def controller_for(victim, tmp_path, switch=None, **kwargs):
    """A controller and the victim as its target; pauses arm ``switch`` (a recorder by default)."""
    target = process_target(victim.pid)
    journal = Journal(tmp_path / "j.jsonl")
    controller = OutageController(
        journal, dead_man=switch or RecordingSwitch(), recovery_backends=[target.backend], **kwargs
    )
    return controller, target


async def wait_until(predicate, timeout_s=20.0):
    async with asyncio.timeout(timeout_s):
        while not predicate():
            await asyncio.sleep(0.02)


def test_scheduled_resume(victim, tmp_path):
    async def scenario():
        controller, target = controller_for(victim, tmp_path)
        async with controller:
            outage = await controller.pause(target, 0.3)
            assert is_stopped(victim.pid)
            await wait_until(lambda: outage.status is OutageStatus.RESUMED)
            assert not is_stopped(victim.pid)
            assert outage.end_reason == "scheduled"

    asyncio.run(scenario())


def test_max_outage_is_enforced_whatever_was_asked(victim, tmp_path):
    async def scenario():
        controller, target = controller_for(victim, tmp_path, max_outage_s=0.2)
        async with controller:
            outage = await controller.pause(target, 3600)
            assert outage.clamped
            assert outage.duration_s == 0.2
            await wait_until(lambda: outage.status is OutageStatus.RESUMED)
            assert outage.end_reason == "max_outage"
            assert not is_stopped(victim.pid)

    asyncio.run(scenario())


def test_early_resume(victim, tmp_path):
    async def scenario():
        controller, target = controller_for(victim, tmp_path)
        async with controller:
            outage = await controller.pause(target, 600)
            await controller.resume(outage.id)
            assert not is_stopped(victim.pid)
            assert outage.end_reason == "early"
            await controller.resume(outage.id)  # no-op
            with pytest.raises(UserError, match="no outage 'nope'"):
                await controller.resume("nope")

    asyncio.run(scenario())


def test_an_exception_inside_resumes(victim, tmp_path):
    async def crashing():
        controller, target = controller_for(victim, tmp_path)
        async with controller:
            await controller.pause(target, 600)
            assert is_stopped(victim.pid)
            raise RuntimeError("the run crashed")

    with pytest.raises(RuntimeError):
        asyncio.run(crashing())
    assert not is_stopped(victim.pid)


def test_overlapping_outages_keep_the_target_paused_until_the_last_ends(victim, tmp_path):
    async def scenario():
        controller, target = controller_for(victim, tmp_path)
        async with controller:
            first = await controller.pause(target, 600)
            second = await controller.pause(target, 600)
            await controller.resume(first.id)
            assert is_stopped(victim.pid)
            await controller.resume(second.id)
            assert not is_stopped(victim.pid)

    asyncio.run(scenario())


def test_recover_resumes_what_a_dead_controller_left_paused(victim, tmp_path):
    journal = Journal(tmp_path / "j.jsonl")
    backend = ProcessBackend({"target": victim.pid})
    (ref,) = backend.resolve("target")
    journal.controller = "999999999@1"  # a controller that no longer exists
    journal.append("pause", ref, "o7")
    backend.pause(ref)

    async def scenario():
        controller = OutageController(
            Journal(tmp_path / "j.jsonl"), dead_man=RecordingSwitch(), recovery_backends=[ProcessBackend()]
        )
        return await controller.recover()

    assert asyncio.run(scenario()) == [ref]
    assert not is_stopped(victim.pid)
    assert Journal(tmp_path / "j.jsonl").pending() == []


def test_listener_sees_start_and_end(victim, tmp_path):
    seen = []

    class Recorder(OutageListener):
        def outage_started(self, outage):
            seen.append(("start", outage.target))

        def outage_ended(self, outage, paused_s):
            seen.append(("end", outage.target, paused_s > 0))

    async def scenario():
        controller, target = controller_for(victim, tmp_path, listener=Recorder())
        async with controller:
            outage = await controller.pause(target, 600)
            await controller.resume(outage.id)

    asyncio.run(scenario())
    assert seen == [("start", "target"), ("end", "target", True)]


def test_a_bad_duration_pauses_nothing(victim, tmp_path):
    async def scenario():
        controller, target = controller_for(victim, tmp_path)
        for duration in (0, -1, float("nan")):
            with pytest.raises(UserError, match="duration: got"):
                await controller.pause(target, duration)
        assert not is_stopped(victim.pid)

    asyncio.run(scenario())


def test_the_maximum_outage_has_a_ceiling(tmp_path):
    for max_outage_s in (0.0, 3600.5, 1e9, float("inf")):
        with pytest.raises(UserError, match=r"max outage: got .* expected a duration > 0 and at most 1h"):
            OutageController(Journal(tmp_path / "j"), dead_man=RecordingSwitch(), max_outage_s=max_outage_s)


def test_each_pause_arms_its_dead_man_switch_first_and_stands_it_down_after_the_resume(victim, tmp_path):
    switch = RecordingSwitch()

    async def scenario():
        controller, target = controller_for(victim, tmp_path, switch)
        async with controller:
            first = await controller.pause(target, 600)
            second = await controller.pause(target, 300)
            ident = target.refs()[0].ident
            assert switch.armed == [(ident, first.id, 600), (ident, second.id, 300)]
            await controller.resume(first.id)
            assert switch.disarmed == [first.id]  # the second outage's switch still guards the target
            assert is_stopped(victim.pid)
        assert switch.disarmed == [first.id, second.id]

    asyncio.run(scenario())
    assert not is_stopped(victim.pid)


def test_a_switch_that_cannot_be_armed_means_no_pause(victim, tmp_path):
    switch = RecordingSwitch(fail=BackendError("cannot start the watchdog"))

    async def scenario():
        controller, target = controller_for(victim, tmp_path, switch)
        async with controller:
            with pytest.raises(BackendError, match="cannot start the watchdog"):
                await controller.pause(target, 600)
            assert not is_stopped(victim.pid)
            assert controller.active() == []

    asyncio.run(scenario())
    assert Journal(tmp_path / "j.jsonl").pending() == []


def test_only_a_fault_target_can_be_paused(victim, tmp_path):
    async def scenario():
        controller, _ = controller_for(victim, tmp_path)
        unregistered = FaultTarget("other", ProcessBackend())
        with pytest.raises(UserError, match="no process target 'other'"):
            await controller.pause(unregistered, 1)

    asyncio.run(scenario())
