"""Adaptive client-side throttling from the Google SRE book."""

from __future__ import annotations

import dataclasses
import random

from retrystorm.loadgen.strategies.budgets.base import (
    MAX_MULTIPLIER,
    MAX_WINDOW_S,
    MIN_WINDOW_S,
    BudgetState,
    RetryBudget,
    register_budget,
)
from retrystorm.loadgen.strategies.budgets.window import SlidingWindow
from retrystorm.spec import DURATION, NUMBER, param


@register_budget("adaptive")
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class AdaptiveBudget(RetryBudget):
    """Reject locally with probability ``max(0, (requests - K * accepts) / (requests + 1))``.

    ``requests`` counts every attempt the application made over the window (locally
    rejected ones included), ``accepts`` those the server answered successfully. It
    gates every attempt, first ones included, so it sheds load before it reaches the
    server. Source: "Site Reliability Engineering" (O'Reilly 2016), chapter 21
    "Handling Overload", section "Client-side throttling" (K = 2, two-minute window).
    """

    k: float = param("k", NUMBER, 2.0, "accept multiplier K", at_least=1, at_most=MAX_MULTIPLIER)
    window_s: float = param("window", DURATION, 120.0, "history length", at_least=MIN_WINDOW_S, at_most=MAX_WINDOW_S)

    def start(self) -> AdaptiveState:
        return AdaptiveState(self)


class AdaptiveState(BudgetState):
    """Windowed requests and accepts of an :class:`AdaptiveBudget`."""

    def __init__(self, policy: AdaptiveBudget) -> None:
        super().__init__()
        self.policy = policy
        self.requests = SlidingWindow(policy.window_s)
        self.accepts = SlidingWindow(policy.window_s)

    def reject_probability(self, now_s: float) -> float:
        """The SRE book's formula over the current window."""
        requests = self.requests.total(now_s)
        accepts = self.accepts.total(now_s)
        return max(0.0, (requests - self.policy.k * accepts) / (requests + 1))

    def allow_attempt(self, now_s: float, rng: random.Random) -> bool:
        probability = self.reject_probability(now_s)
        self.requests.add(now_s)
        if rng.random() < probability:
            self._refuse()
            return False
        return True

    def try_retry(self, now_s: float, *, after_timeout: bool, throttled: bool = False) -> float | None:
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
        if success:
            self.accepts.add(now_s)
