"""The dead-man switch with real processes and real signals: a watchdog outlives whoever armed it.

Every watchdog a test starts is disarmed, or killed by pid once its start ticks confirm it is
still the same process; arming processes run in a session of their own and are killed by
process group while unreaped. Waits are bounded polling loops; nothing asserts on elapsed time.
"""

from __future__ import annotations

import dataclasses
import http.server
import json
import math
import os
import re
import signal
import socketserver
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import retrystorm.chaos.watchdog
from retrystorm.chaos.backends import BackendError
from retrystorm.chaos.backends.process import process_ident
from retrystorm.chaos.backends.procfs import process_start_ticks, process_state_letter
from retrystorm.chaos.journal import Journal
from retrystorm.chaos.watchdog import Watchdog, WatchdogOrder, arm, watchdog_log_path
from retrystorm.chaos.watchdog.guards import NothingToGuardError, ProcessGuard

from .conftest import is_stopped, wait_for

pytestmark = pytest.mark.signals

BASE_IMAGE = os.environ.get("RETRYSTORM_BASE_IMAGE", "retrystorm-base:bookworm")

# A separate arming process: arms, prints the watchdog's pid and its deadline, then sleeps until killed.
ARMER = """
import sys, time
from pathlib import Path
from retrystorm.chaos.watchdog import WatchdogOrder, arm
backend, ident, ahead_s, journal = sys.argv[1], sys.argv[2], float(sys.argv[3]), Path(sys.argv[4])
deadline = time.monotonic() + ahead_s
order = WatchdogOrder(
    backend=backend, ident=ident, target="victim", outage="o1", deadline_monotonic=deadline, journal=journal
)
print(arm(order).pid, deadline, flush=True)
time.sleep(600)
"""


class Armers:
    """Starts arming processes and remembers them and their watchdogs, to clean up by pid."""

    def __init__(self) -> None:
        self.armers: list[subprocess.Popen[str]] = []
        self.watchdogs: list[tuple[int, int | None]] = []  # (pid, start ticks)
        self.in_process: list[Watchdog] = []

    def start(
        self, backend: str, ident: str, ahead_s: float, journal: Path
    ) -> tuple[subprocess.Popen[str], int, float]:
        """An arming process; returns it, its watchdog's pid and the deadline."""
        armer = subprocess.Popen(
            [sys.executable, "-c", ARMER, backend, ident, str(ahead_s), str(journal)],
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its own process group, killed as a whole below
        )
        self.armers.append(armer)
        line = armer.stdout.readline()  # arm() answers or raises within ARM_TIMEOUT_S
        assert line, f"the arming process died: exit code {armer.wait(timeout=20)}"
        pid_text, deadline_text = line.split()
        self.watchdogs.append((int(pid_text), process_start_ticks(int(pid_text))))
        return armer, int(pid_text), float(deadline_text)

    def arm(self, order: WatchdogOrder) -> Watchdog:
        """:func:`arm` in this process, disarmed at the end."""
        watchdog = arm(order)
        self.in_process.append(watchdog)
        return watchdog

    def cleanup(self) -> None:
        for armer in self.armers:
            if armer.poll() is None:
                os.killpg(armer.pid, signal.SIGKILL)  # unreaped, so the group id is still its own
                armer.wait(timeout=20)
            armer.stdout.close()
        for watchdog in self.in_process:
            watchdog.disarm()
        for pid, ticks in self.watchdogs:
            if ticks is not None and process_start_ticks(pid) == ticks:
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
def armers() -> Iterator[Armers]:
    started = Armers()
    yield started
    started.cleanup()


@pytest.fixture
def stopped(victim) -> str:
    """The victim, SIGSTOPped; returns its ident. The victim fixture resumes and kills it afterwards."""
    os.kill(victim.pid, signal.SIGSTOP)
    wait_for(lambda: is_stopped(victim.pid), what="the victim to stop")
    return process_ident(victim.pid)


def order(ident: str, ahead_s: float, journal: Path | None, backend: str = "process") -> WatchdogOrder:
    return WatchdogOrder(
        backend=backend,
        ident=ident,
        target="victim",
        outage="o1",
        deadline_monotonic=time.monotonic() + ahead_s,
        journal=journal,
    )


def exited(pid: int, ticks: int | None) -> bool:
    """The process is gone or a zombie (an orphan is reaped by init, our child by disarm)."""
    return process_start_ticks(pid) != ticks or process_state_letter(pid) in ("Z", "X", None)


def resumes(journal: Path) -> list[dict]:
    return [record for record in Journal(journal).records() if record["op"] == "resume"]


def sleep_past(deadline: float, margin_s: float = 0.3) -> None:
    """Sleep until CLOCK_MONOTONIC is past ``deadline`` (a bounded wait, not an assertion on time)."""
    time.sleep(max(0.0, deadline + margin_s - time.monotonic()))


