"""Retry budgets shared by the users of one process: tokens, quota, ratio, adaptive, concurrency, aws-rate-limiter,
circuit."""

from retrystorm.loadgen.strategies.budgets.adaptive import AdaptiveBudget, AdaptiveState
from retrystorm.loadgen.strategies.budgets.aws_rate_limiter import AwsRateLimiterBudget, AwsRateLimiterState
from retrystorm.loadgen.strategies.budgets.base import BUDGETS, BudgetState, RetryBudget, parse_budget
from retrystorm.loadgen.strategies.budgets.circuit import CircuitBudget, CircuitState
from retrystorm.loadgen.strategies.budgets.concurrency import ConcurrencyBudget, ConcurrencyState
from retrystorm.loadgen.strategies.budgets.quota import QuotaBudget, QuotaState
from retrystorm.loadgen.strategies.budgets.ratio import RatioBudget, RatioState
from retrystorm.loadgen.strategies.budgets.tokens import TokensBudget, TokensState
from retrystorm.loadgen.strategies.budgets.window import SlidingWindow

__all__ = [
    "BUDGETS",
    "AdaptiveBudget",
    "AdaptiveState",
    "AwsRateLimiterBudget",
    "AwsRateLimiterState",
    "BudgetState",
    "CircuitBudget",
    "CircuitState",
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
