"""The presets' budgets step by step on a fake clock: Envoy's concurrency budget, the AWS rate limiter.

Expected values are worked out from the libraries' formulas in the comments (Envoy's
``RetryBudgetImpl``, botocore's ``ClientRateLimiter``, ``RateClocker``,
``CubicCalculator`` and ``TokenBucket``), written as arithmetic here, never taken from
the code under test.
"""

import random

import pytest

from retrystorm.errors import SpecError
from retrystorm.loadgen.strategies import GiveUp, RetrySession, parse_budget, parse_strategy, resolve
from retrystorm.loadgen.strategies.budgets import AwsRateLimiterBudget, ConcurrencyBudget


def test_concurrency_allows_retries_in_flight_up_to_percent_of_attempts_in_flight_with_a_floor():
    state = ConcurrencyBudget(percent=20, min_retries=3).start()
    for _ in range(20):
        state.before_send(0.0, retry=False)
    assert state.active == 20
    # max(floor(0.2 * 20), 3) = 4 retries in flight
    assert [state.try_retry(0.0, after_timeout=False) for _ in range(5)] == [1.0, 1.0, 1.0, 1.0, None]
    assert state.refusals == 1
    # 10 first attempts end: active 10, max(floor(0.2 * 10), 3) = 3 < 4 in flight: refused
    for _ in range(10):
        state.on_result(0.0, success=True, retry_cost=None)
    assert state.active == 10 and state.retries == 4
    assert state.try_retry(0.0, after_timeout=False) is None
    # two retried attempts end: 2 retries in flight, 8 attempts: max(1, 3) = 3 allowed, one more fits
    for _ in range(2):
        state.on_result(0.0, success=False, retry_cost=1.0)
    assert state.retries == 2 and state.active == 8
    assert state.try_retry(0.0, after_timeout=False) == 1.0
    assert state.try_retry(0.0, after_timeout=False) is None


def test_concurrency_floor_without_percent_is_envoys_max_retries_circuit_breaker():
    state = parse_budget("concurrency:percent=0,min=3").start()
    for _ in range(1000):
        state.before_send(0.0, retry=False)
    assert [state.try_retry(0.0, after_timeout=True) for _ in range(4)] == [1.0, 1.0, 1.0, None]


def test_concurrency_through_sessions_holds_a_retry_from_its_grant_to_its_attempts_end():
    policy, budget = resolve(parse_strategy("envoy:num_retries=5"))
    assert budget is not None
    shared = budget.start()
    sessions = [RetrySession(policy, budget=shared, rng=random.Random(i)) for i in range(5)]
    for session in sessions:
        session.start_request(0.0)
        assert session.before_send(0.0) == 0.0
    decisions = [session.on_failure(1.0, status=503) for session in sessions]
    # 5 attempts in flight, each ends (active 0): max(0, 3) = 3 retries
    assert [d.retry for d in decisions] == [True, True, True, False, False]
    assert decisions[3].give_up is GiveUp.BUDGET
    assert shared.retries == 3
    sessions[0].before_send(1.1)  # the first retry goes out and succeeds: its retry is released
    sessions[0].on_success(1.2)
    assert shared.retries == 2 and shared.active == 0
    sessions[1].before_send(1.1)  # the second fails again: released, then granted again
    assert sessions[1].on_failure(1.3, status=503).retry
    assert shared.retries == 2


def test_aws_rate_limiter_is_off_until_a_throttle_then_follows_cubic():
    state = AwsRateLimiterBudget(quota=None).start()
    state.on_request(0.0)  # the clock starts: last_fail 0, the rate bucket floor(0) = 0, the token bucket empty
    # Four answers in the first half-second bucket: no rate measured yet (m = 0); CUBIC's
    # rate 0.4 * (t - 0 - 0)^3 + 0; the bucket's rate min(that, 2 * 0) = 0, raised to
    # 0.5/s, capacity 1. Tokens: 0.1 s at 1/s, then 0.5/s: 0.1, 0.15, 0.2, 0.25.
    for t in (0.1, 0.2, 0.3, 0.4):
        state.on_result(t, success=True, retry_cost=None)
        assert state.before_send(t, retry=False) == 0.0  # off: no wait, no token taken
    assert state.measured_rate == 0.0
    assert state.fill_rate == 0.5 and state.capacity == pytest.approx(0.25)
    # t = 0.6 opens bucket 0.5: 5 answers over 0.5 s = 10/s, m = 0.8 * 10 + 0.2 * 0 = 8;
    # CUBIC 0.4 * 0.6^3 = 0.0864, rate max(min(0.0864, 16), 0.5) = 0.5; tokens 0.25 + 0.2 * 0.5
    state.on_result(0.6, success=True, retry_cost=None)
    assert state.measured_rate == pytest.approx(8.0)
    assert state.fill_rate == 0.5 and state.capacity == pytest.approx(0.35)
    # A throttle at 0.7 (same bucket, m stays 8): off, so w_max = m = 8,
    # k = cbrt(8 * (1 - 0.7) / 0.4) = cbrt(6), rate 0.7 * 8 = 5.6 (< 2 * 8); tokens
    # 0.35 + 0.1 * 0.5 = 0.4 kept; capacity 5.6. The limiter is on.
    state.on_result(0.7, success=False, retry_cost=None, throttled=True)
    assert state.enabled
    assert state.w_max == pytest.approx(8.0) and state.k == pytest.approx(6 ** (1 / 3))
    assert state.fill_rate == pytest.approx(5.6) and state.max_capacity == pytest.approx(5.6)
    # Two sends at 0.7 wait for tokens: (1 - 0.4) / 5.6, then (1 - (0.4 - 1)) / 5.6
    assert state.before_send(0.7, retry=False) == pytest.approx(0.6 / 5.6)
    assert state.before_send(0.7, retry=True) == pytest.approx(1.6 / 5.6)
    assert state.capacity == pytest.approx(-1.6)
    # An answer at 1.2 opens bucket 1.0: 2 answers over 0.5 s = 4/s, m = 0.8 * 4 + 0.2 * 8 = 4.8;
    # CUBIC 0.4 * (1.2 - 0.7 - cbrt(6))^3 + 8, below 2 * 4.8; tokens -1.6 + 0.5 * 5.6 = 1.2
    state.on_result(1.2, success=True, retry_cost=None)
    cubic = 0.4 * (1.2 - 0.7 - 6 ** (1 / 3)) ** 3 + 8
    assert state.measured_rate == pytest.approx(4.8)
    assert state.fill_rate == pytest.approx(cubic) and cubic == pytest.approx(7.086, abs=1e-3)
    assert state.capacity == pytest.approx(1.2)
    # A throttle at 1.3 while on: w_max = min(m, rate) = min(4.8, 7.086) = 4.8,
    # k = cbrt(4.8 * 0.3 / 0.4) = cbrt(3.6), rate 0.7 * 4.8 = 3.36; tokens 1.2 + 0.1 * 7.086
    state.on_result(1.3, success=False, retry_cost=None, throttled=True)
    assert state.w_max == pytest.approx(4.8) and state.k == pytest.approx(3.6 ** (1 / 3))
    assert state.fill_rate == pytest.approx(3.36)
    tokens = 1.2 + 0.1 * cubic
    assert state.capacity == pytest.approx(tokens)
    assert state.before_send(1.3, retry=False) == 0.0  # a whole token is there
    assert state.before_send(1.3, retry=False) == pytest.approx((1 - (tokens - 1)) / 3.36)
    # With no throttle for 2 s the rate climbs back along the cubic toward w_max (and past it):
    # at 3.3, 0.4 * (3.3 - 1.3 - cbrt(3.6))^3 + 4.8, as long as 2 * m allows
    state.on_result(3.3, success=True, retry_cost=None)
    assert state.fill_rate == pytest.approx(min(0.4 * (2.0 - 3.6 ** (1 / 3)) ** 3 + 4.8, 2 * state.measured_rate))