def test_the_watchdog_outlives_its_killed_arming_process_and_resumes_at_the_deadline(victim, stopped, armers, tmp_path):
    journal = tmp_path / "journal.jsonl"
    armer, watchdog_pid, deadline = armers.start("process", stopped, 1.5, journal)
    os.killpg(armer.pid, signal.SIGKILL)  # the arming process and its whole process group
    armer.wait(timeout=20)
    still_stopped, checked_at = is_stopped(victim.pid), time.monotonic()
    if checked_at < deadline:
        assert still_stopped, "resumed before the deadline"
    wait_for(lambda: not is_stopped(victim.pid), what="the watchdog to resume the victim")
    (record,) = resumes(journal)
    assert record["reason"] == "watchdog"
    assert record["trigger"] == "deadline"
    assert record["late_s"] >= 0  # measured by the watchdog on CLOCK_MONOTONIC: never before
    assert (record["ident"], record["outage"], record["target"]) == (stopped, "o1", "victim")
    assert record["controller"].startswith(f"{watchdog_pid}@")  # written by the watchdog, not the dead armer
    wait_for(lambda: exited(*armers.watchdogs[0]), what="the watchdog to exit")
    log_text = watchdog_log_path(journal).read_text()
    assert "the arming process is gone; resuming at the deadline" in log_text
    assert "resumed by the watchdog (deadline" in log_text


def test_terminal_signals_to_the_arming_group_miss_the_watchdog_and_sigterm_to_it_resumes_now(
    victim, stopped, armers, tmp_path
):
    journal = tmp_path / "journal.jsonl"
    armer, watchdog_pid, _ = armers.start("process", stopped, 60, journal)
    assert os.getsid(watchdog_pid) == watchdog_pid != os.getsid(armer.pid)  # a session of its own
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # what a terminal sends its foreground group
        os.killpg(armer.pid, signum)
    armer.wait(timeout=20)
    assert not exited(*armers.watchdogs[0])
    assert is_stopped(victim.pid)
    os.kill(watchdog_pid, signal.SIGTERM)  # stopping the watchdog itself must not leave the target frozen
    wait_for(lambda: not is_stopped(victim.pid), what="SIGTERM to the watchdog to resume the victim")
    (record,) = resumes(journal)
    assert record["trigger"] == "SIGTERM"
    assert record["late_s"] < 0  # well before its deadline, on purpose


def test_disarm_reaps_the_watchdog_and_leaves_the_target_alone(victim, stopped, armers, tmp_path):
    journal = tmp_path / "journal.jsonl"
    watchdog = armers.arm(order(stopped, 0.5, journal))
    deadline = time.monotonic() + 0.5
    ticks = process_start_ticks(watchdog.pid)
    assert watchdog.guarding
    watchdog.disarm()
    assert process_start_ticks(watchdog.pid) != ticks  # reaped: not even a zombie is left
    watchdog.disarm()  # idempotent
    sleep_past(deadline)
    assert is_stopped(victim.pid)
    assert resumes(journal) == []


def test_disarm_after_the_watchdog_acted_still_reaps_it(victim, stopped, armers, tmp_path):
    journal = tmp_path / "journal.jsonl"
    watchdog = armers.arm(order(stopped, 0.2, journal))
    ticks = process_start_ticks(watchdog.pid)
    wait_for(lambda: not is_stopped(victim.pid), what="the watchdog to resume the victim")
    watchdog.disarm()
    assert process_start_ticks(watchdog.pid) != ticks
    assert [record["reason"] for record in resumes(journal)] == ["watchdog"]


