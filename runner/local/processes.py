"""Child processes of a run: started with a log file, stopped by their pid, never left behind.

Each child runs in its own session, so a Ctrl-C at the terminal reaches the runner
only, and the runner stops its children in order (resume, load, target). On Linux a
child also gets ``SIGTERM`` when the runner dies (``PR_SET_PDEATHSIG``), so even a
runner killed with ``SIGKILL`` leaves no load or target running for long: a frozen
child receives that signal once the next controller resumes it (see
:meth:`retrystorm.chaos.controller.OutageController.recover`).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import logging
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from retrystorm.chaos.backends.procfs import group_members, process_start_ticks
from retrystorm.chaos.containment import Containment
from retrystorm.polling import poll_until
from retrystorm.request_guard import without_secrets
from retrystorm.runner.errors import RunFailedError

log = logging.getLogger(__name__)

#: Seconds between SIGTERM and SIGKILL when stopping a child.
STOP_GRACE_S = 10.0
_PR_SET_PDEATHSIG = 1


def _death_signal() -> Callable[[], None] | None:
    """A ``preexec_fn`` asking the kernel for SIGTERM when the parent dies (Linux), else ``None``.

    The function only calls ``prctl`` through a handle loaded here, in the parent, so the
    child runs no Python that could wait on a lock between ``fork`` and ``exec``.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True).prctl
    except (OSError, AttributeError):
        return None

    def set_death_signal() -> None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)

    return set_death_signal


def child_environment(*, tools_on_path: bool = False) -> dict[str, str]:
    """This environment without the project's secrets (tokens, Grafana's password); with ``tools_on_path``,
    this interpreter's folder first on PATH, so tools installed beside it are found.

    Nothing the runner starts needs a secret: the built-in target runs on loopback without a token, Locust
    runs headless, and a user's own service must not read the chaos or admin token.
    """
    environment = without_secrets(os.environ)
    if tools_on_path:
        folder = str(Path(sys.executable).parent)
        environment["PATH"] = os.pathsep.join([folder, os.environ.get("PATH", "")])
    return environment


def _in_order(*steps: Callable[[], None] | None) -> Callable[[], None] | None:
    """One ``preexec_fn`` running ``steps`` in turn (each only calls the kernel), or ``None`` without any."""
    chosen = [step for step in steps if step is not None]
    if not chosen:
        return None

    def run() -> None:
        for step in chosen:
            step()

    return run


