"""CPU capacity cuts (throttles) with guaranteed restore, as safe as a pause.

The runner's entry point is :meth:`retrystorm.chaos.controller.OutageController.throttle`::

    throttle = await controller.throttle(target, capacity=0.4, duration_s=10.0)
    ...                       # the target runs at 40 % of its CPU allowance
    await throttle.end()      # restore now (else it is restored at duration_s by itself)

``target`` is a registered :class:`~retrystorm.chaos.targets.FaultTarget` (a process, a process group, a
cgroup, a container); ``capacity`` a fraction in ``(0, 1]`` of the target's allowance
(:mod:`retrystorm.chaos.cpu_quota`: its existing CPU limit, else every CPU it may run on); ``duration_s`` is
clamped to the controller's maximum outage. It returns once the cut is in place; :meth:`Throttle.end` is
idempotent.

A cut follows the one fault lifecycle (:mod:`retrystorm.chaos.lifecycle`); :class:`ThrottleKind` is its
part: the backend plans the cuts (:meth:`~retrystorm.chaos.backends.base.FaultBackend.plan_cpu_cut`), each
journaled ``throttle`` with the original settings as its undo, prepared (an empty throttle group) and
guarded by a watchdog that restores at the deadline + 0.5 s even if this process is SIGKILLed; then
applied. The end restores and journals ``restore``. Overlapping throttles of one target are refused:
the second would measure the first as the target's allowance.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
from collections.abc import Callable, Mapping
from typing import Any

from retrystorm.chaos.backends.base import BackendError, CpuCut, FaultBackend, TargetRef
from retrystorm.chaos.backends.cgroup import restore_quota
from retrystorm.chaos.backends.process import restore_cgroup_cut
from retrystorm.chaos.cpu_quota import check_capacity
from retrystorm.chaos.lifecycle import Fault, FaultKeeper, FaultKind, FaultStatus, World
from retrystorm.chaos.targets import FaultTarget

log = logging.getLogger(__name__)


@dataclasses.dataclass(slots=True, kw_only=True)
class Throttle(Fault):
    """One CPU capacity cut of one target; :meth:`end` restores it."""

    capacity: float
    keeper: ThrottleKeeper | None = dataclasses.field(default=None, repr=False)

    @property
    def cuts(self) -> list[CpuCut]:
        """The cuts in force (one per throttle group or container)."""
        return list(self.effects)

    async def end(self, reason: str = "early") -> Throttle:
        """Restore the target's original CPU settings now (a no-op once ended)."""
        if self.keeper is None:
            raise BackendError(f"throttle {self.id} has no controller")
        return await self.keeper.end(self.id, reason=reason)

    def to_json(self) -> dict[str, Any]:
        """The throttle as the chaos API shows it."""
        return self.timing_json() | {
            "capacity": self.capacity,
            "cpus_before": [round(cut.cpus_before, 4) for cut in self.cuts],
            "cpus_during": [round(cut.cpus_during, 4) for cut in self.cuts],
        }


class ThrottleKind(FaultKind[CpuCut]):
    """Plan the backend's cuts, prepare and apply each, restore each; recover from a journaled undo."""

    start_op, end_op, ended_status, in_force_word, shares = (
        "throttle",
        "restore",
        FaultStatus.RESTORED,
        "throttled",
        False,
    )

    def __init__(self, recovery_backends: Mapping[str, FaultBackend]) -> None:
        self.recovery_backends = recovery_backends

    def plan(self, target: FaultTarget, fault_id: str, params: Mapping[str, Any]) -> list[CpuCut]:
        capacity = check_capacity(params["capacity"])
        refs = target.refs()
        return target.backend.plan_cpu_cut(target.name, refs, capacity, f"{os.getpid()}-{fault_id}")

    def prepare(self, effect: CpuCut) -> None:
        effect.prepare()

    def inject(self, target: FaultTarget, effects: list[CpuCut]) -> list[CpuCut]:
        for cut in effects:
            cut.apply()
        return []

    def confirm(self, target: FaultTarget, effects: list[CpuCut]) -> None:
        """A cut is in force once applied (the kernel took the quota)."""

    def revert(self, effect: CpuCut) -> str:
        return effect.restore()

    def recover(self, ref: TargetRef, undo: dict[str, Any]) -> str:
        if ref.backend == "cgroup":  # a throttle group, or a cgroup's own quota: restored from the checked undo
            return restore_quota(ref, undo) if undo.get("kind") == "cgroup-quota" else restore_cgroup_cut(ref, undo)
        backend = self.recovery_backends.get(ref.backend)
        if backend is None:
            raise BackendError(f"the journal names {ref.describe()}, but the {ref.backend} backend is not configured")
        return backend.restore_cpu(ref, undo)

    def strays(self) -> list[TargetRef]:
        return []


class ThrottleKeeper(FaultKeeper[CpuCut, Throttle]):
    """The throttles of one controller."""

    def __init__(
        self,
        recovery_backends: Mapping[str, FaultBackend],
        world: World,
        on_end: Callable[[Throttle], None] | None = None,
    ) -> None:
        super().__init__(
            ThrottleKind(recovery_backends), world, functools.partial(Throttle, keeper=self), "t", on_end=on_end
        )

    async def cut(self, target: FaultTarget, capacity: float, duration_s: float) -> Throttle:
        """Cut ``target`` to ``capacity`` for ``duration_s`` (see the module docstring)."""
        check_capacity(capacity)
        throttle = await self.start(target, duration_s, capacity=capacity)
        log.info(
            "throttled %s to %g of its CPU for %.1f s (%s)", target.name, capacity, throttle.duration_s, throttle.id
        )
        return throttle

    def throttles(self) -> list[Throttle]:
        """Every throttle of this controller, oldest first."""
        return self.faults()
