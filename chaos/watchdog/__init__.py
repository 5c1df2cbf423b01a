"""Dead-man switch: one watchdog process per pause resumes its target at the deadline, whatever the controller does.

The rule (design.md, "Safety rules"): every pause has a deadline enforced by something that survives
the controller's death. The journal and start-up recovery are the second net.

- **Detached.** :func:`arm` starts ``python -m retrystorm.chaos.watchdog ORDER``
(:mod:`retrystorm.chaos.watchdog.__main__`) in a
  session of its own, cwd ``/``, inherited fds closed, no parent-death signal: a SIGKILL of the controller
  or of its process group, and a terminal's SIGINT/SIGHUP, do not reach it. It answers one line on a pipe
  (``armed``, ``gone WHY``, ``error WHY``) before :func:`arm` returns.
- **Disarm.** ``disarm`` on its stdin: it exits without touching the target, and :meth:`Watchdog.disarm`
  reaps it. End of file without that line means the arming process died: it keeps waiting.
- **Deadline.** On CLOCK_MONOTONIC, never the wall clock: at the deadline or a few ms after, never before,
  it resumes the target (:mod:`retrystorm.chaos.watchdog.guards`), then journals ``{"op": "resume", "reason":
  "watchdog", ...}``. SIGTERM, SIGINT or SIGHUP sent to the watchdog itself make it act at once: stopping
  it must not leave the target frozen. A resume that fails is logged, not journaled: the pause stays
  pending for recovery.
- **Throttles.** An order with ``fault="throttle"`` guards a CPU cut instead of a pause: at the deadline it
  restores the original settings its ``undo`` carries (a cgroup throttle group emptied back into the
  original cgroup and removed; a container's ``NanoCpus``/``CpuQuota``/``CpuPeriod`` written back), and
  journals ``{"op": "restore", "reason": "watchdog", ...}``. A throttle group that is gone was restored.
- **Log.** Its stderr is ``<journal stem>.watchdog.log`` beside the journal (without a journal, the arming
  process's stderr). It writes only when it matters: the arming process died, the target went away, it
  acted, it failed.
- **Limits.** A SIGKILL of the watchdog itself, or of a whole cgroup (``systemctl kill``, a container's
  end), takes it down with the controller; then only the journal remains.

This module is what the controller imports; the watchdog process imports it too, so it stays small.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import math
import os
import select
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from retrystorm.chaos.backends.base import BackendError, TargetRef
from retrystorm.chaos.journal import PROCESS_IDENT

log = logging.getLogger(__name__)

#: :func:`arm` waits this long for the watchdog's handshake, then kills it and raises.
ARM_TIMEOUT_S = 5.0
#: :meth:`Watchdog.disarm` waits this long for the watchdog to exit, then kills it.
DISARM_TIMEOUT_S = 5.0
#: Ceiling on how far ahead a deadline may be: further is a bug (a wall-clock time passed as monotonic).
MAX_AHEAD_S = 24 * 3600.0
_PACKAGE_ROOT = Path(__file__).resolve().parents[2]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class WatchdogOrder:
    """What one watchdog guards, and the CLOCK_MONOTONIC time at which it resumes it."""

    backend: str  # "process", "docker" or "cgroup"
    ident: str  # process: "PID@STARTTICKS" (as TargetRef.ident); docker: the container id; cgroup: its directory
    target: str  # the target's name, for logs and the journal record
    outage: str  # the outage id, for the journal record
    deadline_monotonic: float  # time.monotonic() value at which to resume
    journal: Path | None  # append the resume record there when it acts
    fault: str = "pause"  # "pause" (resume it) or "throttle" (restore the CPU settings in undo)
    undo: dict[str, Any] | None = None  # throttle: what restores the original settings (CpuCut.undo())

    def ref(self) -> TargetRef:
        """The guarded target as the backends and the journal name it."""
        return TargetRef(self.backend, self.target, self.ident)

    def problem(self) -> str | None:
        """Why this order cannot be guarded, or ``None`` (every field checked before anything acts on it)."""
        if self.fault not in ("pause", "throttle"):
            return f"fault {self.fault!r}: expected pause or throttle"
        if self.fault == "throttle" and not isinstance(self.undo, dict):
            return "a throttle order without undo"
        checks = _PAUSE_CHECKS if self.fault == "pause" else _THROTTLE_CHECKS
        check = checks.get(self.backend)
        if check is None:
            return f"backend {self.backend!r}: expected {' or '.join(checks)} for a {self.fault}"
        try:
            check(self)
        except (KeyError, TypeError, ValueError) as error:
            return f"{self.backend} {self.fault}: {error}"
        return self._deadline_problem()

    def _deadline_problem(self) -> str | None:
        ahead_s = self.deadline_monotonic - time.monotonic()
        if not math.isfinite(ahead_s) or ahead_s > MAX_AHEAD_S:
            return f"deadline {ahead_s:.0f} s ahead: expected at most {MAX_AHEAD_S:.0f} s (a wall-clock time?)"
        return None

    def to_json(self) -> str:
        """The order as the watchdog's command line carries it."""
        journal = str(self.journal.absolute()) if self.journal else None  # the watchdog runs in /
        return json.dumps(dataclasses.asdict(self) | {"journal": journal})

    @classmethod
    def from_json(cls, text: str) -> WatchdogOrder:
        """The inverse of :meth:`to_json`."""
        fields = json.loads(text)
        return cls(**fields | {"journal": Path(fields["journal"]) if fields["journal"] else None})


