"""Polly's circuit breaker as a budget, and Microsoft.Extensions.Http.Resilience's standard handler preset."""

import random

from retrystorm.loadgen.strategies import parse_budget, parse_strategy, resolve
from retrystorm.loadgen.strategies.budgets import CircuitBudget
from retrystorm.loadgen.strategies.controls import RetryAfter

RNG = random.Random(1)


def sample(state, now_s: float, *, failed: bool) -> bool:
    """One attempt through the breaker; whether it was let through."""
    if not state.allow_attempt(now_s, RNG):
        return False
    state.on_result(now_s, success=not failed, retry_cost=None)
    return True


def test_the_circuit_opens_at_the_failure_ratio_once_the_minimum_throughput_is_sampled():
    state = CircuitBudget().start()  # Polly: 10 % of at least 100 attempts over 30 s
    for tick in range(89):
        assert sample(state, tick * 0.01, failed=False)
    for tick in range(10):
        assert sample(state, 1 + tick * 0.01, failed=True)  # 10 of 99: below the minimum throughput
    assert not state.is_open(1.2)
    assert sample(state, 1.2, failed=False)  # the 100th: 10 of 100 failed, the ratio reached
    assert state.is_open(1.2) and state.opened == 1


def test_an_open_circuit_refuses_for_the_break_then_lets_one_probe_through():
    state = CircuitBudget(min_throughput=2, break_s=5.0).start()
    sample(state, 0.0, failed=True)
    sample(state, 0.1, failed=True)
    assert not sample(state, 5.0, failed=False) and state.refusals == 1  # open until 5.1
    assert state.try_retry(5.0, after_timeout=False) is None
    assert state.allow_attempt(5.1, RNG)  # half-open: the probe
    assert not state.allow_attempt(5.2, RNG)  # the others wait for it
    state.on_result(5.3, success=False, retry_cost=None)  # the probe failed: open again for 5 s
    assert state.is_open(10.2) and not state.is_open(10.3) and state.opened == 2
    assert sample(state, 10.3, failed=False)  # this probe succeeds: closed, the samples start over
    assert not state.is_open(10.4) and state.try_retry(10.4, after_timeout=False) == 0.0
    assert sample(state, 10.5, failed=True) and not state.is_open(10.5)  # 1 sample: below the minimum


def test_a_failure_the_conditions_do_not_cover_is_not_sampled_as_one():
    state = CircuitBudget(min_throughput=2).start()
    for now_s in (0.0, 0.1, 0.2):
        state.allow_attempt(now_s, RNG)
        state.on_result(now_s, success=False, retry_cost=None, retryable=False)
    assert not state.is_open(0.3)


def test_the_standard_handler_is_polly_s_exponential_retry_with_retry_after_in_front_of_the_breaker():
    policy, budget = resolve(parse_strategy("dotnet-standard"))
    assert policy.max_attempts == 4 and policy.retry_after is RetryAfter.EXACT
    assert budget == CircuitBudget(failure_ratio=0.1, min_throughput=100, sampling_s=30.0, break_s=5.0)
    retry_on = policy.retry_on
    assert retry_on.retries(timed_out=True, status=None) and retry_on.retries(timed_out=False, status=None)
    assert all(retry_on.retries(timed_out=False, status=status) for status in (500, 503, 408, 429))
    assert not retry_on.retries(timed_out=False, status=404)
    tuned = resolve(parse_strategy("dotnet-standard:min_throughput=10,break=30s"))[1]
    assert tuned == CircuitBudget(min_throughput=10, break_s=30.0)
    assert parse_budget("circuit:failure_ratio=0.5") == CircuitBudget(failure_ratio=0.5)
