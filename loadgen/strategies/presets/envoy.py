"""``envoy``: an Envoy route's retry policy and the cluster's retry circuit breaker or budget."""

from __future__ import annotations

import dataclasses
import random
from typing import ClassVar

from retrystorm.loadgen.strategies.base import register_strategy
from retrystorm.loadgen.strategies.budgets.base import MAX_WINDOW_S, RetryBudget
from retrystorm.loadgen.strategies.budgets.concurrency import ConcurrencyBudget
from retrystorm.loadgen.strategies.presets.base import Preset
from retrystorm.loadgen.strategies.presets.params import STATUSES, word_list
from retrystorm.loadgen.strategies.retry_on import RetryOn
from retrystorm.spec import DURATION, INTEGER, NUMBER, optional, param

#: ``retry_on`` conditions understood here (HTTP/1 ones; ``refused-stream`` is an HTTP/2 reset).
RETRY_ON_WORDS = ("5xx", "gateway-error", "reset", "connect-failure", "retriable-4xx", "retriable-status-codes")
ENVOY_RETRY_ON = word_list(RETRY_ON_WORDS)


def _ms(seconds: float) -> int:
    """A proto Duration in whole milliseconds, at least 1 (``base_interval`` below 1 ms is rounded up)."""
    return max(1, int(round(seconds * 1000, 6)))


def interval_ms(attempt: int, base_ms: int, max_ms: int) -> int:
    """The interval retry ``attempt`` draws from: base, doubled while below ``max / 2``, then ``max``.

    ``JitteredExponentialBackOffStrategy::nextBackOffMs``: ``backoff = next_interval_``;
    ``next_interval_ = next_interval_ < max_interval_ / 2 ? next_interval_ * 2 : max_interval_``.
    """
    current = base_ms
    limit = max_ms // 2
    for _ in range(attempt - 1):
        if current >= max_ms:
            break
        current = current * 2 if current < limit else max_ms
    return current


@register_strategy("envoy")
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class EnvoyRetry(Preset):
    """Envoy route retry policy: retry n waits U{0, ..., interval_n - 1} ms, interval_n = min(25 * 2^(n-1), 250) ms.

    Fully jittered exponential: ``random() % interval`` with the interval starting at
    ``base_interval`` and doubling after each retry, capped at ``max_interval``
    (default 10 x base): 25, 50, 100, 200, 250 ms. Envoy's router documentation says
    ``[0, (2^N - 1) * base)``, the formula of its older ``JitteredBackOffStrategy``; the
    source has drawn from ``[0, 2^(N-1) * base)`` since (envoyproxy/envoy
    ``source/common/common/backoff_strategy.cc``, commit 4280ef77, and
    ``JitteredExponentialBackOffStrategy`` in later releases); this follows the source.
    Base 25 ms (runtime ``upstream.base_retry_backoff_ms``) and max 10 x base from
    ``source/common/router/retry_state_impl.cc``; ``num_retries`` 1 from
    ``api/envoy/config/route/v3/route_components.proto`` (envoyproxy/data-plane-api
    84e84367).

    * **Attempts**: ``num_retries`` + 1.
    * **Retry conditions**: ``retry_on`` has no default in Envoy (none: no retries);
      ``5xx`` is taken, the common setting: 5xx answers, resets, connect failures and
      per-try timeouts (the attempt timeout here is Envoy's ``per_try_timeout``; the
      source retries a per-try timeout only under ``5xx`` or ``gateway-error``).
      ``gateway-error``: 502-504, resets, connect failures, per-try timeouts; ``reset``
      and ``connect-failure``: no answer; ``retriable-4xx``: 409;
      ``retriable-status-codes``: ``retriable_status_codes``.
    * **Budget** (the ``concurrency`` budget): the cluster's circuit breaker allows
      ``max_retries`` (3) retries in flight; with ``budget_percent`` the retry budget
      replaces it: ``max(budget_percent % of attempts in flight, min_retry_concurrency)``; with
      ``budget_interval`` (Envoy 2026, PR #44147) of the attempts started over that interval.
    * ``Retry-After`` is not read (``rate_limited_retry_back_off`` is not configured by default).
    """

    library: ClassVar[str] = "Envoy (router retry_state_impl.cc, backoff_strategy.cc)"
    base_interval_s: float = param("base_interval", DURATION, 0.025, "retry_back_off.base_interval", above=0)
    max_interval_s: float | None = param(
        "max_interval", optional(DURATION), None, "retry_back_off.max_interval (none: 10 x base)", above=0
    )
    num_retries: int = param("num_retries", INTEGER, 1, "retries per request", at_least=0)
    retry_on: tuple[str, ...] = param("retry_on", ENVOY_RETRY_ON, ("5xx",), "retry conditions")
    retriable_status_codes: tuple[int, ...] = param(
        "retriable_status_codes", STATUSES, (), "statuses for retriable-status-codes"
    )
    max_retries: int = param("max_retries", INTEGER, 3, "circuit breaker: retries in flight", at_least=0)
    budget_percent: float | None = param(
        "budget_percent",
        optional(NUMBER),
        None,
        "retry_budget.budget_percent (none: no retry budget)",
        at_least=0,
        at_most=100,
    )
    min_retry_concurrency: int = param(
        "min_retry_concurrency", INTEGER, 3, "retry_budget.min_retry_concurrency", at_least=0
    )
    budget_interval_s: float = param(
        "budget_interval",
        DURATION,
        0.0,
        "retry_budget.budget_interval (0: attempts in flight)",
        at_least=0,
        at_most=MAX_WINDOW_S,
    )

    def _validate(self) -> None:
        if self.budget_interval_s and self.budget_percent is None:
            raise self._fail("budget_interval", "applies to the retry budget; give budget_percent too")
        if self.max_interval_s is not None and _ms(self.max_interval_s) < _ms(self.base_interval_s):
            raise self._fail("max_interval", f"must be at least base_interval ({self.base_interval_s} s)")

    @property
    def _bounds_ms(self) -> tuple[int, int]:
        base = _ms(self.base_interval_s)
        return base, (_ms(self.max_interval_s) if self.max_interval_s is not None else base * 10)

    def delay(self, attempt: int, previous_delay_s: float, rng: random.Random) -> float:
        base, top = self._bounds_ms
        return rng.randrange(interval_ms(attempt, base, top)) / 1000

    @property
    def max_delay_s(self) -> float:
        return (self._bounds_ms[1] - 1) / 1000

    def attempt_cap(self) -> int:
        return self.num_retries + 1

    def conditions(self) -> RetryOn:
        words = set(self.retry_on)
        no_answer = bool(words & {"5xx", "gateway-error", "reset", "connect-failure"})
        statuses: set[int] = set()
        if "gateway-error" in words:
            statuses |= {502, 503, 504}
        if "retriable-4xx" in words:
            statuses.add(409)
        if "retriable-status-codes" in words:
            statuses |= {code for code in self.retriable_status_codes if code >= 400}
        return RetryOn(
            timeout=bool(words & {"5xx", "gateway-error"}),
            connection=no_answer,
            classes=frozenset({5}) if "5xx" in words else frozenset(),
            statuses=frozenset(statuses),
        )

    def budget(self) -> RetryBudget:
        if self.budget_percent is None:
            return ConcurrencyBudget(percent=0.0, min_retries=self.max_retries)
        return ConcurrencyBudget(
            percent=self.budget_percent, min_retries=self.min_retry_concurrency, interval_s=self.budget_interval_s
        )
