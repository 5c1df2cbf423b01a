"""``dotnet-standard``: Microsoft.Extensions.Http.Resilience's standard handler, its retry and its circuit breaker."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from retrystorm.loadgen.strategies.base import register_strategy
from retrystorm.loadgen.strategies.budgets.base import MAX_WINDOW_S, RetryBudget
from retrystorm.loadgen.strategies.budgets.circuit import MAX_THROUGHPUT, MIN_THROUGHPUT, CircuitBudget
from retrystorm.loadgen.strategies.presets.params import BOOLEAN
from retrystorm.loadgen.strategies.presets.polly import ONE_DAY_S, PollyRetry
from retrystorm.loadgen.strategies.retry_on import RETRY_ON, RetryOn
from retrystorm.spec import DURATION, INTEGER, NUMBER, choice, param

#: ``HttpClientResiliencePredicates.IsTransient``: HttpRequestException, TimeoutRejectedException, 5xx, 408, 429.
TRANSIENT = RetryOn(timeout=True, connection=True, classes=frozenset({5}), statuses=frozenset({408, 429}))


@register_strategy("dotnet-standard")
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class DotnetStandard(PollyRetry):
    """``AddStandardResilienceHandler()``: Polly's retry with exponential backoff and jitter, reading
    ``Retry-After``, in front of Polly's circuit breaker (the :class:`~retrystorm.loadgen.strategies.budgets.
    circuit.CircuitBudget`), both on the transient failures.

    Microsoft.Extensions.Http.Resilience (dotnet/extensions, ``src/Libraries/Microsoft.Extensions.Http.Resilience/``):
    ``Resilience/HttpStandardResilienceOptions.cs`` chains rate limiter -> total request timeout (30 s) -> retry ->
    circuit breaker -> attempt timeout (10 s); ``Polly/HttpRetryStrategyOptions.cs`` sets ``BackoffType``
    Exponential, ``UseJitter`` true and ``ShouldRetryAfterHeader`` true over Polly's ``MaxRetryAttempts`` 3 and
    ``Delay`` 2 s; ``Polly/HttpCircuitBreakerStrategyOptions.cs`` keeps Polly 8's breaker defaults
    (``CircuitBreakerConstants.cs``: ``FailureRatio`` 0.1, ``MinimumThroughput`` 100, ``SamplingDuration`` 30 s,
    ``BreakDuration`` 5 s); both handle ``HttpClientResiliencePredicates.IsTransient``: a connection error
    (``HttpRequestException``), an attempt timeout (``TimeoutRejectedException``), 5xx, 408 and 429.

    * **Delays**: Polly's decorrelated jitter v2 from 2 s (:class:`~retrystorm.loadgen.strategies.presets.polly.
      PollyRetry`), or the ``Retry-After`` header's delay instead.
    * **Attempts**: 4 (3 retries). The retry is outside the breaker, so every attempt is sampled by it; while it
      is open an attempt is refused locally and the call fails (the retry does not handle
      ``BrokenCircuitException``).
    * **Timeouts** are the load's: give the scenario ``attempt_timeout: 10s`` and ``request_deadline: 30s`` to
      run the handler's own. The rate limiter (1,000 concurrent requests, no queue) is not modelled.
    """

    library: ClassVar[str] = "Microsoft.Extensions.Http.Resilience (dotnet/extensions f497c4c), Polly 8.7.0"
    backoff: str = param("backoff", choice("constant", "linear", "exponential"), "exponential", "BackoffType")
    delay_s: float = param("delay", DURATION, 2.0, "Delay, the base delay", at_least=0, at_most=ONE_DAY_S)
    jitter: bool = param("jitter", BOOLEAN, True, "UseJitter")
    retry_on: RetryOn = param("retry_on", RETRY_ON, TRANSIENT, "ShouldHandle (IsTransient)")
    reads_retry_after: bool = param("retry_after", BOOLEAN, True, "ShouldRetryAfterHeader")
    failure_ratio: float = param("failure_ratio", NUMBER, 0.1, "CircuitBreaker FailureRatio", above=0, at_most=1)
    min_throughput: int = param(
        "min_throughput", INTEGER, 100, "CircuitBreaker MinimumThroughput", at_least=MIN_THROUGHPUT,
        at_most=MAX_THROUGHPUT,
    )  # fmt: skip
    sampling_s: float = param(
        "sampling", DURATION, 30.0, "CircuitBreaker SamplingDuration", above=0, at_most=MAX_WINDOW_S
    )
    break_s: float = param("break", DURATION, 5.0, "CircuitBreaker BreakDuration", above=0, at_most=MAX_WINDOW_S)

    def budget(self) -> RetryBudget:
        return CircuitBudget(
            failure_ratio=self.failure_ratio,
            min_throughput=self.min_throughput,
            sampling_s=self.sampling_s,
            break_s=self.break_s,
        )
