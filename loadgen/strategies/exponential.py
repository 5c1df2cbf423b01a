"""Growing strategies: exponential backoff with jitter, decorrelated jitter, gRPC.

Retry number ``n`` (1 for the first retry) gets base delay
``d_n = min(max, base * factor ** (n - 1))`` before jitter. The seed simulation's EB is
``exponential:base=2s,factor=2,max=30s`` (``2**n`` ticks capped at 30, one tick read as
one second) and REB the same with ``jitter=full``.
"""

from __future__ import annotations

import dataclasses
import random

from retrystorm.loadgen.strategies.base import MAX_DELAY_S, MAX_FACTOR, RetryStrategy, register_strategy
from retrystorm.loadgen.strategies.jitter import JITTER, Jitter
from retrystorm.spec import DURATION, NUMBER, param


def capped_exponential(base_s: float, factor: float, max_s: float, attempt: int) -> float:
    """``min(max_s, base_s * factor ** (attempt - 1))`` without overflowing.

    A float power too large for a float raises ``OverflowError`` (and a product that
    overflows is ``inf``): both mean the cap. One power per call; the simulator's
    contention experiment calls this millions of times.
    """
    if base_s == 0:
        return 0.0
    try:
        value = base_s * float(factor) ** (attempt - 1)
    except OverflowError:
        return max_s
    return min(max_s, value)


@register_strategy("exponential")
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ExponentialBackoff(RetryStrategy):
    """Exponential backoff: ``jitter(min(max, base * factor ** (n - 1)))``.

    Jitter is applied on every retry, the first included (grpc-go does not, so all its
    clients retry in lockstep once). See :mod:`.jitter` for the modes and their sources.
    The classic reference is the AWS Architecture Blog post "Exponential Backoff And
    Jitter" (Brooker, 2015).
    """

    base_s: float = param("base", DURATION, 0.1, "delay before the first retry", at_least=0, at_most=MAX_DELAY_S)
    factor: float = param("factor", NUMBER, 2.0, "growth per retry", at_least=1, at_most=MAX_FACTOR)
    max_s: float = param("max", DURATION, 300.0, "cap on the base delay", at_least=0, at_most=MAX_DELAY_S)
    jitter: Jitter = param("jitter", JITTER, Jitter("none"), "randomisation of each delay")

    def _validate(self) -> None:
        if self.max_s < self.base_s:
            raise self._fail("max", f"must be at least base ({self.base_s} s)")

    def delay(self, attempt: int, previous_delay_s: float, rng: random.Random) -> float:
        return self.jitter.apply(capped_exponential(self.base_s, self.factor, self.max_s, attempt), rng)

    @property
    def max_delay_s(self) -> float:
        return self.max_s * self.jitter.bound_factor


@register_strategy("decorrelated")
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class DecorrelatedJitter(RetryStrategy):
    """Decorrelated jitter: ``d_n = min(cap, U(base, 3 * d_{n-1}))`` with ``d_0 = base``.

    From the AWS Architecture Blog post "Exponential Backoff And Jitter" (2015). Each
    delay depends on the previous one rather than on the retry number, so retries
    decorrelate quickly. A previous delay below ``base`` is read as ``base``.
    """

    base_s: float = param("base", DURATION, 0.1, "smallest delay", at_least=0, at_most=MAX_DELAY_S)
    max_s: float = param("max", DURATION, 300.0, "cap on every delay", at_least=0, at_most=MAX_DELAY_S)
    growth: float = param(
        "growth", NUMBER, 3.0, "upper end as a multiple of the previous delay", at_least=1, at_most=MAX_FACTOR
    )

    def _validate(self) -> None:
        if self.max_s < self.base_s:
            raise self._fail("max", f"must be at least base ({self.base_s} s)")

    def delay(self, attempt: int, previous_delay_s: float, rng: random.Random) -> float:
        previous = self.base_s if attempt <= 1 else max(previous_delay_s, self.base_s)
        return min(self.max_s, rng.uniform(self.base_s, self.growth * previous))

    @property
    def max_delay_s(self) -> float:
        return self.max_s


@register_strategy("grpc")
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class GrpcBackoff(RetryStrategy):
    """gRPC connection backoff: ``min(max, base * factor ** (n - 1)) * (1 + U(-j, j))``.

    Constants from gRPC's "Connection Backoff Protocol" (doc/connection-backoff.md):
    INITIAL_BACKOFF 1 s, MULTIPLIER 1.6, JITTER 0.2, MAX_BACKOFF 120 s, and
    MIN_CONNECT_TIMEOUT 20 s, which the load generator reads from
    :attr:`min_connect_timeout_s` to bound how long an attempt may take to connect.
    As in the spec, jitter is applied after the cap, so a delay may reach
    ``1.2 * max``; unlike grpc-go, the first retry is jittered too.
    """

    base_s: float = param("base", DURATION, 1.0, "INITIAL_BACKOFF", at_least=0, at_most=MAX_DELAY_S)
    factor: float = param("factor", NUMBER, 1.6, "MULTIPLIER", at_least=1, at_most=MAX_FACTOR)
    max_s: float = param("max", DURATION, 120.0, "MAX_BACKOFF", at_least=0, at_most=MAX_DELAY_S)
    jitter: float = param("jitter", NUMBER, 0.2, "JITTER, relative", at_least=0, at_most=1)
    min_connect_timeout_s: float = param(
        "min_connect_timeout", DURATION, 20.0, "MIN_CONNECT_TIMEOUT", at_least=0, at_most=MAX_DELAY_S
    )

    def _validate(self) -> None:
        if self.max_s < self.base_s:
            raise self._fail("max", f"must be at least base ({self.base_s} s)")

    def delay(self, attempt: int, previous_delay_s: float, rng: random.Random) -> float:
        capped = capped_exponential(self.base_s, self.factor, self.max_s, attempt)
        return capped * (1 + rng.uniform(-self.jitter, self.jitter))

    @property
    def max_delay_s(self) -> float:
        return self.max_s * (1 + self.jitter)
