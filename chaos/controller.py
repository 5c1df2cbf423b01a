"""Outages with guaranteed resume: the one place that pauses targets, and cuts their CPU.

:class:`OutageController` pauses a :class:`~retrystorm.chaos.targets.FaultTarget` for a duration
and resumes it when the duration ends, when asked early, when the controller stops
(normal end, exception, SIGINT/SIGTERM). No outage lasts longer than ``max_outage_s``,
whatever was asked, and never longer than :data:`MAX_OUTAGE_CEILING_S`.

Pauses and CPU cuts (:mod:`retrystorm.chaos.throttles`) follow the one fault lifecycle of
:mod:`retrystorm.chaos.lifecycle`: journaled and guarded by a dead-man switch (in production a watchdog,
:mod:`retrystorm.chaos.watchdog`) before they happen, confirmed to have taken effect, timed from that
moment, reverted on time, and recovered from the journal by the next controller if this one was
killed. :class:`PauseKind` is the pause's part: freeze through the target's backend
(:meth:`~retrystorm.chaos.backends.base.FaultBackend.pause_all`), confirm that every process is stopped
(:meth:`~retrystorm.chaos.backends.base.FaultBackend.confirm_paused`), resume each ref. Overlapping
outages of one target are allowed: the target stays paused until the last of them ends. Other kinds
of fault (network faults) plug in through :meth:`OutageController.keeper`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import signal
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Self

from retrystorm.chaos.backends.base import BackendError, FaultBackend, TargetRef
from retrystorm.chaos.backends.cgroup import thawable
from retrystorm.chaos.containment import sweep
from retrystorm.chaos.journal import Journal
from retrystorm.chaos.lifecycle import (
    DeadManSwitch,
    Fault,
    FaultKeeper,
    FaultKind,
    FaultStatus,
    World,
)
from retrystorm.chaos.targets import FaultTarget
from retrystorm.chaos.throttles import Throttle, ThrottleKeeper
from retrystorm.durations import format_duration
from retrystorm.errors import UserError

log = logging.getLogger(__name__)

DEFAULT_MAX_OUTAGE_S = 600.0
#: No controller may be configured to hold a target longer than this.
MAX_OUTAGE_CEILING_S = 3600.0
#: What an outage's status is (one enum for every kind of fault).
OutageStatus = FaultStatus


def check_max_outage(seconds: float) -> float:
    """``seconds`` if it is a maximum outage a controller may be given (``> 0`` and at most 1 h)."""
    if not 0 < seconds <= MAX_OUTAGE_CEILING_S:
        raise UserError(
            f"max outage: got {format_duration(seconds)}, expected a duration > 0 and at most "
            f"{format_duration(MAX_OUTAGE_CEILING_S)}"
        )
    return seconds


@dataclasses.dataclass(slots=True, kw_only=True)
class Outage(Fault):
    """One pause of one target, from pause to resume; frozen from ``in_force`` to ``reverted``."""

    def to_json(self) -> dict[str, Any]:
        """The outage as the chaos API and run reports show it."""
        return self.timing_json()


@dataclasses.dataclass(frozen=True, slots=True)
class Frozen:
    """One ref a pause freezes (an :class:`~retrystorm.chaos.lifecycle.Effect` with nothing more to undo)."""

    ref: TargetRef
    #: The backend that froze it (a live fault), else the one recovery finds by the ref's backend name.
    backend: FaultBackend | None = dataclasses.field(default=None, compare=False)

    def undo(self) -> dict[str, Any]:
        """The ref says it all."""
        return {}


class PauseKind(FaultKind[Frozen]):
    """Freeze through the target's backend; resume each ref; recover through the backend the journal names."""

    start_op, end_op, in_force_word, shares = "pause", "resume", "paused", True
    ended_status = FaultStatus.RESUMED

    def __init__(self, recovery_backends: Mapping[str, FaultBackend]) -> None:
        self.recovery_backends = recovery_backends

    def plan(self, target: FaultTarget, fault_id: str, params: Mapping[str, Any]) -> list[Frozen]:
        return [Frozen(ref, target.backend) for ref in target.refs()]

    def prepare(self, effect: Frozen) -> None:
        """Nothing to make."""

    def inject(self, target: FaultTarget, effects: list[Frozen]) -> list[Frozen]:
        found = target.backend.pause_all(target.name, [effect.ref for effect in effects])
        return [Frozen(ref, target.backend) for ref in found]

    def confirm(self, target: FaultTarget, effects: list[Frozen]) -> None:
        target.backend.confirm_paused(target.name, [effect.ref for effect in effects])

    def revert(self, effect: Frozen) -> str:
        (effect.backend or self._backend(effect.ref)).resume(effect.ref)
        return "resumed"

    def recover(self, ref: TargetRef, undo: dict[str, Any]) -> str:
        if ref.backend == "cgroup":  # a frozen cgroup is thawed from its checked path alone
            return thawable(ref).thaw()
        self._backend(ref).resume(ref)
        return "resumed"

    def strays(self) -> list[TargetRef]:
        return [ref for backend in self.recovery_backends.values() for ref in backend.stray_paused()]

    def _backend(self, ref: TargetRef) -> FaultBackend:
        backend = self.recovery_backends.get(ref.backend)
        if backend is None:
            raise BackendError(f"the journal names {ref.describe()}, but the {ref.backend} backend is not configured")
        return backend


def _sweep() -> list[Path]:
    """The services whose runner died, ended (:func:`retrystorm.chaos.containment.sweep`); none without cgroups."""
    try:
        return sweep()
    except OSError:
        return []