def _process_ident(order: WatchdogOrder) -> None:
    if not PROCESS_IDENT.fullmatch(order.ident):
        raise ValueError(f"process ident {order.ident[:80]!r}: expected PID@STARTTICKS")


def _container_id(order: WatchdogOrder) -> None:
    if not (order.ident.isascii() and order.ident.isalnum() and len(order.ident) <= 128):
        raise ValueError(f"container id {order.ident[:80]!r}: expected letters and digits")


def _frozen_cgroup(order: WatchdogOrder) -> None:
    from retrystorm.chaos.freezer import Freezer  # noqa: PLC0415 - only a cgroup's order

    Freezer.at(order.ident)  # a real cgroup that can freeze: CgroupPathError, a ValueError


def _cgroup_cut(order: WatchdogOrder) -> None:
    undo = order.undo or {}
    if undo.get("kind") == "cgroup-quota":
        from retrystorm.chaos.cgroup_quota import QuotaCut  # noqa: PLC0415 - only a throttle's order

        directory = str(QuotaCut.from_undo(undo).directory)
    else:
        from retrystorm.chaos.cgroups import CgroupCut  # noqa: PLC0415 - only a throttle's order

        directory = str(CgroupCut.from_undo(undo).group)
    if directory != order.ident:
        raise ValueError(f"ident {order.ident[:200]!r}: not the undo's cgroup")


def _docker_cut(order: WatchdogOrder) -> None:
    _container_id(order)
    body = (order.undo or {}).get("restore")
    if not isinstance(body, dict) or not body or not set(body) <= {"NanoCpus", "CpuQuota", "CpuPeriod"}:
        raise ValueError(f"undo {str(order.undo)[:80]}: expected a restore body of NanoCpus, CpuQuota, CpuPeriod")
    if not all(type(value) is int and -1 <= value <= 2**40 for value in body.values()):
        raise ValueError(f"undo {str(body)[:80]}: expected whole numbers from -1 to 2**40")


#: Per backend, the check of a pause order's ident and of a throttle order's undo.
_PAUSE_CHECKS = {"process": _process_ident, "docker": _container_id, "cgroup": _frozen_cgroup}
_THROTTLE_CHECKS = {"cgroup": _cgroup_cut, "docker": _docker_cut}


class Watchdog:
    """A watchdog process; :meth:`disarm` it when the pause ended normally."""

    def __init__(self, pid: int, process: subprocess.Popen[bytes] | None, *, guarding: bool) -> None:
        self.pid = pid
        #: False when there was nothing to guard (the target was gone): the watchdog has exited already.
        self.guarding = guarding
        self._process = process
        self._lock = threading.Lock()

    def move_deadline(self, deadline_monotonic: float) -> None:
        """Act at ``deadline_monotonic`` instead (the fault took effect later than it was armed); never raises."""
        with self._lock:
            process = self._process
            if process is None or process.stdin is None:
                return
            with contextlib.suppress(OSError):  # it has exited already: it acted, or its target went away
                process.stdin.write(f"deadline {deadline_monotonic!r}\n".encode())
                process.stdin.flush()

    def disarm(self) -> None:
        """Tell the watchdog the pause ended; return once it has exited and been reaped.

        Afterwards it will never act, so the target may be paused again. A watchdog that has
        already acted exits anyway; one that does not exit within ``DISARM_TIMEOUT_S`` is
        killed. Idempotent; never raises.
        """
        with self._lock:
            process, self._process = self._process, None
        if process is None:
            return
        try:
            if process.stdin is not None:
                with contextlib.suppress(OSError):  # it has exited already: it acted, or its target went away
                    process.stdin.write(b"disarm\n")
                    process.stdin.flush()
            _reap(process, DISARM_TIMEOUT_S)
        except Exception:  # never raises: at worst the target is resumed early
            log.exception("could not disarm watchdog %d", self.pid)


