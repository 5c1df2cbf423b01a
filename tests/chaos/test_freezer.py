"""The cgroup freezer on this host's real cgroups (v1 freezer, and v2 ``cgroup.freeze`` where a cgroup2 hierarchy is
mounted), with real processes placed in cgroups laid out as the kubelet lays them out.

A process tree that escapes a process group (``setsid()``, a double fork that daemonizes) is frozen whole and
thawed; a CPU cut lowers the cgroup's own quota and puts it back exactly; refusals, the undo a journal carries,
and recovery. Every cgroup a test makes is emptied (its processes killed by pid) and removed afterwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from retrystorm.chaos.backends.base import FaultHadNoEffectError, TargetRefusedError, UnknownTargetError
from retrystorm.chaos.backends.cgroup import CgroupBackend
from retrystorm.chaos.cgroupfs import CgroupPathError, mounts
from retrystorm.chaos.controller import OutageController
from retrystorm.chaos.freezer import Freezer, kubelet_cgroup
from retrystorm.chaos.journal import Journal
from retrystorm.chaos.targets import FaultTarget
from retrystorm.cli import main
from tests.support.procfs import process_state_letter

from .conftest import KeepingSwitch, RecordingSwitch, wait_for

FREEZER_V1 = Path("/sys/fs/cgroup/freezer")
CPU_V1 = Path("/sys/fs/cgroup/cpu")
V2 = next((m.path for m in mounts() if m.version == 2), None)
HIERARCHIES = [
    pytest.param(FREEZER_V1, id="v1", marks=pytest.mark.skipif(not FREEZER_V1.is_dir(), reason="no v1 freezer")),
    pytest.param(V2, id="v2", marks=pytest.mark.skipif(V2 is None or os.geteuid() != 0, reason="no cgroup2 here")),
]
pytestmark = [
    pytest.mark.signals,
    pytest.mark.skipif(os.geteuid() != 0, reason="makes cgroups: needs root"),
]

# A service that escapes its process group: a child that setsid()s, a grandchild daemonized by a double fork.
ESCAPING = """
import os, sys, time
def child(new_session, daemon):
    pid = os.fork()
    if pid == 0:
        if new_session:
            os.setsid()
        if daemon and os.fork() != 0:
            os._exit(0)
        while True:
            time.sleep(0.05)
    if daemon:
        os.waitpid(pid, 0)  # the daemon's parent has exited: it is reparented, out of the leader's tree
        return
    while os.getsid(pid) == os.getsid(0):
        time.sleep(0.001)  # until the child has a session of its own
child(True, False)
child(True, True)
print("ready", flush=True)
while True:
    time.sleep(0.05)
"""


@contextlib.contextmanager
def cgroup_root(*hierarchies: Path) -> Iterator[str]:
    """A fresh cgroup path present in each hierarchy; afterwards every member is killed and every cgroup removed."""
    relative = f"/retrystorm-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    made = [hierarchy / relative.strip("/") for hierarchy in hierarchies]
    try:
        yield relative
    finally:
        for top in made:
            for directory in sorted(top.rglob("*"), key=lambda p: len(p.parts), reverse=True) if top.exists() else []:
                if directory.is_dir():
                    _kill_and_remove(directory)
            if top.exists():
                _kill_and_remove(top)


def _kill_and_remove(directory: Path) -> None:
    with contextlib.suppress(OSError):
        (directory / "freezer.state").write_text("THAWED")
    with contextlib.suppress(OSError):
        (directory / "cgroup.freeze").write_text("0")
    for _ in range(100):
        pids = (directory / "cgroup.procs").read_text().split()
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid), signal.SIGKILL)
        time.sleep(0.02)
    directory.rmdir()


def make_cgroup(hierarchy: Path, relative: str) -> Path:
    directory = hierarchy / relative.strip("/")
    directory.mkdir(parents=True)
    return directory


@pytest.fixture
def start_in() -> Iterator[Callable[[list[Path]], list[int]]]:
    """Starts the escaping service in cgroups; afterwards its leader is killed and reaped, its pipes closed."""
    started: list[subprocess.Popen[str]] = []

    def start(directories: list[Path]) -> list[int]:
        started.append(_start(directories))
        return members(directories[0])

    yield start
    for process in started:
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGKILL)
        process.communicate(timeout=10)


def _start(directories: list[Path]) -> subprocess.Popen[str]:
    """The escaping service, its first process moved into ``directories`` before it forks."""
    process = subprocess.Popen(
        [sys.executable, "-c", f"import sys; sys.stdin.readline()\n{ESCAPING}"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    for directory in directories:
        (directory / "cgroup.procs").write_text(str(process.pid))
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write("go\n")
    process.stdin.flush()
    assert process.stdout.readline().strip() == "ready"
    wait_for(lambda: len(members(directories[0])) == 3, 20, "the leader, its setsid child and the daemon")
    return process


def members(directory: Path) -> list[int]:
    """The processes in ``directory``'s cgroup, as the kernel lists them."""
    return sorted(int(word) for word in (directory / "cgroup.procs").read_text().split())


