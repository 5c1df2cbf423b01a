"""Arming an order with the journal's watchdog supervisor, which is started when none runs.

One connection per supervisor per process, kept open for the process's life (a supervisor exits only once it
guards nothing and nobody is connected), shared by every :class:`Watchdog` handle under a lock. The supervisor of
a journal listens on ``<journal stem>.watchdog.sock`` in the journal's private folder
(:func:`retrystorm.chaos.journal_file.open_private_folder`), reached through the folder's descriptor so no path
length or link matters; docker orders go to a second supervisor, ``<stem>.watchdog-docker.sock``, started with
``site`` so the Docker SDK resolves (the first starts with ``-S``: no ``.pth`` files, fast and small). Without a
journal the folder is ``retrystorm-<uid>`` in the temporary directory, checked the same way.

Starting one is serialized by ``<stem>.watchdog.lock``: under it a client connects, or starts a supervisor and
waits for its ``ready`` line, then connects; a supervisor about to exit takes the same lock and exits only if no
connection is waiting.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from retrystorm.chaos.backends.base import BackendError
from retrystorm.chaos.journal_file import open_in, open_private_folder

#: How long a request may wait for the supervisor's answer, and a start for its ``ready`` line.
ANSWER_TIMEOUT_S = 10.0
_PACKAGE_ROOT = Path(__file__).resolve().parents[2]


@dataclasses.dataclass(frozen=True, slots=True)
class Place:
    """Where a journal's supervisor lives: its folder and the names of its socket, lock and log."""

    folder: Path
    stem: str
    docker: bool

    @classmethod
    def of(cls, journal: Path | None, *, docker: bool) -> Place:
        """The place of ``journal``'s supervisor (the docker one with ``docker``)."""
        if journal is None:
            return cls(Path(tempfile.gettempdir()) / f"retrystorm-{os.geteuid()}", "watchdog", docker)
        return cls(journal.absolute().parent, journal.stem, docker)

    @property
    def socket_name(self) -> str:
        """The socket's name in the folder."""
        return f"{self.stem}.watchdog{'-docker' if self.docker else ''}.sock"

    @property
    def log_path(self) -> Path:
        """Where every supervisor of this journal logs."""
        return self.folder / f"{self.stem}.watchdog.log"


class Channel:
    """A connection to one supervisor; :meth:`call` sends one request and reads its answer."""

    def __init__(self, place: Place, connection: socket.socket, pid: int) -> None:
        self.place, self.connection, self.pid = place, connection, pid
        self.lock = threading.Lock()
        self.broken = False
        self._pending = b""

    def call(self, request: dict[str, Any]) -> dict[str, Any]:
        """The supervisor's answer to ``request`` (``OSError`` if it is gone)."""
        with self.lock:
            try:
                self.connection.sendall(json.dumps(request).encode() + b"\n")
                answer: dict[str, Any] = json.loads(self._line())
            except (OSError, ValueError):
                self.broken = True
                raise
            return answer

    def _line(self) -> bytes:
        give_up = time.monotonic() + ANSWER_TIMEOUT_S
        while b"\n" not in self._pending:
            left_s = give_up - time.monotonic()
            if left_s <= 0 or not select.select([self.connection], [], [], left_s)[0]:
                raise TimeoutError(f"the watchdog supervisor did not answer within {ANSWER_TIMEOUT_S:g} s")
            chunk = self.connection.recv(65536)
            if not chunk:
                raise ConnectionResetError("the watchdog supervisor closed the connection")
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line


_channels: dict[Place, Channel] = {}
_channels_lock = threading.Lock()


def channel(place: Place) -> Channel:
    """This process's connection to the supervisor at ``place``, started and connected if needed."""
    with _channels_lock:
        found = _channels.get(place)
        if found is not None and not found.broken:
            return found
        made = _connect_or_start(place)
        _channels[place] = made
        return made


def forget(place: Place) -> None:
    """Drop a broken connection, so the next :func:`channel` makes a new one."""
    with _channels_lock:
        found = _channels.pop(place, None)
    if found is not None:
        with contextlib.suppress(OSError):
            found.connection.close()


def close_all() -> None:
    """Close this process's connections: a supervisor that guards nothing then exits (tests, a finished run)."""
    with _channels_lock:
        found = list(_channels.values())
        _channels.clear()
    for made in found:
        with contextlib.suppress(OSError):
            made.connection.close()


def _connect_or_start(place: Place) -> Channel:
    folder = open_private_folder(place.folder)
    try:
        lock = open_in(folder, f"{place.stem}.watchdog.lock", os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            connected = _connect(folder, place)
            if connected is None:
                pid = _start(folder, place)
                connected = _connect(folder, place)
                if connected is None:
                    raise BackendError(
                        f"the watchdog supervisor {pid} started but does not listen; see {place.log_path}"
                    )
            return Channel(place, *connected)
        finally:
            os.close(lock)
    finally:
        os.close(folder)


def _connect(folder: int, place: Place) -> tuple[socket.socket, int] | None:
    """A connection to the supervisor at ``place`` and its pid (``SO_PEERCRED``), or ``None`` if none listens."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    try:
        connection.connect(f"/proc/self/fd/{folder}/{place.socket_name}")
    except (FileNotFoundError, ConnectionRefusedError):
        connection.close()
        return None
    credentials = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
    pid, uid = int.from_bytes(credentials[:4], sys.byteorder), int.from_bytes(credentials[4:8], sys.byteorder)
    if uid != os.geteuid():
        connection.close()
        raise BackendError(f"the watchdog socket in {place.folder} is served by uid {uid}, not by this user")
    return connection, pid


def _start(folder: int, place: Place) -> int:
    """Start the supervisor at ``place``; return its pid once it listens (``BackendError`` otherwise)."""
    flags = ["-P"] if place.docker else ["-P", "-S"]
    pythonpath = os.pathsep.join(filter(None, [str(_PACKAGE_ROOT), os.environ.get("PYTHONPATH")]))
    log = open_in(folder, place.log_path.name, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    read_end, write_end = os.pipe2(os.O_CLOEXEC)
    try:
        starter = subprocess.Popen(  # noqa: S603 - this interpreter and this package, no shell
            [sys.executable, *flags, "-m", "retrystorm.chaos.watchdog", str(place.folder), place.socket_name],
            stdin=subprocess.DEVNULL, stdout=write_end, stderr=log, start_new_session=True,
            close_fds=True, cwd="/", env=os.environ | {"PYTHONPATH": pythonpath},
        )  # fmt: skip
    except OSError as error:
        raise BackendError(f"cannot start the watchdog supervisor: {error}") from error
    finally:
        os.close(write_end)
        os.close(log)
    try:
        answer = _ready_line(read_end)
    finally:
        os.close(read_end)
        starter.wait(timeout=ANSWER_TIMEOUT_S)  # the launcher exits once the supervisor has detached
    verb, _, detail = answer.partition(" ")
    if verb != "ready":
        raise BackendError(f"the watchdog supervisor did not start: {detail or 'no answer'}; see {place.log_path}")
    return int(detail)


def _ready_line(descriptor: int) -> str:
    give_up = time.monotonic() + ANSWER_TIMEOUT_S
    data = b""
    while b"\n" not in data:
        left_s = give_up - time.monotonic()
        if left_s <= 0 or not select.select([descriptor], [], [], left_s)[0]:
            return ""
        chunk = os.read(descriptor, 512)
        if not chunk:
            break
        data += chunk
    return data.partition(b"\n")[0].decode(errors="replace")