def arm(order: WatchdogOrder) -> Watchdog:
    """Start a watchdog for ``order``; return once it confirmed it is watching (blocks: call it off the event loop).

    Raises :class:`BackendError` (one line) if it could not be armed within ``ARM_TIMEOUT_S``:
    the controller must then refuse to pause. A target already gone (a process that exited, or
    whose pid now names another process) is no error: there is nothing to guard, as the
    backends' ``pause`` of it freezes nothing; the result has ``guarding`` False.

    Arm before pausing, so no pause is ever unguarded, with a deadline some grace after the
    controller's own resume, so the watchdog never races it (a resume that lands before a slow
    pause would leave that pause unguarded).
    """
    what = f"watchdog for {order.ref().describe()}"
    if problem := order.problem():
        raise BackendError(f"cannot arm the {what}: {problem}")
    log_path = watchdog_log_path(order.journal)
    see = f"; see {log_path}" if log_path else ""
    pythonpath = os.pathsep.join(filter(None, [str(_PACKAGE_ROOT), os.environ.get("PYTHONPATH")]))
    answer_fd, answer_write_fd = os.pipe()
    try:
        with contextlib.ExitStack() as stack:
            stack.callback(os.close, answer_write_fd)  # the watchdog holds the only write end
            stderr = None
            if log_path is not None:
                log_path.parent.mkdir(parents=True, exist_ok=True)
                stderr = stack.enter_context(log_path.open("ab"))
            process = subprocess.Popen(  # noqa: S603 - this interpreter and this package, no shell
                _command(order),
                stdin=subprocess.PIPE,
                stdout=answer_write_fd,
                stderr=stderr,
                start_new_session=True,
                close_fds=True,
                cwd="/",
                env=os.environ | {"PYTHONPATH": pythonpath},
            )
    except OSError as error:
        os.close(answer_fd)
        raise BackendError(f"cannot start the {what}: {error}") from error
    try:
        answer = _first_line(answer_fd, ARM_TIMEOUT_S)
    except TimeoutError:
        _reap(process, 0)
        raise BackendError(f"the {what} did not confirm it was armed within {ARM_TIMEOUT_S:g} s{see}") from None
    finally:
        os.close(answer_fd)
    verb, _, detail = answer.partition(" ")
    if verb == "armed":
        return Watchdog(process.pid, process, guarding=True)
    _reap(process, ARM_TIMEOUT_S)
    if verb == "gone":
        log.info("%s: nothing to guard: %s", what, detail)
        return Watchdog(process.pid, None, guarding=False)
    reason = detail if verb == "error" else f"it exited with code {process.returncode} before arming{see}"
    raise BackendError(f"cannot arm the {what}: {reason}")


def watchdog_log_path(journal: Path | None) -> Path | None:
    """Where watchdogs of this journal log: ``<journal stem>.watchdog.log`` beside it."""
    return journal.with_name(f"{journal.stem}.watchdog.log") if journal else None


def _command(order: WatchdogOrder) -> list[str]:
    """The watchdog's command line: this interpreter, ``-P`` (no cwd on sys.path), and ``-S`` for process.

    ``-S`` (no site, no ``.pth`` files) makes a process watchdog start faster and smaller; it needs only
    the standard library and this package, which PYTHONPATH names. A docker watchdog keeps ``site``, so
    the Docker SDK resolves as it does for the controller.
    """
    flags = ["-P", "-S"] if order.backend in ("process", "cgroup") else ["-P"]
    return [sys.executable, *flags, "-m", "retrystorm.chaos.watchdog", order.to_json()]


def _first_line(fd: int, timeout_s: float) -> str:
    """The first line read from ``fd`` ("" at end of file); TimeoutError after ``timeout_s``."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    give_up = time.monotonic() + timeout_s
    data = b""
    while b"\n" not in data:
        left_s = give_up - time.monotonic()
        if left_s <= 0:
            raise TimeoutError
        if poller.poll(math.ceil(left_s * 1000)):
            chunk = os.read(fd, 512)
            if not chunk:
                break
            data += chunk
    return data.partition(b"\n")[0].decode(errors="replace")


def _reap(process: subprocess.Popen[bytes], timeout_s: float) -> None:
    """Wait up to ``timeout_s`` for our watchdog to exit, then kill it (unreaped, its pid is still its own)."""
    if process.stdin is not None:
        with contextlib.suppress(OSError):
            process.stdin.close()
    try:
        process.wait(timeout=0 if _exits_within(process.pid, timeout_s) else timeout_s)
    except subprocess.TimeoutExpired:
        if timeout_s:
            log.warning("watchdog %d did not exit within %g s: killing it", process.pid, timeout_s)
        process.kill()
        process.wait()


def _exits_within(pid: int, timeout_s: float) -> bool:
    """Wait for our child ``pid`` to exit through a pidfd, which wakes at once (Popen.wait polls); False without one."""
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        return False
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        poller.poll(math.ceil(timeout_s * 1000))
    finally:
        os.close(pidfd)
    return True