def frozen(pid: int, version: int) -> bool:
    """Stopped by the freezer, as /proc shows it: v1 puts a task in D, v2 parks it in the kernel's freezer trap."""
    if version == 1:
        return process_state_letter(pid) == "D"
    return Path(f"/proc/{pid}/wchan").read_text() in ("do_freezer_trap", "get_signal")


def sessions(pids: list[int]) -> set[int]:
    return {os.getsid(pid) for pid in pids}


@pytest.mark.parametrize("hierarchy", HIERARCHIES)
def test_a_whole_cgroup_freezes_at_once_however_its_processes_left_their_group(hierarchy, start_in):
    with cgroup_root(hierarchy) as relative:
        directory = make_cgroup(hierarchy, relative)
        pids = start_in([directory])
        assert len(sessions(pids)) == 3  # the leader's, the setsid child's, the daemon's
        freezer = Freezer.at(directory)
        freezer.freeze()
        assert freezer.state() == "frozen"
        assert freezer.members() == pids
        assert all(frozen(pid, freezer.version) for pid in pids)
        assert freezer.thaw() == "thawed"
        wait_for(lambda: not any(frozen(pid, freezer.version) for pid in pids), 10, "every member thawed")
        freezer.kill()
        assert freezer.members() == []


def test_kill_ends_every_member_of_a_frozen_v2_cgroup(start_in):
    if V2 is None:
        pytest.skip("no cgroup2 here")
    with cgroup_root(V2) as relative:
        directory = make_cgroup(V2, relative)
        pids = start_in([directory])
        freezer = Freezer.at(directory)
        freezer.freeze()
        freezer.kill()  # cgroup.kill: frozen or not
        assert freezer.members() == []
        assert all(process_state_letter(pid) in (None, "Z") for pid in pids)


@pytest.mark.parametrize(("driver", "expected"), [
    ("cgroupfs", "/kubepods/burstable/pod0f6a7c12-9e3b/{cid}"),
    ("systemd",
     "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0f6a7c12_9e3b.slice/cri-containerd-{cid}.scope"),
])  # fmt: skip
def test_the_kubelet_layout_of_a_pod_s_container(driver, expected):
    cid = "ab" * 32
    assert kubelet_cgroup("0f6a7c12-9e3b", "burstable", driver=driver, container_id=cid) == expected.format(cid=cid)


def test_the_kubelet_layout_of_guaranteed_and_besteffort_pods_and_its_refusals():
    assert kubelet_cgroup("1234abcd", "guaranteed", driver="cgroupfs") == "/kubepods/pod1234abcd"
    assert kubelet_cgroup("1234-abcd", "guaranteed", driver="systemd") == "/kubepods.slice/kubepods-pod1234_abcd.slice"
    assert kubelet_cgroup("1234abcd", "besteffort", driver="cgroupfs", cgroup_root="/k8s") == (
        "/k8s/kubepods/besteffort/pod1234abcd"
    )
    for bad in ({"qos": "gold"}, {"driver": "cgroupv3"}, {"pod_uid": "../etc"}, {"container_id": "x; rm"}):
        arguments = {"pod_uid": "1234abcd", "qos": "burstable", "driver": "cgroupfs"} | bad
        with pytest.raises(ValueError, match="expected"):
            kubelet_cgroup(**arguments)  # type: ignore[arg-type]


