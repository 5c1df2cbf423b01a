"""A PostgreSQL server of a test's own: Debian's postgresql, a fresh cluster in a temporary folder, on loopback.

PostgreSQL refuses to run as root, so the cluster is made (``initdb``) and run as the ``postgres`` user, in a
folder under ``/tmp`` that user owns (pytest's own temporary folders are closed to other users), on a free
loopback port, with its Unix socket in the same folder. Trust authentication on loopback only; fsync off (a test's
throw-away data). The server runs in cgroups of its own (:class:`retrystorm.chaos.containment.Containment`: the
freezer's, and the v1 ``cpu`` one), joined between ``fork`` and ``exec``, as systemd starts Debian's
``postgresql@15-main.service`` in a cgroup of its own: a scenario names it with ``target: {cgroup: PATH}``.
:func:`postgres_server` stops it by its pid (a fast shutdown, then SIGKILL), removes the cgroups and the folder.

:func:`heartbeat` starts a process *inside* the server's process tree: a backend runs ``COPY ... TO PROGRAM``,
whose program is a child of that backend (so a descendant of the postmaster, across the backend's ``setsid()``)
and writes ``time.monotonic()`` every 10 ms to a file. The longest gap between two of its lines is how long the
tree was really frozen, measured independently of the code that froze it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from retrystorm.chaos.containment import Containment
from tests.support.ports import LOOPBACK, free_port
from tests.support.procfs import is_alive

USER = "postgres"
#: The heartbeat runs as the postgres user, which cannot reach root's interpreters: Debian's own Python.
SYSTEM_PYTHON = "/usr/bin/python3"
#: The heartbeat's program: one ``time.monotonic()`` a line, every 10 ms, to ``argv[1]``, until the file ``argv[2]``
#: exists or ``argv[3]`` seconds have passed.
HEARTBEAT = """\
import os, sys, time
end = time.monotonic() + float(sys.argv[3])
with open(sys.argv[1], "w", buffering=1) as out:
    while time.monotonic() < end and not os.path.exists(sys.argv[2]):
        out.write(f"{time.monotonic():.6f}\\n")
        time.sleep(0.01)
"""


@dataclasses.dataclass(frozen=True, slots=True)
class Postgres:
    """A running server: its postmaster's pid, port, folder and a DSN (``postgres`` superuser, trust)."""

    pid: int
    port: int
    folder: Path
    #: Its cgroup's path in each hierarchy (``/retrystorm-svc-...``), as ``/proc/PID/cgroup`` names it.
    cgroup: str

    @property
    def dsn(self) -> str:
        return f"host={LOOPBACK} port={self.port} user={USER} dbname=postgres connect_timeout=5"


def postgres_bin() -> Path | None:
    """Debian's PostgreSQL programs (``/usr/lib/postgresql/N/bin``, the newest), or ``None`` when not installed."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda path: int(path.parts[4]))
    return found[-1].parent if found else None


def _as_postgres(argv: list[str], **popen: object) -> subprocess.Popen[bytes]:
    return subprocess.Popen(argv, user=USER, group=USER, extra_groups=[], **popen)  # type: ignore[call-overload]


@contextlib.contextmanager
def postgres_server(max_connections: int = 40) -> Iterator[Postgres]:
    """A fresh cluster, started and ready (module docstring); skipped where Debian's postgresql is missing."""
    programs = postgres_bin()
    if programs is None:
        pytest.skip("Debian's postgresql is not installed (scripts/test installs it for the full suite)")
    if os.geteuid() != 0:
        pytest.skip("runs PostgreSQL as the postgres user: needs root")
    owner = pwd.getpwnam(USER)
    folder = Path(tempfile.mkdtemp(prefix="retrystorm-pg-"))
    os.chown(folder, owner.pw_uid, owner.pw_gid)
    data = folder / "data"
    log = (folder / "server.log").open("wb")
    os.chown(folder / "server.log", owner.pw_uid, owner.pw_gid)
    server = None
    containment = Containment.create()
    try:
        made = _as_postgres(
            [str(programs / "initdb"), "-D", str(data), "-U", USER, "--auth=trust", "--no-sync", "-E", "UTF8"],
            stdout=log, stderr=subprocess.STDOUT, cwd=folder,
        )  # fmt: skip
        assert made.wait(120) == 0, (folder / "server.log").read_text()
        port = free_port()
        settings = {
            "listen_addresses": LOOPBACK, "port": str(port), "unix_socket_directories": str(folder), "fsync": "off",
            "max_connections": str(max_connections), "shared_buffers": "16MB",
        }  # fmt: skip
        argv = [str(programs / "postgres"), "-D", str(data)]
        for name, value in settings.items():
            argv += ["-c", f"{name}={value}"]
        join = containment.joiner()
        try:
            server = _as_postgres(argv, stdout=log, stderr=subprocess.STDOUT, cwd=folder, preexec_fn=join)
        finally:
            Containment.close_joiner(join)
        found = Postgres(server.pid, port, folder, containment.relative)
        _wait_ready(found, server)
        yield found
    finally:
        if server is not None:
            _stop(server)
        containment.end()  # what is left (nothing after a clean stop), then the cgroups
        log.close()
        shutil.rmtree(folder, ignore_errors=True)


