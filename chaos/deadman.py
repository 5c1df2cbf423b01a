"""The dead-man switch every pause arms: an independent watchdog process per paused ref.

:class:`WatchdogSwitch` is the :class:`~retrystorm.chaos.controller.DeadManSwitch` of every
controller that pauses for real: before a process or a container is frozen it starts a
watchdog (:mod:`retrystorm.chaos.watchdog`) that resumes it ``hold_s`` (plus
:data:`GRACE_S`) later even if the controller, the runner and their process group were
SIGKILLed, and that exits without acting once the controller disarms it after a normal
resume. A CPU cut arms one the same way per throttle group or container, which restores the
original settings instead. A pause made through another chaos API (backend ``chaos-api``) is guarded by
that API's own controller and its watchdog, so nothing is armed here for it.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from retrystorm.chaos.backends.base import TargetRef
from retrystorm.chaos.controller import Disarm

#: The watchdog acts this long after the outage's own end, so the controller's on-time resume normally wins.
GRACE_S = 0.5
#: Backends whose refs a local watchdog can resume.
GUARDED_BACKENDS = frozenset({"process", "docker", "cgroup"})


class _Nothing:
    """Nothing armed (a pause another controller guards)."""

    def disarm(self) -> None:
        """Nothing to stand down."""


class WatchdogSwitch:
    """Arms a :mod:`retrystorm.chaos.watchdog` process per paused ref; it appends its resume to ``journal``."""

    def __init__(self, journal: Path | None) -> None:
        self.journal = journal

    def arm(self, ref: TargetRef, outage_id: str, hold_s: float, *, undo: dict[str, Any] | None = None) -> Disarm:
        """Start the watchdog of ``ref`` and return once it watches (raises ``BackendError`` otherwise).

        With ``undo`` it guards a CPU cut (:mod:`retrystorm.chaos.throttles`): at the deadline it restores what
        ``undo`` holds instead of resuming.
        """
        if ref.backend not in GUARDED_BACKENDS:
            return _Nothing()
        from retrystorm.chaos.watchdog import WatchdogOrder, arm  # noqa: PLC0415 - keeps this module import-light

        order = WatchdogOrder(
            backend=ref.backend,
            ident=ref.ident,
            target=ref.target,
            outage=outage_id,
            deadline_monotonic=time.monotonic() + hold_s + GRACE_S,
            journal=self.journal,
            fault="pause" if undo is None else "throttle",
            undo=undo,
        )
        switch: Disarm = arm(order)
        return switch
