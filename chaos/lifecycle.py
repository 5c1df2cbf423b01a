"""One fault lifecycle: inject, guard with a dead-man switch, expire, revert, recover from the journal.

Every kind of fault retrystorm plays (a pause, a CPU cut, and the network faults to come) has the same
shape, written once here in :class:`FaultKeeper`; what differs is a small :class:`FaultKind`, data plus the
few methods that touch the world, as a retry strategy is data plus one method.

**The order of one fault** (:meth:`FaultKeeper.start`):

1. ``plan``: the kind reads the target and returns its *effects*, one per thing it changes (a process,
   a throttle group, a cgroup, a container). Nothing changes yet. Each effect has a ``ref``
   (:class:`~retrystorm.chaos.backends.base.TargetRef`: what the journal and the watchdog name) and an
   ``undo()``: the JSON that reverts it without this process (the original settings).
2. For each effect: journal ``start_op`` (fsynced) with its undo, ``prepare`` it (make what is guarded,
   such as an empty throttle group), and arm its dead-man switch
   (:class:`DeadManSwitch`, in production :class:`retrystorm.chaos.deadman.WatchdogSwitch`), which
   reverts it ``hold_s`` after it took effect even if this process is SIGKILLed. A switch that cannot be
   armed means no fault.
3. ``inject``: the kind makes all its effects happen at once and returns any effect it found in force
   besides them (a process group's members forked since the plan), which are journaled and guarded in
   turn; then ``confirm`` checks that the fault took effect (every process of a pause stopped, read from
   ``/proc``): a fault that changed nothing is an error, reverted, never an outage.
4. The clock starts **when the fault is in force** (:attr:`Fault.in_force_monotonic`): a 12 s pause
   freezes for 12 s however long arming and freezing took; each switch's deadline is moved to count from
   the same instant (:meth:`Armed.count_from`). Until then a switch allows the injection a few seconds
   (:data:`retrystorm.chaos.deadman.INJECT_ALLOWANCE_S`), so it never acts before the fault has begun.
5. At the deadline (or early: :meth:`FaultKeeper.end`, :meth:`FaultKeeper.end_all` on shutdown and on
   SIGINT/SIGTERM), each effect is reverted and journaled ``end_op``; then its switch is stood down. A
   revert that fails leaves its switch armed (the watchdog retries at its deadline) and the journal pending.
6. :meth:`FaultKeeper.recover`, at a controller's start and in ``retrystorm chaos recover``: every
   journaled ``start_op`` with no later successful ``end_op`` whose controller is gone is reverted from its
   undo (:meth:`FaultKind.recover`), and so is what a backend finds in force with no owner
   (:meth:`FaultKind.strays`).

**Overlap.** A kind that ``shares`` (a pause) lets faults of one target overlap: an effect is reverted
when the last fault holding its ref ends. Any other kind refuses a second fault of a target in force.

**Bounds.** A fault lasts at most the controller's maximum; at most :data:`MAX_ACTIVE_PER_TARGET`
faults of one kind hold one target and :data:`MAX_ACTIVE_TOTAL` are in force at once: more is
:class:`TooManyFaultsError` (HTTP 429 in the chaos API).

**Adding a kind** (network delay, loss, partition): implement :class:`FaultKind` (``plan`` returning
effects whose ``undo()`` says how to revert without this process; ``inject``; ``confirm``; ``revert``;
``recover`` from an undo), register its journal ops (:func:`retrystorm.chaos.journal.register_fault_ops`),
give the watchdog a guard for its undo (:mod:`retrystorm.chaos.watchdog.guards`), and hand it to
:meth:`retrystorm.chaos.controller.OutageController.keeper`, which ends and recovers it with the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import enum
import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Generic, Protocol, TypeVar

from retrystorm.chaos.backends.base import BackendError, TargetRef
from retrystorm.chaos.journal import Journal, controller_alive, utc_now
from retrystorm.chaos.targets import FaultTarget
from retrystorm.errors import UserError

log = logging.getLogger(__name__)

#: At most this many faults of one kind hold one target at once (overlapping pauses).
MAX_ACTIVE_PER_TARGET = 8
#: At most this many faults of one kind are in force at once in one controller.
MAX_ACTIVE_TOTAL = 64


class FaultStatus(enum.StrEnum):
    """Life of a fault: in force, then reverted on time (resumed, restored) or failed."""

    ACTIVE = "active"
    RESUMED = "resumed"
    RESTORED = "restored"
    FAILED = "failed"


class TooManyFaultsError(UserError):
    """A fault past a documented cap (HTTP 429): end one first."""


class Armed(Protocol):
    """An armed dead-man switch."""

    def disarm(self) -> None:
        """Stand the switch down without acting (idempotent, never raises)."""

    def count_from(self, start_monotonic: float) -> None:
        """Count the hold from ``start_monotonic`` (when the fault took effect) instead of from the arming."""


class DeadManSwitch(Protocol):
    """Reverts an effect ``hold_s`` after it took effect even if the controller that made it is gone."""

    def arm(self, ref: TargetRef, fault_id: str, hold_s: float, *, fault: str, undo: dict[str, Any]) -> Armed:
        """Arm before the effect; raise :class:`BackendError` if it cannot be armed (then nothing happens)."""
        ...


class Effect(Protocol):
    """One thing a fault changes: ``ref`` names it, :meth:`undo` reverts it without this process."""

    @property
    def ref(self) -> TargetRef:
        """What the journal and the watchdog name."""
        ...

    def undo(self) -> dict[str, Any]:
        """What reverts it, as JSON (journal record, watchdog order); ``{}`` when the ref says it all."""
        ...


E = TypeVar("E", bound=Effect)


class FaultKind(Protocol[E]):
    """How one kind of fault touches the world (blocking methods, called off the event loop)."""

    #: The journal op written before the fault, and the one written when it is reverted.
    start_op: str
    end_op: str
    #: The status of a fault reverted on time (``resumed``, ``restored``), and what a target is while it is in force.
    ended_status: FaultStatus
    in_force_word: str
    #: Whether faults of one target may overlap, sharing their effects.
    shares: bool

    def plan(self, target: FaultTarget, fault_id: str, params: Mapping[str, Any]) -> list[E]:
        """The effects of this fault on ``target``; nothing changes yet (refusals: ``UserError``)."""
        ...

    def prepare(self, effect: E) -> None:
        """Make what the switch will guard, changing nothing the target feels."""
        ...

    def inject(self, target: FaultTarget, effects: list[E]) -> list[E]:
        """Make the effects happen; return the effects found in force besides them (to guard too)."""
        ...

    def confirm(self, target: FaultTarget, effects: list[E]) -> None:
        """Raise :class:`~retrystorm.chaos.backends.base.FaultHadNoEffectError` unless the fault took effect."""
        ...

    def revert(self, effect: E) -> str:
        """Undo one effect now (idempotent); what was found (``resumed``, ``restored``, ``gone``)."""
        ...

    def recover(self, ref: TargetRef, undo: dict[str, Any]) -> str:
        """Undo a journaled effect whose controller is gone; raises :class:`BackendError`."""
        ...

    def strays(self) -> list[TargetRef]:
        """Effects found in force that no journal names and this kind may revert (labelled paused containers)."""
        ...


@dataclasses.dataclass(slots=True, kw_only=True)
class Fault:
    """One fault of one target, from injection to revert."""

    id: str
    target: str
    backend: str
    requested_s: float
    duration_s: float
    started_utc: str
    started_monotonic: float
    effects: list[Any]
    status: FaultStatus = FaultStatus.ACTIVE
    #: When the fault took effect (every effect injected and confirmed): its clock starts here.
    in_force_monotonic: float | None = None
    in_force_utc: str | None = None
    #: When the last effect was reverted: the fault was in force from ``in_force`` to here.
    reverted_monotonic: float | None = None
    ended_utc: str | None = None
    ended_monotonic: float | None = None
    end_reason: str | None = None
    error: str | None = None

    @property
    def refs(self) -> list[TargetRef]:
        """What it changed, as the journal names them."""
        return [effect.ref for effect in self.effects]

    @property
    def clamped(self) -> bool:
        """True when the requested duration exceeded the controller's maximum."""
        return self.duration_s < self.requested_s

    @property
    def in_force_s(self) -> float | None:
        """How long it was in force (``None`` until it took effect and was reverted)."""
        if self.in_force_monotonic is None or self.reverted_monotonic is None:
            return None
        return self.reverted_monotonic - self.in_force_monotonic

    def timing_json(self) -> dict[str, Any]:
        """The fields every kind reports."""
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
            "in_force_utc": self.in_force_utc,
            "in_force_s": None if self.in_force_s is None else round(self.in_force_s, 3),
            "ended_utc": self.ended_utc,
            "end_reason": self.end_reason,
            "error": self.error,
        }


