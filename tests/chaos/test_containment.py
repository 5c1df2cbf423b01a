"""A command target in cgroups of its own (issue 23, item 8): a pause freezes exactly everything it started, and it
ends with its runner, a SIGKILLed one included.

The command escapes its process group every way a server does: a child that ``setsid()``\\ s, one that drops root
through ``su nobody``, a daemon's double fork, under a ``bash -c`` wrapper; and one member ignores SIGTERM. Real
processes, real cgroups (this host's), the real watchdog supervisor.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from retrystorm.chaos.backends.cgroup import CgroupBackend
from retrystorm.chaos.cgroupfs import CgroupPathError, mounts
from retrystorm.chaos.containment import PREFIX, Containment, sweep
from retrystorm.chaos.controller import OutageController
from retrystorm.chaos.journal import Journal
from retrystorm.chaos.targets import FaultTarget
from retrystorm.runner.local.processes import ManagedProcess
from tests.support.procfs import is_alive, process_state_letter

from .conftest import RecordingSwitch, wait_for

pytestmark = [pytest.mark.signals, pytest.mark.skipif(os.geteuid() != 0, reason="makes cgroups: needs root")]

# What a server does to leave its process group: setsid, su to another user, a daemon's double fork; and a
# member that ignores SIGTERM. The wrapper is bash -c, as a scenario's command often is.
SERVICE = textwrap.dedent(
    """\
    import os, signal, subprocess, sys, time
    def forever(*, session=False, deaf=False):
        if os.fork() == 0:
            if session:
                os.setsid()
            if deaf:
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
            while True:
                time.sleep(0.05)
    forever(session=True)
    forever(deaf=True)
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            while True:
                time.sleep(0.05)
        os._exit(0)
    subprocess.Popen(["su", "-s", "/bin/sh", "nobody", "-c", "exec sleep 300"], start_new_session=True)
    print("ready", flush=True)
    while True:
        time.sleep(0.05)
    """
)


def uid(pid: int) -> int | None:
    """The real user of ``pid``, from /proc."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Uid:"):
                return int(line.split()[1])
    return None


def frozen(pid: int) -> bool:
    """Stopped by the cgroup freezer: v1 puts it in D, v2 parks it in the kernel's freezer trap."""
    with contextlib.suppress(OSError):
        if Path(f"/proc/{pid}/wchan").read_text() in ("do_freezer_trap", "get_signal"):
            return True
    return process_state_letter(pid) == "D"


@pytest.fixture
def script(tmp_path) -> Path:
    path = tmp_path / "service.py"
    path.write_text(SERVICE)
    return path


def wait_ready(log: Path) -> None:
    wait_for(lambda: log.exists() and "ready" in log.read_text(), 30, "the service to be ready")


def test_a_pause_freezes_everything_the_command_started_and_its_end_ends_them_all(script, tmp_path):
    containment = Containment.create()
    log = tmp_path / "service.log"
    command = ["bash", "-c", f"{sys.executable} {script}; sleep 600"]
    process = ManagedProcess("service", command, log, containment=containment)
    try:
        wait_ready(log)
        wait_for(lambda: any(uid(pid) == 65534 for pid in containment.members()), 20, "su's sleep, as nobody")
        members = containment.members()
        assert len(members) >= 6  # bash, python, its 3 children, su and its sleep
        assert len({os.getsid(pid) for pid in members}) >= 4  # out of the wrapper's session in three ways
        backend = CgroupBackend()
        backend.register("svc", containment.relative)

        async def pause() -> None:
            controller = OutageController(Journal(tmp_path / "j.jsonl"), dead_man=RecordingSwitch())
            outage = await controller.pause(FaultTarget("svc", backend), 600)
            assert all(frozen(pid) for pid in members)
            await controller.resume(outage.id)

        asyncio.run(pause())
        assert not any(frozen(pid) for pid in members)
        asyncio.run(process.stop_group(grace_s=1.0))  # the deaf member is killed after the grace
        assert not any(is_alive(pid) for pid in members)
        assert containment.gone()
    finally:
        containment.end(grace_s=0)


RUNNER = textwrap.dedent(
    """\
    import sys, time
    from pathlib import Path
    from retrystorm.chaos.containment import Containment
    from retrystorm.chaos.deadman import guard_service
    from retrystorm.runner.local.processes import ManagedProcess
    script, log, journal = sys.argv[1:4]
    containment = Containment.create()
    ManagedProcess("service", ["bash", "-c", f"{sys.executable} {script}"], Path(log), containment=containment)
    guard_service(containment, Path(journal), "svc")
    print(containment.directories[0], flush=True)
    time.sleep(600)
    """
)


def test_a_sigkilled_runner_leaves_no_process_of_its_command(script, tmp_path):
    """The watchdog order owned by the runner ends the whole service the moment the runner dies."""
    log = tmp_path / "service.log"
    runner = subprocess.Popen(
        [sys.executable, "-c", RUNNER, str(script), str(log), str(tmp_path / "j.jsonl")],
        stdout=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    assert runner.stdout is not None
    directory = Path(runner.stdout.readline().strip())
    wait_ready(log)
    containment = Containment.from_undo({"kind": "service", "directories": [str(directory)]})
    wait_for(lambda: len(containment.members()) >= 5, 20, "the command's processes")
    members = containment.members()
    os.killpg(runner.pid, signal.SIGKILL)
    runner.communicate(timeout=10)
    wait_for(lambda: not any(is_alive(pid) for pid in members), 10, "every process of the command to end")
    wait_for(containment.gone, 10, "its cgroups to be removed")


def test_recovery_ends_a_service_whose_runner_is_dead(tmp_path):
    known = mounts()
    freezing = next(m for m in known if m.version == 2 or "freezer" in m.controllers)
    directory = freezing.path / f"{PREFIX}999999999-1-1"  # a runner that no longer exists
    directory.mkdir()
    sleeper = subprocess.Popen(["sleep", "600"])
    try:
        (directory / "cgroup.procs").write_text(str(sleeper.pid))
        assert directory in sweep(known)
        sleeper.wait(timeout=10)
        assert not directory.exists()
    finally:
        with contextlib.suppress(ProcessLookupError):
            sleeper.kill()
        sleeper.wait()
        with contextlib.suppress(OSError):
            directory.rmdir()


@pytest.mark.parametrize(
    "directories",
    [["/sys/fs/cgroup/freezer"], ["/etc"], [f"/sys/fs/cgroup/freezer/x/{PREFIX}1-2-3"], ["/sys/fs/cgroup/freezer/x"]],
)
def test_a_watchdog_ends_only_a_service_cgroup_at_a_hierarchy_s_root(directories):
    with pytest.raises(CgroupPathError):
        Containment.from_undo({"kind": "service", "directories": directories})
