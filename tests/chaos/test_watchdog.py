"""The dead-man switch with real processes and real signals: the watchdog supervisor outlives whoever armed it.

Each test has a journal of its own, so a supervisor of its own, which exits once it guards nothing and nobody is
connected (this process's connections are closed after each test: tests/chaos/conftest.py). Arming processes run in
a session of their own and are killed by process group while unreaped. Waits are bounded polling loops; nothing
asserts on elapsed time.
"""

from __future__ import annotations

import dataclasses
import http.server
import json
import math
import os
import re
import signal
import socket
import socketserver
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from retrystorm.chaos.backends import BackendError, ProcessBackend, TargetRefusedError
from retrystorm.chaos.backends.process import process_ident
from retrystorm.chaos.backends.procfs import process_state_letter
from retrystorm.chaos.journal import Journal
from retrystorm.chaos.watchdog import MAX_ORDERS, WatchdogOrder, arm, watchdog_log_path
from retrystorm.chaos.watchdog.guards import NothingToGuardError, ProcessGuard
from retrystorm.chaos.watchdog.supervisor import Supervisor
from retrystorm.errors import UserError

from .conftest import is_stopped, wait_for

pytestmark = pytest.mark.signals

BASE_IMAGE = os.environ.get("RETRYSTORM_BASE_IMAGE", "retrystorm-base:bookworm")

# A separate arming process: arms, prints the supervisor's pid and the deadline, then sleeps until killed.
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
    """Starts arming processes in sessions of their own, and kills them by process group afterwards."""

    def __init__(self) -> None:
        self.armers: list[subprocess.Popen[str]] = []

    def start(
        self, backend: str, ident: str, ahead_s: float, journal: Path
    ) -> tuple[subprocess.Popen[str], int, float]:
        """An arming process; returns it, the supervisor's pid and the deadline."""
        armer = subprocess.Popen(
            [sys.executable, "-c", ARMER, backend, ident, str(ahead_s), str(journal)],
            stdout=subprocess.PIPE, text=True, start_new_session=True,
        )  # fmt: skip
        self.armers.append(armer)
        line = armer.stdout.readline()
        assert line, f"the arming process died: exit code {armer.wait(timeout=20)}"
        pid_text, deadline_text = line.split()
        return armer, int(pid_text), float(deadline_text)

    def cleanup(self) -> None:
        for armer in self.armers:
            if armer.poll() is None:
                os.killpg(armer.pid, signal.SIGKILL)  # unreaped, so the group id is still its own
                armer.wait(timeout=20)
            armer.stdout.close()


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


def order(ident: str, ahead_s: float, journal: Path | None, backend: str = "process", **more) -> WatchdogOrder:
    return WatchdogOrder(
        backend=backend, ident=ident, target="victim", outage=more.pop("outage", "o1"),
        deadline_monotonic=time.monotonic() + ahead_s, journal=journal, **more,
    )  # fmt: skip


def gone(pid: int) -> bool:
    """The process is gone (the supervisor is reparented to init, which reaps it)."""
    return process_state_letter(pid) in ("Z", "X", None)


def resumes(journal: Path) -> list[dict]:
    return [record for record in Journal(journal).records() if record["op"] == "resume"]


def sleep_past(deadline: float, margin_s: float = 0.3) -> None:
    """Sleep until CLOCK_MONOTONIC is past ``deadline`` (a bounded wait, not an assertion on time)."""
    time.sleep(max(0.0, deadline + margin_s - time.monotonic()))


def test_the_supervisor_outlives_its_killed_arming_process_and_resumes_at_the_deadline(
    victim, stopped, armers, tmp_path
):
    journal = tmp_path / "journal.jsonl"
    armer, supervisor, deadline = armers.start("process", stopped, 1.5, journal)
    os.killpg(armer.pid, signal.SIGKILL)  # the arming process and its whole process group
    armer.wait(timeout=20)
    still_stopped, checked_at = is_stopped(victim.pid), time.monotonic()
    if checked_at < deadline:
        assert still_stopped, "resumed before the deadline"
    wait_for(lambda: not is_stopped(victim.pid), what="the watchdog to resume the victim")
    (record,) = resumes(journal)
    assert (record["reason"], record["trigger"]) == ("watchdog", "deadline")
    assert record["late_s"] >= 0  # measured by the supervisor on CLOCK_MONOTONIC: never before
    assert (record["ident"], record["outage"], record["target"]) == (stopped, "o1", "victim")
    assert record["controller"].startswith(f"{supervisor}@")  # written by the supervisor, not the dead armer
    wait_for(lambda: gone(supervisor), what="the supervisor to exit, guarding nothing for nobody")
    log_text = watchdog_log_path(journal).read_text()
    if checked_at < deadline:  # killed before the deadline (a loaded machine may take longer to kill it)
        assert "the controller that armed it is gone; acting at the deadline" in log_text
    assert "resumed by the watchdog (deadline" in log_text
    assert not (tmp_path / "journal.watchdog.sock").exists()


