"""The outage controller against real processes: every path resumes the target."""

import asyncio

import pytest

from chaos.backends import ProcessBackend
from chaos.controller import OutageController, OutageListener, OutageStatus
from chaos.journal import Journal
from retrystorm.errors import UserError

from .conftest import is_stopped

pytestmark = pytest.mark.signals


def controller_for(victim, tmp_path, **kwargs):
    backend = ProcessBackend({"target": victim.pid})
    return OutageController({"process": backend}, Journal(tmp_path / "j.jsonl"), **kwargs)


async def wait_until(predicate, timeout_s=20.0):
    async with asyncio.timeout(timeout_s):
        while not predicate():
            await asyncio.sleep(0.02)


def test_scheduled_resume(victim, tmp_path):
    async def scenario():
        async with controller_for(victim, tmp_path) as controller:
            outage = await controller.pause("target", 0.3)
            assert is_stopped(victim.pid)
            await wait_until(lambda: outage.status is OutageStatus.RESUMED)
            assert not is_stopped(victim.pid)
            assert outage.end_reason == "scheduled"

    asyncio.run(scenario())


def test_max_outage_is_enforced_whatever_was_asked(victim, tmp_path):
    async def scenario():
        async with controller_for(victim, tmp_path, max_outage_s=0.2) as controller:
            outage = await controller.pause("target", 3600)
            assert outage.clamped
            assert outage.duration_s == 0.2
            await wait_until(lambda: outage.status is OutageStatus.RESUMED)
            assert outage.end_reason == "max_outage"
            assert not is_stopped(victim.pid)

    asyncio.run(scenario())


def test_early_resume(victim, tmp_path):
    async def scenario():
        async with controller_for(victim, tmp_path) as controller:
            outage = await controller.pause("target", 600)
            await controller.resume(outage.id)
            assert not is_stopped(victim.pid)
            assert outage.end_reason == "early"
            await controller.resume(outage.id)  # no-op
            with pytest.raises(UserError, match="no outage 'nope'"):
                await controller.resume("nope")

    asyncio.run(scenario())


def test_an_exception_inside_resumes(victim, tmp_path):
    async def crashing():
        async with controller_for(victim, tmp_path) as controller:
            await controller.pause("target", 600)
            assert is_stopped(victim.pid)
            raise RuntimeError("the run crashed")

    with pytest.raises(RuntimeError):
        asyncio.run(crashing())
    assert not is_stopped(victim.pid)


def test_overlapping_outages_keep_the_target_paused_until_the_last_ends(victim, tmp_path):
    async def scenario():
        async with controller_for(victim, tmp_path) as controller:
            first = await controller.pause("target", 600)
            second = await controller.pause("target", 600)
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
        controller = OutageController({"process": backend}, Journal(tmp_path / "j.jsonl"))
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
        async with controller_for(victim, tmp_path, listener=Recorder()) as controller:
            outage = await controller.pause("target", 600)
            await controller.resume(outage.id)

    asyncio.run(scenario())
    assert seen == [("start", "target"), ("end", "target", True)]


def test_bad_duration_and_unknown_backend(victim, tmp_path):
    async def scenario():
        controller = controller_for(victim, tmp_path)
        with pytest.raises(UserError, match="duration: got 0"):
            await controller.pause("target", 0)
        with pytest.raises(UserError, match="backend: got 'docker', expected one of process"):
            await controller.pause("target", 1, backend="docker")

    asyncio.run(scenario())
