"""Dead-man switch: one supervisor process per journal holds every armed deadline and acts at each.

The rule (design.md, "Safety rules"): every fault has a deadline enforced by something that survives the
controller's death. The journal and start-up recovery are the second net.

- **One supervisor, many deadlines.** :func:`arm` hands an order (:class:`WatchdogOrder`) to the journal's
  supervisor (:mod:`retrystorm.chaos.watchdog.supervisor`), starting it when none runs
  (:mod:`retrystorm.chaos.watchdog.client`). It answers ``armed``, ``gone`` (nothing to guard) or an error before
  :func:`arm` returns; an order that cannot be armed means no fault. One process of about 15 MiB guards every
  pause, cut and service of every controller of the journal, where there was one such process per paused process.
  It holds at most :data:`MAX_ORDERS` orders (each controller holds at most 64 faults of a kind and 8 per
  target: :mod:`retrystorm.chaos.lifecycle`).
- **Detached.** The supervisor runs in a session of its own, reparented to init, cwd ``/``, inherited fds closed,
  no parent-death signal: a SIGKILL of a controller or of its process group, and a terminal's SIGINT/SIGHUP, do
  not reach it. A controller that dies leaves its orders armed.
- **Disarm.** :meth:`Watchdog.disarm` stands an order down once the fault ended normally; afterwards it never acts.
- **Deadline.** On CLOCK_MONOTONIC, never the wall clock: at the deadline or a few ms after, never before, the
  order's guard (:mod:`retrystorm.chaos.watchdog.guards`) resumes the target, restores the CPU settings a cut's
  ``undo`` carries, or thaws a cgroup, then journals ``{"op": "resume"|"restore", "reason": "watchdog", ...}``.
  :meth:`Watchdog.move_deadline` moves it (a fault times itself from when it took effect). SIGTERM, SIGINT or
  SIGHUP to the supervisor make it act on every order at once: stopping it must not leave a target frozen. What
  fails to act is logged, not journaled: the fault stays pending for recovery.
- **Owners.** An order with an ``owner`` (``PID@STARTTICKS``) also acts the moment that process dies: a run's
  service is ended when its runner is SIGKILLed (:mod:`retrystorm.chaos.containment`).
- **Never a target.** A watchdog is refused as a pause target, and so is a cgroup that holds one.
- **Log.** ``<journal stem>.watchdog.log`` beside the journal, private: written only when it matters (a
  controller died, a target went away, it acted, it failed).
- **Limits.** A SIGKILL of the supervisor itself, or of a whole cgroup holding it (``systemctl kill``, a
  container's end), takes every deadline down with it; then only the journal remains.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from retrystorm.chaos.backends.base import BackendError
from retrystorm.chaos.watchdog.client import Place, channel, forget
from retrystorm.chaos.watchdog.order import MAX_AHEAD_S, WatchdogOrder

log = logging.getLogger(__name__)

#: The most orders one supervisor holds.
MAX_ORDERS = 4096

__all__ = ["MAX_AHEAD_S", "MAX_ORDERS", "Watchdog", "WatchdogOrder", "arm", "watchdog_log_path"]


class Watchdog:
    """One armed order; :meth:`disarm` it when the fault ended normally."""

    def __init__(self, place: Place | None, order_id: int, pid: int, *, guarding: bool) -> None:
        #: The supervisor's pid.
        self.pid = pid
        #: False when there was nothing to guard (the target was gone): nothing is armed.
        self.guarding = guarding
        self._place, self._id = place, order_id
        self._lock = threading.Lock()

    def move_deadline(self, deadline_monotonic: float) -> bool:
        """Act at CLOCK_MONOTONIC ``deadline_monotonic`` instead; False once it has acted. Never raises."""
        return self._call({"deadline": [self._id, deadline_monotonic]})

    def disarm(self) -> None:
        """Stand the order down: afterwards it never acts. Idempotent; never raises (at worst it acts on time)."""
        with self._lock:
            place, self._place = self._place, None
        if place is not None:
            self._call({"disarm": self._id}, place)

    def _call(self, request: dict[str, object], place: Place | None = None) -> bool:
        place = place or self._place
        if place is None:
            return False
        try:
            return channel(place).call(request).get("ok") is True
        except OSError as error:  # the supervisor is gone: its orders went with it, the journal remains
            forget(place)
            log.warning("the watchdog supervisor of %s is gone (%s)", place.folder, error)
            return False


def arm(order: WatchdogOrder) -> Watchdog:
    """Arm ``order`` and return once the supervisor guards it (blocks: call it off the event loop).

    Raises :class:`BackendError` (one line) if it cannot be armed: the controller must then refuse the fault. A
    target already gone (a process that exited, or whose pid now names another) is no error: there is nothing to
    guard; the result has ``guarding`` False.
    """
    what = f"watchdog for {order.ref().describe()}"
    if problem := order.problem():
        raise BackendError(f"cannot arm the {what}: {problem}")
    place = Place.of(order.journal, docker=order.backend == "docker")
    answer = _ask(place, order, what)
    if "armed" in answer:
        return Watchdog(place, int(answer["armed"]), channel(place).pid, guarding=True)
    if "gone" in answer:
        log.info("%s: nothing to guard: %s", what, answer["gone"])
        return Watchdog(None, 0, 0, guarding=False)
    raise BackendError(f"cannot arm the {what}: {answer.get('error', answer)}")


def _ask(place: Place, order: WatchdogOrder, what: str) -> dict[str, Any]:
    """The supervisor's answer to arming ``order``; a supervisor found gone (killed) is started again, once."""
    try:
        return channel(place).call({"arm": order.to_dict()})
    except OSError:
        forget(place)
    try:
        return channel(place).call({"arm": order.to_dict()})
    except OSError as error:
        forget(place)
        raise BackendError(f"cannot arm the {what}: {error}; see {place.log_path}") from error


def watchdog_log_path(journal: Path | None) -> Path:
    """Where the supervisors of this journal log: ``<journal stem>.watchdog.log`` beside it."""
    return Place.of(journal, docker=False).log_path
