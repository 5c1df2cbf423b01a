"""CPU capacity cuts (throttles) with guaranteed restore, as safe as a pause.

The runner's entry point is :meth:`retrystorm.chaos.controller.OutageController.throttle`::

    throttle = await controller.throttle(target, capacity=0.4, duration_s=10.0)
    ...                       # the target runs at 40 % of its CPU allowance
    await throttle.end()      # restore now (else it is restored at duration_s by itself)

``target`` is a registered :class:`~retrystorm.chaos.targets.FaultTarget` (a process, a process group, a
container); ``capacity`` a fraction in ``(0, 1]`` of the target's allowance (:mod:`retrystorm.chaos.cpu_quota`:
its existing CPU limit, else every CPU it may run on); ``duration_s`` is clamped to the controller's
maximum outage. It returns once the cut is in place; :meth:`Throttle.end` is idempotent.

Each cut follows the pause's order: journal ``throttle`` (with the original settings) and fsync;
make what is guarded (:meth:`~retrystorm.chaos.backends.base.CpuCut.prepare`); arm a dead-man watchdog that
restores at the deadline + 0.5 s even if this process is SIGKILLed; cut. The end restores, journals
``restore`` and disarms. SIGINT/SIGTERM and the controller's exit end every throttle
(:meth:`OutageController.resume_all`); ``retrystorm chaos recover`` and the next controller restore
what a killed one left (:meth:`ThrottleKeeper.recover`). Overlapping throttles of one target are
refused: the second would measure the first as the target's allowance.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from retrystorm.chaos.backends.base import BackendError, CpuCut, FaultBackend, TargetRef
from retrystorm.chaos.backends.process import restore_cgroup_cut
from retrystorm.chaos.cpu_quota import check_capacity
from retrystorm.chaos.journal import Journal, controller_alive, utc_now
from retrystorm.chaos.targets import FaultTarget
from retrystorm.errors import UserError

log = logging.getLogger(__name__)


class Disarm(Protocol):
    """An armed dead-man switch."""

    def disarm(self) -> None:
        """Stand it down (idempotent, never raises)."""


class ThrottleSwitch(Protocol):
    """Arms a dead-man switch that undoes ``undo`` after ``hold_s``
    (:class:`retrystorm.chaos.deadman.WatchdogSwitch`)."""

    def arm(self, ref: TargetRef, outage_id: str, hold_s: float, *, undo: dict[str, Any] | None = None) -> Disarm:
        """Arm before the cut; raise :class:`BackendError` if it cannot be armed."""
        ...


@dataclasses.dataclass(slots=True)
class Throttle:
    """One CPU capacity cut of one target; :meth:`end` restores it."""

    id: str
    target: str
    backend: str
    capacity: float
    requested_s: float
    duration_s: float
    started_utc: str
    started_monotonic: float
    cuts: list[CpuCut]
    keeper: ThrottleKeeper = dataclasses.field(repr=False)
    status: str = "active"  # active, restored, failed
    ended_utc: str | None = None
    end_reason: str | None = None
    error: str | None = None

    async def end(self, reason: str = "early") -> Throttle:
        """Restore the target's original CPU settings now (a no-op once ended)."""
        return await self.keeper.end(self.id, reason=reason)

    def to_json(self) -> dict[str, Any]:
        """The throttle as the chaos API shows it."""
        return {
            "id": self.id,
            "target": self.target,
            "backend": self.backend,
            "capacity": self.capacity,
            "instances": [cut.ref.ident for cut in self.cuts],
            "cpus_before": [round(cut.cpus_before, 4) for cut in self.cuts],
            "cpus_during": [round(cut.cpus_during, 4) for cut in self.cuts],
            "requested_s": self.requested_s,
            "duration_s": self.duration_s,
            "clamped": self.duration_s < self.requested_s,
            "status": self.status,
            "started_utc": self.started_utc,
            "ended_utc": self.ended_utc,
            "end_reason": self.end_reason,
            "error": self.error,
        }


