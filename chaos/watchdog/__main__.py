"""The watchdog process: ``python -m retrystorm.chaos.watchdog ORDER_JSON`` (started by
:func:`retrystorm.chaos.watchdog.arm`).

It answers one line on stdout (``armed``, ``gone WHY`` or ``error WHY``), then waits on CLOCK_MONOTONIC
for whichever comes first: ``disarm`` on stdin (exit untouched), its target going away (exit), a
SIGTERM/SIGINT/SIGHUP (resume now), or the deadline (resume). End of file on stdin is the arming
process's death: it logs that and keeps waiting.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import select
import signal
import sys
import time

from retrystorm.chaos.journal import Journal
from retrystorm.chaos.watchdog import MAX_AHEAD_S, WatchdogOrder
from retrystorm.chaos.watchdog.guards import (
    CgroupThrottleGuard,
    DockerGuard,
    DockerThrottleGuard,
    FreezerGuard,
    Guard,
    NothingToGuardError,
    ProcessGuard,
    QuotaGuard,
)

log = logging.getLogger(__name__)

#: Without a fd that turns readable when the target is gone, how often to ask whether it is.
GONE_CHECK_S = 1.0
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def main(argv: list[str]) -> int:
    """Guard the target of the order in ``argv[0]``; 0 when done, 1 when the resume failed, 2 when not armed."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s watchdog[%(process)d] %(levelname)s %(message)s")
    wake_fd = _catch_stop_signals()
    try:
        order = WatchdogOrder.from_json(argv[0])
        guard = _guard_for(order)
    except NothingToGuardError as gone:
        _answer(f"gone {gone}")
        return 0
    except Exception as error:
        _answer(f"error {str(error).splitlines()[0] if str(error) else type(error).__name__}")
        return 2
    what = f"{order.ref().describe()}, outage {order.outage}"
    _answer("armed")
    trigger, deadline = _wait(order, guard, wake_fd, what)
    if trigger in ("disarmed", "gone"):
        log.log(logging.DEBUG if trigger == "disarmed" else logging.INFO, "%s: %s; exiting", what, trigger)
        return 0
    try:
        outcome = guard.resume()
        late_s = time.monotonic() - deadline
        verb, op = ("restored", "restore") if order.fault == "throttle" else ("resumed", "resume")
        done = f"{verb} by the watchdog" if outcome == "resumed" else f"{outcome}: nothing to {op}"
        log.warning("%s: %s (%s, %+.3f s from the deadline)", what, done, trigger, late_s)
        if outcome == "resumed" and order.journal is not None:
            extra = {"reason": "watchdog", "trigger": trigger, "late_s": round(late_s, 3), "status": "ok"}
            Journal(order.journal).append(op, order.ref(), order.outage, **extra)
    except Exception:
        log.exception("%s: could not resume or journal it; the journal keeps the pause for recovery", what)
        return 1
    return 0


def _guard_for(order: WatchdogOrder) -> Guard:
    if problem := order.problem():
        raise ValueError(problem)
    if order.fault == "throttle" and order.undo is not None:
        if order.backend == "cgroup" and order.undo.get("kind") == "cgroup-quota":
            return QuotaGuard(order.undo)
        if order.backend == "cgroup":
            return CgroupThrottleGuard(order.undo)
        return DockerThrottleGuard(order.ident, order.undo["restore"])
    if order.backend == "cgroup":
        return FreezerGuard(order.ident)
    return ProcessGuard(order.ident) if order.backend == "process" else DockerGuard(order.ident)


def _catch_stop_signals() -> int:
    """Route SIGTERM/SIGINT/SIGHUP to a pipe the wait polls; return its read end."""
    read_fd, write_fd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    for signum in _STOP_SIGNALS:
        signal.signal(signum, lambda *_: None)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
    return read_fd


def _answer(line: str) -> None:
    """The handshake: one line on stdout, which is then closed; an arming process already dead is fine."""
    with contextlib.suppress(OSError):
        os.write(1, line.encode() + b"\n")
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.close(null)


def _wait(order: WatchdogOrder, guard: Guard, wake_fd: int, what: str) -> tuple[str, float]:
    """Block until the deadline ("deadline"), a stop signal (its name), "disarmed" or "gone"; and the deadline.

    Lines on stdin: ``disarm`` (exit untouched) or ``deadline T`` (act at CLOCK_MONOTONIC ``T`` instead, the
    fault having taken effect later than it was armed; ignored unless finite and within :data:`MAX_AHEAD_S`).
    """
    poller = select.poll()
    for fd in (0, wake_fd, guard.watch_fd):
        if fd is not None:
            poller.register(fd, select.POLLIN)
    received = b""
    deadline = order.deadline_monotonic
    prepared = not guard.prepare_s
    while (left_s := deadline - time.monotonic()) > 0:
        if not prepared and left_s <= guard.prepare_s:
            guard.prepare()
            prepared = True
            continue
        step_s = min(left_s if prepared else left_s - guard.prepare_s, 3600.0)
        if guard.watch_fd is None:
            step_s = min(step_s, GONE_CHECK_S)
        for fd, _ in poller.poll(math.ceil(step_s * 1000)):
            if fd == wake_fd:
                return signal.Signals(os.read(wake_fd, 64)[0]).name, deadline
            if fd == guard.watch_fd:
                return "gone", deadline
            chunk = os.read(0, 64)
            received += chunk
            *lines, received = received.split(b"\n")
            for line in lines:
                if line == b"disarm":
                    return "disarmed", deadline
                deadline = _moved(line, deadline)
            if not chunk:
                poller.unregister(0)
                log.warning("%s: the arming process is gone; resuming at the deadline", what)
        if guard.watch_fd is None and guard.gone():
            return "gone", deadline
    return "deadline", deadline


def _moved(line: bytes, deadline: float) -> float:
    """The deadline a ``deadline T`` line asks for, if it is one and sane; else ``deadline``."""
    verb, _, value = line.decode(errors="replace").partition(" ")
    try:
        asked = float(value)
    except ValueError:
        return deadline
    if verb != "deadline" or not math.isfinite(asked) or asked - time.monotonic() > MAX_AHEAD_S:
        return deadline
    return asked


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
