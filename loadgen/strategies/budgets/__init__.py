"""Retry budgets shared by the users of one process: tokens, quota, ratio, adaptive."""

from loadgen.strategies.budgets.adaptive import AdaptiveBudget, AdaptiveState
from loadgen.strategies.budgets.base import BUDGETS, BudgetState, RetryBudget, parse_budget
from loadgen.strategies.budgets.quota import QuotaBudget, QuotaState
from loadgen.strategies.budgets.ratio import RatioBudget, RatioState
from loadgen.strategies.budgets.tokens import TokensBudget, TokensState
from loadgen.strategies.budgets.window import SlidingWindow

__all__ = [
    "BUDGETS",
    "AdaptiveBudget",
    "AdaptiveState",
    "BudgetState",
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
