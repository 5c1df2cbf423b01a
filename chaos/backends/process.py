"""Freeze local processes with SIGSTOP / SIGCONT, as the seed experiment does (``^Z``, ``fg``).

Only processes *registered* under a name can be paused, and registration refuses what
must never be frozen (:func:`check_pausable`): pid 1, kernel threads, the controller
itself and its ancestors (freezing them would freeze the one thing that resumes), and
processes of another user. A registered process is identified by its pid *and* its
start time (``PID@STARTTICKS``), so a pid the kernel recycled for another process is
never signalled.

Identity is the start time in clock ticks (:mod:`chaos.backends.procfs`, which says why
not psutil's ``create_time()``); state, owner and ancestors come from psutil.
"""

from __future__ import annotations

import errno
import os
import signal
from collections.abc import Mapping

import psutil

from chaos.backends.base import (
    BackendError,
    FaultBackend,
    TargetRef,
    TargetRefusedError,
    TargetState,
    UnknownTargetError,
)
from chaos.backends.procfs import process_start_ticks
from retrystorm.polling import poll_until_sync

#: Where a refused registration points the user.
REGISTER_HINT = "register a process when the controller starts: retrystorm chaos serve --target NAME=PID"


def process_ident(pid: int) -> str:
    """``PID@STARTTICKS`` for a running process; raises :class:`UnknownTargetError` if there is none."""
    start = process_start_ticks(pid)
    if start is None:
        raise UnknownTargetError(f"no process with pid {pid}")
    return f"{pid}@{start}"


def live_pid(ident: str) -> int | None:
    """The pid of ``ident`` (``PID@STARTTICKS``) if that very process still exists, else ``None``.

    A malformed ident (a journal line written by something else) is ``None`` too.
    """
    pid_text, _, start_text = ident.partition("@")
    if not pid_text.isdigit() or not start_text.isdigit():
        return None
    pid = int(pid_text)
    start = process_start_ticks(pid)
    return pid if start is not None and start == int(start_text) else None


def process_state(pid: int) -> TargetState:
    """Running, paused (stopped or traced) or gone (no such process, or a zombie)."""
    try:
        status = psutil.Process(pid).status()
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return TargetState.GONE
    if status in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD):
        return TargetState.GONE
    return TargetState.PAUSED if status in (psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP) else TargetState.RUNNING


def check_pausable(pid: int) -> None:
    """Raise :class:`TargetRefusedError` (or :class:`UnknownTargetError`) unless ``pid`` may be frozen.

    Refused: pid 1 and below, kernel threads (children of ``kthreadd``, pid 2), this
    process and its ancestors, and a process whose real user is not this process's real
    user (as root too: run the controller as the target's user to pause it).
    """
    if pid <= 1:
        raise TargetRefusedError(f"refusing pid {pid}: init and the kernel are never paused; {REGISTER_HINT}")
    try:
        process = psutil.Process(pid)
        ancestors = {parent.pid for parent in psutil.Process(os.getpid()).parents()}
        owner, parent = process.uids().real, process.ppid()
    except psutil.NoSuchProcess:
        raise UnknownTargetError(f"no process with pid {pid}") from None
    except psutil.AccessDenied as error:
        raise TargetRefusedError(f"refusing pid {pid}: cannot inspect it ({error})") from None
    if pid == 2 or parent == 2:
        raise TargetRefusedError(f"refusing pid {pid}: a kernel thread cannot be paused")
    if pid == os.getpid():
        raise TargetRefusedError(f"refusing pid {pid}: that is this controller itself; it would never resume")
    if pid in ancestors:
        raise TargetRefusedError(f"refusing pid {pid}: it is an ancestor of this controller, which it would freeze")
    if owner != os.getuid():
        raise TargetRefusedError(
            f"refusing pid {pid}: it belongs to uid {owner}, not to this controller's uid {os.getuid()}; "
            "run the controller as the process's user"
        )


class ProcessBackend(FaultBackend):
    """Registered local processes (``{"target": 1234}``); nothing else can be paused."""

    name = "process"

    #: How long pause/resume wait for the kernel to report the new state.
    settle_s = 5.0

    def __init__(self, targets: Mapping[str, int] | None = None) -> None:
        self._idents: dict[str, str] = {}
        for target, pid in (targets or {}).items():
            self.register(target, pid)

    def register(self, target: str, pid: int) -> TargetRef:
        """Make ``target`` name the process ``pid`` as it is now (pid and start time), if it may be paused."""
        check_pausable(pid)
        ident = process_ident(pid)
        self._idents[target] = ident
        return TargetRef(self.name, target, ident)

    def targets(self) -> list[str]:
        return sorted(self._idents)

    def resolve(self, target: str) -> list[TargetRef]:
        if target not in self._idents:
            known = ", ".join(self.targets()) or "none"
            raise UnknownTargetError(f"no process target {target!r} (registered: {known}); {REGISTER_HINT}")
        return [TargetRef(self.name, target, self._idents[target])]

    def pause(self, ref: TargetRef) -> None:
        """SIGSTOP, then wait until the kernel reports the process stopped (signals are asynchronous)."""
        self._signal(ref, signal.SIGSTOP)
        self._settle(ref, TargetState.PAUSED)

    def resume(self, ref: TargetRef) -> None:
        """SIGCONT, then wait until the process runs again."""
        self._signal(ref, signal.SIGCONT)
        self._settle(ref, TargetState.RUNNING)

    def _settle(self, ref: TargetRef, wanted: TargetState) -> None:
        def settled() -> TargetState | None:
            state = self.state(ref)
            return state if state in (wanted, TargetState.GONE) else None

        def late() -> BackendError:
            return BackendError(f"{ref.describe()} is still {self.state(ref)} {self.settle_s:g} s after the signal")

        poll_until_sync(settled, timeout_s=self.settle_s, every_s=0.001, on_timeout=late)

    def state(self, ref: TargetRef) -> TargetState:
        pid = live_pid(ref.ident)
        return TargetState.GONE if pid is None else process_state(pid)

    def _signal(self, ref: TargetRef, signum: signal.Signals) -> None:
        pid = live_pid(ref.ident)
        if pid is None:
            return
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            return
        except OSError as error:
            if error.errno == errno.EPERM:
                raise BackendError(f"not allowed to signal {ref.describe()}: run as its owner or root") from error
            raise BackendError(f"cannot signal {ref.describe()}: {error}") from error