def test_one_supervisor_guards_every_pause_of_every_controller_of_a_journal(victim, stopped, armers, tmp_path):
    journal = tmp_path / "journal.jsonl"
    pids = {armers.start("process", stopped, 60, journal)[1] for _ in range(3)}
    pids |= {arm(order(stopped, 60, journal, outage=f"o{n}")).pid for n in range(10)}
    assert len(pids) == 1
    (supervisor,) = pids
    assert process_state_letter(supervisor) not in (None, "Z")


def test_terminal_signals_to_the_arming_group_miss_the_supervisor_and_sigterm_to_it_acts_now(
    victim, stopped, armers, tmp_path
):
    journal = tmp_path / "journal.jsonl"
    armer, supervisor, _ = armers.start("process", stopped, 60, journal)
    assert os.getsid(supervisor) != os.getsid(armer.pid)  # a session of its own (not its leader: no terminal)
    assert os.getpgid(supervisor) != os.getpgid(armer.pid)
    assert Path(f"/proc/{supervisor}/stat").read_text().rsplit(")", 1)[1].split()[1] == "1"  # reparented to init
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # what a terminal sends its foreground group
        os.killpg(armer.pid, signum)
    armer.wait(timeout=20)
    assert not gone(supervisor)
    assert is_stopped(victim.pid)
    os.kill(supervisor, signal.SIGTERM)  # stopping the supervisor itself must not leave the target frozen
    wait_for(lambda: not is_stopped(victim.pid), what="SIGTERM to the supervisor to resume the victim")
    wait_for(lambda: len(resumes(journal)) == 1, what="the resume record")
    (record,) = resumes(journal)
    assert record["trigger"] == "SIGTERM"
    assert record["late_s"] < 0  # well before its deadline, on purpose


def test_disarm_leaves_the_target_alone(victim, stopped, tmp_path):
    journal = tmp_path / "journal.jsonl"
    watchdog = arm(order(stopped, 2, journal))
    deadline = time.monotonic() + 2
    assert watchdog.guarding
    watchdog.disarm()
    watchdog.disarm()  # idempotent
    sleep_past(deadline)
    assert is_stopped(victim.pid)
    assert resumes(journal) == []


def test_a_moved_deadline_is_kept_and_disarm_after_it_acted_is_harmless(victim, stopped, tmp_path):
    journal = tmp_path / "journal.jsonl"
    watchdog = arm(order(stopped, 60, journal))
    assert watchdog.move_deadline(time.monotonic() + 0.2)
    wait_for(lambda: not is_stopped(victim.pid), what="the watchdog to resume the victim at the moved deadline")
    wait_for(lambda: len(resumes(journal)) == 1, what="the resume record")
    assert not watchdog.move_deadline(time.monotonic() + 10)  # it has acted
    watchdog.disarm()
    assert [record["reason"] for record in resumes(journal)] == ["watchdog"]


