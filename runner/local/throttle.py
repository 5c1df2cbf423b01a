"""The live ``slow`` trigger of a service the runner started (``target.command``): a CPU quota through cgroups.

At its first cut, :class:`GroupThrottleControls` makes a cgroup of its own
(:class:`~chaos.cgroups.CpuGroup`, v2 ``cpu.max`` or v1 ``cpu.cfs_quota_us``, whichever
this machine has), moves the command's process group into it (its leader, then every
member: children forked later are born in it) and cuts its quota through a
:class:`~chaos.throttle.CpuThrottle`: ``capacity`` of every CPU the runner may use (the
group had no quota), each cut guarded by a watchdog that gives the quota back at the
level's planned end even if the runner is killed. :meth:`restore` puts back the quota
read before the first cut; :meth:`close`, after the group has stopped, removes the cgroup.

:func:`slow_refusal` says, before anything starts, why a slow cannot be played here.
"""

from __future__ import annotations

import asyncio
import os

from chaos.backends.base import BackendError
from chaos.backends.procfs import group_members
from chaos.cgroups import CpuGroup, find_hierarchy
from chaos.throttle import CpuThrottle
from experiment.scenario.service import ServiceTarget
from runner.errors import RunFailedError


def slow_refusal(spec: ServiceTarget) -> str | None:
    """Why a capacity cut of ``spec`` cannot be played live here (``None``: it can)."""
    if not spec.command:
        return (
            "a CPU quota is given here only to a service the runner starts (target.command: its process group in a "
            "cgroup of its own); for a pid or a container (docker update --cpus) not yet; retrystorm sim run "
            "SCENARIO simulates it with a model:"
        )
    try:
        _, base = find_hierarchy()
    except BackendError as error:
        return f"{error}; a CPU quota needs one; retrystorm sim run SCENARIO simulates it with a model:"
    if not os.access(base, os.W_OK):
        return f"cannot make a cgroup under {base} (run as root, or delegate it); retrystorm sim run simulates it"
    return None


class GroupThrottleControls:
    """The slow trigger on the process group led by ``pgid`` (a :class:`~runner.interfaces.TargetControls`)."""

    def __init__(self, pgid: int, name: str) -> None:
        self.pgid = pgid
        self.name = name
        self.throttle: CpuThrottle | None = None

    def _cut(self, capacity: float, hold_s: float) -> None:
        if self.throttle is None:
            if capacity >= 1:
                return
            group = CpuGroup.create(self.name)
            self.throttle = CpuThrottle(group)
            for pid in [self.pgid, *(pid for pid, _ in group_members(self.pgid))]:
                group.add(pid)
        self.throttle.cut(capacity, hold_s)

    async def set_capacity(self, capacity: float, hold_s: float) -> None:
        try:
            await asyncio.to_thread(self._cut, capacity, hold_s)
        except BackendError as error:
            raise RunFailedError(f"cannot cut the service's CPU: {error}") from error

    async def set_errors(self, status: int | None, probability: float) -> None:
        raise RunFailedError("errors: a service of your own takes no error burst (refused before the run)")

    async def restore(self) -> None:
        if self.throttle is not None:
            await asyncio.to_thread(self.throttle.restore)

    async def close(self) -> None:
        """After the process group has stopped: the quota back (if still cut) and the cgroup removed."""
        if self.throttle is not None:
            throttle, self.throttle = self.throttle, None
            await asyncio.to_thread(throttle.restore)
            await asyncio.to_thread(throttle.group.remove)
