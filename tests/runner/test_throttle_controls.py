"""The runner's live slow of a service of one's own through the chaos controller's throttle, on real cgroups.

A change of level ends the throttle in force and starts the next; a restore (or the
controller's end) puts the process back in its own cgroup, exactly; a runner SIGKILLed
mid-cut has its service (in cgroups of its own, cut in place) ended by the watchdog. Membership is read from
``/proc/PID/cgroup``, independently of the code under test. Every process is killed by
pid (a group by its pgid); every throttle group a test leaves is removed, and fails it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from retrystorm.chaos.backends import ProcessBackend
from retrystorm.chaos.cgroupfs import members as cgroup_members
from retrystorm.chaos.cgroupfs import mounts
from retrystorm.chaos.cgroups import GROUP_PREFIX, CgroupUnavailableError, locate
from retrystorm.chaos.containment import PREFIX as SERVICE_PREFIX
from retrystorm.chaos.controller import OutageController
from retrystorm.chaos.deadman import WatchdogSwitch
from retrystorm.chaos.journal import Journal
from retrystorm.chaos.targets import FaultTarget
from retrystorm.experiment.scenario.service import ServiceTarget
from retrystorm.runner.errors import RunFailedError
from retrystorm.runner.local import throttle
from retrystorm.runner.throttle_controls import ThrottleControls
from tests.support.cgroups import throttle_groups
from tests.support.procfs import is_alive
from tests.support.waiting import wait_until


def _writable() -> str | None:
    try:
        locate(os.getpid())
    except CgroupUnavailableError as error:
        return str(error)
    return None


pytestmark = [
    pytest.mark.signals,
    pytest.mark.skipif(_writable() is not None, reason=f"needs a writable cgroup cpu controller: {_writable()}"),
]


def cpu_group(pid: int) -> str:
    """The process's cgroup in the cpu hierarchy (v1 ``cpu``, else v2), as the kernel reports it."""
    lines = [line.split(":", 2) for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines()]
    for _, controllers, path in lines:
        if "cpu" in controllers.split(","):
            return path
    return next(path for number, _, path in lines if number == "0")


def wait_for(predicate, timeout_s: float = 20.0, what: str = "condition") -> None:
    wait_until(predicate, timeout_s=timeout_s, what=what)


@pytest.fixture(autouse=True)
def no_throttle_group_left() -> Iterator[None]:
    before = throttle_groups()
    yield
    left = throttle_groups() - before
    for group in left:
        for pid in (group / "cgroup.procs").read_text().split():
            with contextlib.suppress(OSError):
                (group.parent / "cgroup.procs").write_text(pid)
        group.rmdir()
    assert not left, f"left behind: {sorted(map(str, left))}"


@pytest.fixture
def group_leader() -> Iterator[subprocess.Popen[bytes]]:
    """A process group of its own: a leader and one child, both idle; killed by its pgid."""
    leader = subprocess.Popen(
        [sys.executable, "-c", "import subprocess, time; subprocess.Popen(['sleep', '120']); time.sleep(120)"],
        start_new_session=True,
    )
    yield leader
    with contextlib.suppress(ProcessLookupError):
        os.killpg(leader.pid, signal.SIGKILL)
    leader.wait(timeout=20)


def members(pgid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, ValueError):
                if os.getpgid(int(entry.name)) == pgid:
                    found.append(int(entry.name))
    return found


def test_each_level_is_one_throttle_and_the_restore_puts_the_group_back_exactly(group_leader, tmp_path):
    wait_for(lambda: len(members(group_leader.pid)) == 2, what="the leader's child")
    original = {pid: cpu_group(pid) for pid in members(group_leader.pid)}
    backend = ProcessBackend()
    backend.register_group("target", group_leader.pid)
    journal = Journal(tmp_path / "journal.jsonl")

    async def play() -> list[str]:
        seen = []
        async with OutageController(journal, dead_man=WatchdogSwitch(journal.path), max_outage_s=60) as controller:
            controls = ThrottleControls(controller, FaultTarget("target", backend))
            for capacity in (0.5, 0.25):
                await controls.set_capacity(capacity, 30.0)
                groups = {cpu_group(pid) for pid in original}
                assert len(groups) == 1 and GROUP_PREFIX in groups.pop()  # the whole group, in one throttle group
                seen.append(cpu_group(group_leader.pid))
            await controls.set_capacity(1.0, 0.0)  # the end of the slow: no throttle
            assert {pid: cpu_group(pid) for pid in original} == original
            await controls.set_capacity(0.3, 30.0)
            await controls.restore()
            assert {pid: cpu_group(pid) for pid in original} == original
            await controls.restore()  # nothing in force: nothing to do
            await controls.set_capacity(0.3, 30.0)  # left in force: the controller's exit restores it
            assert [t.status for t in controls.started] == ["restored", "restored", "restored", "active"]
        assert [t.status for t in controls.started] == ["restored"] * 4
        return seen

    first, second = asyncio.run(play())
    assert first != second  # a new throttle group per level, the previous one removed
    assert {pid: cpu_group(pid) for pid in original} == original
    assert journal.pending_throttles() == []


def test_a_target_that_cannot_be_cut_fails_the_run_in_one_line(tmp_path):
    backend = ProcessBackend()
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        backend.register("target", sleeper.pid)
        sleeper.kill()
        sleeper.wait()
        journal = Journal(tmp_path / "journal.jsonl")

        async def play() -> None:
            async with OutageController(journal, dead_man=WatchdogSwitch(journal.path)) as controller:
                await ThrottleControls(controller, FaultTarget("target", backend)).set_capacity(0.5, 5.0)

        with pytest.raises(RunFailedError, match="cannot cut the CPU of 'target': the processes of 'target' are gone"):
            asyncio.run(play())
    finally:
        with contextlib.suppress(ProcessLookupError):
            sleeper.kill()
        sleeper.wait()


