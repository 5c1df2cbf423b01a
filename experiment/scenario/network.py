"""Faults in the network on the timeline: ``delay``, ``loss``, ``hang``, ``reset`` and ``partition`` windows.

::

    faults:
      - {delay: target, latency: 200ms, jitter: 20ms, at: 20s, for: 10s}  # answers 200 ms ± 20 ms later
      - {loss: target, probability: 0.05, at: 20s, for: 10s}              # 5 % of segments retransmitted
      - {hang: target, at: 20s, for: 10s}                                 # connections accepted, never answered
      - {reset: target, probability: 0.5, at: 20s, for: 10s}              # half the connections reset
      - {partition: target, at: 20s, for: 10s}                            # the target's host cut off

Each kind takes the timeline rules of a pause (``at``, ``for``, ``repeat``, ``random_start``). The first four
are played live by a fault proxy in front of the target (:mod:`retrystorm.chaos.network.toxics` holds their
formulas, which the simulator uses too); ``partition`` by routes on the target's host, through its chaos
agent. Where windows of one kind overlap, one holds (:func:`rank`): the longest latency, the highest
probability; partitions are in force while any is (they merge, as pauses do).

What each does to an attempt, live and simulated (:mod:`retrystorm.sim.network`): ``delay`` adds its latency
to each answer; ``loss`` makes a lost segment (request or answer) wait for TCP's retransmissions; ``hang`` holds
attempts and answers until the hang ends, when the connection is closed (a connection error, unless the client
gave up first); ``reset`` fails an attempt, or the answer it is waiting for, with a connection error at once;
``partition`` loses what is sent while it holds, and an attempt reaches the server only if a SYN retransmission
(1, 3, 7, 15, 31, 63 s after the send) comes after the partition ends and before the client gives up.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from retrystorm.durations import format_duration
from retrystorm.experiment.scenario.timeline import TriggerWindow


@dataclasses.dataclass(frozen=True, slots=True, order=True, kw_only=True)
class DelayWindow(TriggerWindow):
    """Each answer from the target reaches its client ``latency_s`` ± ``jitter_s`` later."""

    kind: ClassVar[str] = "delay"
    latency_s: float
    jitter_s: float = 0.0

    def settings(self) -> dict[str, float | int]:
        return {"latency_s": self.latency_s, "jitter_s": self.jitter_s}

    def effect(self) -> str:
        jitter = f" ± {format_duration(self.jitter_s)}" if self.jitter_s else ""
        return f"delay {self.target}'s answers by {format_duration(self.latency_s)}{jitter}"


@dataclasses.dataclass(frozen=True, slots=True, order=True, kw_only=True)
class LossWindow(TriggerWindow):
    """Each segment to or from the target is lost with ``probability`` and comes after its retransmissions."""

    kind: ClassVar[str] = "loss"
    probability: float

    def settings(self) -> dict[str, float | int]:
        return {"probability": self.probability}

    def effect(self) -> str:
        return f"lose {self.probability:.4g} of the segments to and from {self.target}"


@dataclasses.dataclass(frozen=True, slots=True, order=True, kw_only=True)
class HangWindow(TriggerWindow):
    """A share ``probability`` of the connections to the target is accepted and never answered meanwhile."""

    kind: ClassVar[str] = "hang"
    probability: float = 1.0

    def settings(self) -> dict[str, float | int]:
        return {"probability": self.probability}

    def effect(self) -> str:
        share = "" if self.probability >= 1 else f" {self.probability:.4g} of"
        return f"hang{share} the connections to {self.target}"


@dataclasses.dataclass(frozen=True, slots=True, order=True, kw_only=True)
class ResetWindow(TriggerWindow):
    """A share ``probability`` of the connections to the target is reset meanwhile."""

    kind: ClassVar[str] = "reset"
    probability: float = 1.0

    def settings(self) -> dict[str, float | int]:
        return {"probability": self.probability}

    def effect(self) -> str:
        share = "" if self.probability >= 1 else f" {self.probability:.4g} of"
        return f"reset{share} the connections to {self.target}"


@dataclasses.dataclass(frozen=True, slots=True, order=True)
class PartitionWindow(TriggerWindow):
    """The target's host is cut off from the hosts that send it load."""

    kind: ClassVar[str] = "partition"

    def effect(self) -> str:
        return f"partition {self.target}'s host from its clients"


#: Each network kind's window type, by the name scenarios write.
NETWORK_WINDOW_TYPES: dict[str, type[TriggerWindow]] = {
    window.kind: window for window in (DelayWindow, LossWindow, HangWindow, ResetWindow, PartitionWindow)
}
#: The kinds a fault proxy plays (the rest, ``partition``, is routes).
PROXY_KINDS = frozenset({"delay", "loss", "hang", "reset"})
NETWORK_KINDS = frozenset(NETWORK_WINDOW_TYPES)


def rank(window: TriggerWindow) -> float:
    """The overlap rule of the network kinds, for :func:`~retrystorm.experiment.scenario.timeline.levels`: the
    longest latency, the highest probability holds (lowest rank first); a partition is a partition."""
    if isinstance(window, DelayWindow):
        return -(window.latency_s + window.jitter_s)
    if isinstance(window, LossWindow | HangWindow | ResetWindow):
        return -window.probability
    return 0.0
