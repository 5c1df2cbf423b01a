"""Envoy's retry budget: concurrent retries as a share of the requests in flight, or started over an interval."""

from __future__ import annotations

import dataclasses

from retrystorm.loadgen.strategies.budgets.base import MAX_WINDOW_S, BudgetState, RetryBudget, register_budget
from retrystorm.loadgen.strategies.budgets.window import SlidingWindow
from retrystorm.spec import DURATION, INTEGER, NUMBER, format_spec, param

#: Envoy counts the requests of an interval in tenths of it (``budget_interval / 10``).
SLICES = 10


@register_budget("concurrency")
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ConcurrencyBudget(RetryBudget):
    """A retry is allowed while ``retries < max(floor(percent / 100 * base), min)``; ``base`` is ``active``, or
    with an ``interval`` the attempts started over the last interval.

    ``active`` counts the attempts in flight (sent, not yet answered or timed out),
    ``retries`` the retries in flight: a retry counts from the moment it is allowed,
    through its backoff, until its attempt ends, as Envoy holds the ``retries``
    resource from ``shouldRetry`` until the next ``shouldRetry`` or the end of the
    request (``RetryStateImpl::resetRetry``). The failed attempt that asks is no longer
    counted in ``active``.

    Source: Envoy, ``source/common/upstream/resource_manager_impl.h``
    (``RetryBudgetImpl::max``: ``std::max<uint64_t>(budget_percent / 100.0 *
    (requests + pending_requests), min_retry_concurrency)``, ``canCreate``:
    ``count() < max()``), commit edf2bb2a; defaults from
    ``api/envoy/config/cluster/v3/circuit_breaker.proto`` (``RetryBudget``:
    ``budget_percent`` 20 %, ``min_retry_concurrency`` 3; envoyproxy/data-plane-api
    84e84367). Without a retry budget Envoy's circuit breaker allows ``max_retries``
    (default 3) retries in flight: ``concurrency:percent=0,min=3``.

    **With an interval** (``budget_interval``, Envoy since envoyproxy/envoy PR #44147, 2026): ``base`` is the
    attempts started over the last ``interval`` instead of those in flight (``RetryBudgetImpl::max``:
    ``std::max<uint64_t>(budget_percent / 100.0 * requestsInBudgetInterval(), min_retry_concurrency)``;
    ``writeRequest`` counts every upstream request as it starts, retries included). Envoy counts them in tenths
    of the interval and takes a tenth's count away ``budget_interval`` after that tenth closes, so an attempt
    counts for between 1 and 1.1 intervals; here a :class:`SlidingWindow` of 1.1 intervals in 11 tenths does
    the same. ``retries`` is still the retries in flight. 0 (Envoy's default) keeps the attempts in flight. The
    Gateway API's ``BackendTrafficPolicy.retryConstraint`` (GEP-3388: ``budget`` 20 % over 10 s,
    ``minRetryRate`` 10 per 1 s) becomes, as Istio translates it for Envoy (``minRetryRate.count`` as
    ``min_retry_concurrency``; istio/istio PR #60435), ``concurrency:percent=20,min=10,interval=10s``.
    """

    percent: float = param(
        "percent", NUMBER, 20.0, "retries in flight per 100 attempts in flight", at_least=0, at_most=100
    )
    min_retries: int = param("min", INTEGER, 3, "retries in flight always allowed (min_retry_concurrency)", at_least=0)
    interval_s: float = param(
        "interval", DURATION, 0.0, "budget_interval: attempts started over it (0: in flight)", at_least=0,
        at_most=MAX_WINDOW_S,
    )  # fmt: skip

    def spec(self) -> str:
        """The spec; without ``interval`` at its default, 0 (Envoy's own: the attempts in flight)."""
        text = format_spec(self)
        return text if self.interval_s else text.removesuffix(",interval=0s")

    def start(self) -> ConcurrencyState:
        return ConcurrencyState(self)


class ConcurrencyState(BudgetState):
    """Attempts and retries in flight under a :class:`ConcurrencyBudget`."""

    def __init__(self, policy: ConcurrencyBudget) -> None:
        super().__init__()
        self.policy = policy
        self.active = 0
        self.retries = 0
        interval_s = policy.interval_s
        window_s = interval_s * (SLICES + 1) / SLICES  # 1.1 intervals, in 11 tenths
        self.started = SlidingWindow(window_s, SLICES + 1) if interval_s > 0 else None

    def limit(self, now_s: float = 0.0) -> int:
        """Retries in flight allowed at ``now_s``."""
        base = self.started.total(now_s) if self.started is not None else self.active
        return max(int(self.policy.percent / 100.0 * base), self.policy.min_retries)

    def before_send(self, now_s: float, *, retry: bool) -> float:
        self.active += 1
        if self.started is not None:
            self.started.add(now_s)
        return 0.0

    def try_retry(self, now_s: float, *, after_timeout: bool, throttled: bool = False) -> float | None:
        if self.retries < self.limit(now_s):
            self.retries += 1
            return 1.0
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
        self.active = max(0, self.active - 1)
        if retry_cost is not None:
            self.retries = max(0, self.retries - 1)
