"""Strategies that do not grow: the seed simulation's NB, CB and URB.

These are the strategies that keep an overloaded service down: they ignore how many
times a request has failed, so the retry rate stays proportional to the number of
failing clients.
"""

from __future__ import annotations

import dataclasses
import random

from retrystorm.loadgen.strategies.base import MAX_DELAY_S, RetryStrategy, register_strategy
from retrystorm.spec import DURATION, param


@register_strategy("none")
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class NoBackoff(RetryStrategy):
    """Retry at once: ``d = 0``. The seed simulation's NB (no backoff)."""

    def delay(self, attempt: int, previous_delay_s: float, rng: random.Random) -> float:
        return 0.0

    @property
    def max_delay_s(self) -> float:
        return 0.0


@register_strategy("fixed")
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class FixedBackoff(RetryStrategy):
    """Retry after a constant interval: ``d = T``.

    The seed simulation's CB (5 ticks) and the seed Go client's "simple backoff"
    (``-simple-backoff-delay``, 100 ms), the strategy that never lets the seed server
    come back after an outage.
    """

    delay_s: float = param(
        "delay", DURATION, 0.1, "interval between attempts", positional=True, at_least=0, at_most=MAX_DELAY_S
    )

    def delay(self, attempt: int, previous_delay_s: float, rng: random.Random) -> float:
        return self.delay_s

    @property
    def max_delay_s(self) -> float:
        return self.delay_s


@register_strategy("uniform")
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class UniformBackoff(RetryStrategy):
    """Retry after a uniformly random interval: ``d = U(min, max)``.

    The seed simulation's URB is ``uniform:max=5`` ticks. Randomness spreads retries
    out but does not reduce their rate.
    """

    max_s: float = param(
        "max", DURATION, 1.0, "upper end of the interval", positional=True, at_least=0, at_most=MAX_DELAY_S
    )
    min_s: float = param("min", DURATION, 0.0, "lower end of the interval", at_least=0, at_most=MAX_DELAY_S)

    def _validate(self) -> None:
        if self.min_s > self.max_s:
            raise self._fail("min", f"must not exceed max ({self.max_s} s)")

    def delay(self, attempt: int, previous_delay_s: float, rng: random.Random) -> float:
        return rng.uniform(self.min_s, self.max_s)

    @property
    def max_delay_s(self) -> float:
        return self.max_s
