"""Envoy's retry budget: concurrent retries as a share of concurrent requests."""

from __future__ import annotations

import dataclasses

from retrystorm.loadgen.strategies.budgets.base import BudgetState, RetryBudget, register_budget
from retrystorm.spec import INTEGER, NUMBER, param


@register_budget("concurrency")
@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ConcurrencyBudget(RetryBudget):
    """A retry is allowed while ``retries < max(floor(percent / 100 * active), min)``.

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
    """

    percent: float = param(
        "percent", NUMBER, 20.0, "retries in flight per 100 attempts in flight", at_least=0, at_most=100
    )
    min_retries: int = param("min", INTEGER, 3, "retries in flight always allowed (min_retry_concurrency)", at_least=0)

    def start(self) -> ConcurrencyState:
        return ConcurrencyState(self)


class ConcurrencyState(BudgetState):
    """Attempts and retries in flight under a :class:`ConcurrencyBudget`."""

    def __init__(self, policy: ConcurrencyBudget) -> None:
        super().__init__()
        self.policy = policy
        self.active = 0
        self.retries = 0

    def limit(self) -> int:
        """Retries in flight allowed now."""
        return max(int(self.policy.percent / 100.0 * self.active), self.policy.min_retries)

    def before_send(self, now_s: float, *, retry: bool) -> float:
        self.active += 1
        return 0.0

    def try_retry(self, now_s: float, *, after_timeout: bool, throttled: bool = False) -> float | None:
        if self.retries < self.limit():
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