def test_aws_rate_limiter_rate_never_drops_below_half_a_send_per_second():
    state = AwsRateLimiterBudget(quota=None).start()
    state.on_request(0.0)
    state.on_result(0.1, success=False, retry_cost=None, throttled=True)  # m = 0: rate 0, raised to 0.5
    assert state.enabled and state.fill_rate == 0.5 and state.max_capacity == 1.0
    waits = [state.before_send(0.1, retry=False) for _ in range(3)]
    # tokens 0.1 * 1/s = 0.1 at the throttle: (1 - 0.1) / 0.5, then one more token every 2 s
    assert waits == pytest.approx([1.8, 3.8, 5.8])


def test_aws_rate_limiter_keeps_the_standard_retry_quota():
    # AWS SDK retries 2.1 (botocore 1.44.8 RetryQuotaChecker): 14 a retry, 5 after a throttle
    state = parse_budget("aws-rate-limiter:quota=30").start()
    state.on_request(0.0)
    assert state.try_retry(0.0, after_timeout=False) == 14.0
    assert state.try_retry(0.0, after_timeout=True) == 14.0
    assert state.try_retry(0.0, after_timeout=False) is None  # 2 left
    assert state.refusals == 1
    state.on_result(0.1, success=True, retry_cost=14.0)  # a retried success gives its cost back
    assert state.try_retry(0.2, after_timeout=False, throttled=True) == 5.0
    assert parse_budget("aws-rate-limiter:quota=none").start().try_retry(0.0, after_timeout=True) == 0.0


def test_concurrency_with_an_interval_counts_the_attempts_started_over_it_as_envoy_s_budget_interval():
    state = ConcurrencyBudget(percent=20, min_retries=3, interval_s=10.0).start()
    for _ in range(50):  # 50 attempts start at t = 1 and all end: none in flight
        state.before_send(1.0, retry=False)
        state.on_result(1.5, success=False, retry_cost=None)
    assert state.active == 0
    # in flight the limit would be max(0, 3) = 3; over the interval max(floor(0.2 * 50), 3) = 10
    assert [state.try_retry(2.0, after_timeout=False) for _ in range(11)] == [1.0] * 10 + [None]
    for _ in range(10):  # the retries end; each one started counts too (60 started)
        state.before_send(2.0, retry=True)
        state.on_result(2.5, success=False, retry_cost=1.0)
    # Envoy's tenths: t = 1 and 2 fall in the tenths [1, 2) and [2, 3), taken away 10 s after they close
    assert state.limit(11.99) == 12  # floor(0.2 * 60)
    assert state.limit(12.0) == 3  # the 50 of t = 1 gone at 2 + 10 s; 10 left: max(2, 3)
    assert state.limit(13.0) == 3


def test_envoy_s_budget_interval_and_the_gateway_api_s_retry_constraint_as_budgets():
    _, budget = resolve(parse_strategy("envoy:budget_percent=20,budget_interval=10s"))
    assert budget == ConcurrencyBudget(percent=20, min_retries=3, interval_s=10.0)
    assert budget.spec() == "concurrency:percent=20,min=3,interval=10s"
    assert parse_budget("concurrency:percent=20,min=10,interval=10s").start().limit(0.0) == 10  # GEP-3388
    assert parse_budget("concurrency").spec() == "concurrency:percent=20,min=3"  # Envoy's default: in flight
    with pytest.raises(SpecError, match=r"budget_interval.*give budget_percent too"):
        parse_strategy("envoy:budget_interval=10s")
