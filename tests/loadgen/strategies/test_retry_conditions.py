"""Retry conditions, Retry-After readings, per-request backoff, and how a preset expands (resolve)."""

import random

import pytest

from retrystorm.errors import SpecError
from retrystorm.loadgen.strategies import (
    DEFAULT_RETRY_ON,
    NONE,
    FixedBackoff,
    GiveUp,
    RetryAfter,
    RetryOn,
    RetryPolicy,
    RetrySession,
    parse_budget,
    parse_strategy,
    resolve,
)
from retrystorm.loadgen.strategies.budgets import QuotaBudget, TokensBudget


def session(policy: RetryPolicy, budget=None, seed: int = 0) -> RetrySession:
    return RetrySession(policy, budget=budget, rng=random.Random(seed))


def test_retry_on_reads_and_prints_its_conditions():
    conditions = RetryOn.parse("[timeout, connection, 5xx, 429, 503/retry-after]")
    assert conditions.text() == "[timeout,connection,5xx,429,503/retry-after]"
    assert RetryOn.parse(conditions.text()) == conditions
    assert conditions.retries(timed_out=True, status=None)
    assert conditions.retries(timed_out=False, status=None)
    assert conditions.retries(timed_out=False, status=500)
    assert not conditions.retries(timed_out=False, status=404)
    assert DEFAULT_RETRY_ON.text() == "[timeout,connection,5xx,429]"
    assert RetryOn.parse("503/retry-after").retries(timed_out=False, status=503, retry_after=True)
    assert not RetryOn.parse("503/retry-after").retries(timed_out=False, status=503)


@pytest.mark.parametrize("text", ["[sometimes]", "[600]", "[399]", "[5xy]", "[503/later]"])
def test_retry_on_refuses_what_it_does_not_know(text):
    with pytest.raises(SpecError, match=r"retry_on: got .*expected a list in brackets of timeout, connection"):
        RetryOn.parse(text)


def test_a_failure_not_retried_ends_the_request_and_leaves_the_tokens_alone():
    policy = RetryPolicy(strategy=FixedBackoff(delay_s=1.0), retry_on=RetryOn.parse("[503]"))
    tokens = TokensBudget(max_tokens=10, ratio=0.1).start()
    retries = session(policy, budget=tokens)
    retries.start_request(0.0)
    assert retries.on_failure(0.0, status=503).retry
    assert tokens.tokens == 9.0  # a retryable failure costs a token
    decision = retries.on_failure(1.0, timed_out=True)
    assert decision.give_up is GiveUp.NOT_RETRYABLE
    assert tokens.tokens == 9.0  # gRFC A6: only retryable failures count


def test_a_client_error_still_counts_as_an_answer_and_resets_the_backoff():
    policy = RetryPolicy(strategy=parse_strategy("exponential:base=1s,factor=2"))
    quota = QuotaBudget(capacity=20).start()
    retries = session(policy, budget=quota)
    retries.start_request(0.0)
    assert retries.on_failure(0.0, status=503).delay_s == 1.0
    assert quota.quota == 15
    assert retries.on_failure(1.0, status=404).give_up is GiveUp.NOT_RETRYABLE
    assert quota.quota == 20  # as after a success: the retry's cost comes back
    assert retries.retry_number == 0 and retries.request_attempts == 2


def test_pushback_waits_exactly_and_restarts_the_backoff():
    policy, _ = resolve(parse_strategy("grpc-retry:max_attempts=5,jitter=none"))
    retries = session(policy)
    retries.start_request(0.0)
    assert retries.on_failure(0.0, status=503).delay_s == 0.1
    assert retries.on_failure(0.1, status=503).delay_s == 0.2
    assert retries.on_failure(0.3, status=503, retry_after_s=3.0).delay_s == 3.0  # exactly, even if shorter
    assert retries.on_failure(3.3, status=503).delay_s == 0.1  # initialBackoff again


