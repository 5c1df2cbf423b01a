"""Freeze local processes with SIGSTOP / SIGCONT, as the seed experiment does (``^Z``, ``fg``)."""

from __future__ import annotations

import errno
import os
import signal
import time
from pathlib import Path

from chaos.backends.base import BackendError, FaultBackend, TargetRef, TargetState, UnknownTargetError


def process_start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (``/proc/PID/stat`` field 22).

    Together with the pid it identifies a process: a pid reused by a later process has
    a later start time. ``None`` when the process does not exist.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # The command name (field 2) is in parentheses and may contain spaces.
    fields = stat.rsplit(")", 1)[1].split()
    return int(fields[19])


def process_state_letter(pid: int) -> str | None:
    """The state letter of ``/proc/PID/stat`` (``T`` stopped, ``Z`` zombie...), or ``None``."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return stat.rsplit(")", 1)[1].split()[0]


def process_ident(pid: int) -> str:
    """``PID@STARTTICKS`` for a running process; raises :class:`UnknownTargetError` if there is none."""
    start = process_start_ticks(pid)
    if start is None:
        raise UnknownTargetError(f"no process with pid {pid}")
    return f"{pid}@{start}"


class ProcessBackend(FaultBackend):
    """Targets are named local processes: ``{"target": 1234}``, or ``pid:1234`` directly."""

    name = "process"

    def __init__(self, targets: dict[str, int] | None = None) -> None:
        self._targets = dict(targets or {})

    def register(self, target: str, pid: int) -> None:
        """Make ``target`` name the process ``pid`` (e.g. a target the runner started)."""
        self._targets[target] = pid

    def targets(self) -> list[str]:
        return sorted(self._targets)

    def resolve(self, target: str) -> list[TargetRef]:
        if target.startswith("pid:"):
            try:
                pid = int(target.removeprefix("pid:"))
            except ValueError:
                raise UnknownTargetError(f"target {target!r}: expected pid:NUMBER") from None
        elif target in self._targets:
            pid = self._targets[target]
        else:
            known = ", ".join(self.targets()) or "none registered"
            raise UnknownTargetError(f"unknown process target {target!r}; known: {known}, or pid:NUMBER")
        return [TargetRef(self.name, target, process_ident(pid))]

    #: How long pause/resume wait for the kernel to report the new state.
    settle_s = 5.0

    def pause(self, ref: TargetRef) -> None:
        """SIGSTOP, then wait until the kernel reports the process stopped (signals are asynchronous)."""
        self._signal(ref, signal.SIGSTOP)
        self._settle(ref, TargetState.PAUSED)

    def resume(self, ref: TargetRef) -> None:
        """SIGCONT, then wait until the process runs again."""
        self._signal(ref, signal.SIGCONT)
        self._settle(ref, TargetState.RUNNING)

    def _settle(self, ref: TargetRef, wanted: TargetState) -> None:
        deadline = time.monotonic() + self.settle_s
        while (state := self.state(ref)) is not wanted and state is not TargetState.GONE:
            if time.monotonic() > deadline:
                raise BackendError(f"{ref.describe()} is still {state} {self.settle_s:g} s after the signal")
            time.sleep(0.001)

    def state(self, ref: TargetRef) -> TargetState:
        pid = self._live_pid(ref)
        if pid is None:
            return TargetState.GONE
        letter = process_state_letter(pid)
        if letter is None or letter in "ZX":
            return TargetState.GONE
        return TargetState.PAUSED if letter in "Tt" else TargetState.RUNNING

    def _live_pid(self, ref: TargetRef) -> int | None:
        """The pid of ``ref`` if that very process still exists (not a recycled pid)."""
        pid_text, _, start_text = ref.ident.partition("@")
        pid = int(pid_text)
        start = process_start_ticks(pid)
        if start is None or str(start) != start_text:
            return None
        return pid

    def _signal(self, ref: TargetRef, signum: signal.Signals) -> None:
        pid = self._live_pid(ref)
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
