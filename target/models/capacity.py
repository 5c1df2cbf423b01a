"""A capacity cut (the ``slow`` trigger): any model's server, run at a fraction of its speed.

A server at capacity ``k`` does in one second what it does in ``k`` seconds at full
capacity, as a process under a CPU quota of ``k`` of what it had. :class:`ScaledServer`
gives the model a clock of its own, *server time*, that runs at ``k`` times real time::

    τ(t) = τ0 + k · (t - t0)          since the last change of capacity, at (t0, τ0)

and hands the model ``τ(t)`` wherever the model takes a time. Every delay, tick and
service time of the model is then ``1 / k`` as long in real time, and its throughput at
any concurrency ``k`` times as high; nothing else changes. Per model:

* ``exponential``: each request's delay ``base_delay * factor ** ((c - limit) / k)`` and
  its checks every ``tick`` take ``1 / k`` as long; the concurrencies where it grows stay;
* ``queue``: one tick every ``tick / k``, so ``service_time / k`` and ``reject_after / k``:
  the workers serve ``k`` times their throughput;
* ``fixed``: ``base_delay / k``;
* ``linear``: ``(base_delay + slope * c) / k``, capacity ``k / slope``.

Work is done at the speed of the moment: a request that arrived before the cut and ends
during it takes longer by what was left of it; one that arrived during the cut and ends
after it speeds up at the end. The modelled delay it reports (:attr:`delay_s`) is the
model's divided by ``k``: what a request arriving now would wait, in real seconds.

A capacity is at least :data:`MIN_CAPACITY` (1/1000, the chaos API's CPU cut has the same
floor). Below some floor the clock stops in practice: at ``k = 5e-324`` server time never
moves (``k * dt`` rounds to nothing), every wakeup is at infinity, ``/api`` is never answered
and the reported delay is ``inf`` (``Infinity`` in the admin API's JSON, which is not JSON).
With the floor, every delay a model reports stays within its ``max_delay`` (at most
:data:`~retrystorm.target.models.base.MAX_DURATION_S`, 1 h) times 1000, finite: 1000 h at most.

Pure: time is passed in. The simulator wraps its server in one when a run has slows;
the target service can do the same with its own clock.
"""

from __future__ import annotations

import bisect
import math
import random
from typing import TypeVar

from retrystorm.target.models.base import Completion, ModelServer, OverloadModel

P = TypeVar("P")

#: The lowest capacity a server runs at: 1/1000 of its speed (see the module's docstring).
MIN_CAPACITY = 0.001


class ScaledServer(ModelServer[P]):
    """``inner`` on a clock that runs at :attr:`capacity` times real time (see the module docstring)."""

    def __init__(self, inner: ModelServer[P], now_s: float) -> None:
        self.inner = inner
        self.capacity = 1.0
        # The segments of the clock: each (real start, server start, capacity), in order.
        self._real: list[float] = [now_s]
        self._server: list[float] = [now_s]
        self._speeds: list[float] = [1.0]

    def server_time(self, now_s: float) -> float:
        """``τ(now)``: the server's own time at real time ``now_s`` (no earlier than the last change)."""
        return self._server[-1] + self.capacity * (now_s - self._real[-1])

    def real_time(self, server_s: float) -> float:
        """The first real time at which the server's clock reads ``server_s`` or more (at the capacities so far)."""
        index = max(0, bisect.bisect_right(self._server, server_s) - 1)
        real = self._real[index] + (server_s - self._server[index]) / self._speeds[index]
        if index == len(self._real) - 1:
            while self.server_time(real) < server_s:  # rounding: never wake the model before its time
                real = math.nextafter(real, math.inf)
        return real

    def set_capacity(self, now_s: float, capacity: float) -> None:
        """From ``now_s`` on, run at ``capacity`` (:data:`MIN_CAPACITY` <= capacity <= 1) of full speed."""
        if not MIN_CAPACITY <= capacity <= 1:
            raise ValueError(f"capacity must be in [{MIN_CAPACITY}, 1], got {capacity}")
        if capacity == self.capacity:
            return
        self._server.append(self.server_time(now_s))
        self._real.append(now_s)
        self._speeds.append(capacity)
        self.capacity = capacity

    @property
    def in_flight(self) -> int:
        return self.inner.in_flight

    @property
    def delay_s(self) -> float:
        delay = self.inner.delay_s
        return delay if self.capacity == 1.0 else delay / self.capacity

    @property
    def admission_hastens(self) -> bool:
        return self.inner.admission_hastens

    def admit(self, now_s: float, payload: P) -> None:
        self.inner.admit(self.server_time(now_s), payload)

    def advance(self, now_s: float, rng: random.Random) -> list[Completion[P]]:
        released = self.inner.advance(self.server_time(now_s), rng)
        real = self.real_time
        return [(payload, outcome, real(admitted_s)) for payload, outcome, admitted_s in released]

    def next_wakeup_s(self, now_s: float) -> float | None:
        wake = self.inner.next_wakeup_s(self.server_time(now_s))
        return None if wake is None else self.real_time(wake)

    def withdraw(self, payload: P) -> bool:
        return self.inner.withdraw(payload)

    def drain(self) -> list[tuple[float, P]]:
        return [(self.real_time(admitted_s), payload) for admitted_s, payload in self.inner.drain()]

    def reconfigure(self, model: OverloadModel) -> None:
        self.inner.reconfigure(model)
