"""A server whose per-request delay grows linearly with concurrency (Brooker's collapse simulation)."""

from __future__ import annotations

import dataclasses
import heapq
import itertools
import random
from typing import TypeVar

from retrystorm.spec import DURATION, param
from retrystorm.target.models.base import (
    MAX_DURATION_S,
    Completion,
    ModelServer,
    Outcome,
    OverloadModel,
    register_model,
)

P = TypeVar("P")


@register_model("linear")
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class LinearModel(OverloadModel):
    """``delay(c) = base_delay + slope * c``, fixed when a request arrives (``c`` counts it), at most ``max_delay``.

    From Marc Brooker's ``simple_collapse_sim`` (github.com/mbrooker/simulator_example,
    ``simple_collapse_sim/sim.py``, ``Server.start``): the concurrency goes up by one,
    and the request is done at ``t + base_server_time + concurrency *
    server_concurrency_slope`` (1.0 s + 0.01 s x c, the defaults here), "the
    coordination and coherence costs that become more costly as concurrency increases".
    A request keeps the delay it got on arrival; a request whose client gave up is
    still served.

    At a steady concurrency ``c`` the server completes ``c / delay(c)`` requests per
    second, below ``1 / slope`` (100 req/s at the defaults): ``1 / slope`` is its
    capacity. With ``λ`` requests per second, Little's law gives a mean delay of
    ``base_delay / (1 - slope * λ)``, the utilisation being ``slope * λ``.
    """

    base_delay_s: float = param(
        "base_delay", DURATION, 1.0, "delay with nothing else in flight", at_least=0, at_most=MAX_DURATION_S
    )
    slope_s: float = param(
        "slope", DURATION, 0.01, "delay added per request in flight (1/slope: capacity)", at_least=0,
        at_most=MAX_DURATION_S,
    )  # fmt: skip
    max_delay_s: float = param("max_delay", DURATION, 600.0, "clamp on the delay", at_least=0, at_most=MAX_DURATION_S)

    def _validate(self) -> None:
        if self.max_delay_s < self.base_delay_s:
            raise self._fail("max_delay", f"must be at least base_delay ({self.base_delay_s} s)")

    def delay_at(self, in_flight: int) -> float:
        """The delay of a request that arrives to find ``in_flight - 1`` others (``in_flight`` counts it), clamped."""
        return min(self.max_delay_s, self.base_delay_s + self.slope_s * in_flight)

    def start(self, now_s: float) -> LinearServer[P]:
        return LinearServer(self)


class LinearServer(ModelServer[P]):
    """Each request is done at its arrival plus the delay it got then; released in order of those times.

    The requests wait in a heap keyed by ``(done_s, admission number)``; the server
    wakes at the earliest. A release that frees several at one instant hands them back
    oldest first. :meth:`reconfigure` changes the delay of requests that arrive later;
    those in flight keep theirs.
    """

    def __init__(self, model: LinearModel) -> None:
        self.model = model
        self._heap: list[tuple[float, int, float, P]] = []
        self._numbers = itertools.count()

    @property
    def in_flight(self) -> int:
        return len(self._heap)

    @property
    def delay_s(self) -> float:
        return self.model.delay_at(len(self._heap))

    def admit(self, now_s: float, payload: P) -> None:
        delay = self.model.delay_at(len(self._heap) + 1)
        heapq.heappush(self._heap, (now_s + delay, next(self._numbers), now_s, payload))

    def advance(self, now_s: float, rng: random.Random) -> list[Completion[P]]:
        heap, done = self._heap, []
        while heap and heap[0][0] <= now_s:  # the same sum as next_wakeup_s: a wake-up then always releases
            done.append(heapq.heappop(heap))
        if len(done) > 1:
            done.sort(key=lambda entry: entry[1])
        ok = Outcome.OK
        return [(payload, ok, admitted_s) for _, _, admitted_s, payload in done]

    def next_wakeup_s(self, now_s: float) -> float | None:
        return self._heap[0][0] if self._heap else None

    def withdraw(self, payload: P) -> bool:
        for index, entry in enumerate(self._heap):
            if entry[3] is payload:
                self._heap[index] = self._heap[-1]
                self._heap.pop()
                heapq.heapify(self._heap)
                return True
        return False

    def drain(self) -> list[tuple[float, P]]:
        drained = sorted(self._heap, key=lambda entry: entry[1])
        self._heap.clear()
        return [(admitted_s, payload) for _, _, admitted_s, payload in drained]

    def reconfigure(self, model: OverloadModel) -> None:
        if not isinstance(model, LinearModel):
            super().reconfigure(model)
            return
        self.model = model
