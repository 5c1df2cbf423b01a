"""CPU capacity cuts of real processes in real cgroup v1 groups (``/sys/fs/cgroup/cpu``, as root).

Membership and quotas are read from ``/proc/PID/cgroup`` and cgroupfs, independently of the code
under test; CPU shares are measured from ``/proc/PID/stat`` side by side, as ratios. Every process a
test starts is killed by pid; every cgroup created during a test is emptied and removed afterwards.
Waits are bounded polling loops; nothing asserts on elapsed time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from retrystorm.chaos.backends import ProcessBackend
from retrystorm.chaos.cli import make_controller
from retrystorm.chaos.targets import FaultTarget

from .conftest import wait_for

CPU = Path("/sys/fs/cgroup/cpu")
pytestmark = [
    pytest.mark.signals,
    pytest.mark.skipif(
        not (CPU / "cgroup.procs").exists() or not os.access(CPU, os.W_OK),
        reason="needs a writable cgroup v1 cpu hierarchy at /sys/fs/cgroup/cpu (root)",
    ),
]
BURN = [sys.executable, "-c", "while True: pass"]
# A group leader with two burning children; SIGUSR1 makes it fork one more (a member born during a cut).
LEADER = """
import signal, subprocess, sys, time
burn = [sys.executable, "-c", "while True: pass"]
children = [subprocess.Popen(burn) for _ in range(2)]
signal.signal(signal.SIGUSR1, lambda *_: children.append(subprocess.Popen(burn)))
print("ready", flush=True)
while True:
    time.sleep(1)
"""


def cpu_group(pid: int) -> str:
    """The process's cgroup in the v1 cpu hierarchy, as the kernel reports it."""
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "cpu" in controllers.split(","):
            return path
    raise AssertionError(f"pid {pid} has no cpu cgroup")