def test_without_a_journal_it_resumes_and_writes_no_file(victim, stopped, armers, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    armers.arm(order(stopped, 0.2, None))
    wait_for(lambda: not is_stopped(victim.pid), what="the watchdog to resume the victim")
    assert list(tmp_path.iterdir()) == []


def test_a_relative_journal_is_the_arming_process_s_not_the_watchdog_s(victim, stopped, armers, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the watchdog itself runs in /
    armers.arm(order(stopped, 0.2, Path("relative.jsonl")))
    wait_for(lambda: not is_stopped(victim.pid), what="the watchdog to resume the victim")
    wait_for(lambda: len(resumes(tmp_path / "relative.jsonl")) == 1, what="the resume record")
    assert (tmp_path / "relative.watchdog.log").exists()


def test_start_ticks_that_do_not_match_guard_nothing(victim, stopped, armers, tmp_path):
    journal = tmp_path / "journal.jsonl"
    pid, ticks = stopped.split("@")
    watchdog = armers.arm(order(f"{pid}@{int(ticks) + 1}", 0.3, journal))  # the pid now names another process
    assert not watchdog.guarding
    assert process_start_ticks(watchdog.pid) is None  # exited and reaped
    sleep_past(time.monotonic() + 0.3)
    assert is_stopped(victim.pid)
    assert resumes(journal) == []


def test_a_process_that_is_gone_guards_nothing(armers, tmp_path):
    finished = subprocess.Popen(["sleep", "60"])
    ident = process_ident(finished.pid)
    finished.kill()
    finished.wait()
    assert not armers.arm(order(ident, 0.3, tmp_path / "j.jsonl")).guarding
    assert not armers.arm(order("999999999@1", 0.3, tmp_path / "j.jsonl")).guarding


def test_a_guarded_process_that_dies_ends_its_watchdog_without_a_signal(victim, stopped, armers, tmp_path):
    journal = tmp_path / "journal.jsonl"
    watchdog = armers.arm(order(stopped, 60, journal))
    ticks = process_start_ticks(watchdog.pid)
    victim.kill()  # SIGKILL ends a stopped process too
    wait_for(lambda: exited(watchdog.pid, ticks), what="the watchdog to see its target gone")
    watchdog.disarm()
    assert resumes(journal) == []  # its only signal is at the deadline, a minute away
    assert "outage o1: gone; exiting" in watchdog_log_path(journal).read_text()


@pytest.mark.parametrize("use_pidfd", [True, False], ids=["pidfd", "start-ticks fallback"])
def test_the_process_guard_names_one_process_only(victim, stopped, use_pidfd):
    pid, ticks = stopped.split("@")
    with pytest.raises(NothingToGuardError, match="no longer names the process"):
        ProcessGuard(f"{pid}@{int(ticks) + 1}", use_pidfd=use_pidfd)
    guard = ProcessGuard(stopped, use_pidfd=use_pidfd)
    assert (guard.watch_fd is not None) is use_pidfd
    assert not guard.gone()
    assert guard.resume() == "resumed"
    wait_for(lambda: not is_stopped(victim.pid), what="SIGCONT")
    victim.kill()
    victim.wait()
    assert guard.gone()
    assert guard.resume() == "gone"
    guard.close()


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("backend", "nope", "backend 'nope': expected process or docker"),
        ("ident", "abc", "process ident 'abc': expected PID@STARTTICKS"),
        ("deadline_monotonic", time.time() + 10, r"s ahead: expected at most 86400 s \(a wall-clock time\?\)"),
        ("deadline_monotonic", math.nan, "deadline nan s ahead"),
    ],
    ids=["backend", "ident", "wall-clock deadline", "nan deadline"],  # not the time: the same ids in every worker
)
def test_an_order_that_cannot_be_guarded_is_refused_in_one_line(tmp_path, field, value, message):
    bad = order("1@1", 10, tmp_path / "j.jsonl")
    with pytest.raises(BackendError, match=message) as raised:
        arm(dataclasses.replace(bad, **{field: value}))
    assert "\n" not in str(raised.value)


def test_a_watchdog_that_never_answers_is_killed_and_refused(monkeypatch, tmp_path, victim):
    pid_file = tmp_path / "pid"
    silent = ["sh", "-c", f'echo $$ > "{pid_file}"; exec sleep 60']
    monkeypatch.setattr(retrystorm.chaos.watchdog, "_command", lambda _order: silent)
    monkeypatch.setattr(retrystorm.chaos.watchdog, "ARM_TIMEOUT_S", 1.0)
    with pytest.raises(BackendError, match=r"did not confirm it was armed within 1 s; see .*watchdog\.log$"):
        arm(order(process_ident(victim.pid), 10, tmp_path / "j.jsonl"))
    assert process_start_ticks(int(pid_file.read_text())) is None  # killed and reaped


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ([sys.executable, "-c", "import sys; sys.exit(3)"], r"it exited with code 3 before arming; see "),
        ([sys.executable, "-P", "-S", "-m", "retrystorm.chaos.watchdog", "{not json"], r": Expecting property name"),
    ],
    ids=["exits", "answers an error"],
)
def test_a_watchdog_that_fails_to_arm_is_refused(monkeypatch, tmp_path, victim, command, message):
    monkeypatch.setattr(retrystorm.chaos.watchdog, "_command", lambda _order: command)
    with pytest.raises(BackendError, match=message) as raised:
        arm(order(process_ident(victim.pid), 10, tmp_path / "j.jsonl"))
    assert "\n" not in str(raised.value)


