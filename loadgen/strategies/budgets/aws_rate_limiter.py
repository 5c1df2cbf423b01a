"""The AWS SDKs' adaptive retry mode: a client-side rate limiter whose rate follows CUBIC."""

from __future__ import annotations

import dataclasses
import math

from retrystorm.loadgen.strategies.budgets.base import (
    MAX_BUDGET_SIZE,
    MAX_MULTIPLIER,
    BudgetState,
    RetryBudget,
    register_budget,
)
from retrystorm.loadgen.strategies.budgets.quota import QuotaBudget, QuotaState
from retrystorm.spec import DURATION, NUMBER, optional, param


@register_budget("aws-rate-limiter")
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AwsRateLimiterBudget(RetryBudget):
    """botocore's adaptive mode: every send takes a token from a bucket whose rate follows CUBIC.

    Off until the first throttling answer (HTTP 429 here, for the SDKs' throttling
    error codes). Every answer (each attempt's end) updates, at time ``t``:

    * the measured rate ``m``: answers counted in ``bucket``-second buckets, smoothed
      ``m = smoothing * count / elapsed + (1 - smoothing) * m`` when a bucket closes;
    * a throttle: ``w_max = m`` (``min(m, rate)`` once on), ``k = cbrt(w_max * (1 - beta)
      / scale)``, ``last_fail = t``, new rate ``beta * w_max``, and the limiter turns on;
      any other answer: new rate ``scale * (t - last_fail - k) ** 3 + w_max``;
    * the bucket's rate becomes ``min(new rate, 2 * m)``, at least ``min_rate``; its
      capacity ``max(rate, 1)`` tokens, refilled at the rate.

    Once on, a send waits until a token is there (:meth:`AwsRateLimiterState.before_send`
    returns the wait and takes the token at once: waiting sends are served in the order
    they asked; botocore's waiting threads race for each token, and a rate change
    wakes them to recompute). The standard mode's retry quota stays in force
    (``quota``: its capacity; ``none``: none; ``cost``, ``timeout_cost``, ``throttle_cost``: what a
    retry withdraws, AWS SDK retries 2.1's 14, 14 and 5), as botocore registers both.

    Source: botocore 1.44.8, ``botocore/retries/adaptive.py`` (``ClientRateLimiter``,
    ``RateClocker``: smoothing 0.8, 0.5 s buckets, ``_MAX_RATE_ADJUST_SCALE`` 2),
    ``throttling.py`` (``CubicCalculator``: scale 0.4, beta 0.7, starting ``w_max`` 0),
    ``bucket.py`` (``TokenBucket``: initial rate 1, ``_MIN_RATE`` 0.5).
    """

    beta: float = param("beta", NUMBER, 0.7, "rate kept after a throttle (CUBIC beta)", above=0, at_most=1)
    scale: float = param("scale", NUMBER, 0.4, "CUBIC scale constant C", above=0, at_most=MAX_MULTIPLIER)
    smoothing: float = param("smoothing", NUMBER, 0.8, "weight of the latest measured rate", above=0, at_most=1)
    bucket_s: float = param("bucket", DURATION, 0.5, "rate measurement interval", above=0)
    min_rate: float = param("min_rate", NUMBER, 0.5, "lowest send rate, per second", above=0, at_most=MAX_BUDGET_SIZE)
    quota: float | None = param(
        "quota", optional(NUMBER), 500.0, "standard retry quota capacity (none: off)", above=0, at_most=MAX_BUDGET_SIZE
    )
    cost: float = param(
        "cost", NUMBER, 14.0, "quota cost of a non-throttling retry", at_least=0, at_most=MAX_BUDGET_SIZE
    )
    timeout_cost: float = param(
        "timeout_cost", NUMBER, 14.0, "quota cost of a retry after a timeout", at_least=0, at_most=MAX_BUDGET_SIZE
    )
    throttle_cost: float = param(
        "throttle_cost", NUMBER, 5.0, "quota cost of a retry after a throttle", at_least=0, at_most=MAX_BUDGET_SIZE
    )

    def quota_budget(self) -> QuotaBudget | None:
        """Standard mode's retry quota with these costs (``None``: ``quota=none``)."""
        if not self.quota:
            return None
        return QuotaBudget(
            capacity=self.quota, cost=self.cost, timeout_cost=self.timeout_cost, throttle_cost=self.throttle_cost
        )

    def start(self) -> AwsRateLimiterState:
        return AwsRateLimiterState(self)