def _wait_ready(server: Postgres, process: subprocess.Popen[bytes]) -> None:
    import psycopg

    deadline = time.monotonic() + 60
    while True:
        try:
            with psycopg.connect(server.dsn, autocommit=True) as connection:
                connection.execute("SELECT 1")
        except psycopg.OperationalError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError((server.folder / "server.log").read_text()) from None
            time.sleep(0.2)
        else:
            return


def _stop(process: subprocess.Popen[bytes]) -> None:
    """A fast shutdown (SIGINT to the postmaster, by its pid: it ends its backends), then SIGKILL."""
    if process.poll() is None:
        os.kill(process.pid, signal.SIGCONT)  # a test that failed mid-freeze may have left it stopped
        process.send_signal(signal.SIGINT)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


@contextlib.contextmanager
def heartbeat(server: Postgres, longest_s: float = 600) -> Iterator[Path]:
    """A process in ``server``'s tree writing ``time.monotonic()`` every 10 ms (module docstring), for at most
    ``longest_s``.

    Yields the file it writes, once its first line is there; on exit, stops it and waits for its backend's ``COPY``.
    """
    import psycopg

    script, beats, stop = (server.folder / name for name in ("heartbeat.py", "heartbeat.txt", "heartbeat.stop"))
    script.write_text(HEARTBEAT)
    command = f"{SYSTEM_PYTHON} {script} {beats} {stop} {longest_s:g}"
    connection = psycopg.connect(server.dsn, autocommit=True)
    try:
        runner = _CopyInThread(connection, f"COPY (SELECT 1) TO PROGRAM '{command}'")
        deadline = time.monotonic() + 30
        while not (beats.exists() and beats.read_text()):
            assert time.monotonic() < deadline and runner.alive(), "the heartbeat did not start"
            time.sleep(0.02)
        try:
            yield beats
        finally:
            stop.touch()
            runner.join(30)
    finally:
        connection.close()


class _CopyInThread:
    """Runs one statement on a connection in a thread (``COPY TO PROGRAM`` returns when its program ends)."""

    def __init__(self, connection: object, statement: str) -> None:
        import threading

        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(connection, statement), daemon=True)
        self._thread.start()

    def _run(self, connection: object, statement: str) -> None:
        try:
            connection.execute(statement)  # type: ignore[attr-defined]
        except BaseException as error:  # reported by join()
            self._error = error

    def alive(self) -> bool:
        return self._thread.is_alive()

    def join(self, timeout_s: float) -> None:
        self._thread.join(timeout_s)
        assert not self._thread.is_alive(), "the heartbeat's COPY did not end"
        if self._error is not None:
            raise self._error


def gaps(beats: Path, longer_than_s: float) -> list[float]:
    """The gaps between two lines of a heartbeat file longer than ``longer_than_s``, in order (seconds)."""
    times = [float(line) for line in beats.read_text().split()]
    return [after - before for before, after in itertools.pairwise(times) if after - before > longer_than_s]


def tree_members(pid: int) -> set[int]:
    """``pid`` and every descendant, read from ``/proc`` (each process's parent), independently of the runner."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
    members, frontier = {pid}, [pid]
    while frontier:
        parent = frontier.pop()
        children = [child for child, its_parent in parents.items() if its_parent == parent]
        members.update(children)
        frontier.extend(children)
    return {member for member in members if is_alive(member)}