class FakeEngine:
    """The three calls a docker watchdog makes (version, inspect, unpause) answered on a unix socket.

    Enough to run the watchdog's real Docker SDK path where no engine runs; the docker-marked test
    below does the same against a real engine and a real paused container.
    """

    def __init__(self, socket_path: Path, containers: dict[str, str]) -> None:
        self.containers = containers  # id -> status
        self.unpaused: list[str] = []
        engine = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass  # the default logs client_address[0], which a unix socket does not have

            def reply(self, status: int, body: dict | None = None) -> None:
                data = json.dumps(body).encode() if body is not None else b""
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                found = re.fullmatch(r"/v[0-9.]+/containers/(\w+)/json", self.path)
                if self.path == "/version":
                    self.reply(200, {"ApiVersion": "1.41", "Version": "fake"})
                elif found and found[1] in engine.containers:
                    state = {"Status": engine.containers[found[1]]}
                    self.reply(200, {"Id": found[1], "Name": "/target", "State": state, "Config": {"Labels": {}}})
                else:
                    self.reply(404, {"message": f"No such container: {self.path}"})

            def do_POST(self) -> None:
                found = re.fullmatch(r"/v[0-9.]+/containers/(\w+)/unpause", self.path)
                if found and engine.containers.get(found[1]) == "paused":
                    engine.containers[found[1]] = "running"
                    engine.unpaused.append(found[1])
                    self.reply(204)
                else:
                    self.reply(404, {"message": f"No such container: {self.path}"})

        self.server = socketserver.ThreadingUnixStreamServer(str(socket_path), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_engine(tmp_path, monkeypatch) -> Iterator[FakeEngine]:
    socket_path = tmp_path / "docker.sock"
    engine = FakeEngine(socket_path, {"c0ffee": "paused"})
    monkeypatch.setenv("DOCKER_HOST", f"unix://{socket_path}")  # inherited by arming processes and watchdogs
    yield engine
    engine.close()


def test_a_docker_watchdog_unpauses_through_the_sdk_after_its_arming_process_is_killed(fake_engine, armers, tmp_path):
    journal = tmp_path / "journal.jsonl"
    armer, _, _ = armers.start("docker", "c0ffee", 2.5, journal)  # the SDK is imported 2 s before the deadline
    os.killpg(armer.pid, signal.SIGKILL)
    armer.wait(timeout=20)
    wait_for(lambda: fake_engine.unpaused == ["c0ffee"], what="the watchdog to unpause the container")
    wait_for(lambda: len(resumes(journal)) == 1, what="the resume record")
    (record,) = resumes(journal)
    assert (record["reason"], record["backend"], record["ident"]) == ("watchdog", "docker", "c0ffee")
    assert record["late_s"] >= 0


def test_a_docker_watchdog_whose_container_is_gone_does_nothing(fake_engine, armers, tmp_path):
    journal = tmp_path / "journal.jsonl"
    watchdog = armers.arm(order("deadbeef", 0.5, journal, backend="docker"))
    ticks = process_start_ticks(watchdog.pid)
    wait_for(lambda: exited(watchdog.pid, ticks), what="the watchdog to finish")
    watchdog.disarm()
    assert fake_engine.unpaused == []
    assert resumes(journal) == []
    assert "(deadbeef), outage o1: gone: nothing to resume (deadline, " in watchdog_log_path(journal).read_text()


@pytest.mark.docker
def test_a_paused_container_is_unpaused_after_its_arming_process_is_killed(armers, tmp_path):
    """Needs a Docker engine and the offline base image: skipped without them, unless CI demands Docker."""
    try:
        from retrystorm.chaos.backends.docker import connect

        client = connect()
        client.images.get(BASE_IMAGE)
    except Exception as error:
        if os.environ.get("RETRYSTORM_REQUIRE_DOCKER") == "1":
            pytest.fail(f"Docker is required here but unusable: {error}")
        pytest.skip(f"no Docker engine or no {BASE_IMAGE} image: {error}")
    project = f"rswatchdog{uuid.uuid4().hex[:8]}"
    labels = {
        "com.docker.compose.project": project,
        "com.docker.compose.service": "target",
        "retrystorm.chaos": "allow",
    }
    container = client.containers.run(
        BASE_IMAGE, ["sleep", "600"], detach=True, labels=labels, network_mode="host", name=f"{project}-target"
    )
    try:
        container.pause()
        journal = tmp_path / "journal.jsonl"
        armer, _, _ = armers.start("docker", container.id, 3, journal)
        os.killpg(armer.pid, signal.SIGKILL)
        armer.wait(timeout=20)

        def running() -> bool:
            container.reload()
            return container.status == "running"

        wait_for(running, timeout_s=60, what="the watchdog to unpause the container")
        wait_for(lambda: len(resumes(journal)) == 1, what="the resume record (written after the unpause)")
        (record,) = resumes(journal)
        assert (record["reason"], record["backend"], record["ident"]) == ("watchdog", "docker", container.id)
    finally:
        container.reload()
        if container.status == "paused":
            container.unpause()
        container.remove(force=True)
