"""The fault proxy as a process of its own: ``retrystorm chaos proxy``, started, adopted and stopped by its pid.

A proxy runs apart from whoever set its toxics (the chaos agent, the runner), in a session of its own, so a
SIGKILL of them leaves it forwarding, and ending each toxic at its deadline (:mod:`.proxy`). It prints one line
when it listens (:data:`READY`), which :func:`start_proxy` reads to learn the port it bound. A later agent
*adopts* a proxy that still answers on its control socket (:func:`adopt_or_start`) instead of starting a second
one on the same port. ``exit_after_s`` bounds its life (the runner's proxies: the run's length and a margin);
without it, it runs until SIGTERM.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from retrystorm.chaos.backends.base import BackendError
from retrystorm.chaos.network.control import ProxyControl
from retrystorm.durations import format_duration

log = logging.getLogger(__name__)

#: The line a proxy prints once it listens: ``fault proxy listening on HOST:PORT``.
READY = re.compile(r"fault proxy listening on (\S+):(\d+)")
START_TIMEOUT_S = 15.0
STOP_TIMEOUT_S = 5.0


@dataclasses.dataclass(frozen=True, slots=True)
class ProxyProcess:
    """A running fault proxy: its pid, where it listens, its control socket."""

    pid: int
    host: str
    port: int
    control: Path
    #: The child this process started (``None`` for one adopted): reaped by :meth:`stop`.
    popen: subprocess.Popen[bytes] | None = dataclasses.field(default=None, compare=False, repr=False)

    def control_client(self) -> ProxyControl:
        """A client of its control socket."""
        return ProxyControl(self.control)

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """SIGTERM by pid (it ends its toxics and closes), SIGKILL after ``timeout_s``; a proxy gone is fine."""
        try:
            pidfd = os.pidfd_open(self.pid)
        except ProcessLookupError:
            return
        try:
            signal.pidfd_send_signal(pidfd, signal.SIGTERM)
            if not select.select([pidfd], [], [], timeout_s)[0]:
                log.warning("fault proxy %d did not exit within %g s: killing it", self.pid, timeout_s)
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        except ProcessLookupError:
            pass
        finally:
            os.close(pidfd)
        if self.popen is not None:
            self.popen.wait()


def proxy_argv(
    listen: tuple[str, int], upstream: tuple[str, int], control: Path, *, exit_after_s: float | None, seed: int
) -> list[str]:
    """The command line of a proxy process."""
    argv = [
        sys.executable, "-m", "retrystorm", "chaos", "proxy",
        "--listen", f"{listen[0]}:{listen[1]}", "--upstream", f"{upstream[0]}:{upstream[1]}",
        "--control", str(control), "--seed", str(seed),
    ]  # fmt: skip
    if exit_after_s is not None:
        argv += ["--exit-after", format_duration(exit_after_s)]
    return argv


def start_proxy(
    listen: tuple[str, int],
    upstream: tuple[str, int],
    control: Path,
    *,
    log_path: Path,
    exit_after_s: float | None = None,
    seed: int = 1,
) -> ProxyProcess:
    """Start a proxy process and return once it listens (:class:`BackendError`, naming its log, if it does not)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    read_fd, write_fd = os.pipe()
    try:
        with log_path.open("ab") as stderr:
            process = subprocess.Popen(  # noqa: S603 - this interpreter and this package, no shell
                proxy_argv(listen, upstream, control, exit_after_s=exit_after_s, seed=seed),
                stdin=subprocess.DEVNULL,
                stdout=write_fd,
                stderr=stderr,
                start_new_session=True,
                close_fds=True,
            )
    finally:
        os.close(write_fd)
    try:
        line = _first_line(read_fd, START_TIMEOUT_S)
    finally:
        os.close(read_fd)
    found = READY.search(line)
    if found is None:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        process.wait()
        tail = log_path.read_text(errors="replace").strip().splitlines()[-1:] if log_path.exists() else []
        reason = tail[0] if tail else f"no ready line within {START_TIMEOUT_S:g} s"
        raise BackendError(f"the fault proxy for {upstream[0]}:{upstream[1]} did not start: {reason} (log {log_path})")
    return ProxyProcess(process.pid, found.group(1), int(found.group(2)), control, process)


def adopt(control: Path) -> ProxyProcess | None:
    """The proxy answering on ``control`` (left by an earlier agent), its toxics cleared; ``None`` when none does."""
    client = ProxyControl(control, timeout_s=2.0)
    try:
        status = client.status()
    except BackendError:
        return None
    cleared = client.clear_all()
    if cleared:
        log.warning("adopted the fault proxy at %s and ended the toxics it had in force: %s", control, cleared)
    host, port = status["listen"]
    return ProxyProcess(int(status["pid"]), str(host), int(port), control)


def _first_line(fd: int, timeout_s: float) -> str:
    """The first line written to ``fd`` ("" at end of file or after ``timeout_s``)."""
    data = b""
    give_up = time.monotonic() + timeout_s
    while b"\n" not in data and (left_s := give_up - time.monotonic()) > 0:
        if not select.select([fd], [], [], left_s)[0]:
            break
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
    return data.partition(b"\n")[0].decode(errors="replace")
