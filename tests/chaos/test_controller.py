"""The outage controller's lifecycle on a recording fake backend; one real end-to-end pause of a real process.

Every path resumes the target: on time, early, clamped, on an exception, on overlap, at recovery; the clock
starts when the target is frozen; a pause that froze nothing is no outage; the caps refuse with 429's error.
"""

from __future__ import annotations

import asyncio

import pytest

from retrystorm.chaos import lifecycle
from retrystorm.chaos.backends import BackendError, ProcessBackend
from retrystorm.chaos.backends.base import FaultHadNoEffectError
from retrystorm.chaos.controller import OutageController, OutageListener, OutageStatus
from retrystorm.chaos.journal import Journal
from retrystorm.chaos.lifecycle import MAX_ACTIVE_PER_TARGET, MAX_ACTIVE_TOTAL, TooManyFaultsError
from retrystorm.chaos.targets import FaultTarget
from retrystorm.errors import UserError
from tests.support.waiting import wait_until_async

from .conftest import FakeBackend, RecordingSwitch, is_stopped, process_target


def make(tmp_path, backend=None, switch=None, **kwargs):
    backend = backend or FakeBackend()
    journal = Journal(tmp_path / "j.jsonl")
    controller = OutageController(journal, dead_man=switch or RecordingSwitch(), recovery_backends=[backend], **kwargs)
    return controller, FaultTarget("target", backend), backend


async def wait_until(predicate, timeout_s=20.0):
    await wait_until_async(predicate, timeout_s=timeout_s, every_s=0.01)


def test_scheduled_resume(tmp_path):
    async def scenario():
        controller, target, backend = make(tmp_path)
        async with controller:
            outage = await controller.pause(target, 0.05)
            assert backend.frozen == {"100@1"}
            await wait_until(lambda: outage.status is OutageStatus.RESUMED)
            assert backend.frozen == set()
            assert outage.end_reason == "scheduled"
            assert outage.in_force_s is not None and outage.in_force_s > 0

    asyncio.run(scenario())


def test_the_clock_starts_when_the_target_is_frozen(tmp_path):
    """A 12 s pause whose freeze takes 3 s is frozen 12 s, not 9 (the switch counts from the same moment)."""
    now = [100.0]
    slept: list[float] = []
    switch = RecordingSwitch()

    async def sleep(delay: float) -> None:
        slept.append(delay)
        now[0] += delay

    async def scenario():
        backend = FakeBackend(clock=now)
        controller, target, _ = make(tmp_path, backend, switch, clock=lambda: now[0], sleep=sleep)
        outage = await controller.pause(target, 12.0)
        await wait_until(lambda: outage.status is OutageStatus.RESUMED)
        return outage

    outage = asyncio.run(scenario())
    assert outage.started_monotonic == 100.0
    assert outage.in_force_monotonic == 103.0
    assert outage.reverted_monotonic == 115.0
    assert outage.in_force_s == 12.0
    assert slept == [12.0]
    assert switch.counted_from == [("o1", 103.0)]


def test_max_outage_is_enforced_whatever_was_asked(tmp_path):
    async def scenario():
        controller, target, backend = make(tmp_path, max_outage_s=0.05)
        async with controller:
            outage = await controller.pause(target, 3600)
            assert outage.clamped
            assert outage.duration_s == 0.05
            await wait_until(lambda: outage.status is OutageStatus.RESUMED)
            assert outage.end_reason == "max_outage"
            assert backend.frozen == set()

    asyncio.run(scenario())


def test_early_resume(tmp_path):
    async def scenario():
        controller, target, backend = make(tmp_path)
        async with controller:
            outage = await controller.pause(target, 600)
            await controller.resume(outage.id)
            assert backend.frozen == set()
            assert outage.end_reason == "early"
            await controller.resume(outage.id)  # no-op
            assert backend.calls == ["pause 100@1", "resume 100@1"]
            with pytest.raises(UserError, match="no outage 'nope'"):
                await controller.resume("nope")

    asyncio.run(scenario())


def test_an_exception_inside_resumes(tmp_path):
    backend = FakeBackend()

    async def crashing():
        controller, target, _ = make(tmp_path, backend)
        async with controller:
            await controller.pause(target, 600)
            assert backend.frozen
            raise RuntimeError("the run crashed")

    with pytest.raises(RuntimeError):
        asyncio.run(crashing())
    assert backend.frozen == set()


def test_overlapping_outages_keep_the_target_paused_until_the_last_ends(tmp_path):
    async def scenario():
        controller, target, backend = make(tmp_path)
        async with controller:
            first = await controller.pause(target, 600)
            second = await controller.pause(target, 600)
            await controller.resume(first.id)
            assert backend.frozen
            await controller.resume(second.id)
            assert backend.frozen == set()

    asyncio.run(scenario())


def test_recover_resumes_what_a_dead_controller_left_paused(tmp_path):
    journal = Journal(tmp_path / "j.jsonl")
    backend = FakeBackend()
    (ref,) = backend.resolve("target")
    journal.controller = "999999999@1"  # a controller that no longer exists
    journal.append("pause", ref, "o7")
    backend.pause(ref)

    async def scenario():
        controller = OutageController(
            Journal(tmp_path / "j.jsonl"), dead_man=RecordingSwitch(), recovery_backends=[backend]
        )
        return await controller.recover()

    assert asyncio.run(scenario()) == [ref]
    assert backend.frozen == set()
    assert Journal(tmp_path / "j.jsonl").pending() == []


