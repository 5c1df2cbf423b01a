"""The AWS SDKs' retry modes, as botocore implements them: ``aws-standard``, ``aws-adaptive``
(AWS SDK retries 2.1, botocore 1.44), ``aws-standard-2025`` (standard mode before it) and
``aws-legacy`` (botocore's default mode before 1.44)."""

from __future__ import annotations

import dataclasses
import random
from typing import ClassVar

from retrystorm.loadgen.strategies.base import register_strategy
from retrystorm.loadgen.strategies.budgets.aws_rate_limiter import AwsRateLimiterBudget
from retrystorm.loadgen.strategies.budgets.base import MAX_BUDGET_SIZE, RetryBudget
from retrystorm.loadgen.strategies.budgets.quota import QuotaBudget
from retrystorm.loadgen.strategies.controls import RetryAfter
from retrystorm.loadgen.strategies.exponential import capped_exponential
from retrystorm.loadgen.strategies.presets.base import Preset
from retrystorm.loadgen.strategies.retry_on import RETRY_ON, RetryOn
from retrystorm.spec import DURATION, INTEGER, NUMBER, optional, param

#: botocore ``TransientRetryableChecker`` (500, 502, 503, 504, connection errors and
#: timeouts: ``ConnectionError``, ``HTTPClientError``) and 429 for the throttling error
#: codes (``ThrottledRetryableChecker``: ``Throttling``, ``TooManyRequestsException`` ...;
#: ``ThrottlingStatusCodeChecker``: a 429 whose error no model covers).
AWS_RETRY_ON = RetryOn(timeout=True, connection=True, statuses=frozenset({429, 500, 502, 503, 504}))
#: botocore legacy mode, ``botocore/data/_retry.json`` ``__default__.policies``: 429, 500, 502, 503,
#: 504, 509 and ``GENERAL_CONNECTION_ERROR`` (``retryhandler.EXCEPTION_MAP``: connection errors,
#: closed connections and read timeouts).
AWS_LEGACY_RETRY_ON = RetryOn(timeout=True, connection=True, statuses=frozenset({429, 500, 502, 503, 504, 509}))


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class _AwsMode(Preset):
    """What the standard modes share: capped full-jitter exponential backoff, 3 attempts, the retry quota.

    Retry n waits ``U(0, min(b * 2^(n-1), 20 s))`` with ``b`` = ``throttle_base`` after a throttling
    answer (429 here) and ``base`` after any other failure; a retry withdraws ``throttle_cost`` from
    the quota after a throttle, ``timeout_cost`` after a timeout, ``cost`` otherwise.
    """

    throttle_aware: ClassVar[bool] = True
    reads_retry_after: ClassVar[bool] = True
    max_attempts: int = param("max_attempts", INTEGER, 3, "attempts, the first included", at_least=1)
    base_s: float = param("base", DURATION, 0.05, "delay cap of retry 1 after a non-throttling error", above=0)
    throttle_base_s: float = param("throttle_base", DURATION, 1.0, "delay cap of retry 1 after a throttle", above=0)
    max_backoff_s: float = param("max_backoff", DURATION, 20.0, "_MAX_BACKOFF", above=0)
    quota: float | None = param(
        "quota", optional(NUMBER), 500.0, "retry quota capacity (none: off)", above=0, at_most=MAX_BUDGET_SIZE
    )
    cost: float = param(
        "cost", NUMBER, 14.0, "quota cost of a retry after a non-throttling error", at_least=0, at_most=MAX_BUDGET_SIZE
    )
    timeout_cost: float = param(
        "timeout_cost", NUMBER, 14.0, "quota cost of a retry after a timeout", at_least=0, at_most=MAX_BUDGET_SIZE
    )
    throttle_cost: float = param(
        "throttle_cost", NUMBER, 5.0, "quota cost of a retry after a throttle", at_least=0, at_most=MAX_BUDGET_SIZE
    )
    retry_on: RetryOn = param("retry_on", RETRY_ON, AWS_RETRY_ON, "retry conditions")

    def delay(self, attempt: int, previous_delay_s: float, rng: random.Random) -> float:
        return rng.random() * capped_exponential(self.base_s, 2.0, self.max_backoff_s, attempt)

    def throttled_delay(self, attempt: int, previous_delay_s: float, rng: random.Random) -> float:
        return rng.random() * capped_exponential(self.throttle_base_s, 2.0, self.max_backoff_s, attempt)

    @property
    def max_delay_s(self) -> float:
        return max(self.base_s, self.throttle_base_s, self.max_backoff_s)

    def attempt_cap(self) -> int:
        return self.max_attempts

    def conditions(self) -> RetryOn:
        return self.retry_on

    def quota_budget(self) -> QuotaBudget | None:
        """The retry quota with this mode's costs (``None`` with ``quota=none``)."""
        if self.quota is None:
            return None
        return QuotaBudget(
            capacity=self.quota, cost=self.cost, timeout_cost=self.timeout_cost, throttle_cost=self.throttle_cost
        )

    def budget(self) -> RetryBudget | None:
        return self.quota_budget()

    def retry_after(self) -> RetryAfter:
        return RetryAfter.AWS if self.reads_retry_after else RetryAfter.IGNORE