F = TypeVar("F", bound=Fault)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class World:
    """What a keeper takes from its controller: journal, switch, limits, time, and how to call blocking code."""

    journal: Journal
    dead_man: DeadManSwitch
    max_duration_s: Callable[[], float]
    clock: Callable[[], float]
    sleep: Callable[[float], Awaitable[None]]
    run_blocking: Callable[..., Awaitable[Any]]


class FaultKeeper(Generic[E, F]):
    """The faults of one kind in one controller: start, end on time, end all, recover (module docstring)."""

    def __init__(
        self,
        kind: FaultKind[E],
        world: World,
        make: Callable[..., F],
        prefix: str,
        *,
        on_end: Callable[[F], None] | None = None,
    ) -> None:
        self.kind = kind
        self._on_end = on_end
        self.world = world
        self._make = make
        self._prefix = prefix
        self._faults: dict[str, F] = {}
        self._switches: dict[str, list[Armed]] = {}
        self._timers: dict[str, asyncio.Task[None]] = {}
        self._holders: dict[TargetRef, set[str]] = {}
        self._ids = itertools.count(1)
        self._lock = asyncio.Lock()

    async def start(self, target: FaultTarget, duration_s: float, **params: Any) -> F:
        """Inject a fault of ``target`` for ``duration_s`` (clamped to the maximum) in the order above."""
        if not duration_s > 0:
            raise UserError(f"duration: got {duration_s}, expected a duration > 0")
        self._check_room(target)
        self.world.journal.check_writable()  # a journal that filled up since the start: refused before anything
        fault_id = f"{self._prefix}{next(self._ids)}"
        effects = await self.world.run_blocking(self.kind.plan, target, fault_id, params)
        limit = self.world.max_duration_s()
        fault = self._make(
            id=fault_id, target=target.name, backend=target.backend.name, requested_s=duration_s,
            duration_s=min(duration_s, limit), started_utc=utc_now(), started_monotonic=self.world.clock(),
            effects=list(effects), **params,
        )  # fmt: skip
        if fault.clamped:
            log.warning("%s of %s clamped from %.1f s to the maximum %.1f s", fault.id, target.name, duration_s, limit)
        async with self._lock:
            self._faults[fault.id] = fault
            self._switches[fault.id] = []
            try:
                await self._inject(target, fault, effects)
            except BaseException as error:
                fault.error = str(error) or type(error).__name__
                await self._revert(fault, "failed to take effect")
                fault.status = FaultStatus.FAILED
                raise
            self._timers[fault.id] = asyncio.create_task(self._expire(fault), name=f"expire-{fault.id}")
        return fault

    def _check_room(self, target: FaultTarget) -> None:
        active = self.active()
        same = [f.id for f in active if f.target == target.name and f.backend == target.backend.name]
        if same and not self.kind.shares:
            raise UserError(
                f"target {target.name!r}: a {self.kind.start_op} is in force already ({same[0]}); end that one first"
            )
        if len(same) >= MAX_ACTIVE_PER_TARGET:
            raise TooManyFaultsError(
                f"target {target.name!r} has {len(same)} {self.kind.start_op}s in force, the most one target may "
                f"have ({MAX_ACTIVE_PER_TARGET}); end one first"
            )
        if len(active) >= MAX_ACTIVE_TOTAL:  # read at call time: a test may lower it
            raise TooManyFaultsError(
                f"{len(active)} {self.kind.start_op}s are in force, the most a controller holds ({MAX_ACTIVE_TOTAL});"
                " end one first"
            )

    async def _inject(self, target: FaultTarget, fault: F, effects: list[E]) -> None:
        await self._guard(fault, effects)
        found = await self.world.run_blocking(self.kind.inject, target, list(effects))
        fault.effects = [*effects, *found]
        await self._guard(fault, found)  # in force already: members forked since the plan
        await self.world.run_blocking(self.kind.confirm, target, list(fault.effects))
        fault.in_force_monotonic, fault.in_force_utc = self.world.clock(), utc_now()
        for switch in self._switches[fault.id]:
            switch.count_from(fault.in_force_monotonic)

    async def _guard(self, fault: F, effects: Sequence[E]) -> None:
        """Journal each effect with its undo, prepare it, arm its switch (``BackendError`` if one cannot be)."""
        for effect in effects:
            undo = effect.undo()
            extra = {"undo": undo} if undo else {}
            self.world.journal.append(self.kind.start_op, effect.ref, fault.id, duration_s=fault.duration_s, **extra)
            self._holders.setdefault(effect.ref, set()).add(fault.id)
            await self.world.run_blocking(self.kind.prepare, effect)
            switch = await self.world.run_blocking(self._arm, effect.ref, fault.id, fault.duration_s, undo)
            self._switches[fault.id].append(switch)

    def _arm(self, ref: TargetRef, fault_id: str, hold_s: float, undo: dict[str, Any]) -> Armed:
        return self.world.dead_man.arm(ref, fault_id, hold_s, fault=self.kind.start_op, undo=undo)

    async def _expire(self, fault: F) -> None:
        start = fault.in_force_monotonic if fault.in_force_monotonic is not None else fault.started_monotonic
        await self.world.sleep(max(0.0, start + fault.duration_s - self.world.clock()))
        await self.end(fault.id, reason="max_outage" if fault.clamped else "scheduled")

    async def end(self, fault_id: str, *, reason: str = "early") -> F:
        """Revert now; a no-op for a fault that has ended."""
        if fault_id not in self._faults:
            known = ", ".join(self._faults) or "none"
            raise UserError(f"no {self.kind.start_op} {fault_id[:40]!r}; known: {known}")
        fault = self._faults[fault_id]
        timer = self._timers.pop(fault_id, None)
        if timer is not None and timer is not asyncio.current_task():
            timer.cancel()
        async with self._lock:
            if fault.status is FaultStatus.ACTIVE:
                await self._revert(fault, reason)
        return fault

    async def _revert(self, fault: F, reason: str) -> None:
        errors = []
        for effect in fault.effects:
            holders = self._holders.get(effect.ref, set())
            holders.discard(fault.id)
            if holders:
                continue  # an overlapping fault still holds it
            self._holders.pop(effect.ref, None)
            error = await self._revert_one(effect, fault.id, reason)
            if error is not None:
                errors.append(error)
        switches = self._switches.pop(fault.id, [])
        if not errors:  # after the revert: had this process died in between, the switches would still act
            for switch in switches:
                switch.disarm()
        fault.reverted_monotonic = fault.ended_monotonic = self.world.clock()
        fault.ended_utc, fault.end_reason = utc_now(), reason
        if errors:
            fault.status, fault.error = FaultStatus.FAILED, "; ".join(errors)
        elif fault.status is FaultStatus.ACTIVE:
            fault.status = self.kind.ended_status
        if self._on_end is not None:
            self._on_end(fault)

    async def _revert_one(self, effect: E, fault_id: str, reason: str) -> str | None:
        """Revert and journal one effect; the error's text, or ``None``."""
        try:
            await self.world.run_blocking(self.kind.revert, effect)
        except BackendError as failure:
            self.world.journal.append_quietly(
                self.kind.end_op, effect.ref, fault_id, reason=reason, status="failed", error=str(failure)
            )
            return str(failure)
        self.world.journal.append_quietly(self.kind.end_op, effect.ref, fault_id, reason=reason, status="ok")
        return None

    async def end_all(self, reason: str) -> None:
        """End every fault in force (shutdown, signals); one that cannot be reverted stays its watchdog's."""
        for fault in self.active():
            with contextlib.suppress(BackendError):
                await self.end(fault.id, reason=reason)

    async def recover(self, held_elsewhere: set[TargetRef]) -> list[TargetRef]:
        """Revert what controllers no longer running left in force (journal, then strays); return those refs.

        ``held_elsewhere`` gets the refs a live controller holds, which are left alone.
        """
        reverted: list[TargetRef] = []
        journal = self.world.journal
        for pending in journal.pending(self.kind.start_op):
            if pending.controller != journal.controller and controller_alive(pending.controller):
                held_elsewhere.add(pending.ref)
                continue
            if await self._recover_one(pending.ref, pending.fault, pending.undo):
                reverted.append(pending.ref)
        for ref in await self.world.run_blocking(self.kind.strays):
            if ref not in reverted and ref not in held_elsewhere and await self._recover_one(ref, "stray", {}):
                reverted.append(ref)
        return reverted

    async def _recover_one(self, ref: TargetRef, fault_id: str, undo: dict[str, Any]) -> bool:
        try:
            await self.world.run_blocking(self.kind.recover, ref, undo)
        except BackendError as error:
            self.world.journal.append_quietly(
                self.kind.end_op, ref, fault_id, reason="recovered", status="failed", error=str(error)
            )
            log.error("could not revert %s: %s", ref.describe(), error)  # noqa: TRY400 - the message says it all
            return False
        self.world.journal.append_quietly(self.kind.end_op, ref, fault_id, reason="recovered", status="ok")
        log.warning(
            "%s %s, left %s by a controller that did not finish",
            self.kind.ended_status, ref.describe(), self.kind.in_force_word,
        )  # fmt: skip
        return True

    def faults(self) -> list[F]:
        """Every fault of this keeper, oldest first."""
        return list(self._faults.values())

    def active(self) -> list[F]:
        """Faults in force."""
        return [fault for fault in self._faults.values() if fault.status is FaultStatus.ACTIVE]

    def failed(self) -> list[F]:
        """Faults whose injection or revert failed."""
        return [fault for fault in self._faults.values() if fault.status is FaultStatus.FAILED]