@pytest.mark.parametrize("driver", ["cgroupfs", "systemd"])
def test_a_pod_container_laid_out_by_the_kubelet_is_frozen_and_cut_through_the_controller(driver, tmp_path, start_in):
    """A real process in a container cgroup of the kubelet's layout (freezer and cpu hierarchies), frozen whole and
    resumed on time, then its CPU cut in place and restored exactly, through the controller."""
    if not FREEZER_V1.is_dir() or not CPU_V1.is_dir():
        pytest.skip("needs the v1 freezer and cpu hierarchies")
    hierarchies = [h for h in (V2, FREEZER_V1, CPU_V1) if h is not None]
    with cgroup_root(*hierarchies) as root:
        relative = kubelet_cgroup("5e1f9a00-77aa", "burstable", driver=driver, container_id="cd" * 32, cgroup_root=root)
        directories = [make_cgroup(hierarchy, relative) for hierarchy in hierarchies]
        pids = start_in(directories)
        backend = CgroupBackend()
        backend.register("web-0", relative)
        quota = directories[-1] / "cpu.cfs_quota_us"
        assert quota.read_text().strip() == "-1"

        async def scenario() -> None:
            controller = OutageController(
                Journal(tmp_path / "j.jsonl"), dead_man=RecordingSwitch(), recovery_backends=[backend]
            )
            async with controller:
                target = FaultTarget("web-0", backend)
                outage = await controller.pause(target, 0.3)
                assert all(frozen(pid, 2 if V2 else 1) for pid in pids)
                while outage.status == "active":
                    await asyncio.sleep(0.02)
                assert outage.status == "resumed" and outage.in_force_s is not None
                throttle = await controller.throttle(target, 0.25, 30)
                cpus = len(os.sched_getaffinity(pids[0]))
                assert int(quota.read_text()) == int(0.25 * cpus * 100_000)  # a quarter of the CPUs it may use
                assert members(directories[-1]) == pids  # nobody moved: the cgroup's own quota is cut
                await throttle.end()
                assert quota.read_text().strip() == "-1"

        asyncio.run(scenario())
        assert not any(frozen(pid, 1) for pid in pids)


def test_registration_refuses_the_root_this_controller_s_own_cgroup_and_what_is_not_a_cgroup(tmp_path):
    backend = CgroupBackend()
    with pytest.raises(TargetRefusedError, match="the root cgroup"):
        backend.register("all", "/")
    with pytest.raises(TargetRefusedError, match="expected an absolute path"):
        backend.register("x", "system.slice")
    with pytest.raises(UnknownTargetError, match="no cgroup to freeze"):
        backend.register("x", f"/retrystorm-test-none-{uuid.uuid4().hex}")
    with cgroup_root(FREEZER_V1) as relative:
        directory = make_cgroup(FREEZER_V1, relative)
        (directory / "cgroup.procs").write_text(str(os.getpid()))
        try:
            with pytest.raises(TargetRefusedError, match="it holds this controller"):
                backend.register("me", relative)
        finally:
            (FREEZER_V1 / "cgroup.procs").write_text(str(os.getpid()))


def test_a_pause_of_an_empty_cgroup_froze_nothing_and_is_an_error(tmp_path):
    with cgroup_root(FREEZER_V1) as relative:
        make_cgroup(FREEZER_V1, relative)
        backend = CgroupBackend()
        backend.register("empty", relative)

        async def scenario() -> None:
            controller = OutageController(Journal(tmp_path / "j.jsonl"), dead_man=RecordingSwitch())
            with pytest.raises(FaultHadNoEffectError, match="froze nothing"):
                await controller.pause(FaultTarget("empty", backend), 5)

        asyncio.run(scenario())
        assert Freezer.of(relative).state() == "thawed"