class AwsRateLimiterState(BudgetState):
    """The CUBIC rate, the token bucket and the measured rate of an :class:`AwsRateLimiterBudget`.

    Time starts at the first call (botocore's starts when the client is made).
    """

    def __init__(self, policy: AwsRateLimiterBudget) -> None:
        super().__init__()
        self.policy = policy
        quota = policy.quota_budget()
        self.quota: QuotaState | None = quota.start() if quota is not None else None
        self.started = False
        self.enabled = False
        # CUBIC: botocore starts with w_max 0, k 0 and the last failure at the start
        self.w_max = 0.0
        self.k = 0.0
        self.last_fail_s = 0.0
        # the token bucket: rate 1, capacity 1, empty
        self.fill_rate = max(1.0, policy.min_rate)
        self.max_capacity = 1.0
        self.capacity = 0.0
        self.last_refill_s = 0.0
        # RateClocker
        self.measured_rate = 0.0
        self.count = 0
        self.last_bucket_s = 0.0

    def _start(self, now_s: float) -> None:
        if not self.started:
            self.started = True
            self.last_fail_s = now_s
            self.last_refill_s = now_s
            self.last_bucket_s = math.floor(now_s)

    def on_request(self, now_s: float) -> None:
        self._start(now_s)

    def before_send(self, now_s: float, *, retry: bool) -> float:
        self._start(now_s)
        if not self.enabled:
            return 0.0
        self._refill(now_s)
        wait = 0.0 if self.capacity >= 1 else (1 - self.capacity) / self.fill_rate
        self.capacity -= 1
        return wait

    def try_retry(self, now_s: float, *, after_timeout: bool, throttled: bool = False) -> float | None:
        if self.quota is None:
            return 0.0
        cost = self.quota.try_retry(now_s, after_timeout=after_timeout, throttled=throttled)
        if cost is None:
            self._refuse()
        return cost

    def on_result(
        self,
        now_s: float,
        *,
        success: bool,
        retry_cost: float | None,
        throttled: bool = False,
        retryable: bool = True,
    ) -> None:
        self._start(now_s)
        measured = self._record(now_s)
        if not throttled:
            new_rate = self.policy.scale * (now_s - self.last_fail_s - self.k) ** 3 + self.w_max
        else:
            rate = measured if not self.enabled else min(measured, self.fill_rate)
            self.w_max = rate
            self.k = (rate * (1 - self.policy.beta) / self.policy.scale) ** (1 / 3)
            self.last_fail_s = now_s
            new_rate = rate * self.policy.beta
            self.enabled = True
        self._set_rate(now_s, min(new_rate, 2.0 * measured))
        if self.quota is not None:
            self.quota.on_result(now_s, success=success, retry_cost=retry_cost)

    def _record(self, now_s: float) -> float:
        """``RateClocker.record``: count an answer; close the bucket when a new one starts."""
        scale = 1 / self.policy.bucket_s
        bucket = math.floor(now_s * scale) / scale
        self.count += 1
        if bucket > self.last_bucket_s:
            current = self.count / (bucket - self.last_bucket_s)
            smoothing = self.policy.smoothing
            self.measured_rate = current * smoothing + self.measured_rate * (1 - smoothing)
            self.count = 0
            self.last_bucket_s = bucket
        return self.measured_rate

    def _refill(self, now_s: float) -> None:
        elapsed = now_s - self.last_refill_s
        self.capacity = min(self.max_capacity, self.capacity + elapsed * self.fill_rate)
        self.last_refill_s = now_s

    def _set_rate(self, now_s: float, rate: float) -> None:
        """The ``TokenBucket.max_rate`` setter: refill at the old rate first, then rescale."""
        self._refill(now_s)
        self.fill_rate = max(rate, self.policy.min_rate)
        self.max_capacity = rate if rate >= 1 else 1.0
        self.capacity = min(self.capacity, self.max_capacity)
