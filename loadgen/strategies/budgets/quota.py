"""The AWS SDKs' standard-mode retry quota."""

from __future__ import annotations

import dataclasses

from retrystorm.loadgen.strategies.budgets.base import MAX_BUDGET_SIZE, BudgetState, RetryBudget, register_budget
from retrystorm.spec import NUMBER, optional, param


@register_budget("quota")
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class QuotaBudget(RetryBudget):
    """AWS SDK standard-mode retry quota.

    The quota starts at ``capacity`` (500). A retry withdraws ``cost`` (5), or
    ``timeout_cost`` (10) when the failed attempt timed out, or ``throttle_cost`` (none:
    as the others) after a throttling answer (HTTP 429); with too little left the retry
    is refused. A successful retry refunds what it withdrew; a success on the first try
    adds ``increment`` (1). The quota never exceeds ``capacity``. Source: AWS SDKs and
    Tools Reference Guide, "Retry behavior", standard mode (``RETRY_COST``,
    ``RETRY_TIMEOUT_COST``, ``NO_RETRY_INCREMENT``, ``INITIAL_RETRY_TOKENS``); these
    defaults are the pre-2026 ones. AWS SDK retries 2.1 (botocore 1.44,
    ``botocore/retries/standard.py`` ``RetryQuotaChecker``) charges 14 for every
    non-throttling retry and 5 for a throttled one: ``cost=14,timeout_cost=14,throttle_cost=5``
    (what ``aws-standard`` uses).
    """

    capacity: float = param("capacity", NUMBER, 500.0, "initial and largest quota", above=0, at_most=MAX_BUDGET_SIZE)
    cost: float = param("cost", NUMBER, 5.0, "cost of a retry", at_least=0, at_most=MAX_BUDGET_SIZE)
    timeout_cost: float = param(
        "timeout_cost", NUMBER, 10.0, "cost of a retry after a timeout", at_least=0, at_most=MAX_BUDGET_SIZE
    )
    throttle_cost: float | None = param(
        "throttle_cost",
        optional(NUMBER),
        None,
        "cost of a retry after a throttling answer (none: cost or timeout_cost)",
        at_least=0,
        at_most=MAX_BUDGET_SIZE,
    )
    increment: float = param(
        "increment", NUMBER, 1.0, "refill on a first-try success", at_least=0, at_most=MAX_BUDGET_SIZE
    )

    def start(self) -> QuotaState:
        return QuotaState(self)


class QuotaState(BudgetState):
    """The remaining quota of a :class:`QuotaBudget`."""

    def __init__(self, policy: QuotaBudget) -> None:
        super().__init__()
        self.policy = policy
        self.quota = policy.capacity

    def try_retry(self, now_s: float, *, after_timeout: bool, throttled: bool = False) -> float | None:
        policy = self.policy
        if throttled and policy.throttle_cost is not None:
            cost = policy.throttle_cost
        else:
            cost = policy.timeout_cost if after_timeout else policy.cost
        if self.quota < cost:
            self._refuse()
            return None
        self.quota -= cost
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
        if not success:
            return
        refund = self.policy.increment if retry_cost is None else retry_cost
        self.quota = min(self.policy.capacity, self.quota + refund)
