"""Retry controls with a fake clock: attempts, deadline, reset, Retry-After, budgets."""

import dataclasses
import random

import pytest

from retrystorm.errors import SpecError
from retrystorm.loadgen.strategies import (
    ExponentialBackoff,
    FixedBackoff,
    GiveUp,
    RetryPolicy,
    RetrySession,
    parse_budget,
    parse_strategy,
)

DOUBLING = ExponentialBackoff(base_s=1.0, factor=2.0, max_s=1000.0)


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def session(policy: RetryPolicy, budget=None) -> RetrySession:
    return RetrySession(policy, budget=budget, rng=random.Random(0))


def test_retries_forever_by_default_with_growing_delays():
    clock = FakeClock()
    retries = session(RetryPolicy(strategy=DOUBLING))
    retries.start_request(clock.now)
    delays = []
    for _ in range(8):
        decision = retries.on_failure(clock.now)
        assert decision.retry
        delays.append(decision.delay_s)
        clock.sleep(decision.delay_s)
    assert delays == [1, 2, 4, 8, 16, 32, 64, 128]
    assert clock.now == 255


def test_max_attempts_counts_the_first_attempt():
    retries = session(RetryPolicy(strategy=DOUBLING, max_attempts=3))
    retries.start_request(0.0)
    assert retries.on_failure(0.0).retry
    assert retries.on_failure(1.0).retry
    decision = retries.on_failure(3.0)
    assert not decision.retry
    assert decision.give_up is GiveUp.MAX_ATTEMPTS
    retries.start_request(10.0)  # the next request gets its attempts back
    assert retries.on_failure(10.0).retry


def test_deadline_stops_a_retry_that_would_end_past_it():
    clock = FakeClock()
    retries = session(RetryPolicy(strategy=DOUBLING, deadline_s=10.0))
    clock.now = 100.0
    retries.start_request(clock.now)
    outcomes = []
    while True:
        decision = retries.on_failure(clock.now)
        if not decision.retry:
            outcomes.append(decision.give_up)
            break
        clock.sleep(decision.delay_s + 0.5)  # each attempt takes 0.5 s to fail
        outcomes.append(decision.delay_s)
    # retries at 1, 2, 4 s (ends at 108.5); the next 8 s would end past 110
    assert outcomes == [1, 2, 4, GiveUp.DEADLINE]
    assert retries.remaining_s(clock.now) == pytest.approx(1.5)


def test_reset_after_success_restarts_the_backoff():
    retries = session(RetryPolicy(strategy=DOUBLING))
    retries.start_request(0.0)
    assert [retries.on_failure(0.0).delay_s for _ in range(3)] == [1, 2, 4]
    retries.on_success(10.0)
    retries.start_request(20.0)
    assert retries.on_failure(20.0).delay_s == 1


def test_without_reset_the_backoff_keeps_growing_across_requests():
    retries = session(RetryPolicy(strategy=DOUBLING, reset_after_success=False))
    retries.start_request(0.0)
    assert [retries.on_failure(0.0).delay_s for _ in range(3)] == [1, 2, 4]
    retries.on_success(10.0)
    retries.start_request(20.0)
    assert retries.on_failure(20.0).delay_s == 8


def test_retry_after_lengthens_but_never_shortens_the_delay():
    retries = session(RetryPolicy(strategy=FixedBackoff(delay_s=2.0)))
    retries.start_request(0.0)
    assert retries.on_failure(0.0, retry_after_s=5.0).delay_s == 5.0
    assert retries.on_failure(5.0, retry_after_s=0.5).delay_s == 2.0
    ignoring = session(RetryPolicy(strategy=FixedBackoff(delay_s=2.0), honour_retry_after=False))
    ignoring.start_request(0.0)
    assert ignoring.on_failure(0.0, retry_after_s=5.0).delay_s == 2.0


def test_shared_quota_budget_is_exhausted_by_many_clients():
    budget = parse_budget("quota:capacity=50").start()
    clients = [session(RetryPolicy(strategy=DOUBLING), budget) for _ in range(20)]
    decisions = []
    for client in clients:
        client.start_request(0.0)
        decisions.append(client.on_failure(0.0, timed_out=True))
    assert sum(d.retry for d in decisions) == 5  # 50 / 10 per timeout retry
    assert [d.give_up for d in decisions if not d.retry] == [GiveUp.BUDGET] * 15
    assert budget.refusals == 15


def test_successful_retry_refunds_its_quota_cost():
    budget = parse_budget("quota").start()
    client = session(RetryPolicy(strategy=DOUBLING), budget)
    client.start_request(0.0)
    client.on_failure(0.0, timed_out=True)
    assert budget.quota == 490
    client.on_success(1.0)
    assert budget.quota == 500


