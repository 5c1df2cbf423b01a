"""The retry-budget interface and its registry.

A budget is shared by all the users of one process. Its *policy* is immutable spec
data (``tokens:max=10,ratio=0.1``); :meth:`RetryBudget.start` makes the mutable state
that the users share. Time is passed in as ``now_s`` (any monotonic clock, or virtual
time), randomness as ``rng``: the state has no clock and no I/O of its own.

Per attempt the caller does::

    if not state.allow_attempt(now, rng): ...         # local rejection (adaptive only)
    wait = state.before_send(now, retry=...)          # seconds to wait first (aws-rate-limiter only)
    ... wait, then send the attempt ...
    state.on_result(now, success=ok, retry_cost=cost, throttled=..., retryable=...)
    if failed and retryable:
        cost = state.try_retry(now, after_timeout=..., throttled=...)  # None: the budget refuses

``retry_cost`` is what the attempt's retry paid, ``None`` for a first attempt.
:meth:`BudgetState.before_send` and :meth:`BudgetState.on_result` bracket every attempt
that goes on the wire, so a budget can count the attempts in flight and, through
``retry_cost``, the retries among them (``concurrency``, Envoy's retry budget). A wait
returned by ``before_send`` delays the send, not the decision: the attempt counts as
sent from that call (``aws-rate-limiter``, the AWS SDKs' client-side rate limiter, is
a token bucket that makes sends wait for a token). The Locust user sleeps it; the
simulator schedules the send after it.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod

from retrystorm.spec import Registry, Spec

#: The ceiling of a budget's sizes and costs (quota capacity, costs, refills; ratio's
#: retries per second): a million, two thousand times the AWS SDKs' 500. A larger budget
#: never refuses anything, so it is a typo or no budget at all (write ``none``).
MAX_BUDGET_SIZE = 1_000_000.0
#: The bounds of a budget's window: 1 ms to one day. A window is cut into slices of a tenth
#: of it; a shorter one would hold nothing (and one of a few nanoseconds would divide by
#: zero), a longer one remembers more than any run. Finagle's is 10 s, the SRE book's 2 min.
MIN_WINDOW_S = 0.001
MAX_WINDOW_S = 86_400.0
#: The ceiling of a multiplier (adaptive's K, ratio's retries per request): the SRE book's K is
#: 2 and Finagle's percent 0.2; at a thousand the budget never refuses.
MAX_MULTIPLIER = 1_000.0


class BudgetState(ABC):
    """The mutable state of a budget; one instance is shared by a process's users."""

    def __init__(self) -> None:
        self.refusals = 0

    def on_request(self, now_s: float) -> None:
        """A logical request starts (before its first attempt)."""

    def allow_attempt(self, now_s: float, rng: random.Random) -> bool:
        """Whether an attempt may go on the wire; ``False`` rejects it locally."""
        return True

    def before_send(self, now_s: float, *, retry: bool) -> float:
        """An allowed attempt (a retry or not) is about to be sent: seconds to wait first (0: none)."""
        return 0.0

    @abstractmethod
    def try_retry(self, now_s: float, *, after_timeout: bool, throttled: bool = False) -> float | None:
        """Withdraw what one retry costs; the cost, or ``None`` (and a refusal) if refused.

        ``after_timeout``: the failed attempt timed out; ``throttled``: it was a throttling answer (HTTP 429).
        """

    def on_result(
        self,
        now_s: float,
        *,
        success: bool,
        retry_cost: float | None,
        throttled: bool = False,
        retryable: bool = True,
    ) -> None:
        """An attempt finished; ``retry_cost`` is what its retry paid, ``None`` for a first attempt.

        ``throttled``: the answer was a throttling error (HTTP 429). ``retryable``: the
        policy's retry conditions cover the failure (a failure not retried is final).
        """

    def _refuse(self) -> None:
        self.refusals += 1


class RetryBudget(Spec):
    """A budget policy: immutable spec data that starts a shared :class:`BudgetState`."""

    __slots__ = ()

    @abstractmethod
    def start(self) -> BudgetState:
        """A fresh state, full as at process start."""


BUDGETS: Registry[RetryBudget] = Registry("budget")
register_budget = BUDGETS.register


def parse_budget(spec: object) -> RetryBudget:
    """Parse a budget spec string or mapping, e.g. ``quota`` or ``ratio:percent=0.1``."""
    return BUDGETS.parse(spec)  # type: ignore[arg-type]
