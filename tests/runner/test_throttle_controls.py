"""The runner's live slow of a service of one's own through the chaos controller's throttle, on real cgroups.

A change of level ends the throttle in force and starts the next; a restore (or the
controller's end) puts the process back in its own cgroup, exactly; a runner SIGKILLed
mid-cut leaves the restore to the throttle's watchdog. Membership is read from
``/proc/PID/cgroup``, independently of the code under test. Every process is killed by
pid (a group by its pgid); every throttle group a test leaves is removed, and fails it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
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
from retrystorm.chaos.cgroups import GROUP_PREFIX, CgroupUnavailableError, locate
from retrystorm.chaos.controller import OutageController
from retrystorm.chaos.deadman import WatchdogSwitch
from retrystorm.chaos.journal import Journal
from retrystorm.chaos.targets import FaultTarget
from retrystorm.experiment.scenario.service import ServiceTarget
from retrystorm.runner.errors import RunFailedError
from retrystorm.runner.local import throttle
from retrystorm.runner.throttle_controls import ThrottleControls
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


def throttle_groups() -> set[Path]:
    base = locate(os.getpid()).base()
    return set(base.glob(f"{GROUP_PREFIX}*"))


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


def cut_service(before: set[Path]) -> tuple[Path, int]:
    """The slow's throttle group, once the service is in it, and the service's pid."""
    wait_for(lambda: throttle_groups() - before, timeout_s=90, what="the slow's throttle group")
    (group,) = throttle_groups() - before
    wait_for(lambda: (group / "cgroup.procs").read_text().split(), what="the service in the throttle group")
    return group, int((group / "cgroup.procs").read_text().split()[0])


def journal_records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


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


def test_a_runner_sigkilled_mid_slow_leaves_the_restore_to_the_watchdog(tmp_path):
    before, service = throttle_groups(), []
    runner = start_own_run(tmp_path, "3s")
    with killed_at_the_end(runner, service):
        group, pid = cut_service(before)
        service.append(pid)
        original = str(Path(cpu_group(pid)).parent)  # v1: the group is a child of the service's own cgroup
        os.killpg(runner.pid, signal.SIGKILL)  # the runner and its Locust; the service has a session of its own
        runner.wait(timeout=20)
        assert GROUP_PREFIX in cpu_group(pid)  # cut still: its watchdog waits for the level's deadline
        wait_for(lambda: GROUP_PREFIX not in cpu_group(pid), timeout_s=30, what="the watchdog to restore")
        assert cpu_group(pid) == original or locate(os.getpid()).hierarchy.version == 2
        wait_for(lambda: not group.exists(), what="the throttle group to be removed")
        restores = [r for r in journal_records(tmp_path / "journal.jsonl") if r["op"] == "restore"]
        assert [(r["reason"], r["backend"], r["ident"]) for r in restores] == [("watchdog", "cgroup", str(group))]


def test_chaos_recover_restores_a_slow_a_sigkilled_runner_left_before_its_deadline(tmp_path):
    before, service = throttle_groups(), []
    runner = start_own_run(tmp_path, "60s")
    with killed_at_the_end(runner, service):
        group, pid = cut_service(before)
        service.append(pid)
        os.killpg(runner.pid, signal.SIGKILL)
        runner.wait(timeout=20)
        recovered = subprocess.run(
            [sys.executable, "-m", "retrystorm", "chaos", "recover", "--journal", tmp_path / "journal.jsonl"],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert recovered.returncode == 0, recovered.stderr
        assert "restored the CPU of cgroup" in recovered.stdout
        assert GROUP_PREFIX not in cpu_group(pid) and not group.exists()  # long before the watchdog's deadline
        assert journal_records(tmp_path / "journal.jsonl") == []  # compacted: nothing pending


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
