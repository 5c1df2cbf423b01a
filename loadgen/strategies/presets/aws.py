"""``aws-standard`` and ``aws-adaptive``: the AWS SDKs' retry modes, as botocore implements them."""

from __future__ import annotations

import dataclasses
import random
from typing import ClassVar

from retrystorm.loadgen.strategies.base import register_strategy
from retrystorm.loadgen.strategies.budgets.aws_rate_limiter import AwsRateLimiterBudget
from retrystorm.loadgen.strategies.budgets.base import MAX_BUDGET_SIZE, RetryBudget
from retrystorm.loadgen.strategies.budgets.quota import QuotaBudget
from retrystorm.loadgen.strategies.exponential import capped_exponential
from retrystorm.loadgen.strategies.presets.base import Preset
from retrystorm.loadgen.strategies.retry_on import RETRY_ON, RetryOn
from retrystorm.spec import DURATION, INTEGER, NUMBER, optional, param

#: botocore ``TransientRetryableChecker`` (500, 502, 503, 504, connection errors and
#: timeouts: ``ConnectionError``, ``HTTPClientError``) and 429 for the throttling error
#: codes (``ThrottledRetryableChecker``: ``Throttling``, ``TooManyRequestsException`` ...).
AWS_RETRY_ON = RetryOn(timeout=True, connection=True, statuses=frozenset({429, 500, 502, 503, 504}))


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class _AwsMode(Preset):
    """What both modes share: capped full-jitter exponential backoff, 3 attempts, the retry quota."""

    max_attempts: int = param("max_attempts", INTEGER, 3, "attempts, the first included", at_least=1)
    base_s: float = param("base", DURATION, 1.0, "delay cap of retry 1 (2^0 s)", above=0)
    max_backoff_s: float = param("max_backoff", DURATION, 20.0, "_MAX_BACKOFF", above=0)
    quota: float | None = param(
        "quota", optional(NUMBER), 500.0, "retry quota capacity (none: off)", above=0, at_most=MAX_BUDGET_SIZE
    )
    retry_on: RetryOn = param("retry_on", RETRY_ON, AWS_RETRY_ON, "retry conditions")

    def delay(self, attempt: int, previous_delay_s: float, rng: random.Random) -> float:
        return rng.random() * capped_exponential(self.base_s, 2.0, self.max_backoff_s, attempt)

    @property
    def max_delay_s(self) -> float:
        return max(self.base_s, self.max_backoff_s)

    def attempt_cap(self) -> int:
        return self.max_attempts

    def conditions(self) -> RetryOn:
        return self.retry_on


@register_strategy("aws-standard")
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AwsStandard(_AwsMode):
    """AWS SDK standard mode: retry n waits U(0, min(base * 2^(n-1), 20 s)); 3 attempts; the retry quota.

    botocore 1.43.67 ``botocore/retries/standard.py``: ``DEFAULT_MAX_ATTEMPTS`` 3,
    ``ExponentialBackoff`` (``_BASE`` 2, ``_MAX_BACKOFF`` 20: ``t_i = rand(0, 1) *
    min(2 ** (attempt - 1), 20)``, base 1 s), ``RetryQuotaChecker`` with
    ``quota.RetryQuota`` (500; a retry costs 5, 10 after a timeout; a first-try success
    gives 1 back, a retried success what its retry took): the ``quota`` budget. This is
    botocore's default path; its opt-in 2026 retry behaviour (``AWS_NEW_RETRIES_2026``:
    0.05 s base for non-throttling errors, retry cost 14) is not modelled. DynamoDB's 4
    attempts are ``max_attempts=4``.

    * **Retry conditions**: timeouts and connection errors, 500, 502, 503, 504
      (``TransientRetryableChecker``) and the throttling error codes, which this
      target, speaking plain HTTP, can only send as 429 (botocore finds them in the
      parsed error body, not in the status). ``Retry-After`` is not read (botocore's
      opt-in path reads ``x-amz-retry-after`` only).
    """

    library: ClassVar[str] = "botocore 1.43.67 (standard mode)"

    def budget(self) -> RetryBudget | None:
        return QuotaBudget(capacity=self.quota) if self.quota is not None else None


@register_strategy("aws-adaptive")
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AwsAdaptive(_AwsMode):
    """AWS SDK adaptive mode: standard mode plus the client-side rate limiter (the ``aws-rate-limiter`` budget).

    botocore 1.43.67 ``botocore/retries/adaptive.py`` registers standard mode's retry
    handler and a ``ClientRateLimiter``: a token bucket each send takes a token from,
    whose rate follows CUBIC, cut on throttling answers (429 here) and grown on every
    other answer. It turns on at the first throttle: without 429s it is standard mode.
    Delays, attempts, conditions and quota as ``aws-standard``.
    """

    library: ClassVar[str] = "botocore 1.43.67 (adaptive mode)"

    def budget(self) -> RetryBudget:
        return AwsRateLimiterBudget(quota=self.quota)