def test_exact_retry_after_replaces_the_delay_above_zero_only():
    policy = RetryPolicy(strategy=FixedBackoff(delay_s=5.0), retry_after=RetryAfter.EXACT)
    retries = session(policy)
    retries.start_request(0.0)
    assert retries.on_failure(0.0, status=503, retry_after_s=1.0).delay_s == 1.0
    assert retries.on_failure(1.0, status=503, retry_after_s=0.0).delay_s == 5.0
    ignoring = session(RetryPolicy(strategy=FixedBackoff(delay_s=5.0), retry_after=RetryAfter.IGNORE))
    ignoring.start_request(0.0)
    assert ignoring.on_failure(0.0, status=503, retry_after_s=60.0).delay_s == 5.0
    off = RetryPolicy(strategy=FixedBackoff(delay_s=5.0), retry_after=RetryAfter.PUSHBACK, honour_retry_after=False)
    turned_off = session(off)
    turned_off.start_request(0.0)
    assert turned_off.on_failure(0.0, status=503, retry_after_s=60.0).delay_s == 5.0


def test_a_per_request_backoff_starts_afresh_even_after_a_give_up():
    strategy = parse_strategy("exponential:base=1s,factor=2")
    kept = session(RetryPolicy(strategy=strategy, max_attempts=3))
    fresh = session(RetryPolicy(strategy=strategy, max_attempts=3, per_request=True))
    for retries in (kept, fresh):
        retries.start_request(0.0)
        retries.on_failure(0.0)
        retries.on_failure(1.0)
        assert retries.on_failure(3.0).give_up is GiveUp.MAX_ATTEMPTS
        retries.start_request(10.0)
    assert kept.on_failure(10.0).delay_s == 4.0  # the seed client's kept backoff
    assert fresh.on_failure(10.0).delay_s == 1.0


def test_a_stateful_strategy_gets_its_state_back_and_loses_it_with_each_request():
    policy, _ = resolve(parse_strategy("polly:backoff=exponential,jitter=true,max_retry_attempts=9"))
    retries = session(policy, seed=5)
    retries.start_request(0.0)
    retries.on_failure(0.0)
    first_state = retries.state
    assert first_state > 0
    retries.on_failure(1.0)
    assert retries.state > first_state
    retries.start_request(5.0)
    assert retries.state == 0.0


# -- resolve: a preset's controls, and the precedence of explicit ones ------------------


def test_a_plain_strategy_resolves_to_the_old_policy():
    policy, budget = resolve(FixedBackoff(delay_s=1.0), max_attempts=3, budget=parse_budget("tokens"))
    assert policy == RetryPolicy(strategy=FixedBackoff(delay_s=1.0), max_attempts=3)
    assert budget == TokensBudget()
    assert resolve(FixedBackoff(delay_s=1.0), max_attempts=NONE, budget=NONE) == (
        RetryPolicy(strategy=FixedBackoff(delay_s=1.0)),
        None,
    )


def test_explicit_controls_override_the_presets_own_and_none_removes_them():
    preset = parse_strategy("aws-standard")
    policy, budget = resolve(preset)
    assert (policy.max_attempts, budget) == (3, QuotaBudget(cost=14, timeout_cost=14, throttle_cost=5))
    policy, budget = resolve(preset, max_attempts=7, budget=parse_budget("tokens"))
    assert (policy.max_attempts, budget) == (7, TokensBudget())
    policy, budget = resolve(preset, max_attempts=NONE, budget=NONE)
    assert (policy.max_attempts, budget) == (None, None)
    # what the preset brings beyond cap and budget stays the library's
    assert policy.retry_on == preset.conditions()
    assert policy.per_request
    assert resolve(preset, honour_retry_after=False, deadline_s=9.0)[0].deadline_s == 9.0


def test_a_presets_unretried_client_error_is_a_failure_to_its_budget():
    policy, budget = resolve(parse_strategy("grpc-retry:max_tokens=10"))
    tokens = budget.start()
    retries = session(policy, budget=tokens)
    retries.start_request(0.0)
    assert retries.on_failure(0.0, status=503).retry  # UNAVAILABLE: -1
    assert tokens.tokens == 9.0
    assert retries.on_failure(0.1, status=404).give_up is GiveUp.NOT_RETRYABLE  # UNIMPLEMENTED
    assert tokens.tokens == 9.0  # neither a success (+0.1) nor a retryable failure (-1)