# It ignores the SIGTERM its parent's death sends it (PR_SET_PDEATHSIG): it outlives a SIGKILLed runner, cut.
SERVER = textwrap.dedent(
    """\
    import http.server, signal, sys
    signal.signal(signal.SIGTERM, signal.SIG_IGN)

    class Ok(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args):
            pass

    http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Ok).serve_forever()
    """
)


def start_own_run(tmp_path: Path, slow_for: str) -> subprocess.Popen[bytes]:
    """``retrystorm run`` of a service it starts, slowed from 2 s for ``slow_for``, in a session of its own."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    (tmp_path / "server.py").write_text(SERVER)
    (tmp_path / "own.yaml").write_text(
        textwrap.dedent(
            f"""\
            name: own-slow-kill
            target: {{url: "http://127.0.0.1:{port}", command: python server.py {port}, ready: /}}
            load: {{users: 2, think_time: constant:200ms, attempt_timeout: 5s, duration: 90s}}
            strategies: [fixed:100ms]
            faults: [{{slow: target, capacity: 0.5, at: 2s, for: {slow_for}}}]
            """
        )
    )
    return subprocess.Popen(
        [sys.executable, "-m", "retrystorm", "run", tmp_path / "own.yaml", "--out", tmp_path / "run",
         "--journal", tmp_path / "journal.jsonl"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path, start_new_session=True,
    )  # fmt: skip


@contextlib.contextmanager
def killed_at_the_end(runner: subprocess.Popen[bytes], service: list[int]) -> Iterator[None]:
    try:
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(runner.pid, signal.SIGKILL)
        runner.wait(timeout=20)
        for pid in service:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(os.getpgid(pid), signal.SIGKILL)


def service_groups() -> set[Path]:
    """The cgroups of services a runner started (``retrystorm-svc-*``) in the hierarchy that accounts CPU."""
    cpu = next(mount for mount in mounts() if mount.has("cpu"))
    return set(cpu.path.glob(f"{SERVICE_PREFIX}*"))


def quota_cut(group: Path) -> bool:
    """Whether ``group``'s own CPU quota is lowered (v1 ``cpu.cfs_quota_us`` not -1, v2 ``cpu.max`` not max)."""
    v1 = group / "cpu.cfs_quota_us"
    if v1.exists():
        return v1.read_text().strip() != "-1"
    return not (group / "cpu.max").read_text().startswith("max")


def test_a_runner_sigkilled_mid_slow_leaves_nothing_cut_its_service_ended_by_the_watchdog(tmp_path):
    """A command runs in cgroups of its own; a slow lowers their quota; the runner's death ends the service."""
    before, throttles_before, service = service_groups(), throttle_groups(), []
    runner = start_own_run(tmp_path, "60s")
    with killed_at_the_end(runner, service):
        wait_for(lambda: service_groups() - before, timeout_s=90, what="the service's own cgroup")
        (group,) = service_groups() - before
        wait_for(lambda: cgroup_members(group), what="the service in its cgroup")
        service.extend(cgroup_members(group))
        wait_for(lambda: quota_cut(group), timeout_s=60, what="the slow to lower the cgroup's own quota")
        assert throttle_groups() == throttles_before  # cut in place: no throttle group of its own
        os.killpg(runner.pid, signal.SIGKILL)  # the runner and its Locust; the service has cgroups of its own
        runner.wait(timeout=20)
        wait_for(lambda: not group.exists(), timeout_s=30, what="the watchdog to end the service and its cgroups")
        assert not any(is_alive(pid) for pid in service)  # even the server that ignores SIGTERM


def test_slow_refusal_names_what_is_missing_and_locates_the_pid_or_the_runner(monkeypatch):
    """Nothing to cut, or no writable cgroup where the cut would be made: one line each; a container: none."""
    located: list[int] = []

    def unavailable(pid: int) -> None:
        located.append(pid)
        raise CgroupUnavailableError(f"no writable cgroup cpu controller for pid {pid} (here: none)")

    url = "http://127.0.0.1:9"
    assert "a CPU cut needs something to cut" in (throttle.slow_refusal(ServiceTarget(url=url)) or "")
    monkeypatch.setattr(throttle, "locate", unavailable)
    refused = throttle.slow_refusal(ServiceTarget(url=url, pid=4242)) or ""
    assert refused.startswith("no writable cgroup cpu controller for pid 4242") and "sim run" in refused
    assert throttle.slow_refusal(ServiceTarget(url=url, command="sleep 1")) is not None
    assert located == [4242, os.getpid()]  # a command's group is born in the runner's cgroup
    assert throttle.slow_refusal(ServiceTarget(url=url, container="web")) is None  # docker update: no cgroup here


def test_a_registered_pid_is_cut_alone_and_put_back(tmp_path):
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        original = cpu_group(sleeper.pid)
        backend = ProcessBackend({"target": sleeper.pid})
        journal = Journal(tmp_path / "journal.jsonl")

        async def play() -> str:
            async with OutageController(journal, dead_man=WatchdogSwitch(journal.path)) as controller:
                controls = ThrottleControls(controller, FaultTarget("target", backend))
                await controls.set_capacity(0.4, 10.0)
                during = cpu_group(sleeper.pid)
                await controls.restore()
                return during

        during = asyncio.run(play())
        assert GROUP_PREFIX in during and cpu_group(sleeper.pid) == original
        assert cpu_group(os.getpid()) != during  # only the registered process was moved
    finally:
        sleeper.kill()
        sleeper.wait()
