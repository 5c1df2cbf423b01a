"""Outages with guaranteed resume: the one place that pauses targets.

:class:`OutageController` pauses a target for a duration and resumes it when the
duration ends, when asked early, when the controller stops (normal end, exception,
SIGINT/SIGTERM) — and, if the controller was killed outright, when the next controller
starts (:meth:`OutageController.recover`, from the journal and, for docker, from the
labelled containers found paused). Every pause is journaled and fsynced before it
happens. No outage lasts longer than ``max_outage_s``, whatever was asked.

Overlapping outages of one target are allowed: the target stays paused until the last
of them ends.
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
from collections.abc import Callable, Mapping
from typing import Any, Self

from chaos.backends.base import BackendError, FaultBackend, TargetRef, TargetState
from chaos.journal import Journal, controller_alive, utc_now
from retrystorm.errors import UserError

log = logging.getLogger(__name__)

DEFAULT_MAX_OUTAGE_S = 600.0


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
        backends: Mapping[str, FaultBackend],
        journal: Journal,
        *,
        max_outage_s: float = DEFAULT_MAX_OUTAGE_S,
        listener: OutageListener | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not backends:
            raise ValueError("at least one backend is needed")
        self.backends = dict(backends)
        self.journal = journal
        self.max_outage_s = max_outage_s
        self.listener = listener or OutageListener()
        self.clock = clock
        self._outages: dict[str, Outage] = {}
        self._timers: dict[str, asyncio.Task[None]] = {}
        self._holders: dict[TargetRef, set[str]] = {}
        self._ids = itertools.count(1)
        self._lock = asyncio.Lock()

    async def __aenter__(self) -> Self:
        await self.recover()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.resume_all("shutdown")

    def backend_for(self, name: str | None) -> FaultBackend:
        """The named backend, or the only one; an unknown name lists the known ones."""
        if name is None and len(self.backends) == 1:
            return next(iter(self.backends.values()))
        if name not in self.backends:
            raise UserError(f"backend: got {name!r}, expected one of {', '.join(self.backends)}")
        return self.backends[name]

    async def recover(self) -> list[TargetRef]:
        """Resume what a killed controller left paused; return what was resumed."""
        resumed: list[TargetRef] = []
        held_elsewhere: set[TargetRef] = set()
        for pending in self.journal.pending():
            if controller_alive(pending.controller) and pending.controller != self.journal.controller:
                held_elsewhere.add(pending.ref)  # another live controller owns this outage
                continue
            backend = self.backends.get(pending.ref.backend)
            if backend is None:
                log.warning("journal names %s but that backend is not configured here", pending.ref.describe())
                continue
            if await self._recover_ref(backend, pending.ref, pending.outage):
                resumed.append(pending.ref)
        for backend in self.backends.values():
            for ref in await asyncio.to_thread(backend.stray_paused):
                if ref not in resumed and ref not in held_elsewhere and await self._recover_ref(backend, ref, "stray"):
                    resumed.append(ref)
        self.journal.compact()
        for ref in resumed:
            log.warning("resumed %s, left paused by a controller that did not finish", ref.describe())
        return resumed

    async def _recover_ref(self, backend: FaultBackend, ref: TargetRef, outage_id: str) -> bool:
        try:
            await self._resume_ref(backend, ref, outage_id, reason="recovered")
        except BackendError as error:
            log.error("could not resume %s: %s", ref.describe(), error)  # noqa: TRY400 - the message says it all
            return False
        return True

    async def pause(self, target: str, duration_s: float, *, backend: str | None = None) -> Outage:
        """Pause ``target`` for ``duration_s`` (at most ``max_outage_s``) and schedule its resume."""
        if not duration_s > 0:
            raise UserError(f"duration: got {duration_s}, expected a duration > 0")
        chosen = self.backend_for(backend)
        refs = await asyncio.to_thread(chosen.resolve, target)
        async with self._lock:
            outage = Outage(
                id=f"o{next(self._ids)}",
                target=target,
                backend=chosen.name,
                refs=refs,
                requested_s=duration_s,
                duration_s=min(duration_s, self.max_outage_s),
                started_utc=utc_now(),
                started_monotonic=self.clock(),
            )
            if outage.clamped:
                log.warning(
                    "outage of %s clamped from %.1f s to the maximum %.1f s", target, duration_s, self.max_outage_s
                )
            for ref in refs:
                self.journal.append("pause", ref, outage.id, duration_s=outage.duration_s)
                holders = self._holders.setdefault(ref, set())
                holders.add(outage.id)
                try:
                    await asyncio.to_thread(chosen.pause, ref)
                except BackendError as error:
                    outage.status, outage.error = OutageStatus.FAILED, str(error)
                    await self._release(outage, "pause failed")
                    raise
            self._outages[outage.id] = outage
            self._timers[outage.id] = asyncio.create_task(self._expire(outage), name=f"expire-{outage.id}")
        self.listener.outage_started(outage)
        return outage

    async def _expire(self, outage: Outage) -> None:
        await asyncio.sleep(max(0.0, outage.started_monotonic + outage.duration_s - self.clock()))
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
        backend = self.backends[outage.backend]
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
            await asyncio.to_thread(backend.resume, ref)
        except BackendError as failure:
            error = str(failure)
            raise
        finally:
            self.journal.append(
                "resume", ref, outage_id, reason=reason, status="failed" if error else "ok", error=error
            )

    async def resume_all(self, reason: str) -> None:
        """End every active outage (used on shutdown and on signals)."""
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

    def active(self) -> list[Outage]:
        """Outages still pausing their target."""
        return [o for o in self._outages.values() if o.status is OutageStatus.ACTIVE]

    async def states(self) -> dict[str, TargetState]:
        """``backend:target`` -> the state of its first instance, for every known target."""
        found: dict[str, TargetState] = {}
        for backend in self.backends.values():
            for target in await asyncio.to_thread(backend.targets):
                refs = await asyncio.to_thread(backend.resolve, target)
                found[f"{backend.name}:{target}"] = await asyncio.to_thread(backend.state, refs[0])
        return found

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
