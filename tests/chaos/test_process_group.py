"""A whole process group paused as one target: real processes, real signals, real watchdogs.

A leader that forks two workers (as a pre-fork server does), in a session of its own: a
pause freezes all three with one watchdog each; a member forked between resolve and the
freeze is found and returned; the watchdogs resume every member at the deadline when
nothing else does; registration refuses what a single process's registration refuses.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from retrystorm.chaos.backends import ProcessBackend, TargetRefusedError
from retrystorm.chaos.backends.procfs import group_members
from retrystorm.chaos.controller import OutageController
from retrystorm.chaos.deadman import WatchdogSwitch
from retrystorm.chaos.journal import Journal
from retrystorm.chaos.targets import FaultTarget

from .conftest import RecordingSwitch, is_stopped, wait_for

pytestmark = pytest.mark.signals

PREFORK = textwrap.dedent(
    """\
    import os, sys, time
    for _ in range(int(sys.argv[1])):
        if os.fork() == 0:
            time.sleep(120)
            os._exit(0)
    print("ready", flush=True)
    time.sleep(120)
    """
)


@pytest.fixture
def prefork():
    """A leader and two forked workers in a process group of their own; the group is killed afterwards."""
    process = subprocess.Popen(
        [sys.executable, "-c", PREFORK, "2"], stdout=subprocess.PIPE, start_new_session=True, text=True
    )
    assert process.stdout is not None
    assert process.stdout.readline().strip() == "ready"
    wait_for(lambda: len(group_members(process.pid)) == 3, what="three members")
    yield process
    os.killpg(process.pid, signal.SIGCONT)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=10)
    process.stdout.close()


def pids(pgid: int) -> list[int]:
    return [pid for pid, _ in group_members(pgid)]


def test_a_pause_freezes_every_member_with_a_watchdog_each_and_a_resume_frees_them(prefork, tmp_path):
    backend = ProcessBackend()
    backend.register_group("target", prefork.pid)
    switch = RecordingSwitch()

    async def scenario() -> list[str]:
        controller = OutageController(Journal(tmp_path / "j.jsonl"), dead_man=switch, recovery_backends=[backend])
        async with controller:
            outage = await controller.pause(FaultTarget("target", backend), 30.0)
            assert all(is_stopped(pid) for pid in pids(prefork.pid))
            await controller.resume(outage.id)
            return [ref.ident for ref in outage.refs]

    idents = asyncio.run(scenario())
    assert sorted(int(ident.split("@")[0]) for ident in idents) == pids(prefork.pid)
    assert sorted(ident for ident, _, _ in switch.armed) == sorted(idents)  # one switch per member
    assert not any(is_stopped(pid) for pid in pids(prefork.pid))


def test_a_member_forked_after_resolve_is_frozen_and_returned_to_be_guarded(prefork):
    backend = ProcessBackend()
    backend.register_group("target", prefork.pid)
    known = backend.resolve("target")[:2]  # as if the third had forked after the members were read
    try:
        found = backend.pause_all("target", known)
        assert [ref.ident for ref in found] == [ref.ident for ref in backend.resolve("target")[2:]]
        assert all(is_stopped(pid) for pid in pids(prefork.pid))
    finally:
        for ref in backend.resolve("target"):
            backend.resume(ref)
    assert not any(is_stopped(pid) for pid in pids(prefork.pid))


def test_the_watchdogs_resume_every_member_when_the_controller_does_not(prefork, tmp_path):
    backend = ProcessBackend()
    backend.register_group("target", prefork.pid)
    journal = Journal(tmp_path / "j.jsonl")
    real = WatchdogSwitch(journal.path)
    watchdogs = []

    class Keeping:  # the real switch; the test keeps each watchdog to reap it once it has acted
        def arm(self, ref, outage_id, hold_s, *, fault, undo):
            watchdogs.append(real.arm(ref, outage_id, hold_s, fault=fault, undo=undo))
            return watchdogs[-1]

    async def pause_and_vanish() -> None:  # the controller never resumes: as if it were SIGKILLed
        controller = OutageController(journal, dead_man=Keeping())
        await controller.pause(FaultTarget("target", backend), 1.0)

    try:
        asyncio.run(pause_and_vanish())
        assert all(is_stopped(pid) for pid in pids(prefork.pid))
        wait_for(lambda: not any(is_stopped(pid) for pid in pids(prefork.pid)), what="the watchdogs' resume")
        wait_for(lambda: len(_watchdog_resumes(journal)) == 3, what="three journaled resumes")
    finally:
        for watchdog in watchdogs:
            watchdog.disarm()  # reaps it (it has acted, or acts no more)
    assert len(watchdogs) == 3


def test_registration_refuses_this_process_group_and_a_process_that_leads_none(prefork):
    backend = ProcessBackend()
    with pytest.raises(TargetRefusedError, match="this controller"):
        backend.register_group("mine", os.getpid())
    worker = pids(prefork.pid)[1]
    with pytest.raises(TargetRefusedError, match="does not lead a process group"):
        backend.register_group("worker", worker)


def _watchdog_resumes(journal: Journal) -> list[dict]:
    return [record for record in journal.records() if record.get("reason") == "watchdog"]


def test_the_controller_journals_guards_and_resumes_what_the_freeze_found_besides_what_it_resolved(tmp_path):
    from retrystorm.chaos.backends.base import FaultBackend, TargetRef, TargetState

    events: list[str] = []

    class Forking(FaultBackend):  # resolves one member; its freeze finds a second, forked meanwhile
        name = "process"

        def targets(self):
            return ["target"]

        def resolve(self, target):
            return [TargetRef(self.name, target, "100@1")]

        def pause_all(self, target, refs):
            events.append("freeze " + ",".join(ref.ident for ref in refs))
            return [TargetRef(self.name, target, "101@2")]

        def pause(self, ref):
            raise AssertionError("the group is frozen at once, never member by member")

        def resume(self, ref):
            events.append(f"resume {ref.ident}")

        def state(self, ref):
            return TargetState.PAUSED

    switch = RecordingSwitch()
    journal = Journal(tmp_path / "j.jsonl")

    async def scenario() -> None:
        controller = OutageController(journal, dead_man=switch)
        outage = await controller.pause(FaultTarget("target", Forking()), 30.0)
        assert [ref.ident for ref in outage.refs] == ["100@1", "101@2"]
        assert [(ident, event) for ident, event, _ in switch.armed] == [("100@1", "o1"), ("101@2", "o1")]
        assert sorted(pending.ref.ident for pending in journal.pending()) == ["100@1", "101@2"]
        await controller.resume(outage.id)

    asyncio.run(scenario())
    assert events == ["freeze 100@1", "resume 100@1", "resume 101@2"]
    assert not journal.pending()
    assert switch.disarmed == ["o1", "o1"]  # both members' switches stood down
