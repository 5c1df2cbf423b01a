import os
import subprocess
from pathlib import Path

import pytest

from retrystorm.chaos.backends import ProcessBackend, TargetRef, TargetRefusedError, TargetState, UnknownTargetError
from retrystorm.chaos.backends.procfs import process_start_ticks
from retrystorm.chaos.targets import TargetRegistry

from .conftest import is_stopped

pytestmark = pytest.mark.signals


def test_pause_and_resume_a_real_process(victim):
    backend = ProcessBackend({"target": victim.pid})
    (ref,) = backend.resolve("target")
    assert ref.ident == f"{victim.pid}@{process_start_ticks(victim.pid)}"
    assert backend.state(ref) is TargetState.RUNNING
    backend.pause(ref)
    assert is_stopped(victim.pid)
    assert backend.state(ref) is TargetState.PAUSED
    backend.pause(ref)  # idempotent
    backend.resume(ref)
    assert not is_stopped(victim.pid)
    assert backend.state(ref) is TargetState.RUNNING


def test_a_raw_pid_is_not_a_target(victim):
    with pytest.raises(UnknownTargetError, match="no process target 'pid:"):
        ProcessBackend().resolve(f"pid:{victim.pid}")
    with pytest.raises(TargetRefusedError, match="raw pids are not accepted; register a process"):
        TargetRegistry([ProcessBackend({"target": victim.pid})]).find(f"pid:{victim.pid}")


@pytest.mark.parametrize(
    ("pid", "why"),
    [
        (1, "refusing pid 1: init and the kernel are never paused"),
        (0, "refusing pid 0"),
        (-5, "refusing pid -5"),
        (os.getpid(), "that is this controller itself"),
        (os.getppid(), "an ancestor of this controller"),
    ],
    ids=["init", "zero", "negative", "itself", "parent"],  # not the pids: the same ids in every xdist worker
)
def test_registration_refuses_what_must_never_be_frozen(pid, why):
    with pytest.raises(TargetRefusedError, match=why):
        ProcessBackend().register("t", pid)


def test_registration_refuses_a_kernel_thread():
    kthreadd_children = [
        int(entry.name)
        for entry in os.scandir("/proc")
        if entry.name.isdigit() and Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()[1] == "2"
    ]
    if not kthreadd_children:  # a container without kernel threads in its pid namespace
        pytest.skip("no kernel thread visible here")
    with pytest.raises(TargetRefusedError, match="kernel thread"):
        ProcessBackend().register("t", kthreadd_children[0])


def test_registration_refuses_another_users_process(tmp_path):
    if os.getuid() != 0:
        pytest.skip("starting a process as another user needs root")
    other = subprocess.Popen(["sleep", "60"], user=65534, cwd="/")
    try:
        with pytest.raises(TargetRefusedError, match="belongs to uid 65534, not to this controller's uid 0"):
            ProcessBackend().register("t", other.pid)
    finally:
        other.kill()
        other.wait(timeout=10)


def test_a_recycled_pid_is_never_signalled(victim):
    backend = ProcessBackend()
    stale = TargetRef("process", "old", f"{victim.pid}@1")  # same pid, another start time
    assert backend.state(stale) is TargetState.GONE
    backend.pause(stale)
    assert not is_stopped(victim.pid)


def test_a_finished_process_is_gone(victim):
    backend = ProcessBackend({"target": victim.pid})
    (ref,) = backend.resolve("target")
    victim.kill()
    victim.wait()
    assert backend.state(ref) is TargetState.GONE
    backend.resume(ref)  # no error


def test_unknown_targets_name_the_known_ones(victim):
    with pytest.raises(UnknownTargetError, match=r"no process target 'nope' \(registered: target\); register"):
        ProcessBackend({"target": victim.pid}).resolve("nope")
    with pytest.raises(UnknownTargetError, match="no process with pid"):
        ProcessBackend().register("t", 999999999)


def test_a_malformed_ident_is_gone_and_never_signalled(victim):
    backend = ProcessBackend()
    for ident in ("", "x@y", f"{victim.pid}", f"{victim.pid}@", "@5", f"{victim.pid}@1e3"):
        ref = TargetRef("process", "t", ident)
        assert backend.state(ref) is TargetState.GONE
        backend.pause(ref)
    assert not is_stopped(victim.pid)
