"""Retry strategies, retry budgets and retry controls: the pure core of the client side.

Everything here is immutable data plus small functions of (time, random source); no
clock, no global random state, no I/O, and no Locust, so the simulator and the live
users share it. Importing this package registers every strategy and budget.
"""

from loadgen.strategies import exponential, presets, simple, smira, table  # noqa: F401 - registers
from loadgen.strategies.base import STRATEGIES, RetryStrategy, parse_strategy
from loadgen.strategies.budgets import BUDGETS, BudgetState, RetryBudget, parse_budget
from loadgen.strategies.controls import GiveUp, RetryAfter, RetryDecision, RetryPolicy, RetrySession
from loadgen.strategies.exponential import DecorrelatedJitter, ExponentialBackoff, GrpcBackoff
from loadgen.strategies.jitter import Jitter
from loadgen.strategies.presets import NONE, Preset, resolve
from loadgen.strategies.retry_on import DEFAULT_RETRY_ON, RetryOn
from loadgen.strategies.simple import FixedBackoff, NoBackoff, UniformBackoff
from loadgen.strategies.smira import SmiraBackoff
from loadgen.strategies.table import TableBackoff

__all__ = [
    "BUDGETS",
    "DEFAULT_RETRY_ON",
    "NONE",
    "STRATEGIES",
    "BudgetState",
    "DecorrelatedJitter",
    "ExponentialBackoff",
    "FixedBackoff",
    "GiveUp",
    "GrpcBackoff",
    "Jitter",
    "NoBackoff",
    "Preset",
    "RetryAfter",
    "RetryBudget",
    "RetryDecision",
    "RetryOn",
    "RetryPolicy",
    "RetrySession",
    "RetryStrategy",
    "SmiraBackoff",
    "TableBackoff",
    "UniformBackoff",
    "parse_budget",
    "parse_strategy",
    "resolve",
]