def test_without_a_journal_it_resumes_and_writes_nothing_where_it_runs(victim, stopped, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    arm(order(stopped, 0.2, None))
    wait_for(lambda: not is_stopped(victim.pid), what="the watchdog to resume the victim")
    assert list(tmp_path.iterdir()) == []


def test_a_relative_journal_is_the_arming_process_s_not_the_supervisor_s(victim, stopped, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the supervisor itself runs in /
    arm(order(stopped, 0.2, Path("relative.jsonl")))
    wait_for(lambda: not is_stopped(victim.pid), what="the watchdog to resume the victim")
    wait_for(lambda: len(resumes(tmp_path / "relative.jsonl")) == 1, what="the resume record")
    assert (tmp_path / "relative.watchdog.log").exists()


def test_start_ticks_that_do_not_match_guard_nothing(victim, stopped, tmp_path):
    journal = tmp_path / "journal.jsonl"
    pid, ticks = stopped.split("@")
    watchdog = arm(order(f"{pid}@{int(ticks) + 1}", 0.3, journal))  # the pid now names another process
    assert not watchdog.guarding
    sleep_past(time.monotonic() + 0.3)
    assert is_stopped(victim.pid)
    assert resumes(journal) == []


def test_a_process_that_is_gone_guards_nothing(tmp_path):
    finished = subprocess.Popen(["sleep", "60"])
    ident = process_ident(finished.pid)
    finished.kill()
    finished.wait()
    assert not arm(order(ident, 0.3, tmp_path / "j.jsonl")).guarding
    assert not arm(order("999999999@1", 0.3, tmp_path / "j.jsonl")).guarding


def test_a_guarded_process_that_dies_ends_its_order_without_a_signal(victim, stopped, tmp_path):
    journal = tmp_path / "journal.jsonl"
    watchdog = arm(order(stopped, 60, journal))
    victim.kill()  # SIGKILL ends a stopped process too
    victim.wait()
    wait_for(lambda: "its target is gone" in watchdog_log_path(journal).read_text(), what="the order to end")
    assert not watchdog.move_deadline(time.monotonic() + 1)  # nothing held any more
    assert resumes(journal) == []


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
        ("backend", "nope", "backend 'nope': expected process or docker or cgroup"),
        ("ident", "abc", "process ident 'abc': expected PID@STARTTICKS"),
        ("deadline_monotonic", 1e12, r"s ahead: expected at most 86400 s \(a wall-clock time\?\)"),
        ("deadline_monotonic", math.nan, "deadline nan s ahead"),
        ("fault", "freeze", "fault 'freeze': expected pause, throttle, reap or partition"),
        ("owner", "me", "owner 'me': expected PID@STARTTICKS"),
    ],
    ids=["backend", "ident", "wall-clock deadline", "nan deadline", "fault", "owner"],  # the same ids in every worker
)
def test_an_order_that_cannot_be_guarded_is_refused_in_one_line(tmp_path, field, value, message):
    bad = order("1@1", 10, tmp_path / "j.jsonl")
    with pytest.raises(BackendError, match=message) as raised:
        arm(dataclasses.replace(bad, **{field: value}))
    assert "\n" not in str(raised.value)


def test_the_supervisor_answers_a_malformed_request_in_one_line_and_holds_at_most_its_cap(tmp_path, stopped):
    left, right = socket.socketpair()
    supervisor = Supervisor(left, os.pipe()[0], lambda: True)
    for line in (b"not json", b"[1]", b'{"frobnicate": 1}', b'{"arm": {"backend": 1}}', b'{"deadline": [1, "inf"]}'):
        answer = supervisor._answer(line, 0)
        assert set(answer) <= {"error", "ok"} and "\n" not in str(answer)
    supervisor.orders = dict.fromkeys(range(MAX_ORDERS))  # type: ignore[arg-type]
    answer = supervisor._answer(json.dumps({"arm": order(stopped, 10, None).to_dict()}).encode(), 0)
    assert answer == {"error": f"this watchdog holds {MAX_ORDERS} orders, its most; end a fault first"}
    left.close()
    right.close()


def test_the_supervisor_is_never_a_target(victim, stopped, tmp_path):
    journal = tmp_path / "journal.jsonl"
    supervisor = arm(order(stopped, 60, journal)).pid
    with pytest.raises(TargetRefusedError, match="it is a retrystorm watchdog"):
        ProcessBackend().register("watchdog", supervisor)


def test_a_folder_others_may_write_gets_no_supervisor(victim, stopped, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(UserError, match="others may write it"):
        arm(order(stopped, 60, shared / "journal.jsonl"))


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


def test_a_docker_watchdog_whose_container_is_gone_does_nothing(fake_engine, tmp_path):
    journal = tmp_path / "journal.jsonl"
    arm(order("deadbeef", 0.5, journal, backend="docker"))
    wait_for(lambda: "(deadbeef), pause o1: gone: nothing to do (deadline, " in watchdog_log_path(journal).read_text(),
             what="the watchdog to act")  # fmt: skip
    assert fake_engine.unpaused == []
    assert resumes(journal) == []


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
