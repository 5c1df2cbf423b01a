"""``retrystorm chaos pause`` as a real process: SIGTERM resumes; SIGKILL then recover resumes."""

import os
import signal
import subprocess
import sys

import pytest

from .conftest import is_stopped, wait_for

pytestmark = pytest.mark.signals


def start_pause(target_pid: int, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "retrystorm", "chaos", "pause", f"pid:{target_pid}", "--for", "10m", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_sigterm_or_sigint_resumes_before_exit(victim, journal_path, signum):
    controller = start_pause(victim.pid)
    wait_for(lambda: is_stopped(victim.pid), what="the target to be paused")
    os.kill(controller.pid, signum)
    stdout, _ = controller.communicate(timeout=20)
    assert not is_stopped(victim.pid)
    assert "resumed" in stdout


def test_sigkill_leaves_it_paused_and_the_next_start_resumes_it(victim, journal_path):
    controller = start_pause(victim.pid)
    wait_for(lambda: is_stopped(victim.pid), what="the target to be paused")
    controller.kill()  # SIGKILL: no handler runs
    controller.communicate(timeout=20)
    assert is_stopped(victim.pid)
    recovered = subprocess.run(
        [sys.executable, "-m", "retrystorm", "chaos", "recover"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert recovered.returncode == 0, recovered.stderr
    assert f"pid {victim.pid}" in recovered.stdout or f"({victim.pid}@" in recovered.stdout
    assert not is_stopped(victim.pid)


def test_a_new_controller_recovers_at_start_up(victim, journal_path):
    first = start_pause(victim.pid)
    wait_for(lambda: is_stopped(victim.pid), what="the target to be paused")
    first.kill()
    first.communicate(timeout=20)
    # A second outage tool starting up resumes the orphan before doing anything else.
    second = start_pause(victim.pid, "--max-outage", "200ms")
    _, stderr = second.communicate(timeout=60)
    assert second.returncode == 0, stderr
    assert not is_stopped(victim.pid)
    assert "left paused by a controller that did not finish" in stderr
    assert "clamped from 10m" in stderr or "clamped from 600.0 s" in stderr


def test_bad_target_is_one_line_exit_2(journal_path):
    result = subprocess.run(
        [sys.executable, "-m", "retrystorm", "chaos", "pause", "pid:999999999", "--for", "1s"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.strip() == "retrystorm: error: no process with pid 999999999"