@dataclasses.dataclass(slots=True, kw_only=True)
class ThrottleKeeper:
    """The throttles of one controller: start, end on time, end all, recover (what the controller delegates to)."""

    journal: Journal
    dead_man: ThrottleSwitch
    max_outage_s: Callable[[], float]
    clock: Callable[[], float]
    sleep: Callable[[float], Awaitable[None]]
    run_blocking: Callable[..., Awaitable[Any]]
    recovery_backends: Mapping[str, FaultBackend]
    _throttles: dict[str, Throttle] = dataclasses.field(default_factory=dict)
    _switches: dict[str, list[Disarm]] = dataclasses.field(default_factory=dict)
    _timers: dict[str, asyncio.Task[None]] = dataclasses.field(default_factory=dict)
    _ids: Any = dataclasses.field(default_factory=lambda: itertools.count(1))
    _lock: asyncio.Lock = dataclasses.field(default_factory=asyncio.Lock)

    async def start(self, target: FaultTarget, capacity: float, duration_s: float) -> Throttle:
        """Cut ``target`` to ``capacity`` for ``duration_s`` (see the module docstring)."""
        check_capacity(capacity)
        if not duration_s > 0:
            raise UserError(f"duration: got {duration_s}, expected a duration > 0")
        busy = [t.id for t in self.active() if t.target == target.name and t.backend == target.backend.name]
        if busy:
            raise UserError(f"target {target.name!r} is throttled already ({busy[0]}); end that throttle first")
        refs = await self.run_blocking(target.refs)
        throttle_id = f"t{next(self._ids)}"
        tag = f"{os.getpid()}-{throttle_id}"
        cuts = await self.run_blocking(target.backend.plan_cpu_cut, target.name, refs, capacity, tag)
        limit = self.max_outage_s()
        throttle = Throttle(
            id=throttle_id, target=target.name, backend=target.backend.name, capacity=capacity,
            requested_s=duration_s, duration_s=min(duration_s, limit), started_utc=utc_now(),
            started_monotonic=self.clock(), cuts=cuts, keeper=self,
        )  # fmt: skip
        async with self._lock:
            self._switches[throttle.id] = []
            self._throttles[throttle.id] = throttle
            try:
                for cut in cuts:
                    await self._guard(throttle, cut)
                for cut in cuts:
                    await self.run_blocking(cut.apply)
            except BackendError as error:
                throttle.error = str(error)
                await self._restore(throttle, "throttle failed")
                throttle.status = "failed"
                raise
            self._timers[throttle.id] = asyncio.create_task(self._expire(throttle), name=f"expire-{throttle.id}")
        log.info(
            "throttled %s to %g of its CPU for %.1f s (%s)", target.name, capacity, throttle.duration_s, throttle_id
        )
        return throttle

    async def _guard(self, throttle: Throttle, cut: CpuCut) -> None:
        """Journal the cut with its undo, make what is guarded, arm its dead-man switch."""
        undo = cut.undo()
        self.journal.append("throttle", cut.ref, throttle.id, undo=undo, capacity=throttle.capacity,
                            duration_s=throttle.duration_s)  # fmt: skip
        await self.run_blocking(cut.prepare)
        switch = await self.run_blocking(self._arm, cut.ref, throttle.id, throttle.duration_s, undo)
        self._switches[throttle.id].append(switch)

    def _arm(self, ref: TargetRef, throttle_id: str, hold_s: float, undo: dict[str, Any]) -> Disarm:
        return self.dead_man.arm(ref, throttle_id, hold_s, undo=undo)

    async def _expire(self, throttle: Throttle) -> None:
        await self.sleep(max(0.0, throttle.started_monotonic + throttle.duration_s - self.clock()))
        await self.end(throttle.id, reason="max_outage" if throttle.duration_s < throttle.requested_s else "scheduled")

    async def end(self, throttle_id: str, *, reason: str = "early") -> Throttle:
        """Restore now; a no-op for an ended throttle."""
        if throttle_id not in self._throttles:
            raise UserError(f"no throttle {throttle_id[:40]!r}; known: {', '.join(self._throttles) or 'none'}")
        throttle = self._throttles[throttle_id]
        timer = self._timers.pop(throttle_id, None)
        if timer is not None and timer is not asyncio.current_task():
            timer.cancel()
        async with self._lock:
            if throttle.status == "active":
                await self._restore(throttle, reason)
        return throttle

    async def _restore(self, throttle: Throttle, reason: str) -> None:
        errors = []
        for cut in throttle.cuts:
            try:
                await self.run_blocking(cut.restore)
            except BackendError as error:
                errors.append(str(error))
                self.journal.append("restore", cut.ref, throttle.id, reason=reason, status="failed", error=str(error))
            else:
                self.journal.append("restore", cut.ref, throttle.id, reason=reason, status="ok")
        switches = self._switches.pop(throttle.id, [])
        if not errors:  # after the restore: a failed one stays the watchdog's to retry at the deadline
            for switch in switches:
                switch.disarm()
        throttle.ended_utc, throttle.end_reason = utc_now(), reason
        throttle.status = "failed" if errors else "restored"
        throttle.error = "; ".join(errors) or throttle.error

    async def end_all(self, reason: str) -> None:
        """End every active throttle (shutdown, signals)."""
        for throttle in self.active():
            with contextlib.suppress(BackendError):
                await self.end(throttle.id, reason=reason)

    async def recover(self) -> list[TargetRef]:
        """Restore the cuts the journal shows left by controllers no longer running; return them."""
        restored = []
        for pending in self.journal.pending_throttles():
            if pending.controller != self.journal.controller and controller_alive(pending.controller):
                continue  # another live controller owns it
            try:
                await self.run_blocking(self._restore_pending, pending.ref, pending.undo)
            except BackendError as error:
                log.error("could not restore %s: %s", pending.ref.describe(), error)  # noqa: TRY400 - one line
                continue
            self.journal.append("restore", pending.ref, pending.outage, reason="recovered", status="ok")
            restored.append(pending.ref)
            log.warning("restored %s, left throttled by a controller that did not finish", pending.ref.describe())
        return restored

    def _restore_pending(self, ref: TargetRef, undo: dict[str, Any]) -> str:
        if ref.backend == "cgroup":
            return restore_cgroup_cut(ref, undo)
        backend = self.recovery_backends.get(ref.backend)
        if backend is None:
            raise BackendError(f"the journal names {ref.describe()}, but the {ref.backend} backend is not configured")
        return backend.restore_cpu(ref, undo)

    def throttles(self) -> list[Throttle]:
        """Every throttle of this controller, oldest first."""
        return list(self._throttles.values())

    def active(self) -> list[Throttle]:
        """Throttles still in place."""
        return [t for t in self._throttles.values() if t.status == "active"]