def test_tokens_budget_sees_every_attempts_result():
    budget = parse_budget("tokens:max=4,ratio=0.5").start()
    client = session(RetryPolicy(strategy=DOUBLING), budget)
    client.start_request(0.0)
    assert client.on_failure(0.0).retry  # 3 tokens left
    decision = client.on_failure(1.0)  # 2 tokens: not above max/2
    assert decision.give_up is GiveUp.BUDGET


def test_locally_rejected_attempt_counts_against_max_attempts_but_not_the_budget():
    budget = parse_budget("adaptive").start()
    client = session(RetryPolicy(strategy=DOUBLING, max_attempts=2), budget)
    client.start_request(0.0)
    assert client.on_failure(0.0, sent=False).retry
    assert budget.accepts.total(0.0) == 0
    assert client.on_failure(1.0, sent=False).give_up is GiveUp.MAX_ATTEMPTS


def test_previous_delay_passed_to_the_strategy():
    retries = session(RetryPolicy(strategy=parse_strategy("smira:jitter=0")))
    retries.start_request(0.0, slept_s=1.0)
    assert retries.on_failure(0.0).delay_s == pytest.approx(2.71828)
    assert retries.on_failure(0.0).delay_s == pytest.approx(2.71828**2)


@pytest.mark.parametrize(
    ("kwargs", "message"), [({"max_attempts": 0}, "max_attempts"), ({"deadline_s": 0}, "deadline")]
)
def test_bad_policy_values_are_user_errors(kwargs, message):
    with pytest.raises(SpecError, match=message):
        RetryPolicy(strategy=DOUBLING, **kwargs)


def run_request(retries, clock, *, think_s, failures):
    """One logical request on ``clock``: think, ``failures`` failed attempts, then a success; its delays."""
    clock.sleep(think_s)
    retries.start_request(clock.now, slept_s=think_s)
    delays = []
    for _ in range(failures):
        decision = retries.on_failure(clock.now)
        delays.append(decision.delay_s)
        clock.sleep(decision.delay_s)
    retries.on_success(clock.now)
    return delays


def test_kept_backoff_keeps_the_previous_delay_not_only_the_count():
    """smira grows from the previous delay alone: kept, it continues from the last backoff, not the think time."""
    clock = FakeClock()
    kept = session(RetryPolicy(strategy=parse_strategy("smira:jitter=0"), reset_after_success=False))
    e = 2.71828
    assert run_request(kept, clock, think_s=1.0, failures=2) == pytest.approx([e, e**2])  # fresh: from the think
    assert run_request(kept, clock, think_s=5.0, failures=2) == pytest.approx([e**3, e**4])
    assert (kept.retry_number, kept.last_sleep_s) == (4, pytest.approx(e**4))


def test_reset_backoff_grows_again_from_the_think_time():
    clock = FakeClock()
    reset = session(RetryPolicy(strategy=parse_strategy("smira:jitter=0")))
    e = 2.71828
    assert run_request(reset, clock, think_s=1.0, failures=2) == pytest.approx([e, e**2])
    assert run_request(reset, clock, think_s=5.0, failures=1) == pytest.approx([5.0 * e])  # the seed's quirk


class Highest(random.Random):
    """A random source whose uniform draws are always the top of their range."""

    def uniform(self, a, b):
        return b


def test_kept_decorrelated_backoff_draws_from_its_last_delay():
    """U(base, 3 x previous): kept, the next failure's range grows from the last delay, not the think time."""
    clock = FakeClock()
    policy = RetryPolicy(strategy=parse_strategy("decorrelated:base=1s,max=1h"), reset_after_success=False)
    kept = RetrySession(policy, rng=Highest())
    assert run_request(kept, clock, think_s=0.5, failures=3) == [3, 9, 27]
    assert run_request(kept, clock, think_s=0.5, failures=2) == [81, 243]
    reset = RetrySession(dataclasses.replace(policy, reset_after_success=True), rng=Highest())
    assert run_request(reset, clock, think_s=0.5, failures=3) == [3, 9, 27]
    assert run_request(reset, clock, think_s=0.5, failures=2) == [3, 9]


def test_a_request_that_gave_up_leaves_the_backoff_where_it_was():
    """Only a success resets the backoff: the count and the previous delay carry over together."""
    clock = FakeClock()
    retries = session(RetryPolicy(strategy=parse_strategy("smira:jitter=0"), max_attempts=3))
    retries.start_request(clock.now, slept_s=1.0)
    e = 2.71828
    assert [retries.on_failure(clock.now).delay_s for _ in range(2)] == pytest.approx([e, e**2])
    assert retries.on_failure(clock.now).give_up is GiveUp.MAX_ATTEMPTS
    retries.start_request(clock.now, slept_s=5.0)
    assert retries.on_failure(clock.now).delay_s == pytest.approx(e**3)