def test_listener_sees_start_and_the_frozen_length(tmp_path):
    seen = []

    class Recorder(OutageListener):
        def outage_started(self, outage):
            seen.append(("start", outage.target))

        def outage_ended(self, outage, paused_s):
            seen.append(("end", outage.target, paused_s == outage.in_force_s))

    async def scenario():
        controller, target, _ = make(tmp_path, listener=Recorder())
        async with controller:
            outage = await controller.pause(target, 600)
            await controller.resume(outage.id)

    asyncio.run(scenario())
    assert seen == [("start", "target"), ("end", "target", True)]


def test_a_bad_duration_pauses_nothing(tmp_path):
    async def scenario():
        controller, target, backend = make(tmp_path)
        for duration in (0, -1, float("nan")):
            with pytest.raises(UserError, match="duration: got"):
                await controller.pause(target, duration)
        assert backend.calls == []

    asyncio.run(scenario())


def test_the_maximum_outage_has_a_ceiling(tmp_path):
    for max_outage_s in (0.0, 3600.5, 1e9, float("inf")):
        with pytest.raises(UserError, match=r"max outage: got .* expected a duration > 0 and at most 1h"):
            OutageController(Journal(tmp_path / "j"), dead_man=RecordingSwitch(), max_outage_s=max_outage_s)


def test_each_pause_arms_its_dead_man_switch_first_and_stands_it_down_after_the_resume(tmp_path):
    switch = RecordingSwitch()

    async def scenario():
        controller, target, backend = make(tmp_path, switch=switch)
        async with controller:
            first = await controller.pause(target, 600)
            second = await controller.pause(target, 300)
            assert switch.armed == [("100@1", first.id, 600), ("100@1", second.id, 300)]
            await controller.resume(first.id)
            assert switch.disarmed == [first.id]  # the second outage's switch still guards the target
            assert backend.frozen
        assert switch.disarmed == [first.id, second.id]

    asyncio.run(scenario())


def test_a_switch_that_cannot_be_armed_means_no_pause(tmp_path):
    switch = RecordingSwitch(fail=BackendError("cannot start the watchdog"))

    async def scenario():
        controller, target, backend = make(tmp_path, switch=switch)
        async with controller:
            with pytest.raises(BackendError, match="cannot start the watchdog"):
                await controller.pause(target, 600)
            assert "pause 100@1" not in backend.calls
            assert controller.active() == []

    asyncio.run(scenario())
    assert Journal(tmp_path / "j.jsonl").pending() == []


def test_a_pause_that_froze_nothing_is_an_error_not_an_outage(tmp_path):
    async def scenario():
        controller, target, backend = make(tmp_path, FakeBackend(freezes=False))
        with pytest.raises(FaultHadNoEffectError, match="did not freeze 1 of its 1 instances"):
            await controller.pause(target, 600)
        (outage,) = controller.outages()
        assert outage.status is OutageStatus.FAILED
        assert outage.in_force_monotonic is None
        assert backend.calls == ["pause 100@1", "resume 100@1"]  # reverted all the same

    asyncio.run(scenario())


def test_the_caps_refuse_more_outages_of_a_target_and_in_total(tmp_path, monkeypatch):
    async def scenario():
        controller, target, backend = make(tmp_path)
        for _ in range(MAX_ACTIVE_PER_TARGET):
            await controller.pause(target, 600)
        with pytest.raises(TooManyFaultsError, match=f"the most one target may have \\({MAX_ACTIVE_PER_TARGET}\\)"):
            await controller.pause(target, 600)
        monkeypatch.setattr(lifecycle, "MAX_ACTIVE_TOTAL", MAX_ACTIVE_PER_TARGET + 1)
        await controller.pause(FaultTarget("b", backend), 600)
        with pytest.raises(TooManyFaultsError, match="the most a controller holds"):
            await controller.pause(FaultTarget("cc", backend), 600)
        await controller.resume_all("test")
        assert backend.frozen == set()

    asyncio.run(scenario())
    assert MAX_ACTIVE_PER_TARGET < MAX_ACTIVE_TOTAL


def test_only_a_fault_target_can_be_paused(tmp_path):
    async def scenario():
        controller, _, _ = make(tmp_path)
        unregistered = FaultTarget("other", ProcessBackend())
        with pytest.raises(UserError, match="no process target 'other'"):
            await controller.pause(unregistered, 1)

    asyncio.run(scenario())


@pytest.mark.signals
def test_a_real_process_is_stopped_and_resumed_end_to_end(victim, tmp_path):
    """The one live pause of the process backend: SIGSTOP seen in /proc, SIGCONT on time."""

    async def scenario():
        target = process_target(victim.pid)
        controller = OutageController(
            Journal(tmp_path / "j.jsonl"), dead_man=RecordingSwitch(), recovery_backends=[target.backend]
        )
        async with controller:
            outage = await controller.pause(target, 0.3)
            assert is_stopped(victim.pid)
            await wait_until(lambda: outage.status is OutageStatus.RESUMED)
            assert not is_stopped(victim.pid)

    asyncio.run(scenario())
