"""The fault timeline: faults as written -> concrete windows -> outages, trigger levels, episodes.

A fault is one *trigger* of a given kind: ``pause`` freezes a target, ``slow`` runs it
at a fraction of its capacity, ``spike`` multiplies the load, ``errors`` answers a share
of the attempts with an error status. Each lasts ``for`` seconds starting ``at``; with
``repeat`` it starts again every ``every`` seconds, ``times`` times in all (or until the
run ends); with ``random_start`` each start is drawn uniformly from ``[start, start +
window)``. Every occurrence is a *window* of its kind's type: :class:`OutageWindow`
(a pause), :class:`SlowWindow`, :class:`SpikeWindow`, :class:`ErrorWindow`.

Where windows of one kind overlap, one rule per kind says what holds, the same live
and simulated:

* pauses of the same target merge: the target is down from the first pause to the
  last resume, one *outage* (:func:`merge_outages`; an :class:`OutageWindow` on the
  timeline, not :class:`retrystorm.chaos.controller.Outage`, one pause as the controller carried
  it out);
* slows: the lowest capacity in force holds (:func:`levels`, :func:`lowest_capacity`);
* errors: the window with the highest probability holds, with its status
  (:func:`levels`, :func:`highest_probability`);
* spikes add up: each brings its own extra users, ``users * (factor - 1)``.

Recovery is judged after each *episode* (:func:`episodes`): a trigger, or triggers of
any kinds that overlap or touch, merged; recovery runs from the episode's end until the
next episode starts. A timeline of pauses only has its outages as episodes, exactly.

What a live run plays (:mod:`retrystorm.runner.live_triggers`), from the scenario's :class:`Timeline`
(drawn once for every strategy, as the outages are): each pause as always; for ``slow``
and ``errors``, the :func:`levels` of the windows (:func:`lowest_capacity`,
:func:`highest_probability`), setting at each level's ``at_s`` the window in force and,
at the end, on every exit path, what the target had before. It records each window as
it happened (the same types, real start and end) and judges recovery after the
:func:`episodes` of those.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar, Protocol

from retrystorm.durations import format_duration


class Span(Protocol):
    """A stretch of the timeline, from ``start_s`` to ``end_s``: a window or an episode."""

    @property
    def start_s(self) -> float:
        """Its start, seconds from the run's start."""
        ...

    @property
    def end_s(self) -> float:
        """Its end."""
        ...


def span_key(span: Span) -> tuple[float, float]:
    """``(start_s, end_s)``: the order of spans of any type."""
    return (span.start_s, span.end_s)


@dataclasses.dataclass(frozen=True, slots=True, order=True)
class TriggerWindow:
    """One occurrence of a trigger: ``target`` affected from ``start_s`` to ``end_s`` (seconds from the run's start).

    Subclasses carry their kind's settings; :attr:`kind` names it as scenarios write it.
    """

    kind: ClassVar[str] = "trigger"

    start_s: float
    end_s: float
    target: str = "target"

    @property
    def duration_s(self) -> float:
        """How long the trigger lasted."""
        return self.end_s - self.start_s

    def settings(self) -> dict[str, float | int]:
        """The kind's own settings (``capacity``, ``factor``, ``status`` and ``probability``); none for a pause."""
        return {}

    def effect(self) -> str:
        """What the window does, in words: ``pause target``, ``slow target to 40 % of its capacity``."""
        return f"{self.kind} {self.target}"

    def describe(self) -> str:
        """The effect and how long: ``slow target to 40 % of its capacity for 10s``."""
        return f"{self.effect()} for {format_duration(self.duration_s)}"

    def to_json(self) -> dict[str, object]:
        """``{"kind", "target", "start_s", "end_s", ...settings}`` (times rounded to the microsecond)."""
        return {
            "kind": self.kind,
            "target": self.target,
            "start_s": round(self.start_s, 6),
            "end_s": round(self.end_s, 6),
            **self.settings(),
        }


@dataclasses.dataclass(frozen=True, slots=True, order=True)
class OutageWindow(TriggerWindow):
    """A target paused from ``start_s`` to ``end_s`` (seconds from the run's start), planned or as it happened."""

    kind: ClassVar[str] = "pause"


@dataclasses.dataclass(frozen=True, slots=True, order=True, kw_only=True)
class SlowWindow(TriggerWindow):
    """The target runs at ``capacity`` (0 < capacity <= 1) of its capacity: its work takes 1/capacity as long."""

    kind: ClassVar[str] = "slow"
    capacity: float

    def settings(self) -> dict[str, float | int]:
        return {"capacity": self.capacity}

    def effect(self) -> str:
        return f"slow {self.target} to {self.capacity:.4g}x its capacity"


@dataclasses.dataclass(frozen=True, slots=True, order=True, kw_only=True)
class SpikeWindow(TriggerWindow):
    """The load is multiplied by ``factor``: ``users * (factor - 1)`` extra users (or arrival streams) meanwhile."""

    kind: ClassVar[str] = "spike"
    factor: float

    def settings(self) -> dict[str, float | int]:
        return {"factor": self.factor}

    def effect(self) -> str:
        return f"spike the {self.target} {self.factor:.4g}x"


@dataclasses.dataclass(frozen=True, slots=True, order=True, kw_only=True)
class ErrorWindow(TriggerWindow):
    """Each attempt reaching the target fails at once with ``status``, with ``probability``."""

    kind: ClassVar[str] = "errors"
    status: int
    probability: float

    def settings(self) -> dict[str, float | int]:
        return {"status": self.status, "probability": self.probability}

    def effect(self) -> str:
        return f"errors from {self.target}: {self.status} to {self.probability:.4g} of the attempts"