class OutageListener:
    """Hooks for metrics and annotations; override what you need."""

    def outage_started(self, outage: Outage) -> None:
        """``outage`` has paused its target."""

    def outage_ended(self, outage: Outage, paused_s: float) -> None:
        """``outage`` ended after ``paused_s`` seconds."""

    def fault_ended(self, fault: Fault) -> None:
        """Any fault (a pause, a CPU cut, a network fault) has ended: reverted, failed or recovered."""


class OutageController:
    """Pauses targets and cuts their CPU through backends, journals every fault, and always reverts them."""

    def __init__(
        self,
        journal: Journal,
        *,
        dead_man: DeadManSwitch,
        recovery_backends: Sequence[FaultBackend] = (),
        max_outage_s: float = DEFAULT_MAX_OUTAGE_S,
        listener: OutageListener | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        run_blocking: Callable[..., Awaitable[Any]] = asyncio.to_thread,
    ) -> None:
        self.journal = journal
        self.recovery_backends = {backend.name: backend for backend in recovery_backends}
        self.max_outage_s = check_max_outage(max_outage_s)
        self.listener = listener or OutageListener()
        self.clock = clock
        self.world = World(
            journal=journal,
            dead_man=dead_man,
            max_duration_s=lambda: self.max_outage_s,
            clock=clock,
            sleep=sleep,
            run_blocking=run_blocking,
        )
        self.pauses: FaultKeeper[Frozen, Outage] = FaultKeeper(
            PauseKind(self.recovery_backends), self.world, Outage, "o", on_end=self._ended
        )
        self.throttles = ThrottleKeeper(self.recovery_backends, self.world, on_end=self.listener.fault_ended)
        self._keepers: list[FaultKeeper[Any, Any]] = [self.pauses, self.throttles]

    def keeper(self, kind: FaultKind[Any], make: Callable[..., Fault], prefix: str) -> FaultKeeper[Any, Any]:
        """A keeper for another kind of fault (network faults), ended and recovered with the pauses and cuts."""
        keeper: FaultKeeper[Any, Any] = FaultKeeper(kind, self.world, make, prefix, on_end=self.listener.fault_ended)
        self._keepers.append(keeper)
        return keeper

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def start(self) -> list[TargetRef]:
        """Refuse a journal that cannot record faults (not private, full, read-only), then :meth:`recover`."""
        self.journal.check_writable()
        return await self.recover()

    async def __aexit__(self, *exc: object) -> None:
        await self.resume_all("shutdown")

    async def recover(self) -> list[TargetRef]:
        """Revert what a killed controller left in force (pauses, cuts, other kinds); return those refs."""
        held_elsewhere: set[TargetRef] = set()
        reverted: list[TargetRef] = []
        for keeper in [self.throttles, *[k for k in self._keepers if k is not self.throttles]]:
            reverted += await keeper.recover(held_elsewhere)
        self.journal.compact()
        for ended in await self.world.run_blocking(_sweep):
            log.warning("ended the service in %s, left running by a runner that did not finish", ended)
        return reverted

    async def pause(self, target: FaultTarget, duration_s: float) -> Outage:
        """Pause ``target`` for ``duration_s`` (at most ``max_outage_s``) from the moment it is frozen."""
        outage = await self.pauses.start(target, duration_s)
        self.listener.outage_started(outage)
        return outage

    async def throttle(self, target: FaultTarget, capacity: float, duration_s: float) -> Throttle:
        """Cut ``target``'s CPU to ``capacity`` (in (0, 1]) of its allowance for ``duration_s``; ``end()`` restores.

        Refusals (capacity out of range, a target that cannot be throttled, one throttled already) are
        :class:`~retrystorm.errors.UserError`, naming what would make it possible.
        """
        return await self.throttles.cut(target, capacity, duration_s)

    async def resume(self, outage_id: str, *, reason: str = "early") -> Outage:
        """End an outage now; resuming an ended outage is a no-op."""
        if outage_id not in {outage.id for outage in self.pauses.faults()}:
            known = ", ".join(outage.id for outage in self.pauses.faults()) or "none"
            raise UserError(f"no outage {outage_id[:40]!r}; known: {known}")
        return await self.pauses.end(outage_id, reason=reason)

    async def resume_all(self, reason: str) -> None:
        """End every fault in force (used on shutdown and on signals)."""
        active = self.active()
        if active:
            targets = ", ".join(sorted({outage.target for outage in active}))
            log.warning("%s: resuming %d paused target(s): %s", reason, len(active), targets)
        for keeper in reversed(self._keepers):
            await keeper.end_all(reason)
        self.journal.compact()

    def _ended(self, outage: Outage) -> None:
        """Tell the listener that an outage which froze its target has ended, and for how long it was frozen."""
        if outage.in_force_s is not None:
            self.listener.outage_ended(outage, outage.in_force_s)
        self.listener.fault_ended(outage)

    def outages(self) -> list[Outage]:
        """Every outage of this controller, oldest first."""
        return self.pauses.faults()

    def failed(self) -> list[Outage]:
        """Outages whose pause or resume failed (a target that failed to resume is left to its dead-man switch)."""
        return self.pauses.failed()

    def active(self) -> list[Outage]:
        """Outages still pausing their target."""
        return self.pauses.active()

    def install_signal_handlers(self, on_stop: Callable[[], None]) -> None:
        """On SIGINT/SIGTERM: revert every fault, then call ``on_stop``."""
        loop = asyncio.get_running_loop()

        def handle(signum: signal.Signals) -> None:
            log.warning("%s: resuming every paused target before stopping", signum.name)

            async def stop() -> None:
                try:
                    await self.resume_all(f"signal {signum.name}")
                finally:
                    on_stop()

            loop.create_task(stop())  # noqa: RUF006 - the loop is about to stop; nothing awaits it

        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, handle, signum)
