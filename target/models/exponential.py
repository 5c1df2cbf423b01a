"""The seed server's model: latency grows exponentially past a concurrency limit."""

from __future__ import annotations

import dataclasses
import math
from typing import TypeVar

from retrystorm.spec import DURATION, INTEGER, NUMBER, choice, param
from retrystorm.target.models.base import (
    MAX_DURATION_S,
    MAX_FACTOR,
    MAX_REQUESTS,
    MIN_TICK_S,
    OverloadModel,
    register_model,
)
from retrystorm.target.models.own_grid import OwnGridServer

P = TypeVar("P")

#: What the delay does where the seed's formula grows past every bound.
OVERFLOW = choice("clamp", "go")
#: The largest ``time.Duration`` (int64 nanoseconds) is 2**63 - 1; float64 values from
#: 2**63 up do not fit, and Go on amd64 converts them (and +Inf) to -2**63.
_INT64_LIMIT = 2.0**63
_GO_OVERFLOWED_NS = -(2**63)


def go_delay_ns(base_delay_s: float, limit: int, factor: float, k: float, in_flight: int) -> int:
    """The seed server's ``getDelay()`` in nanoseconds, overflow included.

    ``server.go`` of github.com/smira/exponential-backoff, line 26:
    ``time.Duration(float64(delay) * math.Pow(factor, float64(current-concurrencyLimit)/15.0))``
    above the limit, ``baseDelay`` at or below it (k is the 15). A float64 of 2**63 ns or
    more does not fit an int64; Go's conversion then yields 0x8000000000000000 on amd64, a
    delay of about -292 years, and every check passes. With the seed's parameters the
    delay is 292 years at 7,792 in flight and negative from 7,793. (Python's ``pow`` may
    differ from Go's ``math.Pow`` in the last bits, a few ns at delays of days; the
    overflow point is the same.)
    """
    base_ns = round(base_delay_s * 1e9)
    if in_flight <= limit:
        return base_ns
    try:
        delay = float(base_ns) * math.pow(factor, (in_flight - limit) / k)
    except OverflowError:  # beyond the float range: Go's math.Pow gives +Inf, which converts the same way
        return _GO_OVERFLOWED_NS
    return int(delay) if delay < _INT64_LIMIT else _GO_OVERFLOWED_NS


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
    (:class:`~retrystorm.target.models.own_grid.OwnGridServer`).

    ``overflow``: the Go server's delay is an int64 of nanoseconds, which overflows
    above 7,792 in flight to a negative delay (:func:`go_delay_ns`): every request then
    finishes at its next check, so its in-flight count settles at 7,792 and a retry storm
    gets some answers through. That plateau is an artifact of the seed's code, not of
    overload; ``clamp`` (the default) stops the delay at ``max_delay`` instead, and
    ``go`` reproduces the overflow (``max_delay`` unused).
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
    overflow: str = param(
        "overflow",
        OVERFLOW,
        "clamp",
        "clamp: stop at max_delay; go: as the seed's Go server, whose int64 delay turns negative "
        "(from 7,793 in flight with its parameters)",
    )

    def _validate(self) -> None:
        if self.max_delay_s < self.base_delay_s:
            raise self._fail("max_delay", f"must be at least base_delay ({self.base_delay_s} s)")

    def delay_at(self, in_flight: int) -> float:
        """The modelled delay in seconds with ``in_flight`` requests in flight: clamped at
        ``max_delay``, or with ``overflow=go`` the Go server's (negative past its overflow)."""
        if self.overflow == "go":
            return go_delay_ns(self.base_delay_s, self.limit, self.factor, self.k, in_flight) / 1e9
        if in_flight <= self.limit or self.base_delay_s == 0:
            return self.base_delay_s
        log_growth = (in_flight - self.limit) / self.k * math.log(self.factor)
        if log_growth >= math.log(self.max_delay_s / self.base_delay_s):
            return self.max_delay_s
        return self.base_delay_s * math.exp(log_growth)

    def overflow_at(self) -> int | None:
        """With ``overflow=go``, the fewest requests in flight whose delay is negative (7,793 for
        the seed's parameters); ``None`` when the delay never overflows."""
        if self.overflow != "go" or self.factor == 1 or round(self.base_delay_s * 1e9) == 0:
            return None
        # base_ns * factor ** ((c - limit) / k) >= 2**63 from about this c; step to the exact one
        estimate = self.limit + self.k * math.log(_INT64_LIMIT / round(self.base_delay_s * 1e9)) / math.log(self.factor)
        count = max(self.limit + 1, math.floor(estimate) - 2)
        while go_delay_ns(self.base_delay_s, self.limit, self.factor, self.k, count) >= 0:
            count += 1
        return count

    def start(self, now_s: float) -> ExponentialServer[P]:
        return ExponentialServer(self, now_s)


class ExponentialServer(OwnGridServer[P]):
    """The exponential model's server: each request leaves at its own first check that
    reaches the delay at the count of that instant (see :mod:`retrystorm.target.models.own_grid`)."""

    def __init__(self, model: ExponentialModel, now_s: float) -> None:
        super().__init__(model.tick_s, now_s, overflows=model.overflow == "go")
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
        self._restart(model.tick_s, overflows=model.overflow == "go")