@pytest.mark.parametrize("hierarchy", HIERARCHIES)
def test_recovery_thaws_a_cgroup_a_dead_controller_left_frozen_from_the_journal_alone(hierarchy, tmp_path, start_in):
    with cgroup_root(hierarchy) as relative:
        directory = make_cgroup(hierarchy, relative)
        start_in([directory])
        backend = CgroupBackend()
        (ref,) = [backend.register("svc", relative)]
        journal = Journal(tmp_path / "j.jsonl")
        journal.controller = "999999999@1"
        journal.append("pause", ref, "o1")
        backend.pause(ref)

        async def recover() -> list:
            return await OutageController(Journal(tmp_path / "j.jsonl"), dead_man=RecordingSwitch()).recover()

        assert asyncio.run(recover()) == [ref]  # no cgroup backend configured: the checked path is enough
        assert Freezer.at(directory).state() == "thawed"


@pytest.mark.parametrize(
    "undo",
    [
        {"kind": "freeze", "version": 1, "directory": "/etc"},
        {"kind": "freeze", "version": 1, "directory": "/sys/fs/cgroup/freezer/../../../etc"},
        {"kind": "freeze", "version": 1, "directory": "relative"},
        {"kind": "freeze", "version": 2, "directory": str(FREEZER_V1)},
        {"kind": "thaw", "version": 1, "directory": str(FREEZER_V1)},
    ],
)
def test_a_journaled_freeze_names_only_a_real_cgroup(undo):
    with pytest.raises(CgroupPathError):
        Freezer.from_undo(undo)


def test_a_symlink_to_a_cgroup_or_a_plain_folder_is_never_one(tmp_path):
    with cgroup_root(FREEZER_V1) as relative:
        directory = make_cgroup(FREEZER_V1, relative)
        link = tmp_path / "link"
        link.symlink_to(directory)
        with pytest.raises(CgroupPathError, match="a symbolic link"):
            Freezer.at(link)
        with pytest.raises(CgroupPathError, match="not under a mounted cgroup"):
            Freezer.at(tmp_path)
        inner = directory / "inner"
        inner.mkdir()
        assert Freezer.at(inner).directory == inner


@pytest.mark.parametrize("hierarchy", HIERARCHIES)
def test_a_watchdog_thaws_the_cgroup_at_the_deadline_when_the_controller_is_gone(hierarchy, tmp_path, start_in):
    """The dead-man switch of a freeze: the controller pauses and vanishes (as if SIGKILLed); a real watchdog
    thaws the cgroup at the deadline and journals it."""
    with cgroup_root(hierarchy) as relative:
        directory = make_cgroup(hierarchy, relative)
        start_in([directory])
        backend = CgroupBackend()
        backend.register("svc", relative)
        journal = Journal(tmp_path / "j.jsonl")
        switch = KeepingSwitch(journal.path)

        async def pause_and_vanish() -> None:
            await OutageController(journal, dead_man=switch).pause(FaultTarget("svc", backend), 0.5)

        try:
            asyncio.run(pause_and_vanish())
            assert Freezer.at(directory).state() == "frozen"
            wait_for(lambda: Freezer.at(directory).state() == "thawed", 20, "the watchdog's thaw")
            wait_for(lambda: any(r.get("reason") == "watchdog" for r in journal.records()), 10, "its record")
        finally:
            switch.disarm_all()


def chaos(capsys, *args: str) -> tuple[int, str, str]:
    """``retrystorm chaos ARGS`` in this process: exit code, stdout, stderr."""
    with pytest.raises(SystemExit) as exited:
        main(["chaos", *args])
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


def test_chaos_pause_takes_a_cgroup_target_and_refuses_a_bad_one_in_one_line(tmp_path, monkeypatch, capsys, start_in):
    monkeypatch.setenv("RETRYSTORM_CHAOS_JOURNAL", str(tmp_path / "j.jsonl"))
    code, _, err = chaos(capsys, "pause", "cgroup:/", "--for", "1s")
    assert (code, err.count("\n")) == (2, 1)
    assert "the root cgroup holds the whole machine" in err
    with cgroup_root(FREEZER_V1) as relative:
        directory = make_cgroup(FREEZER_V1, relative)
        start_in([directory])
        code, out, err = chaos(capsys, "pause", f"cgroup:{directory}", "--for", "200ms")
        assert code == 0, err
        assert "resumed cgroup:" in out
        assert Freezer.at(directory).state() == "thawed"
