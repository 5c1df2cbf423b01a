"""The seed server's model: latency grows exponentially past a concurrency limit."""

from __future__ import annotations

import dataclasses
import math
from typing import TypeVar

from retrystorm.spec import DURATION, INTEGER, NUMBER, param
from target.models.base import (
    GRID_SLACK_S,
    MAX_DURATION_S,
    MAX_FACTOR,
    MAX_REQUESTS,
    MIN_TICK_S,
    OverloadModel,
    next_tick_s,
    register_model,
    ticks_since,
)
from target.models.fifo import FifoServer

P = TypeVar("P")


@register_model("exponential")
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ExponentialModel(OverloadModel):
    """``delay(c) = base_delay * factor ** ((c - limit) / k)`` above ``limit``, else ``base_delay``.

    ``c`` is the number of requests in flight, abandoned ones included. The seed's
    server (``server.go`` of github.com/smira/exponential-backoff: limit 30, factor
    1.05, k 15, base delay 100 ms) has each request wait 50 ms (``tick``), compare its
    age with the delay at the current concurrency, and loop until the age exceeds it:
    every request checks on its own grid ``arrival + n * tick``, and at low load it is
    answered after 100 ms (its second check; the timer's slack makes the age at that
    check just exceed 100 ms, so this model finishes a request at the first of its own
    checks where ``n * tick >= delay``). The Go server's delay overflows to negative
    values above about 6,000 in flight, which makes requests finish at once; this model
    clamps the delay at ``max_delay`` instead.
    """

    base_delay_s: float = param(
        "base_delay", DURATION, 0.1, "delay at or below the limit", at_least=0, at_most=MAX_DURATION_S
    )
    limit: int = param(
        "limit", INTEGER, 30, "concurrency where the delay starts growing", at_least=0, at_most=MAX_REQUESTS
    )
    factor: float = param(
        "factor", NUMBER, 1.05, "growth per k requests above the limit", at_least=1, at_most=MAX_FACTOR
    )
    k: float = param("k", NUMBER, 15.0, "requests above the limit per factor of growth", above=0, at_most=MAX_REQUESTS)
    tick_s: float = param("tick", DURATION, 0.05, "re-evaluation period", at_least=MIN_TICK_S, at_most=MAX_DURATION_S)
    max_delay_s: float = param("max_delay", DURATION, 600.0, "clamp on the delay", at_least=0, at_most=MAX_DURATION_S)

    def _validate(self) -> None:
        if self.max_delay_s < self.base_delay_s:
            raise self._fail("max_delay", f"must be at least base_delay ({self.base_delay_s} s)")

    def delay_at(self, in_flight: int) -> float:
        """The modelled delay with ``in_flight`` requests in flight, clamped."""
        if in_flight <= self.limit or self.base_delay_s == 0:
            return self.base_delay_s
        log_growth = (in_flight - self.limit) / self.k * math.log(self.factor)
        if log_growth >= math.log(self.max_delay_s / self.base_delay_s):
            return self.max_delay_s
        return self.base_delay_s * math.exp(log_growth)

    def start(self, now_s: float) -> ExponentialServer[P]:
        return ExponentialServer(self)  # checks run on each request's own grid: no epoch


class ExponentialServer(FifoServer[P]):
    """Releases the oldest requests whose age, at their own last check, reaches the delay.

    A request admitted at ``a`` checks at ``a + n * tick`` (n >= 1) and is done at the
    first check where ``n * tick >= delay(in flight)``. The server wakes at the oldest
    request's next check. Release stays oldest first, so a younger request whose own
    check passed waits for the older ones ahead of it, at most one tick (the Go server
    would let it go first; its checks are less than a tick apart from theirs).

    The concurrency drops by one with each release, so the delay seen by the next
    request in line is recomputed, as each of the Go server's goroutines sees the
    concurrency left by those that finished before it. After a freeze, the last check
    is the one just before the evaluation, so the model catches up at once.
    """

    def __init__(self, model: ExponentialModel) -> None:
        super().__init__()
        self.model = model

    @property
    def delay_s(self) -> float:
        return self.model.delay_at(self.in_flight)

    def _is_done(self, admitted_s: float, now_s: float, in_flight: int) -> bool:
        tick_s = self.model.tick_s
        checks = ticks_since(admitted_s, tick_s, now_s)
        return checks >= 1 and checks * tick_s >= self.model.delay_at(in_flight) - GRID_SLACK_S

    def next_wakeup_s(self, now_s: float) -> float | None:
        if not self._queue:
            return None
        return next_tick_s(self._queue[0][0], self.model.tick_s, now_s)

    def reconfigure(self, model: OverloadModel) -> None:
        if not isinstance(model, ExponentialModel):
            super().reconfigure(model)
            return
        self.model = model
