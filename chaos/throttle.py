"""A capacity cut of a process group through its cgroup, ended by a watchdog if its maker dies.

:class:`CpuThrottle` holds one :class:`~chaos.cgroups.CpuGroup`. Its first cut reads
the group's quota; every cut arms a watchdog (:mod:`chaos.watchdog`, backend ``cgroup``)
*before* it sets the new quota, with a deadline ``hold_s`` (plus
:data:`~chaos.deadman.GRACE_S`) ahead, so no cut is ever unguarded: if the runner is
killed, the watchdog gives the group the quota it had at that deadline. The previous
watchdog is disarmed once the new one watches. :meth:`CpuThrottle.restore` puts back
the quota read before the first cut, exactly, then disarms.

Blocking (files, a watchdog's handshake): call it off the event loop.
"""

from __future__ import annotations

import itertools
import time

from chaos.cgroups import CpuGroup, Quota, cut_quota, usable_cpus
from chaos.deadman import GRACE_S
from chaos.watchdog import Watchdog, WatchdogOrder, arm

_cuts = itertools.count(1)


class CpuThrottle:
    """Cuts and restores the CPU quota of ``group`` (see the module docstring)."""

    def __init__(self, group: CpuGroup, target: str = "target", *, cpus: int | None = None) -> None:
        self.group = group
        self.target = target
        self.cpus = cpus or usable_cpus()
        self.before: Quota | None = None
        self._watchdog: Watchdog | None = None

    def cut(self, capacity: float, hold_s: float) -> Quota:
        """Run at ``capacity`` (0 < capacity <= 1) of the quota before the first cut, for at most ``hold_s``."""
        if self.before is None:
            self.before = self.group.quota()
        if capacity >= 1:
            self.restore()
            return self.before
        quota = cut_quota(self.before, capacity, self.cpus)
        order = WatchdogOrder(
            backend="cgroup",
            ident=f"{self.group.ident}={self.before.text()}",
            target=self.target,
            outage=f"slow-{next(_cuts)}",
            deadline_monotonic=time.monotonic() + hold_s + GRACE_S,
            journal=None,
        )
        previous, self._watchdog = self._watchdog, arm(order)  # guarded before the cut
        self.group.set_quota(quota)
        if previous is not None:
            previous.disarm()
        return quota

    def restore(self) -> None:
        """The quota before the first cut again (nothing cut: nothing to do), then no watchdog."""
        if self.before is not None:
            self.group.set_quota(self.before)
        if self._watchdog is not None:
            self._watchdog.disarm()
            self._watchdog = None
