"""The live ``delay``, ``loss``, ``hang`` and ``reset`` triggers: toxics on the fault proxy in front of the target;
and ``partition``, where a stack plays it (across hosts, through the chaos agent of the partitioned host).

A scenario's network windows become levels per kind and target
(:func:`~retrystorm.experiment.scenario.timeline.levels` with the network kinds' overlap rule,
:func:`~retrystorm.experiment.scenario.network.rank`: the longest latency, the highest probability holds). At each
change :class:`NetworkPlayer` ends the toxic in force for that kind and target and sets the next one for as long as
it holds. Each toxic is set with its own deadline, which the proxy enforces by itself
(:meth:`retrystorm.chaos.network.proxy.Proxy.set`): that is the dead-man switch of a network fault, armed in the act
that injects it, so a runner that is killed leaves nothing in force past the window's end (plus
:data:`DEADLINE_GRACE_S`). :meth:`NetworkPlayer.restore` ends whatever is still in force, on every exit path;
:meth:`NetworkPlayer.actual` gives the windows as they happened, which the run records and judges recovery after.
A partition is played the same way through :class:`Partitions` (its windows merge, as pauses do), each one asked
to hold until its level ends plus :data:`DEADLINE_GRACE_S`, a deadline its agent's watchdog enforces.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import time
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from typing import Protocol

from retrystorm.chaos.backends.base import BackendError
from retrystorm.chaos.network.toxics import Toxic, toxic_from_json
from retrystorm.experiment.scenario import TriggerWindow
from retrystorm.experiment.scenario.network import PROXY_KINDS, rank
from retrystorm.experiment.scenario.timeline import levels
from retrystorm.runner.errors import RunFailedError
from retrystorm.runner.runtime import Runtime

#: A toxic's deadline on the proxy is the end of its level plus this: the runner's on-time end normally wins.
DEADLINE_GRACE_S = 0.5
PARTITION = "partition"


class Toxics(Protocol):
    """Where toxics are set and cleared (a fault proxy's control socket; blocking calls)."""

    def set(self, toxic_id: str, toxic: Toxic, until_monotonic: float) -> None:
        """Put ``toxic`` in force until the CLOCK_MONOTONIC time ``until_monotonic``."""
        ...

    def clear(self, toxic_id: str) -> bool:
        """End ``toxic_id`` now; whether it was in force."""
        ...


class Partitions(Protocol):
    """Where partitions are started and ended (a chaos agent's ``POST``/``DELETE /network``; blocking calls)."""

    def start_partition(self, target: str, hold_s: float) -> str:
        """Cut the host of ``target`` off for at most ``hold_s``; the partition's id."""
        ...

    def end_partition(self, fault_id: str) -> None:
        """Heal it now."""
        ...


@dataclasses.dataclass(frozen=True, slots=True)
class NetworkChange:
    """At ``at_s``, ``window`` (``None``: none) comes into force for ``kind`` on ``target``; it holds ``hold_s``."""

    at_s: float
    kind: str
    target: str
    window: TriggerWindow | None
    hold_s: float


def network_changes(triggers: Sequence[TriggerWindow], kinds: AbstractSet[str] = PROXY_KINDS) -> list[NetworkChange]:
    """Every level change of the windows of ``kinds``, per kind and target, in time order, with how long each
    holds."""
    found: list[NetworkChange] = []
    groups = {(w.kind, w.target) for w in triggers if w.kind in kinds}
    for kind, target in sorted(groups):
        changed = levels([w for w in triggers if (w.kind, w.target) == (kind, target)], rank)
        for index, level in enumerate(changed):
            until = changed[index + 1].at_s if index + 1 < len(changed) else level.at_s
            found.append(NetworkChange(level.at_s, kind, target, level.window, until - level.at_s))
    return sorted(found, key=lambda change: change.at_s)


def toxic_of(window: TriggerWindow) -> Toxic:
    """The proxy's toxic for a ``delay``, ``loss``, ``hang`` or ``reset`` window (its settings, same names)."""
    return toxic_from_json({"kind": window.kind, **window.settings()})


class NetworkPlayer:
    """One strategy's network windows, played as toxics on ``toxics`` (see the module docstring)."""

    def __init__(
        self,
        triggers: Sequence[TriggerWindow],
        toxics: Toxics | None,
        runtime: Runtime,
        *,
        partitions: Partitions | None = None,
    ) -> None:
        self.changes = network_changes(triggers, PROXY_KINDS | ({PARTITION} if partitions is not None else set()))
        if any(change.kind != PARTITION for change in self.changes) and toxics is None:
            raise ValueError("network triggers need a fault proxy in front of the target (the stack refuses first)")
        self.toxics = toxics
        self.partitions = partitions
        self.runtime = runtime
        self._ids = itertools.count(1)
        #: (kind, target) -> the id of the toxic in force.
        self.in_force: dict[tuple[str, str], str] = {}
        #: Each change as applied: (real time, the change).
        self.applied: list[tuple[float, NetworkChange]] = []
        self.restored_at: float | None = None

    async def play(self, t0: float, ready: asyncio.Event | None = None) -> None:
        """Apply each change at its time after ``t0``, once ``ready`` is set."""
        for change in self.changes:
            await self.runtime.sleep_until(t0 + change.at_s)
            if ready is not None:
                await ready.wait()
            await self._end((change.kind, change.target))
            if change.window is not None:
                await self._start(change, change.window)
            self.applied.append((self.runtime.clock(), change))

    def _proxy(self) -> Toxics:
        if self.toxics is None:
            raise ValueError("no fault proxy")  # refused when made: changes need one
        return self.toxics

    async def _start(self, change: NetworkChange, window: TriggerWindow) -> None:
        toxic_id = f"{change.kind}-{next(self._ids)}"
        until = time.monotonic() + change.hold_s + DEADLINE_GRACE_S
        try:
            if self.partitions is not None and change.kind == PARTITION:
                hold_s = change.hold_s + DEADLINE_GRACE_S
                toxic_id = await self.runtime.run_blocking(self.partitions.start_partition, change.target, hold_s)
            else:
                await self.runtime.run_blocking(self._proxy().set, toxic_id, toxic_of(window), until)
        except BackendError as error:
            where = "the chaos agent" if change.kind == PARTITION else "the fault proxy"
            raise RunFailedError(f"{where} did not start {window.effect()}: {error}") from error
        self.in_force[(change.kind, change.target)] = toxic_id

    async def _end(self, key: tuple[str, str]) -> str | None:
        """End the toxic in force for ``key``: the error's text, or ``None``."""
        toxic_id = self.in_force.pop(key, None)
        if toxic_id is None:
            return None
        try:
            if self.partitions is not None and key[0] == PARTITION:
                await self.runtime.run_blocking(self.partitions.end_partition, toxic_id)
            else:
                await self.runtime.run_blocking(self._proxy().clear, toxic_id)
        except BackendError as error:
            return f"{key[0]} of {key[1]!r}: {error}"
        return None

    async def restore(self) -> None:
        """End every toxic still in force; one that cannot be ended is reported after the others are tried
        (the proxy ends it at its deadline, and a proxy that is gone carries no traffic)."""
        if self.restored_at is None and self.applied:
            self.restored_at = self.runtime.clock()
        errors = [error for key in list(self.in_force) if (error := await self._end(key)) is not None]
        if errors:
            raise RunFailedError("could not end every fault in the network (each ends at its deadline): "
                                 + "; ".join(errors))  # fmt: skip

    def actual(self, t0: float) -> list[TriggerWindow]:
        """The windows in force as they happened, relative to ``t0``: each level from its change to the next."""
        now = self.restored_at if self.restored_at is not None else self.runtime.clock()
        found: list[TriggerWindow] = []
        for index, (at, change) in enumerate(self.applied):
            if change.window is None:
                continue
            key = (change.kind, change.target)
            later = [t for t, c in self.applied[index + 1 :] if (c.kind, c.target) == key]
            end = later[0] if later else now
            found.append(dataclasses.replace(change.window, start_s=at - t0, end_s=end - t0))
        return sorted(found, key=lambda window: (window.start_s, window.end_s))
