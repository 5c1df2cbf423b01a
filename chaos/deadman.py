"""The dead-man switch every fault arms: an order with the journal's watchdog supervisor per effect.

:class:`WatchdogSwitch` is the :class:`~retrystorm.chaos.lifecycle.DeadManSwitch` of every controller that
faults for real: before a process, a cgroup or a container is frozen it arms an order with the watchdog
supervisor (:mod:`retrystorm.chaos.watchdog`) that resumes it ``hold_s`` (plus :data:`GRACE_S`) after the
fault took effect, even if the controller, the runner and their process group were SIGKILLed, and that is
stood down once the controller disarms it after a normal resume. A CPU cut arms one the same way per throttle
group, cgroup or container, which restores the original settings instead, and a partition one per cut (a route
or a link), which heals it. A toxic on a fault proxy arms none: the proxy, a process of its own, ends it at its
own deadline (:mod:`retrystorm.chaos.network.faults`). A pause made through another chaos
API (backend ``chaos-api``) is guarded by that API's own controller and its watchdog, so nothing is armed here.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from retrystorm.chaos.backends.base import TargetRef
from retrystorm.chaos.journal import this_controller
from retrystorm.chaos.lifecycle import Armed

if TYPE_CHECKING:
    from retrystorm.chaos.containment import Containment
    from retrystorm.chaos.watchdog import Watchdog

#: The watchdog acts this long after the outage's own end, so the controller's on-time resume normally wins.
GRACE_S = 0.5
#: Until the fault is in force (:meth:`Armed.count_from`), the deadline also allows this long for the injection
#: (arming every switch, freezing, confirming: bounded by the backends' 5 s settle time), so a switch never acts
#: before the fault it guards has begun. A controller killed during an injection leaves the fault at most this much
#: longer than asked.
INJECT_ALLOWANCE_S = 5.0
#: Backends whose refs a local watchdog can resume.
GUARDED_BACKENDS = frozenset({"process", "docker", "cgroup", "route", "link"})


class _Nothing:
    """Nothing armed (a pause another controller guards)."""

    def disarm(self) -> None:
        """Nothing to stand down."""

    def count_from(self, start_monotonic: float) -> None:
        """Nothing to move."""


class WatchdogSwitch:
    """Arms a :mod:`retrystorm.chaos.watchdog` process per paused ref; it appends its resume to ``journal``."""

    def __init__(self, journal: Path | None) -> None:
        self.journal = journal

    def arm(self, ref: TargetRef, outage_id: str, hold_s: float, *, fault: str, undo: dict[str, Any]) -> Armed:
        """Start the watchdog of ``ref`` and return once it watches (raises ``BackendError`` otherwise).

        ``fault`` ``pause`` resumes ``ref`` at the deadline; ``throttle`` restores what ``undo`` holds
        (:mod:`retrystorm.chaos.throttles`).
        """
        if ref.backend not in GUARDED_BACKENDS:
            return _Nothing()
        from retrystorm.chaos.watchdog import WatchdogOrder, arm  # noqa: PLC0415 - keeps this module import-light

        order = WatchdogOrder(
            backend=ref.backend,
            ident=ref.ident,
            target=ref.target,
            outage=outage_id,
            deadline_monotonic=time.monotonic() + hold_s + GRACE_S + INJECT_ALLOWANCE_S,
            journal=self.journal,
            fault=fault,
            undo=undo or None,
        )
        watchdog = arm(order)
        return _Counted(watchdog, hold_s)


class _Counted:
    """A watchdog whose hold can be counted from when the fault took effect."""

    def __init__(self, watchdog: Watchdog, hold_s: float) -> None:
        self.watchdog, self.hold_s = watchdog, hold_s

    def disarm(self) -> None:
        """Stand the watchdog down."""
        self.watchdog.disarm()

    def count_from(self, start_monotonic: float) -> None:
        """Move its deadline to ``start_monotonic`` + hold + :data:`GRACE_S`."""
        self.watchdog.move_deadline(start_monotonic + self.hold_s + GRACE_S)


def guard_service(containment: Containment, journal: Path | None, label: str) -> Watchdog:
    """Arm the order that ends a run's service when this runner dies, however (:mod:`retrystorm.chaos.containment`);
    disarm it once the runner has ended the service itself."""
    from retrystorm.chaos.watchdog import MAX_AHEAD_S, WatchdogOrder, arm  # noqa: PLC0415 - keeps this module light

    order = WatchdogOrder(
        backend="cgroup", ident=str(containment.directories[0]), target=label[:200], outage="service",
        deadline_monotonic=time.monotonic() + MAX_AHEAD_S - 60, journal=journal, fault="reap",
        undo=containment.undo(), owner=this_controller(),
    )  # fmt: skip
    return arm(order)
