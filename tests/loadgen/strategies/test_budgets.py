"""The budgets' arithmetic, step by step, with time passed in."""

import random

import pytest

from retrystorm.loadgen.strategies import parse_budget, parse_strategy, resolve
from retrystorm.loadgen.strategies.budgets import AdaptiveBudget, QuotaBudget, RatioBudget, SlidingWindow, TokensBudget


def test_tokens_start_full_cost_one_per_failure_and_throttle_at_half():
    state = TokensBudget(max_tokens=10, ratio=0.1).start()
    assert state.tokens == 10
    for expected in [9, 8, 7, 6, 5]:
        assert state.try_retry(0, after_timeout=False) == 0.0
        state.on_result(0, success=False, retry_cost=None)
        assert state.tokens == expected
    # 5 tokens is not more than max / 2: throttled
    assert state.try_retry(0, after_timeout=False) is None
    assert state.refusals == 1
    state.on_result(0, success=True, retry_cost=None)
    assert state.tokens == pytest.approx(5.1)
    assert state.try_retry(0, after_timeout=False) == 0.0


def test_tokens_stay_within_zero_and_max():
    state = TokensBudget(max_tokens=2, ratio=1).start()
    for _ in range(5):
        state.on_result(0, success=False, retry_cost=None)
    assert state.tokens == 0
    for _ in range(5):
        state.on_result(0, success=True, retry_cost=None)
    assert state.tokens == 2


def test_quota_costs_refunds_and_increments():
    state = QuotaBudget().start()
    assert state.quota == 500
    assert state.try_retry(0, after_timeout=False) == 5
    assert state.quota == 495
    assert state.try_retry(0, after_timeout=True) == 10
    assert state.quota == 485
    state.on_result(0, success=True, retry_cost=10)  # a successful retry refunds its cost
    assert state.quota == 495
    state.on_result(0, success=False, retry_cost=5)  # a failure refunds nothing
    assert state.quota == 495
    state.on_result(0, success=True, retry_cost=None)  # a first-try success adds 1
    assert state.quota == 496
    for _ in range(10):
        state.on_result(0, success=True, retry_cost=None)
    assert state.quota == 500  # never above capacity


def test_quota_refuses_when_too_little_is_left():
    state = QuotaBudget(capacity=12).start()
    assert state.try_retry(0, after_timeout=True) == 10
    assert state.try_retry(0, after_timeout=False) is None
    assert state.quota == 2
    assert state.refusals == 1


def test_ratio_allows_the_floor_then_percent_of_requests():
    state = RatioBudget(percent=0.2, min_rate=1, ttl_s=10).start()
    # floor: min_rate * ttl = 10 retries with no requests at all
    assert [state.try_retry(0.0, after_timeout=False) for _ in range(11)] == [1.0] * 10 + [None]
    for _ in range(50):
        state.on_request(1.0)
    # 50 requests * 20 % = 10 more retries
    assert sum(state.try_retry(1.0, after_timeout=False) is not None for _ in range(20)) == 10
    assert state.refusals == 11


def test_ratio_window_expires_old_retries():
    state = RatioBudget(percent=0.0, min_rate=0.1, ttl_s=10).start()
    assert state.try_retry(0.0, after_timeout=False) == 1.0
    assert state.try_retry(5.0, after_timeout=False) is None
    assert state.try_retry(10.5, after_timeout=False) == 1.0


def test_sre_per_client_budget_is_ten_percent():
    state = parse_budget("ratio:percent=0.1,min_rate=0").start()
    for _ in range(100):
        state.on_request(0.0)
    assert sum(state.try_retry(0.0, after_timeout=False) is not None for _ in range(30)) == 10


def test_adaptive_rejection_probability_formula():
    state = AdaptiveBudget(k=2, window_s=120).start()
    rng = random.Random(0)
    assert state.reject_probability(0) == 0
    for _ in range(100):
        assert state.allow_attempt(0.0, rng) or True
    # 100 requests, 0 accepts: (100 - 0) / 101
    assert state.reject_probability(0) == pytest.approx(100 / 101)
    state2 = AdaptiveBudget(k=2, window_s=120).start()
    for i in range(100):
        state2.requests.add(0.0)
        if i < 40:
            state2.accepts.add(0.0)
    # 100 requests and 40 accepts give (100 - 2 * 40) / 101
    assert state2.reject_probability(0) == pytest.approx(20 / 101)
    for _ in range(10):
        state2.accepts.add(0.0)
    assert state2.reject_probability(0) == 0  # 100 < 2 * 50


def test_adaptive_rejects_locally_in_proportion_and_forgets_after_the_window():
    state = AdaptiveBudget(k=2, window_s=120).start()
    rng = random.Random(1)
    for _ in range(1000):
        state.allow_attempt(0.0, rng)  # a dead server: nothing accepted
    allowed = sum(state.allow_attempt(1.0, rng) for _ in range(1000))
    assert allowed < 20
    assert state.refusals > 1900
    assert state.reject_probability(200.0) == 0  # the window has passed


def test_sliding_window_sums_the_last_window_only():
    window = SlidingWindow(10.0, slices=10)
    window.add(0.0, 5)
    window.add(4.5, 3)
    assert window.total(9.9) == 8
    assert window.total(10.0) == 3  # the slice [0, 1) expired
    assert window.total(13.9) == 3
    assert window.total(14.0) == 0  # the slice [4, 5) expired
    assert window.total(1000.0) == 0
    window.add(1000.0)
    assert window.total(1000.5) == 1


def requeues_in_an_outage(budget: RatioBudget, *, rate_per_s: int = 100, steady_s: int = 10, outage_s: int = 30) -> int:
    """Finagle's requeues granted in a connection-error outage: ``steady_s`` of successes at ``rate_per_s``, then
    ``outage_s`` where every attempt fails to connect and is requeued at once until the budget refuses."""
    state = budget.start()
    granted = 0
    for tick in range((steady_s + outage_s) * rate_per_s):
        now_s = tick / rate_per_s
        state.on_request(now_s)
        if now_s < steady_s:
            state.on_result(now_s, success=True, retry_cost=None)
            continue
        cost = None
        while True:
            state.on_result(now_s, success=False, retry_cost=cost)
            cost = state.try_retry(now_s, after_timeout=False)
            if cost is None:
                break
            granted += 1
    return granted


def test_deposits_on_successes_only_leave_an_outage_the_floor_as_finagle_s_requeue_filter_does():
    # RequeueFilter deposits when a request ends Successful: after the window's successes expire, only the
    # floor (10/s * 10 s) is left, about 480-500 requeues in 30 s at 100 req/s against 900 for deposits per request
    per_request = requeues_in_an_outage(RatioBudget(deposit="requests"))
    on_success = requeues_in_an_outage(RatioBudget(deposit="successes"))
    assert 880 <= per_request <= 920
    assert 450 <= on_success <= 520
    assert parse_budget("ratio:deposit=successes") == RatioBudget(deposit="successes")


def test_the_finagle_requeue_stack_deposits_on_successes_and_retry_filter_on_requests():
    assert resolve(parse_strategy("finagle"))[1] == RatioBudget(deposit="successes")
    assert resolve(parse_strategy("finagle:tries=3"))[1] == RatioBudget(deposit="requests")