class ManagedProcess:
    """One child process writing stdout and stderr to ``log_path``.

    With a ``containment`` (:class:`retrystorm.chaos.containment.Containment`) the child is born in the service's
    cgroups, so everything it ever starts is there too, and :meth:`stop_group` ends them all through it.
    """

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        log_path: Path,
        *,
        cwd: Path | None = None,
        tools_on_path: bool = False,
        containment: Containment | None = None,
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self.containment = containment
        log_path.parent.mkdir(parents=True, exist_ok=True)
        join = containment.joiner() if containment is not None else None
        try:
            with log_path.open("wb") as sink:
                # argv is built by the runner from validated settings; no shell is involved.
                self.popen = subprocess.Popen(  # noqa: S603
                    self.argv,
                    stdin=subprocess.DEVNULL,
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    cwd=cwd,
                    env=child_environment(tools_on_path=tools_on_path),
                    preexec_fn=_in_order(_death_signal(), join),  # noqa: PLW1509 - each step only calls the kernel
                )
        finally:
            if join is not None:
                Containment.close_joiner(join)
        self.pid = self.popen.pid
        log.info("started %s (pid %d): %s", name, self.pid, " ".join(self.argv))

    @property
    def running(self) -> bool:
        """True until the process has exited."""
        return self.popen.poll() is None

    def failure(self, what: str) -> RunFailedError:
        """An error saying ``what`` went wrong, with the exit status and the first line of the process's own error
        (:func:`first_error`); without one, the log's last lines."""
        status = self.popen.poll()
        state = f"exited with status {status}" if status is not None else f"still running (pid {self.pid})"
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
        found = first_error(text)
        if found is not None:
            number, line = found
            return RunFailedError(f"{self.name} {what}: {state}: {line} (line {number} of {self.log_path})")
        tail = "\n".join(text.splitlines()[-TAIL_LINES:])
        detail = f"\n{tail}" if tail else ""
        return RunFailedError(f"{self.name} {what}: {state}; log: {self.log_path}{detail}")

    async def wait_for_log(self, pattern: str, timeout_s: float) -> re.Match[str]:
        """Wait until the log matches ``pattern``; fail if the process exits or time runs out."""
        compiled = re.compile(pattern)

        async def logged() -> re.Match[str] | None:
            with contextlib.suppress(OSError):
                found = compiled.search(self.log_path.read_text(encoding="utf-8", errors="replace"))
                if found:
                    return found
            if not self.running:
                raise self.failure("stopped before it was ready")
            return None

        return await poll_until(
            logged,
            timeout_s=timeout_s,
            every_s=0.05,
            on_timeout=lambda: self.failure(f"was not ready within {timeout_s:.0f} s"),
        )

    async def stop(self, grace_s: float = STOP_GRACE_S) -> int | None:
        """SIGCONT and SIGTERM, then SIGKILL after ``grace_s``; returns the exit status.

        SIGCONT first: a frozen process cannot act on SIGTERM. Only this pid is signalled.
        """
        if self.running:
            for signum in (signal.SIGCONT, signal.SIGTERM):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, signum)

            async def exited() -> bool | None:
                return None if self.running else True

            with contextlib.suppress(TimeoutError):
                await poll_until(exited, timeout_s=grace_s, every_s=0.05, on_timeout=TimeoutError)
            if self.running:
                log.warning("%s (pid %d) ignored SIGTERM for %.0f s: killing it", self.name, self.pid, grace_s)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, signal.SIGKILL)
        return await asyncio.to_thread(self.popen.wait)

    async def stop_group(self, grace_s: float = STOP_GRACE_S) -> int | None:
        """Stop this process and every process it started.

        In a containment: every member of its cgroups is thawed, SIGTERMed, and SIGKILLed after ``grace_s``
        (:meth:`retrystorm.chaos.containment.Containment.end`), wherever its session or user went. Otherwise the
        group it leads (it was started in a session of its own): SIGCONT and SIGTERM to the group, the leader
        stopped as :meth:`stop` does; then each member still there gets SIGKILL through a pidfd opened on it and
        checked by its start ticks, so a pid recycled meanwhile is never signalled.
        """
        if self.containment is not None:
            await asyncio.to_thread(self.containment.end, grace_s)
            return await asyncio.to_thread(self.popen.wait)
        members = group_members(self.pid)
        if self.running:
            for signum in (signal.SIGCONT, signal.SIGTERM):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.pid, signum)

        async def members_gone() -> bool | None:
            self.popen.poll()  # reap the leader once it exits: a zombie still has its /proc entry
            return None if any(process_start_ticks(pid) == ticks for pid, ticks in members) else True

        with contextlib.suppress(TimeoutError):
            await poll_until(members_gone, timeout_s=grace_s, every_s=0.05, on_timeout=TimeoutError)
        status = await self.stop(grace_s=0.5)
        for pid, ticks in members:
            _kill_exactly(pid, ticks)
        return status


#: A Python exception as a traceback ends it: ``ModuleNotFoundError: No module named 'app'``.
_EXCEPTION = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt)(?::\s.*)?$")
#: Any other line that says it is an error: ``Error: listen EADDRINUSE``, ``FATAL: ...``, ``[ERROR] ...``.
_ERROR = re.compile(r"\b(?:error|fatal|panic)\b", re.IGNORECASE)
#: Lines of a log shown when it holds no error line.
TAIL_LINES = 5


def first_error(text: str) -> tuple[int, str] | None:
    """The first line of a log that states an error, with its number (from 1); ``None`` when none does.

    A Python exception line (what a traceback ends with, the cause) comes before any other line that merely says
    "error": gunicorn logs ``[ERROR] Exception in worker process`` before the traceback whose last line is the
    cause, ``ModuleNotFoundError: No module named 'app'``, and then more lines about workers failing to boot.
    """
    lines = text.splitlines()
    for pattern in (_EXCEPTION, _ERROR):
        for number, line in enumerate(lines, start=1):
            if pattern.search(line.strip()):
                return number, line.strip()[:500]
    return None


def _kill_exactly(pid: int, ticks: int) -> None:
    """SIGCONT and SIGKILL to ``pid`` if it is still the process started at ``ticks`` (through a pidfd)."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        return  # gone
    try:
        if process_start_ticks(pid) == ticks:
            log.warning("process %d of a stopped group outlived SIGTERM: killing it", pid)
            for signum in (signal.SIGCONT, signal.SIGKILL):
                with contextlib.suppress(ProcessLookupError):
                    signal.pidfd_send_signal(pidfd, signum)
    finally:
        os.close(pidfd)
