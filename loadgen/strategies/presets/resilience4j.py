"""``resilience4j``: resilience4j's ``RetryConfig`` and its ``IntervalFunction`` variants."""

from __future__ import annotations

import dataclasses
import random
from typing import ClassVar

from retrystorm.loadgen.strategies.base import MAX_FACTOR, register_strategy
from retrystorm.loadgen.strategies.presets.base import Preset
from retrystorm.loadgen.strategies.retry_on import RETRY_ON, RetryOn
from retrystorm.spec import DURATION, INTEGER, NUMBER, choice, optional, param


def _ms(seconds: float) -> int:
    return int(round(seconds * 1000, 6))


def exponential_ms(initial_ms: int, multiplier: float, attempt: int) -> int:
    """``IntervalFunction.of(initial, x -> (long) (x * multiplier)).apply(attempt)``: truncated at every step."""
    interval = initial_ms
    for _ in range(attempt - 1):
        grown = int(interval * multiplier)
        if grown == interval:
            break  # a fixed point (multiplier 1, or too small to grow a whole millisecond)
        interval = grown
        if interval > 2**62:
            break
    return interval


def randomize(current: float, factor: float, r: float) -> float:
    """``IntervalFunctionCompanion.randomize``: ``lo + r * (hi - lo + 1)``, ``lo, hi = c * (1 -+ f)``, at least 1."""
    delta = factor * current
    low = current - delta
    high = current + delta
    return max(1.0, low + r * (high - low + 1))


@register_strategy("resilience4j")
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Resilience4jRetry(Preset):
    """resilience4j Retry: 3 attempts, a fixed 500 ms wait by default; exponential and randomized intervals.

    resilience4j v2.4.0, ``resilience4j-retry/.../retry/RetryConfig.java``
    (``DEFAULT_MAX_ATTEMPTS`` 3, ``DEFAULT_WAIT_DURATION`` 500 ms, a fixed interval,
    every exception retried) and ``resilience4j-core/.../core/IntervalFunction.java``
    (``DEFAULT_MULTIPLIER`` 1.5, ``DEFAULT_RANDOMIZATION_FACTOR`` 0.5), in whole
    milliseconds, retry n (resilience4j's ``numOfAttempts``):

    * ``fixed``: ``wait``;
    * ``exponential`` (``ofExponentialBackoff``): ``x_1 = wait``, ``x_(k+1) = (long) (x_k * multiplier)``;
    * ``randomized`` (``ofRandomized``): ``(long) randomize(wait)``;
    * ``exponential-random`` (``ofExponentialRandomBackoff``): ``(long) randomize(x_n)``;
    * ``randomize(c) = max(1, c (1 - f) + U * (2 c f + 1))``, f the ``randomization``;
    * with ``max_wait``, at most that (after randomizing).

    * **Attempts**: ``max_attempts``, the first included.
    * **Retry conditions**: every exception (``retryOnException`` is ``t -> true``), no
      result. Which failures are exceptions depends on the HTTP client: Spring's
      ``RestTemplate``, ``RestClient`` and ``WebClient`` throw on 4xx and 5xx, so the
      default is timeouts, connection errors, 4xx and 5xx; with
      ``java.net.http.HttpClient`` a status is a result: ``retry_on=[timeout,connection]``.
      ``Retry-After`` is not read.
    """

    library: ClassVar[str] = "resilience4j v2.4.0"
    max_attempts: int = param("max_attempts", INTEGER, 3, "maxAttempts, the first included", at_least=1)
    wait_s: float = param("wait", DURATION, 0.5, "waitDuration / initial interval", at_least=0.001)
    interval: str = param(
        "interval", choice("fixed", "exponential", "randomized", "exponential-random"), "fixed", "IntervalFunction"
    )
    multiplier: float = param("multiplier", NUMBER, 1.5, "exponential growth per retry", at_least=1, at_most=MAX_FACTOR)
    randomization: float = param("randomization", NUMBER, 0.5, "randomizationFactor", at_least=0, at_most=1)
    max_wait_s: float | None = param("max_wait", optional(DURATION), None, "maxInterval (none: no cap)", at_least=0.001)
    retry_on: RetryOn = param(
        "retry_on", RETRY_ON, RetryOn(timeout=True, connection=True, classes=frozenset({4, 5})), "retried exceptions"
    )

    def delay(self, attempt: int, previous_delay_s: float, rng: random.Random) -> float:
        wait = _ms(self.wait_s)
        if self.interval in ("exponential", "exponential-random"):
            wait = exponential_ms(wait, self.multiplier, attempt)
        millis = int(randomize(wait, self.randomization, rng.random())) if "random" in self.interval else wait
        if self.max_wait_s is not None:
            millis = min(millis, _ms(self.max_wait_s))
        return millis / 1000

    @property
    def max_delay_s(self) -> float:
        if self.max_wait_s is not None:
            return max(_ms(self.max_wait_s), 1) / 1000
        if self.interval in ("fixed", "randomized"):
            return (_ms(self.wait_s) * (1 + self.randomization) + 1) / 1000
        return 2**62 * (1 + self.randomization) / 1000

    def attempt_cap(self) -> int:
        return self.max_attempts

    def conditions(self) -> RetryOn:
        return self.retry_on