@register_strategy("aws-standard")
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AwsStandard(_AwsMode):
    """AWS SDK standard mode (retries 2.1): U(0, min(b * 2^(n-1), 20 s)), b = 50 ms, or 1 s after a throttle.

    botocore 1.44.8, the default mode since 1.44 (``botocore/configprovider.py``: ``retry_mode``
    defaults to ``standard``; AWS SDK retries 2.1, the SDKs' default since 2026-11-10),
    ``botocore/retries/standard.py``:

    * **Backoff**: ``ExponentialBackoff.delay_amount``: ``t_i = rand(0, 1) * min(base_scale * 2 ** i,
      20)``, ``base_scale`` 1 s for a throttling error, 0.05 s otherwise
      (``_DEFAULT_BACKOFF_CONFIG``; DynamoDB's 0.025 s is ``base=25ms,max_attempts=4``).
    * **x-amz-retry-after** (milliseconds) raises the delay to it, at most 5 s past ``t_i``:
      ``max(t_i, min(r, t_i + 5))``. The built-in target sends ``Retry-After`` only (seconds),
      which botocore does not read: a service of one's own that sends ``x-amz-retry-after`` shows it.
    * **Quota** (``RetryQuotaChecker``, ``quota.RetryQuota``): 500; a retry costs 14
      (``_RETRY_COST``; 5 and 10 after a timeout before 1.44), 5 after a throttle
      (``_THROTTLING_RETRY_COST``); a first-try success gives 1 back, a retried success what
      its last retry took; an answer that is not a 2xx gives nothing back. From a full quota,
      a 503 outage gets 35 retries (500 / 14), not 100.
    * **Attempts**: 3 (``DEFAULT_MAX_ATTEMPTS``). **Retry conditions**: timeouts and connection
      errors, 500, 502, 503, 504 (``TransientRetryableChecker``) and throttles, which a plain HTTP
      target can only send as 429 (``ThrottlingStatusCodeChecker``).
    """

    library: ClassVar[str] = "botocore 1.44.8 (standard mode, AWS SDK retries 2.1)"


@register_strategy("aws-adaptive")
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AwsAdaptive(_AwsMode):
    """AWS SDK adaptive mode: standard mode plus the client-side rate limiter (the ``aws-rate-limiter`` budget).

    botocore 1.44.8 ``botocore/retries/adaptive.py`` registers standard mode's retry
    handler and a ``ClientRateLimiter``: a token bucket each send takes a token from,
    whose rate follows CUBIC, cut on throttling answers (429 here) and grown on every
    other answer. It turns on at the first throttle: without 429s it is standard mode.
    Delays, attempts, conditions and quota as ``aws-standard`` (retries 2.1).
    """

    library: ClassVar[str] = "botocore 1.44.8 (adaptive mode, AWS SDK retries 2.1)"

    def budget(self) -> RetryBudget:
        return AwsRateLimiterBudget(
            quota=self.quota, cost=self.cost, timeout_cost=self.timeout_cost, throttle_cost=self.throttle_cost
        )


