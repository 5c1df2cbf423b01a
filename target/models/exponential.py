"""The seed server's model: latency grows exponentially past a concurrency limit."""

from __future__ import annotations

import dataclasses
import math
from typing import TypeVar

from retrystorm.spec import DURATION, INTEGER, NUMBER, param
from target.models.base import MAX_DURATION_S, MAX_FACTOR, MAX_REQUESTS, OverloadModel, register_model
from target.models.own_grid import OwnGridServer

P = TypeVar("P")


@register_model("exponential")
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ExponentialModel(OverloadModel):
    """``delay(c) = base_delay * factor ** ((c - limit) / k)`` above ``limit``, else ``base_delay``.

    ``c`` is the number of requests in flight, abandoned ones included. The seed's
    server (``server.go`` of github.com/smira/exponential-backoff: limit 30, factor
    1.05, k 15, base delay 100 ms) has each request wait 50 ms (``tick``), compare its
    age with the delay at the current concurrency (lines 37-47), and loop until the age
    exceeds it: every request checks on its own grid ``arrival + n * tick``. At low load
    it is answered after 100 ms, at its second check (the timer's slack makes the age at
    that check just exceed 100 ms), so this model finishes a request at the first of its
    own checks where ``n * tick >= delay``, whatever older requests do
    (:class:`~target.models.own_grid.OwnGridServer`).

    The Go server's delay overflows to negative values above 7,792 in flight, which
    makes requests finish at their next check; this model clamps the delay at
    ``max_delay`` instead.
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
    tick_s: float = param("tick", DURATION, 0.05, "re-evaluation period", above=0, at_most=MAX_DURATION_S)
    max_delay_s: float = param("max_delay", DURATION, 600.0, "clamp on the delay", at_least=0, at_most=MAX_DURATION_S)

    def _validate(self) -> None:
        if self.max_delay_s < self.base_delay_s:
            raise self._fail("max_delay", f"must be at least base_delay ({self.base_delay_s} s)")

    def delay_at(self, in_flight: int) -> float:
        """The modelled delay in seconds with ``in_flight`` requests in flight, clamped at ``max_delay``."""
        if in_flight <= self.limit or self.base_delay_s == 0:
            return self.base_delay_s
        log_growth = (in_flight - self.limit) / self.k * math.log(self.factor)
        if log_growth >= math.log(self.max_delay_s / self.base_delay_s):
            return self.max_delay_s
        return self.base_delay_s * math.exp(log_growth)

    def start(self, now_s: float) -> ExponentialServer[P]:
        return ExponentialServer(self, now_s)


class ExponentialServer(OwnGridServer[P]):
    """The exponential model's server: each request leaves at its own first check that
    reaches the delay at the count of that instant (see :mod:`target.models.own_grid`)."""

    def __init__(self, model: ExponentialModel, now_s: float) -> None:
        super().__init__(model.tick_s, now_s, overflows=False)
        self.model = model

    @property
    def delay_s(self) -> float:
        return self.model.delay_at(self.in_flight)

    def _delay(self, in_flight: int) -> float:
        return self.model.delay_at(in_flight)

    def reconfigure(self, model: OverloadModel) -> None:
        if not isinstance(model, ExponentialModel):
            super().reconfigure(model)
            return
        self.model = model
        self._restart(model.tick_s)
