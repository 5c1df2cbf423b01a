"""CPU quotas through real cgroups (the live slow trigger of a process the runner started), and their dead-man switch.

Needs a writable cgroup cpu controller (root): v1 here, v2 where the machine has it.
Busy processes are started by these tests and stopped by their pid.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from chaos.backends.base import BackendError
from chaos.cgroups import CpuGroup, Quota, cut_quota, find_hierarchy, usable_cpus
from chaos.throttle import CpuThrottle
from chaos.watchdog import WatchdogOrder, arm

try:
    VERSION, BASE = find_hierarchy()
    WRITABLE = os.access(BASE, os.W_OK)
except BackendError:
    WRITABLE = False
pytestmark = [
    pytest.mark.signals,
    pytest.mark.skipif(not WRITABLE, reason="needs a writable cgroup cpu controller (root)"),
]
BUSY = [sys.executable, "-c", "while True: pass"]


def wait_for(predicate, timeout_s=20.0):
    deadline = time.monotonic() + timeout_s
    while not (found := predicate()):
        if time.monotonic() > deadline:
            pytest.fail("timed out")
        time.sleep(0.05)
    return found


@pytest.fixture
def group(request):
    made = CpuGroup.create(f"test-{os.getpid()}-{request.node.name[-20:].replace('[', '-').replace(']', '')}")
    busy = subprocess.Popen(BUSY)
    made.add(busy.pid)
    yield made
    busy.kill()
    busy.wait()
    made.remove()
    assert not made.path.exists()


def throttled(group: CpuGroup) -> int:
    """How many periods the group was throttled in (v1 and v2 cpu.stat both count them)."""
    stat = dict(line.split() for line in (group.path / "cpu.stat").read_text().splitlines())
    return int(stat["nr_throttled"])


def test_a_cut_throttles_the_group_and_restore_gives_back_exactly_its_quota(group):
    group.set_quota(Quota(50_000, 100_000))  # a quota of its own before: half a CPU
    throttle = CpuThrottle(group)
    assert throttle.cut(0.4, 30.0) == Quota(20_000, 100_000) == group.quota()
    wait_for(lambda: throttled(group) > 0)  # the kernel holds the busy process back
    throttle.restore()
    assert group.quota() == Quota(50_000, 100_000)


def test_without_a_quota_a_cut_is_of_every_usable_cpu_and_the_restore_lifts_it(group):
    before = group.quota()
    assert before.quota_us is None
    throttle = CpuThrottle(group)
    assert throttle.cut(0.25, 30.0).quota_us == round(0.25 * usable_cpus() * before.period_us)
    throttle.restore()
    assert group.quota() == before


def test_the_watchdog_ends_a_cut_at_its_deadline_when_its_maker_was_killed(group, tmp_path):
    maker = textwrap.dedent(
        f"""\
        import sys, time
        from chaos.cgroups import CpuGroup
        from chaos.throttle import CpuThrottle
        CpuThrottle(CpuGroup.of({group.ident!r})).cut(0.1, 1.0)
        print("cut", flush=True)
        time.sleep(3600)
        """
    )
    child = subprocess.Popen([sys.executable, "-c", maker], stdout=subprocess.PIPE, text=True, cwd=Path.cwd())
    try:
        assert child.stdout is not None and child.stdout.readline() == "cut\n"
        assert group.quota().quota_us == round(0.1 * usable_cpus() * group.quota().period_us)
        child.send_signal(signal.SIGKILL)  # no handler, no finally: only the watchdog is left
        child.wait()
        wait_for(lambda: group.quota().quota_us is None)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if child.stdout is not None:
            child.stdout.close()


def test_a_disarmed_watchdog_leaves_the_quota_alone(group):
    throttle = CpuThrottle(group)
    throttle.cut(0.5, 0.2)
    throttle.cut(0.3, 30.0)  # the first watchdog is disarmed once the second watches
    time.sleep(1.0)  # past the first deadline: nothing may act on it
    assert group.quota().quota_us == round(0.3 * usable_cpus() * group.quota().period_us)
    throttle.restore()


@pytest.mark.parametrize(
    "ident",
    ["v1:/sys/fs/cgroup/cpu", "v1:/tmp/retrystorm-x", "v3:/sys/fs/cgroup/cpu/retrystorm-x",
     "v1:/sys/fs/cgroup/cpu/../retrystorm-x", "v1:/sys/fs/cgroup/cpu/retrystorm-x/cpu.max"],
)  # fmt: skip
def test_a_watchdog_acts_only_on_a_group_made_here(ident):
    order = WatchdogOrder(
        backend="cgroup", ident=f"{ident}=max/100000", target="t", outage="o",
        deadline_monotonic=time.monotonic() + 1, journal=None,
    )  # fmt: skip
    with pytest.raises(BackendError, match="cannot arm the watchdog"):
        arm(order)


def test_a_quota_cut_is_a_fraction_of_what_there_was():
    assert cut_quota(Quota(None, 100_000), 0.4, 2) == Quota(80_000, 100_000)
    assert cut_quota(Quota(30_000, 50_000), 0.5, 8) == Quota(15_000, 50_000)
    assert cut_quota(Quota(None, 100_000), 0.001, 1) == Quota(1000, 100_000)  # the kernel's least
    assert Quota.parse(Quota(None, 100_000).text()) == Quota(None, 100_000)
    with pytest.raises(ValueError, match="capacity must be in"):
        cut_quota(Quota(None, 100_000), 0, 2)
