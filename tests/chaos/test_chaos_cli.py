"""``retrystorm chaos pause`` as a real process: SIGTERM resumes; SIGKILL then recover resumes."""

import os
import select
import signal
import socket
import subprocess
import sys

import pytest

from .conftest import call, is_stopped, wait_for

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


def test_after_sigkill_the_watchdog_resumes_at_the_deadline(victim, journal_path):
    short = subprocess.Popen(
        [sys.executable, "-m", "retrystorm", "chaos", "pause", f"pid:{victim.pid}", "--for", "1s"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    wait_for(lambda: is_stopped(victim.pid), what="the target to be paused")
    os.killpg(short.pid, signal.SIGKILL)  # the controller and its whole process group
    short.wait(timeout=20)
    assert is_stopped(victim.pid)
    wait_for(lambda: not is_stopped(victim.pid), timeout_s=15, what="the watchdog to resume the target")
    # it journals right after it resumed: wait for the record, not merely for the resume
    wait_for(lambda: '"watchdog"' in journal_path.read_text(), timeout_s=5, what="the watchdog to journal its resume")


def test_sigkill_then_recover_resumes_before_the_deadline(victim, journal_path):
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


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("pid:1", "refusing pid 1: init and the kernel are never paused"),
        ("pid:abc", "target: got 'pid:abc', expected pid:NUMBER"),
        ("1234", "target: got '1234', expected pid:NUMBER"),
        ("pid:" + "9" * 400, "expected pid:NUMBER"),
    ],
)
def test_what_may_not_be_paused_is_one_line_exit_2(journal_path, target, message):
    result = subprocess.run(
        [sys.executable, "-m", "retrystorm", "chaos", "pause", target, "--for", "1s"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("retrystorm: error: ")
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_controller_may_not_pause_its_own_shell(journal_path):
    result = subprocess.run(
        [sys.executable, "-m", "retrystorm", "chaos", "pause", f"pid:{os.getpid()}", "--for", "1s"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert "an ancestor of this controller" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--host", "127.attacker.example"], "binding to 127.attacker.example exposes the API beyond this machine"),
        (["--host", "0.0.0.0"], "set --token or RETRYSTORM_CHAOS_TOKEN"),  # noqa: S104
        (["--max-outage", "2h"], "max outage: got 2h, expected a duration > 0 and at most 1h"),
        (["--max-outage", "1000000h"], "max_outage: got '1000000h', expected finite durations"),
        (["--max-outage", "0"], "max outage: got 0s"),
        (["--target", "x=1"], "refusing pid 1"),
        (["--target", "x=" + "9" * 30], "expected NAME=PID"),
    ],
)
def test_serve_refuses_bad_settings_in_one_line(journal_path, args, message):
    result = subprocess.run(
        [sys.executable, "-m", "retrystorm", "chaos", "serve", "--port", "0", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def serve(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "retrystorm", "chaos", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize(("host", "shown"), [("127.0.0.1", "127.0.0.1"), ("[::1]", "[::1]"), ("::1", "[::1]")])
def test_serve_on_port_0_announces_the_port_it_serves_on(journal_path, host, shown):
    server = serve("--host", host, "--port", "0")
    try:
        ready, _, _ = select.select([server.stdout], [], [], 60)  # a failure, never a hang, if nothing comes
        announced = server.stdout.readline() if ready else ""
        assert announced.startswith(f"chaos API on http://{shown}:"), announced
        base = announced.split()[3]
        assert not base.endswith(":0")
        status, body = call(base, "GET", "/healthz")
        assert status == 200, body
    finally:
        server.terminate()
        server.communicate(timeout=30)  # waits, and closes the pipes


def test_serve_on_a_busy_port_is_one_line_exit_2_and_announces_nothing(journal_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "retrystorm", "chaos", "serve", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"retrystorm: error: cannot listen on 127.0.0.1 port {port}: it is in use; choose another --host or --port"
    )
    assert result.stdout == ""