@register_strategy("aws-standard-2025")
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AwsStandard2025(_AwsMode):
    """AWS SDK standard mode before retries 2.1: U(0, min(2^(n-1), 20)) s for any error; a retry costs 5 (timeout 10).

    botocore 1.43.67 ``botocore/retries/standard.py`` (the last release before 1.44), opt-in
    there with ``retry_mode=standard``: ``ExponentialBackoff`` with one 1 s base,
    ``RetryQuotaChecker`` with ``_RETRY_COST`` 5 and ``_TIMEOUT_RETRY_COST`` 10 for every
    error, throttles included; ``x-amz-retry-after`` was not read. Attempts, conditions and
    the quota's 500 as ``aws-standard``.
    """

    library: ClassVar[str] = "botocore 1.43.67 (standard mode before AWS SDK retries 2.1)"
    throttle_aware: ClassVar[bool] = False
    reads_retry_after: ClassVar[bool] = False
    base_s: float = param("base", DURATION, 1.0, "delay cap of retry 1", above=0)
    throttle_base_s: float = param("throttle_base", DURATION, 1.0, "delay cap of retry 1 after a throttle", above=0)
    cost: float = param("cost", NUMBER, 5.0, "quota cost of a retry", at_least=0, at_most=MAX_BUDGET_SIZE)
    timeout_cost: float = param(
        "timeout_cost", NUMBER, 10.0, "quota cost of a retry after a timeout", at_least=0, at_most=MAX_BUDGET_SIZE
    )
    throttle_cost: float = param(
        "throttle_cost", NUMBER, 5.0, "quota cost of a retry after a throttle", at_least=0, at_most=MAX_BUDGET_SIZE
    )


@register_strategy("aws-legacy")
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AwsLegacy(Preset):
    """botocore legacy mode, its default before 1.44: retry n waits U(0, 1) * 2^(n-1) s; 5 attempts; no quota.

    botocore 1.44.8 ``botocore/data/_retry.json`` ``__default__`` (``max_attempts`` 5, delay
    ``exponential`` with ``base`` ``rand`` and ``growth_factor`` 2) and ``botocore/retryhandler.py``
    (``delay_exponential``: ``base * growth_factor ** (attempts - 1)``, ``rand`` drawn per retry,
    no cap; ``MaxAttemptsDecorator``). No retry quota and no rate limiter: every failed call is
    retried 4 times for as long as the outage lasts, 5x amplification. Some services override the
    defaults in ``_retry.json`` (DynamoDB: 10 attempts, base 0.05 s:
    ``aws-legacy:max_attempts=10,base=50ms``).

    * **Retry conditions**: 429, 500, 502, 503, 504, 509 and ``GENERAL_CONNECTION_ERROR``
      (connection errors and read timeouts); ``Retry-After`` is not read.
    """

    library: ClassVar[str] = "botocore 1.44.8 (legacy mode, the default before 1.44)"
    max_attempts: int = param("max_attempts", INTEGER, 5, "attempts, the first included", at_least=2, at_most=64)
    base_s: float = param("base", DURATION, 1.0, "the scale of the random base (rand: 1 s)", above=0, at_most=3600)
    retry_on: RetryOn = param("retry_on", RETRY_ON, AWS_LEGACY_RETRY_ON, "retry conditions")

    def delay(self, attempt: int, previous_delay_s: float, rng: random.Random) -> float:
        # past its own max_attempts (an explicit --max-attempts above it) the scale stays at the last retry's
        return rng.random() * self.base_s * 2.0 ** min(attempt - 1, self.max_attempts - 2)

    @property
    def max_delay_s(self) -> float:
        return self.base_s * 2.0 ** (self.max_attempts - 2)

    def attempt_cap(self) -> int:
        return self.max_attempts

    def conditions(self) -> RetryOn:
        return self.retry_on
