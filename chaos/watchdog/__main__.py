"""The watchdog supervisor's process: ``python -P -S -m retrystorm.chaos.watchdog FOLDER SOCKET_NAME``.

Started by :func:`retrystorm.chaos.watchdog.client.channel`: it detaches (forks once more, so the process that
started it can reap the launcher and it is reparented to init), listens on ``FOLDER/SOCKET_NAME`` (a stale socket
there is replaced; anything else is refused), answers ``ready PID`` on its stdout, and serves
(:class:`retrystorm.chaos.watchdog.supervisor.Supervisor`) until it guards nothing and nobody is connected.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import select
import signal
import socket
import stat
import sys
from pathlib import Path

from retrystorm.chaos.journal_file import open_in, open_private_folder
from retrystorm.chaos.watchdog.supervisor import STOP_SIGNALS, Supervisor

log = logging.getLogger(__name__)


def main(argv: list[str]) -> int:
    """Serve the watchdog supervisor at ``argv``'s folder and socket name; 0 when done, 2 when it cannot start."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s watchdog[%(process)d] %(levelname)s %(message)s")
    folder_path, name = Path(argv[0]), argv[1]
    if "/" in name or not name.endswith(".sock"):
        _answer(f"error socket name {name[:80]!r}: expected NAME.sock")
        return 2
    try:
        folder = open_private_folder(folder_path)
    except Exception as error:
        _answer(f"error {str(error).splitlines()[0] if str(error) else type(error).__name__}")
        return 2
    if os.fork() > 0:
        os._exit(0)  # the launcher: reaped by whoever started it; the supervisor lives on, reparented to init
    try:
        listener = _listen(folder, name)
    except OSError as error:
        _answer(f"error cannot listen on {folder_path / name}: {error}")
        return 2
    wake_fd = _catch_stop_signals()
    _answer(f"ready {os.getpid()}")
    log.info("supervising the watchdog orders of %s", folder_path)
    Supervisor(listener, wake_fd, lambda: _may_exit(folder, name, listener)).run()
    return 0


def _listen(folder: int, name: str) -> socket.socket:
    """A listening socket at ``name`` in ``folder``; a stale socket is replaced, anything else refused."""
    with contextlib.suppress(FileNotFoundError):
        found = os.stat(name, dir_fd=folder, follow_symlinks=False)
        if not stat.S_ISSOCK(found.st_mode):
            raise FileExistsError(f"{name} exists and is not a socket")
        os.unlink(name, dir_fd=folder)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    listener.bind(f"/proc/self/fd/{folder}/{name}")
    listener.listen(64)
    listener.setblocking(False)
    return listener


def _may_exit(folder: int, name: str, listener: socket.socket) -> bool:
    """Whether to exit now that nothing is guarded: under the start lock, with no connection waiting."""
    lock = open_in(folder, name.replace(".watchdog-docker.sock", ".watchdog.sock").replace(".sock", ".lock"),
                   os.O_RDWR | os.O_CREAT)  # fmt: skip
    try:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # a controller is connecting or starting a supervisor: stay
        if select.select([listener], [], [], 0)[0]:
            return False  # a connection is waiting: serve it
        os.unlink(name, dir_fd=folder)
        listener.close()
        return True
    finally:
        os.close(lock)


def _catch_stop_signals() -> int:
    """Route SIGTERM/SIGINT/SIGHUP to a pipe the loop polls; return its read end."""
    read_fd, write_fd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    for signum in STOP_SIGNALS:
        signal.signal(signum, lambda *_: None)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    return read_fd


def _answer(line: str) -> None:
    """The handshake: one line on stdout, which is then closed; a starter already gone is fine."""
    with contextlib.suppress(OSError):
        os.write(1, line.encode() + b"\n")
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.close(null)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
