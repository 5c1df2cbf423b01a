"""gRPC retry throttling (gRFC A6)."""

from __future__ import annotations

import dataclasses

from retrystorm.loadgen.strategies.budgets.base import BudgetState, RetryBudget, register_budget
from retrystorm.spec import NUMBER, param


@register_budget("tokens")
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TokensBudget(RetryBudget):
    """gRPC retry throttling: a failed attempt costs 1 token, a success adds ``ratio``.

    The bucket starts full at ``max`` tokens and never leaves ``[0, max]``; retries are
    allowed only while ``tokens > max / 2``. Source: gRFC A6 "gRPC Retry Design",
    section "Throttling Retry Attempts and Hedged RPCs" (``maxTokens``, ``tokenRatio``).
    With the defaults (10, 0.1) the clients stop retrying once failures outnumber
    successes by about ten to one.
    """

    max_tokens: float = param("max", NUMBER, 10.0, "bucket size (maxTokens)", above=0, at_most=1000)
    ratio: float = param("ratio", NUMBER, 0.1, "tokens a success adds (tokenRatio)", above=0, at_most=1)

    def start(self) -> TokensState:
        return TokensState(self)


class TokensState(BudgetState):
    """The token count of a :class:`TokensBudget`."""

    def __init__(self, policy: TokensBudget) -> None:
        super().__init__()
        self.policy = policy
        self.tokens = policy.max_tokens

    def try_retry(self, now_s: float, *, after_timeout: bool, throttled: bool = False) -> float | None:
        if self.tokens > self.policy.max_tokens / 2:
            return 0.0
        self._refuse()
        return None

    def on_result(
        self,
        now_s: float,
        *,
        success: bool,
        retry_cost: float | None,
        throttled: bool = False,
        retryable: bool = True,
    ) -> None:
        # gRFC A6: only failures with a retryable status count; others leave the tokens alone
        if success:
            self.tokens = min(self.policy.max_tokens, self.tokens + self.policy.ratio)
        elif retryable:
            self.tokens = max(0.0, self.tokens - 1.0)