#: Each kind's window type, by the name scenarios write.
WINDOW_TYPES: dict[str, type[TriggerWindow]] = {
    window.kind: window for window in (OutageWindow, SlowWindow, SpikeWindow, ErrorWindow)
}


@dataclasses.dataclass(frozen=True, slots=True)
class FaultPlan:
    """One fault as a scenario writes it, in seconds: when, how often, and the window each occurrence is.

    ``window`` is the kind's window type and ``settings`` its own fields (``capacity``,
    ``factor``, ``status``, ``probability``); a pause by default.
    """

    target: str
    at_s: float
    for_s: float
    every_s: float | None = None
    times: int | None = None
    random_start_s: float = 0.0
    window: type[TriggerWindow] = OutageWindow
    settings: tuple[tuple[str, float | int], ...] = ()

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

    def occurrence(self, start_s: float) -> TriggerWindow:
        """The window of the occurrence starting at ``start_s``."""
        fields: dict[str, Any] = dict(self.settings)
        return self.window(start_s, start_s + self.for_s, self.target, **fields)

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


def _order(window: TriggerWindow) -> tuple[float, float, str, str]:
    return (window.start_s, window.end_s, window.kind, window.target)


def expand_faults(faults: Iterable[FaultPlan], duration_s: float, rng: random.Random) -> list[TriggerWindow]:
    """Every occurrence of every fault, unmerged, sorted by start (random starts drawn in the faults' order)."""
    windows = [fault.occurrence(start) for fault in faults for start in fault.starts(duration_s, rng)]
    return sorted(windows, key=_order)


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


@dataclasses.dataclass(frozen=True, slots=True)
class Episode:
    """Triggers that overlap or touch, merged: recovery is judged from ``end_s`` on."""

    start_s: float
    end_s: float
    windows: tuple[TriggerWindow, ...]

    @property
    def kinds(self) -> list[str]:
        """The kinds of its windows, each once, in order of appearance."""
        return list(dict.fromkeys(window.kind for window in self.windows))


def episodes(outages: Sequence[OutageWindow], triggers: Sequence[TriggerWindow]) -> list[Span]:
    """The spans recovery is judged after: the outages alone when there is no other trigger, else
    :class:`Episode` s, every window merged with those it overlaps or touches, whatever their kinds."""
    if not triggers:
        return list(outages)
    found: list[Episode] = []
    for window in sorted([*outages, *triggers], key=_order):
        last = found[-1] if found else None
        if last is not None and window.start_s <= last.end_s:
            found[-1] = Episode(last.start_s, max(last.end_s, window.end_s), (*last.windows, window))
        else:
            found.append(Episode(window.start_s, window.end_s, (window,)))
    spans: list[Span] = [*found]
    return spans


@dataclasses.dataclass(frozen=True, slots=True)
class Level:
    """From ``at_s`` on, ``window`` is in force (``None``: none of its kind is)."""

    at_s: float
    window: TriggerWindow | None


def lowest_capacity(window: TriggerWindow) -> float:
    """The slow rule: the window with the lowest capacity holds."""
    return window.capacity if isinstance(window, SlowWindow) else 1.0


def highest_probability(window: TriggerWindow) -> float:
    """The errors rule: the window with the highest probability holds (negated: lowest first)."""
    return -window.probability if isinstance(window, ErrorWindow) else 0.0


def levels(windows: Sequence[TriggerWindow], rank: Callable[[TriggerWindow], float]) -> list[Level]:
    """When the window in force changes, for windows of one kind: at each start or end, the active
    window of lowest ``rank`` (the earliest started among equals) holds; ``None`` when none is active.
    A change to a window of the same target and settings is no change.

    What a live backend sets at each change is exactly this list; the simulator follows it too.
    """
    changes = sorted(
        [(w.start_s, 1, i) for i, w in enumerate(windows)] + [(w.end_s, 0, i) for i, w in enumerate(windows)]
    )
    active: dict[int, TriggerWindow] = {}
    found: list[Level] = []
    for position, (time, starting, index) in enumerate(changes):
        if starting:
            active[index] = windows[index]
        else:
            active.pop(index, None)
        if position + 1 < len(changes) and changes[position + 1][0] == time:
            continue  # every change at one instant first
        chosen = min(active.values(), key=lambda window: (rank(window), _order(window))) if active else None
        if not found or _effect(found[-1].window) != _effect(chosen):
            found.append(Level(time, chosen))
    return found


def _effect(window: TriggerWindow | None) -> tuple[str, dict[str, float | int]] | None:
    return None if window is None else (window.target, window.settings())


@dataclasses.dataclass(frozen=True, slots=True)
class Timeline:
    """A scenario's timeline as drawn: the outages (pauses merged), and every other trigger's windows."""

    outages: tuple[OutageWindow, ...] = ()
    triggers: tuple[TriggerWindow, ...] = ()

    @classmethod
    def of(cls, windows: Iterable[TriggerWindow]) -> Timeline:
        """Sort ``windows`` (as :func:`expand_faults` gives them) into merged outages and the other triggers."""
        listed = list(windows)
        pauses = [window for window in listed if isinstance(window, OutageWindow)]
        others = [window for window in listed if not isinstance(window, OutageWindow)]
        return cls(tuple(merge_outages(pauses)), tuple(sorted(others, key=_order)))

    def windows(self) -> list[TriggerWindow]:
        """Every window, the outages merged, by start."""
        return sorted([*self.outages, *self.triggers], key=_order)

    def of_kind(self, kind: str) -> list[TriggerWindow]:
        """The windows of one kind, by start."""
        return [window for window in self.windows() if window.kind == kind]

    def episodes(self) -> list[Span]:
        """The spans recovery is judged after (:func:`episodes`)."""
        return episodes(self.outages, self.triggers)
