"""``finagle``: a Finagle client's requeues, or ``RetryPolicy.tries``, under its ``RetryBudget``."""

from __future__ import annotations

import dataclasses
import random
from typing import ClassVar

from retrystorm.loadgen.strategies.base import register_strategy
from retrystorm.loadgen.strategies.budgets.base import MAX_BUDGET_SIZE, MAX_MULTIPLIER, RetryBudget
from retrystorm.loadgen.strategies.budgets.ratio import RatioBudget
from retrystorm.loadgen.strategies.presets.base import Preset
from retrystorm.loadgen.strategies.retry_on import RETRY_ON, RetryOn
from retrystorm.spec import DURATION, INTEGER, NUMBER, optional, param

_NS = 1e9


@register_strategy("finagle")
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class FinagleRetry(Preset):
    """Finagle: requeue at once (``Backoff.const(0)``) under the RetryBudget; or ``RetryPolicy.tries(n)``.

    Finagle 24.5.0 (twitter/finagle), ``finagle-core/.../service/Retries.scala``: a
    client's default stack has no ``RetryPolicy`` (``RetryPolicy.Never``) and only the
    ``RequeueFilter``, which requeues failures that never reached the server
    (``RetryableWriteException``: a connection that failed or was refused) with
    ``Budget.emptyBackoffSchedule = Backoff.const(Duration.Zero)``, under
    ``RetryBudget()`` (``service/RetryBudget.scala``: ``ttl`` 10 s,
    ``minRetriesPerSec`` 10, ``percentCanRetry`` 0.2): the ``ratio`` budget, whose
    rule ``retries + 1 <= 0.2 * deposits + 10 * 10`` is ``TokenRetryBudget``'s
    ``tryWithdraw`` (deposit 1000, withdrawal 5000, reserve 500,000 over a 10 s
    window). With ``tries`` N: ``RetryPolicy.tries(N)`` (``service/RetryPolicy.scala``),
    N attempts with ``Backoff.decorrelatedJittered(5 ms, 200 ms)`` (``Backoff.scala``):
    retry 1 waits ``start``, each next one ``U(d, min(3 d, max))`` from the previous
    ``d``, never below it.

    Deposits (Finagle ``develop`` at 3c27308, ``service/RequeueFilter.scala``): the requeue-only stack
    deposits when a request ends and its response is classified ``Successful``
    (``apply(...).respond { ... if (shouldDeposit) retryBudget.deposit() }``), so this preset's budget
    is ``ratio:deposit=successes``; with ``tries`` (``RetryFilter``) every request deposits
    (``deposit=requests``). In an outage where nothing succeeds, requeues then spend only the floor
    (``minRetriesPerSec * ttl``, 100) and what the last 10 s of successes left.

    Not modelled: the requeue filter's per-request cap (``ceil(maxRetriesPerReq * balance)``, 20 when the
    budget is full: no cap here), its gate that requeues only while the service's status is
    ``Status.Open`` (a load balancer with no healthy endpoint stops requeueing at once: a single-target run
    has no such state to model), and the budget-free requeues of connection acquisition
    (``RequeueingFilter``'s ``MaxRetries = 25`` in older stacks).

    * **Retry conditions**: ``WriteExceptionsOnly``, connection errors; timeouts and
      HTTP statuses are not retried (``RetryPolicy.TimeoutAndWriteExceptionsOnly`` is
      ``retry_on=[timeout,connection]``). ``Retry-After`` is not read.
    """

    library: ClassVar[str] = "Finagle 24.5.0"
    tries: int | None = param("tries", optional(INTEGER), None, "RetryPolicy.tries (none: requeues)", at_least=1)
    start_s: float = param("start", DURATION, 0.005, "decorrelatedJittered start, with tries", above=0)
    max_s: float = param("max", DURATION, 0.2, "decorrelatedJittered maximum, with tries", above=0)
    retry_on: RetryOn = param("retry_on", RETRY_ON, RetryOn(connection=True), "retried failures")
    percent: float = param("percent", NUMBER, 0.2, "RetryBudget percentCanRetry", at_least=0, at_most=MAX_MULTIPLIER)
    min_rate: float = param(
        "min_rate", NUMBER, 10.0, "RetryBudget minRetriesPerSec", at_least=0, at_most=MAX_BUDGET_SIZE
    )
    ttl_s: float = param("ttl", DURATION, 10.0, "RetryBudget ttl", above=0)

    def _validate(self) -> None:
        if self.max_s < self.start_s:
            raise self._fail("max", f"must be at least start ({self.start_s} s)")

    def delay(self, attempt: int, previous_delay_s: float, rng: random.Random) -> float:
        if self.tries is None:
            return 0.0
        if attempt <= 1 or self.start_s >= self.max_s:
            return self.start_s
        current = min(max(previous_delay_s, self.start_s), self.max_s)
        upper = self.max_s if current >= self.max_s / 3 else current * 3
        span_ns = int(abs(upper - current) * _NS)
        return current if span_ns == 0 else current + rng.randrange(span_ns) / _NS

    @property
    def max_delay_s(self) -> float:
        return self.max_s if self.tries is not None else 0.0

    def attempt_cap(self) -> int | None:
        return self.tries

    def conditions(self) -> RetryOn:
        return self.retry_on

    def budget(self) -> RetryBudget:
        deposit = "successes" if self.tries is None else "requests"
        return RatioBudget(percent=self.percent, min_rate=self.min_rate, ttl_s=self.ttl_s, deposit=deposit)
