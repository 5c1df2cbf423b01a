"""Finagle's RetryBudget: retries as a fraction of requests over a sliding window."""

from __future__ import annotations

import dataclasses

from retrystorm.loadgen.strategies.budgets.base import (
    MAX_BUDGET_SIZE,
    MAX_MULTIPLIER,
    MAX_WINDOW_S,
    MIN_WINDOW_S,
    BudgetState,
    RetryBudget,
    register_budget,
)
from retrystorm.loadgen.strategies.budgets.window import SlidingWindow
from retrystorm.spec import DURATION, NUMBER, choice, param


@register_budget("ratio")
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RatioBudget(RetryBudget):
    """Retries allowed while ``retries_w + 1 <= percent * deposits_w + min_rate * ttl``.

    ``deposits_w`` and ``retries_w`` count deposits and retries over the last ``ttl`` seconds. A deposit is
    every logical request as it starts (``deposit=requests``, Finagle's ``RetryFilter``), or only a logical
    request that succeeded, when it ends (``deposit=successes``, Finagle's ``RequeueFilter``, whose ``apply``
    calls ``retryBudget.deposit()`` in ``respond`` when the response classifier says ``Successful``): then
    an outage where nothing succeeds deposits nothing, and only the floor is left to spend.
    The ``min_rate * ttl`` floor lets a client that has just started,
    or sends little, retry at all. Defaults are Finagle's ``RetryBudget``
    (``ttl`` 10 s, ``minRetriesPerSec`` 10, ``percentCanRetry`` 20 %); the SRE book's
    per-client budget (chapter 22, "Addressing Cascading Failures") is
    ``ratio:percent=0.1,min_rate=0``.
    """

    percent: float = param("percent", NUMBER, 0.2, "retries allowed per request", at_least=0, at_most=MAX_MULTIPLIER)
    min_rate: float = param(
        "min_rate", NUMBER, 10.0, "retries per second always allowed", at_least=0, at_most=MAX_BUDGET_SIZE
    )
    ttl_s: float = param("ttl", DURATION, 10.0, "window length", at_least=MIN_WINDOW_S, at_most=MAX_WINDOW_S)
    deposit: str = param("deposit", choice("requests", "successes"), "requests", "what deposits into the budget")

    def start(self) -> RatioState:
        return RatioState(self)


class RatioState(BudgetState):
    """Windowed request and retry counts of a :class:`RatioBudget`."""

    def __init__(self, policy: RatioBudget) -> None:
        super().__init__()
        self.policy = policy
        self.requests = SlidingWindow(policy.ttl_s)
        self.retries = SlidingWindow(policy.ttl_s)

    def on_request(self, now_s: float) -> None:
        if self.policy.deposit == "requests":
            self.requests.add(now_s)

    def on_result(
        self,
        now_s: float,
        *,
        success: bool,
        retry_cost: float | None,
        throttled: bool = False,
        retryable: bool = True,
    ) -> None:
        if success and self.policy.deposit == "successes":  # a logical request's one success: its last attempt
            self.requests.add(now_s)

    def balance(self, now_s: float) -> float:
        """Retries still allowed in the current window (may be fractional)."""
        allowed = self.policy.percent * self.requests.total(now_s) + self.policy.min_rate * self.policy.ttl_s
        return allowed - self.retries.total(now_s)

    def try_retry(self, now_s: float, *, after_timeout: bool, throttled: bool = False) -> float | None:
        if self.balance(now_s) < 1.0:
            self._refuse()
            return None
        self.retries.add(now_s)
        return 1.0
