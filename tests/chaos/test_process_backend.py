import pytest

from chaos.backends import ProcessBackend, TargetRef, TargetState, UnknownTargetError
from chaos.backends.process import process_start_ticks

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


def test_pid_targets_resolve_directly(victim):
    (ref,) = ProcessBackend().resolve(f"pid:{victim.pid}")
    assert ref.ident.startswith(f"{victim.pid}@")


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


def test_unknown_targets_name_the_known_ones():
    with pytest.raises(UnknownTargetError, match="unknown process target 'nope'; known: target"):
        ProcessBackend({"target": 1}).resolve("nope")
    with pytest.raises(UnknownTargetError, match="expected pid:NUMBER"):
        ProcessBackend().resolve("pid:abc")
    with pytest.raises(UnknownTargetError, match="no process with pid"):
        ProcessBackend().resolve("pid:999999999")
