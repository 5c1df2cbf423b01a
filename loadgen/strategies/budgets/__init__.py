"""Retry budgets shared by the users of one process: tokens, quota, ratio, adaptive, concurrency, aws-rate-limiter."""

from loadgen.strategies.budgets.adaptive import AdaptiveBudget, AdaptiveState
from loadgen.strategies.budgets.aws_rate_limiter import AwsRateLimiterBudget, AwsRateLimiterState
from loadgen.strategies.budgets.base import BUDGETS, BudgetState, RetryBudget, parse_budget
from loadgen.strategies.budgets.concurrency import ConcurrencyBudget, ConcurrencyState
from loadgen.strategies.budgets.quota import QuotaBudget, QuotaState
from loadgen.strategies.budgets.ratio import RatioBudget, RatioState
from loadgen.strategies.budgets.tokens import TokensBudget, TokensState
from loadgen.strategies.budgets.window import SlidingWindow

__all__ = [
    "BUDGETS",
    "AdaptiveBudget",
    "AdaptiveState",
    "AwsRateLimiterBudget",
    "AwsRateLimiterState",
    "BudgetState",
    "ConcurrencyBudget",
    "ConcurrencyState",
    "QuotaBudget",
    "QuotaState",
    "RatioBudget",
    "RatioState",
    "RetryBudget",
    "SlidingWindow",
    "TokensBudget",
    "TokensState",
    "parse_budget",
]
