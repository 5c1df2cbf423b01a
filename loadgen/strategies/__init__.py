"""Retry strategies, retry budgets and retry controls: the pure core of the client side.

Everything here is immutable data plus small functions of (time, random source); no
clock, no global random state, no I/O, and no Locust, so the simulator and the live
users share it. Importing this package registers every strategy and budget.
"""

from retrystorm.loadgen.strategies import exponential, presets, simple, smira, table  # noqa: F401 - registers
from retrystorm.loadgen.strategies.base import STRATEGIES, RetryStrategy, parse_strategy
from retrystorm.loadgen.strategies.budgets import BUDGETS, BudgetState, RetryBudget, parse_budget
from retrystorm.loadgen.strategies.channel import ChannelState, GrpcChannel, Pick
from retrystorm.loadgen.strategies.controls import GiveUp, RetryAfter, RetryDecision, RetryPolicy, RetrySession
from retrystorm.loadgen.strategies.exponential import DecorrelatedJitter, ExponentialBackoff, GrpcBackoff
from retrystorm.loadgen.strategies.jitter import Jitter
from retrystorm.loadgen.strategies.presets import NONE, Preset, channel_of, resolve
from retrystorm.loadgen.strategies.retry_on import DEFAULT_RETRY_ON, RetryOn
from retrystorm.loadgen.strategies.simple import FixedBackoff, NoBackoff, UniformBackoff
from retrystorm.loadgen.strategies.smira import SmiraBackoff
from retrystorm.loadgen.strategies.table import TableBackoff

__all__ = [
    "BUDGETS",
    "DEFAULT_RETRY_ON",
    "NONE",
    "STRATEGIES",
    "BudgetState",
    "ChannelState",
    "DecorrelatedJitter",
    "ExponentialBackoff",
    "FixedBackoff",
    "GiveUp",
    "GrpcBackoff",
    "GrpcChannel",
    "Jitter",
    "NoBackoff",
    "Pick",
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
    "channel_of",
    "parse_budget",
    "parse_strategy",
    "resolve",
]
