"""The seed server's model: latency grows exponentially past a concurrency limit."""

from __future__ import annotations

import dataclasses
import math
from typing import TypeVar

from retrystorm.spec import DURATION, INTEGER, NUMBER, param
from target.models.base import OverloadModel, next_tick_s, register_model
from target.models.fifo import FifoServer

P = TypeVar("P")


@register_model("exponential")
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ExponentialModel(OverloadModel):
    """``delay(c) = base_delay * factor ** ((c - limit) / k)`` above ``limit``, else ``base_delay``.

    ``c`` is the number of requests in flight, abandoned ones included. The seed's
    server (``server.go`` of github.com/smira/exponential-backoff: limit 30, factor
    1.05, k 15, base delay 100 ms) re-evaluates every 50 ms (``tick``) whether a
    request's age exceeds the delay at the current concurrency; a request finishes at
    the first tick where it does. The Go server's delay overflows to negative values
    above about 6,000 in flight, which makes requests finish at once; this model clamps
    the delay at ``max_delay`` instead.
    """

    base_delay_s: float = param("base_delay", DURATION, 0.1, "delay at or below the limit", at_least=0)
    limit: int = param("limit", INTEGER, 30, "concurrency where the delay starts growing", at_least=0)
    factor: float = param("factor", NUMBER, 1.05, "growth per k requests above the limit", at_least=1)
    k: float = param("k", NUMBER, 15.0, "requests above the limit per factor of growth", above=0)
    tick_s: float = param("tick", DURATION, 0.05, "re-evaluation period", above=0)
    max_delay_s: float = param("max_delay", DURATION, 600.0, "clamp on the delay", at_least=0)

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
        return ExponentialServer(self, now_s)


class ExponentialServer(FifoServer[P]):
    """Releases, at each tick, the oldest requests whose age exceeds the current delay.

    The concurrency drops by one with each release, so the delay seen by the next
    request in line is recomputed, as each of the Go server's goroutines sees the
    concurrency left by those that finished before it.
    """

    def __init__(self, model: ExponentialModel, now_s: float) -> None:
        super().__init__(now_s)
        self.model = model

    @property
    def delay_s(self) -> float:
        return self.model.delay_at(self.in_flight)

    def _is_done(self, admitted_s: float, now_s: float, in_flight: int) -> bool:
        return now_s - admitted_s > self.model.delay_at(in_flight)

    def next_wakeup_s(self, now_s: float) -> float | None:
        if not self._queue:
            return None
        return next_tick_s(self._epoch_s, self.model.tick_s, now_s)

    def reconfigure(self, model: OverloadModel) -> None:
        if not isinstance(model, ExponentialModel):
            super().reconfigure(model)
            return
        self.model = model
