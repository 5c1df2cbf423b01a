"""The seed experiment's Go client backoff, reproduced with its quirks."""

from __future__ import annotations

import dataclasses
import random

from retrystorm.loadgen.strategies.base import MAX_DELAY_S, MAX_FACTOR, RetryStrategy, register_strategy
from retrystorm.spec import DURATION, NUMBER, param


@register_strategy("smira")
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SmiraBackoff(RetryStrategy):
    """The seed's Go client: ``d_n = min(e * previous, 5 min) + N(0, 0.1 s)``.

    Source: ``client.go`` of github.com/smira/exponential-backoff (``expFactor``
    2.71828, ``expMaxDelay`` 5 min, ``expJitter`` 0.1 s, ``-exponential-backoff``).

    Quirks kept on purpose, because they shape the seed's results:

    * **The first backoff grows from the think time.** The Go client stores every sleep
      in ``lastDelay``, think time included, and only resets it to 100 ms after a
      success, just before the next think time overwrites it. So a request's first
      retry waits ``e * think time`` (about 27 s with a 10 s mean think time), not
      ``e * 100 ms``. Callers pass the think time as ``previous_delay_s`` for retry 1.
    * **The jitter is absolute** (``N(0, 0.1 s)``, not relative to the delay) and is
      added after the cap, into the next ``lastDelay``.
    * The Go client would sleep 0 on a negative delay yet carry the negative value
      forward; here the delay is clipped at 0 (it only happens when the previous delay
      is below about 0.3 s).
    """

    factor: float = param(
        "factor", NUMBER, 2.71828, "multiplier applied to the previous sleep", at_least=1, at_most=MAX_FACTOR
    )
    max_s: float = param("max", DURATION, 300.0, "cap before jitter", at_least=0, at_most=MAX_DELAY_S)
    jitter_s: float = param(
        "jitter", DURATION, 0.1, "standard deviation of the absolute jitter", at_least=0, at_most=MAX_DELAY_S
    )

    def delay(self, attempt: int, previous_delay_s: float, rng: random.Random) -> float:
        grown = min(previous_delay_s * self.factor, self.max_s)
        jittered = grown + rng.gauss(0.0, self.jitter_s) if self.jitter_s > 0 else grown
        return min(max(jittered, 0.0), self.max_delay_s)

    @property
    def max_delay_s(self) -> float:
        # A bound six standard deviations out: the Go client has no upper bound at all.
        return self.max_s + 6 * self.jitter_s