def cpu_ticks(pid: int) -> int:
    """utime + stime of the process, in clock ticks."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def throttle_groups() -> set[Path]:
    """Every throttle group under the cpu hierarchy, two levels down."""
    return {*CPU.glob("retrystorm-throttle-*"), *CPU.glob("*/retrystorm-throttle-*")}


def empty_and_remove(group: Path) -> None:
    for pid in (group / "cgroup.procs").read_text().split():
        with contextlib.suppress(ProcessLookupError):
            (CPU / "cgroup.procs").write_text(pid)
    group.rmdir()


@pytest.fixture(autouse=True)
def no_cgroup_left() -> Iterator[None]:
    """Fail a test that leaves a throttle group behind, after removing it."""
    before = throttle_groups()
    yield
    left = throttle_groups() - before
    for group in left:
        empty_and_remove(group)
    assert not left, f"left behind: {sorted(map(str, left))}"


class Processes:
    """Processes started by a test, killed by pid at the end (a group leader's group by its pgid)."""

    def __init__(self) -> None:
        self.started: list[subprocess.Popen[str]] = []

    def start(self, command: list[str], **kwargs: object) -> subprocess.Popen[str]:
        process = subprocess.Popen(command, text=True, **kwargs)  # type: ignore[call-overload]
        self.started.append(process)
        return process

    def cleanup(self) -> None:
        for process in self.started:
            if process.poll() is None:
                try:
                    if os.getpgid(process.pid) == process.pid:
                        os.killpg(process.pid, signal.SIGKILL)
                    else:
                        process.kill()
                except ProcessLookupError:
                    pass
            process.communicate(timeout=20)


@pytest.fixture
def processes() -> Iterator[Processes]:
    started = Processes()
    yield started
    started.cleanup()


@pytest.fixture
def test_group() -> Iterator[Path]:
    """A cpu cgroup limited to exactly 1 CPU (100 ms per 100 ms), removed at the end.

    Its weight is the largest v1 allows, so what else runs on this small shared machine takes little
    of that CPU from it: side by side, its two burners share the CPU as the cut alone decides.
    """
    group = CPU / f"retrystorm-test-{uuid.uuid4().hex[:8]}"
    group.mkdir()
    (group / "cpu.shares").write_text("262144")
    (group / "cpu.cfs_period_us").write_text("100000")
    (group / "cpu.cfs_quota_us").write_text("100000")
    yield group
    for child in group.glob("retrystorm-throttle-*"):
        empty_and_remove(child)
    empty_and_remove(group)


def journal_records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def test_a_cut_moves_the_process_into_a_quota_group_and_back_exactly(processes, tmp_path):
    burner = processes.start(BURN)
    journal = tmp_path / "journal.jsonl"
    root_quota = (CPU / "cpu.cfs_quota_us").read_text()
    original = cpu_group(burner.pid)
    cpus = len(os.sched_getaffinity(burner.pid))

    async def scenario() -> None:
        backend = ProcessBackend({"burn": burner.pid})
        async with make_controller({"process": backend}, journal) as controller:
            throttle = await controller.throttle(FaultTarget("burn", backend), 0.4, 60)
            (cut,) = throttle.cuts
            group = Path(cut.ref.ident)
            assert group.parent == CPU / original.lstrip("/")  # a child: under every limit it had
            assert cpu_group(burner.pid) == f"{original.rstrip('/')}/{group.name}"
            assert (group / "cpu.cfs_period_us").read_text().strip() == "100000"
            assert (group / "cpu.cfs_quota_us").read_text().strip() == str(int(0.4 * cpus * 100_000))
            assert (cut.cpus_before, cut.cpus_during) == (cpus, 0.4 * cpus)  # no quota above: every CPU
            (record,) = [r for r in journal_records(journal) if r["op"] == "throttle"]  # written before the cut
            assert record["undo"]["original"] == str(CPU / original.lstrip("/")).rstrip("/")
            await throttle.end()
            assert throttle.status == "restored"
            assert cpu_group(burner.pid) == original
            assert not group.exists()
            await throttle.end()  # idempotent
            restores = [r for r in journal_records(journal) if r["op"] == "restore"]
            assert [(r["reason"], r["status"]) for r in restores] == [("early", "ok")]

    asyncio.run(scenario())
    assert (CPU / "cpu.cfs_quota_us").read_text() == root_quota


def test_a_cut_burner_gets_a_smaller_share_than_an_uncut_one_beside_it(processes, test_group, tmp_path):
    """Two burners in a group of exactly 1 CPU: cut to 0.3, one gets 0.3 CPU and the other the rest."""
    cut_burner, free_burner = processes.start(BURN), processes.start(BURN)
    for burner in (cut_burner, free_burner):
        (test_group / "cgroup.procs").write_text(str(burner.pid))
    wait_for(lambda: cpu_ticks(cut_burner.pid) > 0 and cpu_ticks(free_burner.pid) > 0, what="the burners to burn")

    def shares() -> tuple[int, int]:
        start = cpu_ticks(cut_burner.pid), cpu_ticks(free_burner.pid)
        time.sleep(3)  # a measuring window, not an assertion on time
        return cpu_ticks(cut_burner.pid) - start[0], cpu_ticks(free_burner.pid) - start[1]

    async def scenario() -> tuple[tuple[int, int], int, tuple[float, float]]:
        backend = ProcessBackend({"burn": cut_burner.pid})
        async with make_controller({"process": backend}, tmp_path / "journal.jsonl") as controller:
            throttle = await controller.throttle(FaultTarget("burn", backend), 0.3, 60)
            (cut,) = throttle.cuts
            measured = await asyncio.to_thread(shares)
            throttled = int((Path(cut.ref.ident) / "cpu.stat").read_text().split("nr_throttled")[1].split()[0])
            await throttle.end()
            return measured, throttled, (cut.cpus_before, cut.cpus_during)

    (cut_ticks, free_ticks), nr_throttled, cpus = asyncio.run(scenario())
    assert cpus == (1.0, 0.3)  # the allowance is the group's own 1-CPU quota
    assert nr_throttled > 0, "the kernel never throttled the group"
    assert free_ticks > 0
    ratio = cut_ticks / free_ticks
    assert ratio < 0.7, f"cut burner {cut_ticks} ticks vs free burner {free_ticks}: ratio {ratio:.2f}"


def test_a_group_target_is_cut_as_a_whole_and_members_born_during_the_cut_come_back(processes, tmp_path):
    leader = processes.start([sys.executable, "-c", LEADER], stdout=subprocess.PIPE, start_new_session=True)
    assert leader.stdout.readline().strip() == "ready"
    original = cpu_group(leader.pid)

    def members() -> list[int]:
        return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and _pgid(int(p.name)) == leader.pid]

    async def scenario() -> None:
        backend = ProcessBackend()
        backend.register_group("app", leader.pid)
        async with make_controller({"process": backend}, tmp_path / "journal.jsonl") as controller:
            throttle = await controller.throttle(FaultTarget("app", backend), 0.5, 60)
            (cut,) = throttle.cuts
            name = Path(cut.ref.ident).name
            assert len(members()) == 3
            assert {cpu_group(pid).rsplit("/", 1)[-1] for pid in members()} == {name}
            os.kill(leader.pid, signal.SIGUSR1)  # one more member, born inside the throttle group
            await asyncio.to_thread(wait_for, lambda: len(members()) == 4, 20.0, "the fourth member")
            assert {cpu_group(pid).rsplit("/", 1)[-1] for pid in members()} == {name}
            await throttle.end()
            assert {cpu_group(pid) for pid in members()} == {original}

    asyncio.run(scenario())


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def start_cli(processes: Processes, pid: int, duration: str, journal: Path) -> subprocess.Popen[str]:
    return processes.start(
        [sys.executable, "-m", "retrystorm", "chaos", "throttle", f"pid:{pid}", "--capacity", "0.5", "--for",
         duration, "--journal", str(journal)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip


def cut_in_place(pid: int, original: str) -> bool:
    return cpu_group(pid) != original


def test_sigkill_of_the_throttling_process_leaves_the_restore_to_its_watchdog(processes, tmp_path):
    victim = processes.start(["sleep", "120"])
    original, journal = cpu_group(victim.pid), tmp_path / "journal.jsonl"
    controller = start_cli(processes, victim.pid, "3s", journal)
    wait_for(lambda: cut_in_place(victim.pid, original), what="the cut")
    os.killpg(controller.pid, signal.SIGKILL)  # the controller and its whole process group
    controller.communicate(timeout=20)
    group = CPU / cpu_group(victim.pid).lstrip("/")
    wait_for(lambda: cpu_group(victim.pid) == original, timeout_s=20, what="the watchdog to restore")
    wait_for(lambda: not group.exists(), what="the throttle group to be removed")
    wait_for(lambda: any(r["op"] == "restore" for r in journal_records(journal)), what="the restore record")
    (record,) = [r for r in journal_records(journal) if r["op"] == "restore"]
    assert (record["reason"], record["backend"], record["ident"]) == ("watchdog", "cgroup", str(group))
    assert record["late_s"] >= 0  # on CLOCK_MONOTONIC, never before the deadline


def test_sigkill_then_recover_restores_from_the_journal_before_the_deadline(processes, tmp_path):
    victim = processes.start(["sleep", "120"])
    original, journal = cpu_group(victim.pid), tmp_path / "journal.jsonl"
    controller = start_cli(processes, victim.pid, "10m", journal)
    wait_for(lambda: cut_in_place(victim.pid, original), what="the cut")
    controller.kill()
    controller.communicate(timeout=20)
    assert cut_in_place(victim.pid, original)  # its watchdog waits for a deadline 10 minutes away
    recovered = subprocess.run(
        [sys.executable, "-m", "retrystorm", "chaos", "recover", "--journal", str(journal)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert recovered.returncode == 0, recovered.stderr
    assert "restored the CPU of cgroup" in recovered.stdout
    assert cpu_group(victim.pid) == original
    assert journal_records(journal) == []  # compacted: nothing is pending any more


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_or_sigint_restores_before_exit(processes, tmp_path, signum):
    victim = processes.start(["sleep", "120"])
    original = cpu_group(victim.pid)
    controller = start_cli(processes, victim.pid, "10m", tmp_path / "journal.jsonl")
    wait_for(lambda: cut_in_place(victim.pid, original), what="the cut")
    os.kill(controller.pid, signum)
    stdout, _ = controller.communicate(timeout=30)
    assert cpu_group(victim.pid) == original
    assert f"restored pid:{victim.pid} (signal {signum.name})" in stdout


@pytest.mark.parametrize(
    ("target", "capacity", "message"),
    [("pid:{pid}", "0", "capacity: got 0.0, expected a fraction"), ("pid:{pid}", "1.5", "capacity: got 1.5"),
     ("pid:1", "0.5", "refusing pid 1"), ("pid:{self}", "0.5", "ancestor of this controller")],
)  # fmt: skip
def test_refusals_are_one_line_and_exit_2_and_cut_nothing(processes, tmp_path, target, capacity, message):
    victim = processes.start(["sleep", "120"])
    original = cpu_group(victim.pid)
    done = subprocess.run(
        [sys.executable, "-m", "retrystorm", "chaos", "throttle", target.format(pid=victim.pid, self=os.getpid()),
         "--capacity", capacity, "--for", "10s", "--journal", str(tmp_path / "j.jsonl")],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert cpu_group(victim.pid) == original
