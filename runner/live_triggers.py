"""The live ``slow`` and ``errors`` triggers: set at each change of the timeline's levels, undone on every path.

A run's :class:`~retrystorm.experiment.scenario.Timeline` is drawn once for every strategy, as
the outages are. :class:`LiveTriggers` plays its ``slow`` and ``errors`` windows through
the target's :class:`~retrystorm.runner.interfaces.TargetControls`: at each :func:`levels` change
(overlapping slows: the lowest capacity holds; errors: the highest probability, with its
status) it sets the level in force, ``None`` ending it. :meth:`LiveTriggers.restore`
puts back what the target had before the first change, exactly; the orchestration calls
it in ``finally`` (the run's end, a failure, SIGINT or SIGTERM), before the load and the
target stop. The windows as they happened (real start and end) are what the run records
and judges recovery after.

Which kinds a stack plays live is its :meth:`~retrystorm.runner.interfaces.TargetProvider.trigger_refusal`
and, for ``spike``, its load driver's :meth:`~retrystorm.runner.interfaces.LoadDriver.spike_refusal`;
the messages below say, for what it cannot, what would make it possible. A spike is
played by the load generator itself (:mod:`retrystorm.loadgen.spike_player`, in the single Locust
process or the master, local or compose).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Sequence

from retrystorm.experiment.scenario import ErrorWindow, SlowWindow, TriggerWindow
from retrystorm.experiment.scenario.network import NETWORK_KINDS
from retrystorm.experiment.scenario.timeline import highest_probability, levels, lowest_capacity
from retrystorm.runner.interfaces import TargetControls
from retrystorm.runner.runtime import Runtime

#: The kinds :class:`LiveTriggers` plays, given a target with controls.
PLAYED = frozenset({"slow", "errors"})
FOREIGN_ERRORS = (
    "your own service's answers cannot be changed from outside; an error burst needs a fault proxy in front of it "
    "(not part of retrystorm); retrystorm sim run SCENARIO simulates it with a model:"
)


NETWORK_LATER = (
    "faults in the network are played live by the local backend (retrystorm run without --backend compose), through "
    "a fault proxy in front of the target; this backend does not play them; retrystorm sim run SCENARIO simulates them"
)


def network_refusal(kind: str) -> str | None:
    """What a backend without faults in the network refuses (``None``: not a network kind)."""
    return NETWORK_LATER if kind in NETWORK_KINDS else None


def builtin_refusal(kind: str) -> str | None:
    """What the built-in target cannot play live (``None``: it can; a spike is the load driver's)."""
    return network_refusal(kind)


def foreign_refusal(kind: str) -> str | None:
    """What a service of one's own cannot play live (``None``: it can; a spike is the load driver's; a slow is
    a CPU cut of what a pause freezes, :mod:`retrystorm.runner.throttle_controls`, refused by each backend for what
    it lacks)."""
    return {"errors": FOREIGN_ERRORS}.get(kind) or network_refusal(kind)


@dataclasses.dataclass(frozen=True, slots=True)
class Change:
    """At ``at_s`` (planned, seconds from time 0), ``window`` of one kind comes into force (``None``: none)."""

    at_s: float
    kind: str
    window: TriggerWindow | None


def changes(triggers: Sequence[TriggerWindow]) -> list[Change]:
    """Every level change of the slow and errors windows, in time order (slows first at one instant)."""
    kinds = (("slow", SlowWindow, lowest_capacity), ("errors", ErrorWindow, highest_probability))
    found = [
        Change(level.at_s, kind, level.window)
        for kind, window_type, rank in kinds
        for level in levels([w for w in triggers if isinstance(w, window_type)], rank)
    ]
    return sorted(found, key=lambda change: change.at_s)


class LiveTriggers:
    """One strategy's slow and errors windows, played on ``controls`` (see the module docstring)."""

    def __init__(self, triggers: Sequence[TriggerWindow], controls: TargetControls | None, runtime: Runtime) -> None:
        self.changes = changes(triggers)
        if self.changes and controls is None:
            raise ValueError("slow and errors triggers need a target with controls (the stack refuses them first)")
        self.controls = controls
        self.runtime = runtime
        #: Each change as applied: (real time, the change).
        self.applied: list[tuple[float, Change]] = []
        #: A change was asked for (it may have reached the target even if it failed or was interrupted).
        self.touched = False
        self.restored_at: float | None = None

    async def play(self, t0: float, ready: asyncio.Event | None = None) -> None:
        """Apply each change at its time after ``t0`` (the clock's time 0 of the run), once ``ready`` is set."""
        for index, change in enumerate(self.changes):
            await self.runtime.sleep_until(t0 + change.at_s)
            if ready is not None:
                await ready.wait()
            following = [later.at_s for later in self.changes[index + 1 :] if later.kind == change.kind]
            self.touched = True
            await self._apply(change, (following[0] if following else change.at_s) - change.at_s)
            self.applied.append((self.runtime.clock(), change))

    def _apply(self, change: Change, hold_s: float) -> Awaitable[None]:
        controls = self.controls
        if controls is None:
            raise ValueError("no controls")  # refused when made: changes need controls
        window = change.window
        if isinstance(window, SlowWindow):
            return controls.set_capacity(window.capacity, hold_s)
        if isinstance(window, ErrorWindow):
            return controls.set_errors(window.status, window.probability)
        return controls.set_capacity(1.0, 0.0) if change.kind == "slow" else controls.set_errors(None, 0.0)

    async def restore(self) -> None:
        """Everything back as it was before the first change (no call when none was asked for)."""
        if self.controls is not None and self.touched and self.restored_at is None:
            self.restored_at = self.runtime.clock()
            await self.controls.restore()

    def actual(self, t0: float) -> list[TriggerWindow]:
        """The windows in force as they happened, relative to ``t0``: each level from its change to the next."""
        now = self.restored_at if self.restored_at is not None else self.runtime.clock()
        found: list[TriggerWindow] = []
        for kind in PLAYED:
            applied = [(at, change) for at, change in self.applied if change.kind == kind]
            for index, (at, change) in enumerate(applied):
                if change.window is None:
                    continue
                end = applied[index + 1][0] if index + 1 < len(applied) else now
                found.append(dataclasses.replace(change.window, start_s=at - t0, end_s=end - t0))
        return sorted(found, key=lambda window: (window.start_s, window.end_s))
