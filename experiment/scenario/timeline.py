"""The fault timeline: faults as written -> concrete pauses -> outages.

A fault pauses a target for ``for`` seconds starting ``at``; with ``repeat`` it starts
again every ``every`` seconds, ``times`` times in all (or until the run ends); with
``random_start`` each start is drawn uniformly from ``[start, start + window)``.
Pauses of the same target may overlap; the target is down from the first pause to
the last resume, so overlapping pauses merge into one *outage*, an :class:`OutageWindow`
on the timeline (not :class:`chaos.controller.Outage`, one pause as the controller
carried it out).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterable


@dataclasses.dataclass(frozen=True, slots=True, order=True)
class OutageWindow:
    """A target paused from ``start_s`` to ``end_s`` (seconds from the run's start), planned or as it happened."""

    start_s: float
    end_s: float
    target: str = "target"

    @property
    def duration_s(self) -> float:
        """How long the target was paused."""
        return self.end_s - self.start_s


@dataclasses.dataclass(frozen=True, slots=True)
class FaultPlan:
    """One fault as a scenario writes it, in seconds."""

    target: str
    at_s: float
    for_s: float
    every_s: float | None = None
    times: int | None = None
    random_start_s: float = 0.0

    def starts(self, duration_s: float, rng: random.Random) -> list[float]:
        """The start of every occurrence that ends within ``duration_s``."""
        found: list[float] = []
        nominal = self.at_s
        while True:
            start = nominal + (rng.uniform(0.0, self.random_start_s) if self.random_start_s > 0 else 0.0)
            if start + self.for_s > duration_s:
                return found
            found.append(start)
            if self.every_s is None or (self.times is not None and len(found) >= self.times):
                return found
            nominal += self.every_s

    def most_starts(self, duration_s: float) -> int:
        """An upper bound on how many times this fault starts within ``duration_s``, without listing them."""
        if self.every_s is None:
            return 1
        fitting = max(0.0, duration_s - self.at_s) // self.every_s + 1
        return int(fitting if self.times is None else min(fitting, self.times))

    def latest_end_s(self) -> float:
        """The latest the last occurrence can end (``inf`` when it repeats until the run ends)."""
        if self.every_s is not None and self.times is None:
            return float("inf")
        count = 1 if self.every_s is None or self.times is None else self.times
        return self.at_s + (count - 1) * (self.every_s or 0.0) + self.random_start_s + self.for_s


def expand_faults(faults: Iterable[FaultPlan], duration_s: float, rng: random.Random) -> list[OutageWindow]:
    """Every pause of every fault, unmerged, sorted by start."""
    pauses = [
        OutageWindow(start, start + fault.for_s, fault.target)
        for fault in faults
        for start in fault.starts(duration_s, rng)
    ]
    return sorted(pauses)


def merge_outages(pauses: Iterable[OutageWindow]) -> list[OutageWindow]:
    """Merge overlapping or touching pauses of the same target into outages, sorted by start."""
    merged: list[OutageWindow] = []
    by_target: dict[str, OutageWindow] = {}
    for pause in sorted(pauses):
        current = by_target.get(pause.target)
        if current is not None and pause.start_s <= current.end_s:
            by_target[pause.target] = OutageWindow(current.start_s, max(current.end_s, pause.end_s), pause.target)
            continue
        if current is not None:
            merged.append(current)
        by_target[pause.target] = pause
    merged.extend(by_target.values())
    return sorted(merged)
