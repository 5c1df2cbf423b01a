"""Polly's circuit breaker as a budget: attempts refused locally while it is open."""

from __future__ import annotations

import dataclasses
import random

from retrystorm.loadgen.strategies.budgets.base import MAX_WINDOW_S, BudgetState, RetryBudget, register_budget
from retrystorm.loadgen.strategies.budgets.window import SlidingWindow
from retrystorm.spec import DURATION, INTEGER, NUMBER, param

#: Polly refuses a ``MinimumThroughput`` below 2 (``CircuitBreakerConstants.MinimumValidThroughput``).
MIN_THROUGHPUT = 2
MAX_THROUGHPUT = 1_000_000


@register_budget("circuit")
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CircuitBudget(RetryBudget):
    """A circuit breaker shared by the process's users: closed, open for ``break_duration``, then one probe.

    Polly 8 (App-vNext/Polly ``src/Polly.Core/CircuitBreaker/``: ``CircuitBreakerConstants.cs``,
    ``Controller/CircuitStateController.cs``, ``Health/``), the defaults of ``CircuitBreakerStrategyOptions``:

    * **closed**: every attempt's outcome is sampled over the last ``sampling_duration`` (30 s); when at least
      ``min_throughput`` (100) attempts were sampled and the share of handled failures among them reaches
      ``failure_ratio`` (0.1), the circuit opens;
    * **open** for ``break_duration`` (5 s): every attempt is refused locally (``BrokenCircuitException``),
      reaching no server;
    * then **half-open**: one attempt goes through; its success closes the circuit (the samples start over),
      its failure opens it for another ``break_duration``; the others are refused meanwhile.

    A handled failure is one the retry conditions cover (the breaker and the retry share their predicate in
    Microsoft.Extensions.Http.Resilience's standard handler: 5xx, 408, 429, connection errors, timeouts).
    A breaker does not limit retries: a retry is refused only while the circuit is open when the retry is
    decided, since Microsoft.Extensions.Http.Resilience's retry does not handle ``BrokenCircuitException``
    (the call would fail at its next attempt; here it fails at once, without waiting the retry's delay).
    """

    failure_ratio: float = param("failure_ratio", NUMBER, 0.1, "FailureRatio", above=0, at_most=1)
    min_throughput: int = param(
        "min_throughput", INTEGER, 100, "MinimumThroughput", at_least=MIN_THROUGHPUT, at_most=MAX_THROUGHPUT
    )
    sampling_s: float = param("sampling", DURATION, 30.0, "SamplingDuration", above=0, at_most=MAX_WINDOW_S)
    break_s: float = param("break", DURATION, 5.0, "BreakDuration", above=0, at_most=MAX_WINDOW_S)

    def start(self) -> CircuitState:
        return CircuitState(self)


class CircuitState(BudgetState):
    """The breaker's state: sampled attempts and failures, and until when it is open."""

    def __init__(self, policy: CircuitBudget) -> None:
        super().__init__()
        self.policy = policy
        self.attempts = SlidingWindow(policy.sampling_s)
        self.failures = SlidingWindow(policy.sampling_s)
        #: ``None``: closed; else when the break ends (from then, half-open).
        self.open_until_s: float | None = None
        self.probing = False
        self.opened = 0

    def is_open(self, now_s: float) -> bool:
        """Whether an attempt at ``now_s`` is refused (open, or half-open with its one probe out)."""
        if self.open_until_s is None:
            return False
        return now_s < self.open_until_s or self.probing

    def allow_attempt(self, now_s: float, rng: random.Random) -> bool:
        if self.is_open(now_s):
            self._refuse()
            return False
        if self.open_until_s is not None:
            self.probing = True  # half-open: this attempt is the probe
        return True

    def try_retry(self, now_s: float, *, after_timeout: bool, throttled: bool = False) -> float | None:
        if self.is_open(now_s):
            self._refuse()
            return None
        return 0.0

    def on_result(
        self,
        now_s: float,
        *,
        success: bool,
        retry_cost: float | None,
        throttled: bool = False,
        retryable: bool = True,
    ) -> None:
        handled = not success and retryable
        if self.probing:
            self.probing = False
            if handled:
                self._open(now_s)
            else:
                self.open_until_s = None
                self.attempts, self.failures = (
                    SlidingWindow(self.policy.sampling_s),
                    SlidingWindow(self.policy.sampling_s),
                )
            return
        if self.open_until_s is not None:
            return  # an attempt sent before the circuit opened
        self.attempts.add(now_s)
        if handled:
            self.failures.add(now_s)
        sampled = self.attempts.total(now_s)
        if sampled >= self.policy.min_throughput and self.failures.total(now_s) >= self.policy.failure_ratio * sampled:
            self._open(now_s)

    def _open(self, now_s: float) -> None:
        self.open_until_s = now_s + self.policy.break_s
        self.opened += 1
