"""Outages with guaranteed resume: the one place that pauses targets.

:class:`OutageController` pauses a :class:`~retrystorm.chaos.targets.FaultTarget` for a duration
and resumes it when the duration ends, when asked early, when the controller stops
(normal end, exception, SIGINT/SIGTERM). No outage lasts longer than ``max_outage_s``,
whatever was asked, and never longer than :data:`MAX_OUTAGE_CEILING_S`.

If the controller is killed outright, two nets remain. First, before each pause a
*dead-man switch* is armed (:class:`DeadManSwitch`, in production an independent
watchdog process, :mod:`retrystorm.chaos.watchdog`) that resumes the target at its deadline
whatever happens to this process; a pause whose switch cannot be armed does not
happen. Second, every pause is journaled and fsynced before it happens, and the next
controller resumes what the journal shows left paused (:meth:`OutageController.recover`,
also from the labelled containers found paused).

Overlapping outages of one target are allowed: the target stays paused until the last
of them ends.

CPU capacity cuts go through the same controller, with the same nets:
:meth:`OutageController.throttle` (:mod:`retrystorm.chaos.throttles` says how) returns a
:class:`~retrystorm.chaos.throttles.Throttle` whose ``end()`` restores the target's original settings;
signals, shutdown and :meth:`OutageController.recover` restore throttles as they resume pauses.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import enum
import itertools
import logging
import signal
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, Self

from retrystorm.chaos.backends.base import BackendError, FaultBackend, TargetRef
from retrystorm.chaos.journal import Journal, controller_alive, utc_now
from retrystorm.chaos.targets import FaultTarget
from retrystorm.chaos.throttles import Throttle, ThrottleKeeper
from retrystorm.durations import format_duration
from retrystorm.errors import UserError

log = logging.getLogger(__name__)

DEFAULT_MAX_OUTAGE_S = 600.0
#: No controller may be configured to hold a target longer than this.
MAX_OUTAGE_CEILING_S = 3600.0


def check_max_outage(seconds: float) -> float:
    """``seconds`` if it is a maximum outage a controller may be given (``> 0`` and at most 1 h)."""
    if not 0 < seconds <= MAX_OUTAGE_CEILING_S:
        raise UserError(
            f"max outage: got {format_duration(seconds)}, expected a duration > 0 and at most "
            f"{format_duration(MAX_OUTAGE_CEILING_S)}"
        )
    return seconds


class Disarm(Protocol):
    """An armed dead-man switch; :meth:`disarm` when the pause ended normally."""

    def disarm(self) -> None:
        """Stand the switch down without acting (idempotent, never raises)."""


class DeadManSwitch(Protocol):
    """Resumes a paused ref after ``hold_s`` even if the controller that paused it is gone."""

    def arm(self, ref: TargetRef, outage_id: str, hold_s: float) -> Disarm:
        """Arm before the pause; raise :class:`BackendError` if it cannot be armed (then nothing is paused)."""
        ...


class OutageStatus(enum.StrEnum):
    """Life of an outage."""

    ACTIVE = "active"
    RESUMED = "resumed"
    FAILED = "failed"


@dataclasses.dataclass(slots=True)
class Outage:
    """One pause of one target, from pause to resume."""

    id: str
    target: str
    backend: str
    refs: list[TargetRef]
    requested_s: float
    duration_s: float
    started_utc: str
    started_monotonic: float
    status: OutageStatus = OutageStatus.ACTIVE
    ended_utc: str | None = None
    ended_monotonic: float | None = None
    end_reason: str | None = None
    error: str | None = None

    @property
    def clamped(self) -> bool:
        """True when the requested duration exceeded the maximum outage."""
        return self.duration_s < self.requested_s

    def to_json(self) -> dict[str, Any]:
        """The outage as the chaos API and run reports show it."""
        return {
            "id": self.id,
            "target": self.target,
            "backend": self.backend,
            "instances": [ref.ident for ref in self.refs],
            "requested_s": self.requested_s,
            "duration_s": self.duration_s,
            "clamped": self.clamped,
            "status": str(self.status),
            "started_utc": self.started_utc,
            "ended_utc": self.ended_utc,
            "end_reason": self.end_reason,
            "error": self.error,
        }


class OutageListener:
    """Hooks for metrics and annotations; override what you need."""

    def outage_started(self, outage: Outage) -> None:
        """``outage`` has paused its target."""

    def outage_ended(self, outage: Outage, paused_s: float) -> None:
        """``outage`` ended after ``paused_s`` seconds."""


class OutageController:
    """Pauses targets through backends, journals every pause, and always resumes."""

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
        self.dead_man = dead_man
        self.recovery_backends = {backend.name: backend for backend in recovery_backends}
        self.max_outage_s = check_max_outage(max_outage_s)
        self.listener = listener or OutageListener()
        self.clock = clock
        self.sleep = sleep
        #: How backends (synchronous) are called: in a worker thread, so the event loop never blocks.
        self.run_blocking = run_blocking
        self._outages: dict[str, Outage] = {}
        self._backends: dict[str, FaultBackend] = {}
        self._switches: dict[str, list[Disarm]] = {}
        self._timers: dict[str, asyncio.Task[None]] = {}
        self._holders: dict[TargetRef, set[str]] = {}
        self._ids = itertools.count(1)
        self._lock = asyncio.Lock()
        self.throttles = ThrottleKeeper(
            journal=journal,
            dead_man=dead_man,  # type: ignore[arg-type] # a switch that takes undo= (WatchdogSwitch does)
            max_outage_s=lambda: self.max_outage_s,
            clock=clock,
            sleep=sleep,
            run_blocking=run_blocking,
            recovery_backends=self.recovery_backends,
        )

    async def throttle(self, target: FaultTarget, capacity: float, duration_s: float) -> Throttle:
        """Cut ``target``'s CPU to ``capacity`` (in (0, 1]) of its allowance for ``duration_s``; ``end()`` restores.

        Journaled and guarded by a dead-man watchdog like a pause (:mod:`retrystorm.chaos.throttles`). Refusals
        (capacity out of range, a target that cannot be throttled, one throttled already) are
        :class:`~retrystorm.errors.UserError`, naming what would make it possible.
        """
        return await self.throttles.start(target, capacity, duration_s)

    async def __aenter__(self) -> Self:
        await self.recover()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.resume_all("shutdown")

    async def recover(self) -> list[TargetRef]:
        """Resume what a killed controller left paused, restore what it left throttled; return those refs."""
        restored = await self.throttles.recover()
        resumed: list[TargetRef] = []
        held_elsewhere: set[TargetRef] = set()
        for pending in self.journal.pending():
            if controller_alive(pending.controller) and pending.controller != self.journal.controller:
                held_elsewhere.add(pending.ref)  # another live controller owns this outage
                continue
            backend = self.recovery_backends.get(pending.ref.backend)
            if backend is None:
                log.warning("journal names %s but that backend is not configured here", pending.ref.describe())
                continue
            if await self._recover_ref(backend, pending.ref, pending.outage):
                resumed.append(pending.ref)
        for backend in self.recovery_backends.values():
            for ref in await self.run_blocking(backend.stray_paused):
                if ref not in resumed and ref not in held_elsewhere and await self._recover_ref(backend, ref, "stray"):
                    resumed.append(ref)
        self.journal.compact()
        for ref in resumed:
            log.warning("resumed %s, left paused by a controller that did not finish", ref.describe())
        return [*restored, *resumed]

    async def _recover_ref(self, backend: FaultBackend, ref: TargetRef, outage_id: str) -> bool:
        try:
            await self._resume_ref(backend, ref, outage_id, reason="recovered")
        except BackendError as error:
            log.error("could not resume %s: %s", ref.describe(), error)  # noqa: TRY400 - the message says it all
            return False
        return True

    async def pause(self, target: FaultTarget, duration_s: float) -> Outage:
        """Pause ``target`` for ``duration_s`` (at most ``max_outage_s``) and schedule its resume.

        For each concrete ref: journal the pause and arm its dead-man switch; then freeze them
        all (:meth:`~retrystorm.chaos.backends.base.FaultBackend.pause_all`), and journal and guard any
        ref the freeze found besides them (a process group's newly forked members).
        """
        if not duration_s > 0:
            raise UserError(f"duration: got {duration_s}, expected a duration > 0")
        backend = target.backend
        refs = await self.run_blocking(target.refs)
        async with self._lock:
            outage = Outage(
                id=f"o{next(self._ids)}",
                target=target.name,
                backend=backend.name,
                refs=refs,
                requested_s=duration_s,
                duration_s=min(duration_s, self.max_outage_s),
                started_utc=utc_now(),
                started_monotonic=self.clock(),
            )
            if outage.clamped:
                log.warning(
                    "outage of %s clamped from %.1f s to the maximum %.1f s", target.name, duration_s, self.max_outage_s
                )
            self._backends[outage.id] = backend
            self._switches[outage.id] = []
            try:
                await self._guard(outage, refs)
                found = await self.run_blocking(backend.pause_all, target.name, list(refs))
                outage.refs = [*refs, *found]
                await self._guard(outage, found)  # frozen already: members forked since resolve
            except BackendError as error:
                outage.status, outage.error = OutageStatus.FAILED, str(error)
                await self._release(outage, "pause failed")
                raise
            self._outages[outage.id] = outage
            self._timers[outage.id] = asyncio.create_task(self._expire(outage), name=f"expire-{outage.id}")
        self.listener.outage_started(outage)
        return outage

    async def _guard(self, outage: Outage, refs: Sequence[TargetRef]) -> None:
        """Journal the pause of each ref and arm its dead-man switch (``BackendError`` if one cannot be armed)."""
        for ref in refs:
            self.journal.append("pause", ref, outage.id, duration_s=outage.duration_s)
            self._holders.setdefault(ref, set()).add(outage.id)
            switch = await self.run_blocking(self.dead_man.arm, ref, outage.id, outage.duration_s)
            self._switches[outage.id].append(switch)

    async def _expire(self, outage: Outage) -> None:
        await self.sleep(max(0.0, outage.started_monotonic + outage.duration_s - self.clock()))
        await self.resume(outage.id, reason="max_outage" if outage.clamped else "scheduled")

    async def resume(self, outage_id: str, *, reason: str = "early") -> Outage:
        """End an outage now; resuming an ended outage is a no-op."""
        if outage_id not in self._outages:
            raise UserError(f"no outage {outage_id!r}; known: {', '.join(self._outages) or 'none'}")
        outage = self._outages[outage_id]
        timer = self._timers.pop(outage_id, None)
        if timer is not None and timer is not asyncio.current_task():
            timer.cancel()
        async with self._lock:
            if outage.status is OutageStatus.ACTIVE:
                await self._release(outage, reason)
        return outage

    async def _release(self, outage: Outage, reason: str) -> None:
        backend = self._backends[outage.id]
        errors = []
        for ref in outage.refs:
            holders = self._holders.get(ref, set())
            holders.discard(outage.id)
            if holders:
                continue  # an overlapping outage still holds this target
            self._holders.pop(ref, None)
            try:
                await self._resume_ref(backend, ref, outage.id, reason=reason)
            except BackendError as error:
                errors.append(str(error))
        switches = self._switches.pop(outage.id, [])
        if not errors:  # after the resume: had this process died in between, the switches would still resume
            for switch in switches:
                switch.disarm()
        outage.ended_utc = utc_now()
        outage.ended_monotonic = self.clock()
        outage.end_reason = reason
        if errors:
            outage.status, outage.error = OutageStatus.FAILED, "; ".join(errors)
        elif outage.status is OutageStatus.ACTIVE:
            outage.status = OutageStatus.RESUMED
        self.listener.outage_ended(outage, outage.ended_monotonic - outage.started_monotonic)

    async def _resume_ref(self, backend: FaultBackend, ref: TargetRef, outage_id: str, *, reason: str) -> None:
        error: str | None = None
        try:
            await self.run_blocking(backend.resume, ref)
        except BackendError as failure:
            error = str(failure)
            raise
        finally:
            self.journal.append(
                "resume", ref, outage_id, reason=reason, status="failed" if error else "ok", error=error
            )

    async def resume_all(self, reason: str) -> None:
        """End every active outage and throttle (used on shutdown and on signals)."""
        await self.throttles.end_all(reason)
        active = self.active()
        if active:
            targets = ", ".join(sorted({outage.target for outage in active}))
            log.warning("%s: resuming %d paused target(s): %s", reason, len(active), targets)
        for outage_id, outage in list(self._outages.items()):
            if outage.status is OutageStatus.ACTIVE:
                with contextlib.suppress(BackendError):
                    await self.resume(outage_id, reason=reason)
        self.journal.compact()

    def outages(self) -> list[Outage]:
        """Every outage of this controller, oldest first."""
        return list(self._outages.values())

    def failed(self) -> list[Outage]:
        """Outages whose pause or resume failed (a target that failed to resume is left to its dead-man switch)."""
        return [o for o in self._outages.values() if o.status is OutageStatus.FAILED]

    def active(self) -> list[Outage]:
        """Outages still pausing their target."""
        return [o for o in self._outages.values() if o.status is OutageStatus.ACTIVE]

    def install_signal_handlers(self, on_stop: Callable[[], None]) -> None:
        """On SIGINT/SIGTERM: resume every outage, then call ``on_stop``."""
        loop = asyncio.get_running_loop()

        def handle(signum: signal.Signals) -> None:
            log.warning("%s: resuming every paused target before stopping", signum.name)

            async def stop() -> None:
                await self.resume_all(f"signal {signum.name}")
                on_stop()

            loop.create_task(stop())  # noqa: RUF006 - the loop is about to stop; nothing awaits it

        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, handle, signum)
