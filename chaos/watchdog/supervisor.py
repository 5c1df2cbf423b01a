"""The watchdog supervisor: one process holds every armed deadline of a journal, and acts at each.

Started by the first :func:`retrystorm.chaos.watchdog.arm` that finds none (``python -P -S -m
retrystorm.chaos.watchdog``): it detaches (a session of its own, reparented to init, cwd ``/``), listens on a Unix
socket in the journal's private folder, and serves every controller of that journal. It holds no more than
:data:`MAX_ORDERS` orders. It exits once it guards nothing and no controller is connected.

**Protocol.** One JSON object per line on a connection: ``{"arm": ORDER}`` answers ``{"armed": ID}``,
``{"gone": WHY}`` (nothing to guard) or ``{"error": WHY}``; ``{"deadline": [ID, T]}`` moves an order's deadline to
CLOCK_MONOTONIC ``T`` and answers ``{"ok": true}``, or ``{"ok": false}`` once it has acted; ``{"disarm": ID}``
stands it down and answers ``{"ok": ...}`` likewise. A connection that closes leaves its orders armed: its
controller died, and the deadlines stand.

**Acting.** At an order's deadline (never before: CLOCK_MONOTONIC), when its *owner* process dies (an order that
guards a run's service, :mod:`retrystorm.chaos.containment`), or at once on SIGTERM, SIGINT or SIGHUP to the
supervisor, the order's guard (:mod:`retrystorm.chaos.watchdog.guards`) acts in a thread of its own (a docker
engine may take minutes to answer; no other deadline waits for it), and the journal gets its record. A guarded
process that exits, or a cgroup that goes away, ends its order without acting.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import logging
import math
import os
import select
import signal
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from retrystorm.chaos.journal import Journal
from retrystorm.chaos.watchdog import MAX_AHEAD_S, MAX_ORDERS, WatchdogOrder
from retrystorm.chaos.watchdog.guards import (
    CgroupThrottleGuard,
    DockerGuard,
    DockerThrottleGuard,
    FreezerGuard,
    Guard,
    NothingToGuardError,
    ProcessGuard,
    QuotaGuard,
    ReapGuard,
)

log = logging.getLogger(__name__)

#: Without a fd that turns readable when a target is gone, how often to ask whether it is.
GONE_CHECK_S = 1.0
#: The longest line a controller may send.
MAX_LINE_BYTES = 64 * 1024
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


@dataclasses.dataclass(slots=True)
class Armed:
    """One order the supervisor holds."""

    id: int
    order: WatchdogOrder
    guard: Guard
    deadline: float
    client: int | None
    owner_fd: int | None = None
    prepared: bool = False


class Supervisor:
    """The loop: connections, orders, deadlines, owners, signals (module docstring)."""

    def __init__(self, listener: socket.socket, wake_fd: int, may_exit: Callable[[], bool]) -> None:
        self.listener = listener
        self.wake_fd = wake_fd
        self.may_exit = may_exit
        self.orders: dict[int, Armed] = {}
        self.clients: dict[int, tuple[socket.socket, bytearray]] = {}
        self.acting: list[threading.Thread] = []
        self._ids = itertools.count(1)

    def run(self) -> None:
        """Serve until nothing is guarded and nobody is connected (then :attr:`may_exit` decides), or a signal."""
        while True:
            if not self.orders and not self.clients and self.may_exit():
                break
            try:
                fds = self._poll()
                if self.wake_fd in fds:
                    self._act_on_all(signal.Signals(os.read(self.wake_fd, 64)[0]).name)
                    break
                self._serve(fds)
                self._expire()
            except Exception:
                log.exception("the supervisor failed: acting on every order now rather than leaving them unguarded")
                self._act_on_all("supervisor failure")
                break
        for thread in self.acting:
            thread.join()

    def _act_on_all(self, trigger: str) -> None:
        for armed in list(self.orders.values()):
            self._act(armed, trigger)

    def _poll(self) -> set[int]:
        poller = select.poll()
        watched = [self.listener.fileno(), self.wake_fd, *self.clients]
        for armed in self.orders.values():
            watched += [fd for fd in (armed.guard.watch_fd, armed.owner_fd) if fd is not None]
        for fd in watched:
            poller.register(fd, select.POLLIN)
        return {fd for fd, _ in poller.poll(math.ceil(self._timeout_s() * 1000))}

    def _timeout_s(self) -> float:
        now = time.monotonic()
        waits = [3600.0] if self.orders or self.clients else [0.5]
        for armed in self.orders.values():
            prepare = 0.0 if armed.prepared else armed.guard.prepare_s
            waits.append(max(0.0, armed.deadline - prepare - now))
            if armed.guard.watch_fd is None:
                waits.append(GONE_CHECK_S)
        return min(waits)

    def _serve(self, fds: set[int]) -> None:
        if self.listener.fileno() in fds:
            with contextlib.suppress(BlockingIOError):
                connection, _ = self.listener.accept()
                connection.setblocking(True)
                self.clients[connection.fileno()] = (connection, bytearray())
        for fd in [fd for fd in fds if fd in self.clients]:
            self._read(fd)
        for armed in list(self.orders.values()):
            if armed.owner_fd is not None and armed.owner_fd in fds:
                self._act(armed, "owner died")
            elif (armed.guard.watch_fd is not None and armed.guard.watch_fd in fds) or armed.guard.gone():
                log.info("%s: its target is gone; nothing to do", _what(armed))
                self._drop(armed)

    def _read(self, fd: int) -> None:
        connection, pending = self.clients[fd]
        try:
            chunk = connection.recv(65536)
        except OSError:  # ECONNRESET: a controller SIGKILLed with a request unanswered
            chunk = b""
        pending += chunk
        if not chunk or len(pending) > MAX_LINE_BYTES:
            if pending and chunk:
                log.warning("a controller sent a line of over %d bytes: closing it", MAX_LINE_BYTES)
            self._close(fd)
            return
        while b"\n" in pending:
            line, _, rest = bytes(pending).partition(b"\n")
            pending[:] = rest
            answer = self._answer(line, fd)
            with contextlib.suppress(OSError):
                connection.sendall(json.dumps(answer).encode() + b"\n")

    def _close(self, fd: int) -> None:
        connection, _ = self.clients.pop(fd)
        held = [armed for armed in self.orders.values() if armed.client == fd]
        for armed in held:
            armed.client = None
            log.warning("%s: the controller that armed it is gone; acting at the deadline", _what(armed))
        connection.close()

    def _answer(self, line: bytes, client: int) -> dict[str, Any]:
        """The answer to one request line; a malformed request is answered in one line, never fatal."""
        try:
            return self._dispatch(json.loads(line), client)
        except Exception as error:
            return {"error": str(error).splitlines()[0][:300] if str(error) else type(error).__name__}

    def _dispatch(self, request: Any, client: int) -> dict[str, Any]:
        verb: str = ""
        value: Any = None
        if isinstance(request, dict) and len(request) == 1:
            verb, value = next(iter(request.items()))
        if verb == "arm":
            return self._arm(value, client)
        if verb == "deadline":
            return self._move(int(value[0]), float(value[1]))
        if verb == "disarm":
            return {"ok": self._drop(self.orders.get(int(value)))}
        return {"error": "expected one request of arm, deadline or disarm"}

    def _arm(self, value: Any, client: int) -> dict[str, Any]:
        if len(self.orders) >= MAX_ORDERS:
            return {"error": f"this watchdog holds {MAX_ORDERS} orders, its most; end a fault first"}
        order = WatchdogOrder.from_dict(value)
        if problem := order.problem():
            return {"error": problem}
        try:
            guard = guard_for(order)
            owner_fd = _pidfd_of(order.owner) if order.owner else None
        except NothingToGuardError as gone:
            return {"gone": str(gone)}
        armed = Armed(next(self._ids), order, guard, order.deadline_monotonic, client, owner_fd)
        self.orders[armed.id] = armed
        return {"armed": armed.id}

    def _move(self, order_id: int, deadline: float) -> dict[str, Any]:
        armed = self.orders.get(order_id)
        if armed is None:
            return {"ok": False}
        if not math.isfinite(deadline) or deadline - time.monotonic() > MAX_AHEAD_S:
            return {"error": f"deadline {deadline}: expected a CLOCK_MONOTONIC time at most {MAX_AHEAD_S:.0f} s ahead"}
        armed.deadline = deadline
        return {"ok": True}

    def _expire(self) -> None:
        now = time.monotonic()
        for armed in list(self.orders.values()):
            if not armed.prepared and armed.deadline - armed.guard.prepare_s <= now:
                armed.guard.prepare()
                armed.prepared = True
            if armed.deadline <= now:
                self._act(armed, "deadline")

    def _drop(self, armed: Armed | None, *, close: bool = True) -> bool:
        """Remove ``armed`` without acting; False if it was not held (it acted already)."""
        if armed is None or self.orders.pop(armed.id, None) is None:
            return False
        if armed.owner_fd is not None:
            os.close(armed.owner_fd)
        if close:
            armed.guard.close()
        return True

    def _act(self, armed: Armed, trigger: str) -> None:
        self._drop(armed, close=False)  # the acting thread closes it, after acting through its pidfd
        late_s = time.monotonic() - armed.deadline
        thread = threading.Thread(target=_act, args=(armed, trigger, late_s), name=f"act-{armed.id}")
        thread.start()
        self.acting = [t for t in self.acting if t.is_alive()] + [thread]


def guard_for(order: WatchdogOrder) -> Guard:
    """The guard that acts on ``order`` (checked first: ``ValueError``); ``NothingToGuardError`` when it is gone."""
    if problem := order.problem():
        raise ValueError(problem)
    undo = order.undo or {}
    if order.fault == "reap":
        return ReapGuard(undo)
    if order.fault == "partition":
        from retrystorm.chaos.watchdog.network_guards import CutGuard  # noqa: PLC0415 - only a partition's order

        return CutGuard(order.backend, order.ident, undo)
    if order.fault == "throttle":
        if order.backend == "docker":
            return DockerThrottleGuard(order.ident, undo["restore"])
        return QuotaGuard(undo) if undo.get("kind") == "cgroup-quota" else CgroupThrottleGuard(undo)
    if order.backend == "cgroup":
        return FreezerGuard(order.ident)
    return ProcessGuard(order.ident) if order.backend == "process" else DockerGuard(order.ident)


def _act(armed: Armed, trigger: str, late_s: float) -> None:
    """Revert what ``armed`` guards and journal it (a failure is logged: the journal keeps it for recovery)."""
    order, what = armed.order, _what(armed)
    try:
        outcome = armed.guard.resume()
        verb, op = _VERBS.get(order.fault, ("resumed", "resume"))
        done = f"{verb} by the watchdog" if outcome == "resumed" else f"{outcome}: nothing to do"
        log.warning("%s: %s (%s, %+.3f s from the deadline)", what, done, trigger, late_s)
        if outcome == "resumed" and op and order.journal is not None:
            extra = {"reason": "watchdog", "trigger": trigger, "late_s": round(late_s, 3), "status": "ok"}
            Journal(order.journal).append(op, order.ref(), order.outage, **extra)
    except Exception:
        log.exception("%s: could not act or journal it; the journal keeps it for recovery", what)
    finally:
        armed.guard.close()


#: What the log says an order did, and the journal op it appends (none for a reap: nothing was journaled).
_VERBS = {"throttle": ("restored", "restore"), "reap": ("ended", ""), "partition": ("healed", "heal")}


def _what(armed: Armed) -> str:
    return f"{armed.order.ref().describe()}, {armed.order.fault} {armed.order.outage}"


def _pidfd_of(ident: str) -> int:
    """A pidfd of the process ``PID@STARTTICKS`` (opened, then checked: it names that very process)."""
    from retrystorm.chaos.backends.procfs import process_start_ticks  # noqa: PLC0415 - only owner orders

    pid_text, _, ticks = ident.partition("@")
    try:
        descriptor = os.pidfd_open(int(pid_text))
    except ProcessLookupError:
        raise NothingToGuardError(f"no process {pid_text}: its owner is gone already") from None
    if str(process_start_ticks(int(pid_text))) != ticks:
        os.close(descriptor)
        raise NothingToGuardError(f"pid {pid_text} is no longer the owner {ident}")
    return descriptor
