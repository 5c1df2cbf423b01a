"""Faults in the network in virtual time: what a ``delay``, ``loss``, ``hang``, ``reset`` or ``partition`` window
does to each attempt on its way to the server and to each answer on its way back.

The windows of each kind become levels (:func:`~retrystorm.experiment.scenario.timeline.levels` with
:func:`~retrystorm.experiment.scenario.network.rank`), played as trigger actions: at each change the window in
force of that kind is set. Then, from the ``network`` random source (:func:`~retrystorm.experiment.scenario.rng_for`):

* **an attempt sent** (:meth:`NetworkPlay.send`): a ``reset`` (with its probability) fails it at once with a
  connection error; a ``hang`` (with its probability) holds it until the hang ends, when its connection is
  closed (a connection error then, if its client still waits); a ``partition`` loses it, unless a SYN
  retransmission (:data:`SYN_RETRANSMITS_S` after the send, Linux's ``tcp_syn_retries`` 6 at an initial RTO
  of 1 s) falls after the partition's end and before the client's timeout: then it reaches the server then;
  a ``loss`` makes it wait :func:`~retrystorm.chaos.network.toxics.retransmit_wait_s` (RTO 200 ms). Otherwise
  it travels as without network faults (``sim.network_delay``, or at once).
* **an answer released** (:meth:`NetworkPlay.answer_at`): a ``reset`` turns it into a connection error now; a
  ``hang`` holds it to the hang's end (then a connection error); a ``partition`` loses it (its client times
  out); a ``delay`` adds ``latency ± jitter`` (:class:`~retrystorm.chaos.network.toxics.Delay`, the proxy's own
  formula), a ``loss`` its retransmission wait; the waits add up.

What reaches a client late is judged as any late answer: dropped when its client gave up.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from typing import Any

from retrystorm.chaos.network.toxics import RTO_MIN_S, Delay, retransmit_wait_s
from retrystorm.experiment.scenario import TriggerWindow, rng_for
from retrystorm.experiment.scenario.network import (
    NETWORK_KINDS,
    DelayWindow,
    HangWindow,
    LossWindow,
    PartitionWindow,
    ResetWindow,
    rank,
)
from retrystorm.experiment.scenario.timeline import levels
from retrystorm.loadgen.think import ThinkTime

Action = tuple[float, Callable[[float], None]]

#: When a SYN is sent again after the first, in seconds from the first (RTO 1 s, doubling, 6 retries).
SYN_RETRANSMITS_S = (1.0, 3.0, 7.0, 15.0, 31.0, 63.0)
#: A connect whose every SYN was lost fails this long after the first (the last retransmission's RTO).
SYN_GIVE_UP_S = 127.0

#: What becomes of an attempt or an answer: ``("at", time)`` it arrives then; ``("error", time)`` its client gets
#: a connection error then; ``("lost", 0)`` nothing ever arrives.
Fate = tuple[str, float]
LOST: Fate = ("lost", 0.0)


def has_network(triggers: tuple[TriggerWindow, ...]) -> bool:
    """Whether a run's triggers hold a network window."""
    return any(window.kind in NETWORK_KINDS for window in triggers)


class NetworkPlay:
    """The network windows of one run (see the module docstring)."""

    def __init__(self, triggers: tuple[TriggerWindow, ...], seed: int, network_delay: ThinkTime | None) -> None:
        self.windows = [window for window in triggers if window.kind in NETWORK_KINDS]
        self.rng = rng_for(seed, "network-faults")
        self.base_rng = random.Random(f"{seed}/network-base")
        self.network_delay = network_delay
        self.in_force: dict[str, Any] = {}

    def actions(self) -> list[Action]:
        """Each change of the window in force of each kind, with its time."""
        return [
            (level.at_s, functools.partial(self._set, kind=kind, window=level.window))
            for kind in sorted(NETWORK_KINDS)
            for level in levels([window for window in self.windows if window.kind == kind], rank)
        ]

    def _set(self, now: float, kind: str, window: TriggerWindow | None) -> None:
        self.in_force[kind] = window

    def _travel_s(self) -> float:
        return self.network_delay.sample(self.base_rng) if self.network_delay is not None else 0.0

    def _takes(self, window: HangWindow | ResetWindow | None) -> bool:
        return window is not None and (window.probability >= 1 or self.rng.random() < window.probability)

    def _hung_until(self) -> float | None:
        """The end of the hang in force, if it takes this connection."""
        hang: HangWindow | None = self.in_force.get("hang")
        return hang.end_s if hang is not None and self._takes(hang) else None

    def send(self, now: float, timeout_s: float | None) -> Fate:
        """What becomes of an attempt sent at ``now`` by a client that gives up after ``timeout_s``."""
        forced = self.in_force
        if self._takes(forced.get("reset")):
            return ("error", now)
        if (hung_until := self._hung_until()) is not None:
            return ("error", hung_until)
        partition: PartitionWindow | None = forced.get("partition")
        if partition is not None:
            give_up = now + (timeout_s if timeout_s is not None else SYN_GIVE_UP_S)
            for after in SYN_RETRANSMITS_S:
                if now + after >= partition.end_s:
                    return ("at", now + after) if now + after < give_up else LOST
            return ("error", now + SYN_GIVE_UP_S) if timeout_s is None else LOST
        wait = self._travel_s()
        loss: LossWindow | None = forced.get("loss")
        if loss is not None:
            wait += retransmit_wait_s(loss.probability, RTO_MIN_S, self.rng)
        return ("at", now + wait)

    def answer_at(self, now: float) -> Fate:
        """What becomes of an answer the server releases at ``now``."""
        forced = self.in_force
        if self._takes(forced.get("reset")):
            return ("error", now)
        if (hung_until := self._hung_until()) is not None:
            return ("error", hung_until)
        if forced.get("partition") is not None:
            return LOST
        wait = self._travel_s()
        delay: DelayWindow | None = forced.get("delay")
        if delay is not None:
            wait += Delay(latency_s=delay.latency_s, jitter_s=delay.jitter_s).on_chunk("downstream", self.rng).delay_s
        loss: LossWindow | None = forced.get("loss")
        if loss is not None:
            wait += retransmit_wait_s(loss.probability, RTO_MIN_S, self.rng)
        return ("at", now + wait)
