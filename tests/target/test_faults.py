"""The fault rule and its injector, pure: which attempts fail, counts, the record, bad values.

How a ``PUT /admin/faults`` body becomes a rule: tests/target/service/test_bodies.py."""

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from retrystorm.errors import UserError
from retrystorm.target.faults import RECENT_CAPACITY, FaultInjector, FaultRule, parse_attempt


def injector(**rule):
    faults = FaultInjector(random.Random(1))
    faults.arm(FaultRule(**rule))
    return faults


def test_off_by_default_lets_everything_through_and_records_nothing():
    faults = FaultInjector(random.Random(1))
    assert [faults.judge(attempt, 0.0) for attempt in (1, 2, 3)] == [None, None, None]
    assert faults.to_json() == {"rule": None, "injected": 0, "passed": 0, "remaining": None, "recent": []}


def test_first_attempts_fail_and_later_ones_pass():
    faults = injector(first_attempts=2, status=429)
    assert [faults.judge(attempt, float(attempt)) for attempt in (1, 2, 3, 1, 4)] == [429, 429, None, 429, None]
    document = faults.to_json()
    assert (document["injected"], document["passed"], document["remaining"]) == (3, 2, None)
    assert document["recent"][:3] == [
        {"at_seconds": 1.0, "attempt": 1, "status": 429},
        {"at_seconds": 2.0, "attempt": 2, "status": 429},
        {"at_seconds": 3.0, "attempt": 3, "status": None},
    ]


def test_count_bounds_the_failures_then_everything_passes():
    faults = injector(count=2)
    assert [faults.judge(1, 0.0) for _ in range(4)] == [503, 503, None, None]
    assert faults.remaining == 0


def test_probability_fails_about_that_share_reproducibly():
    def run():
        faults = injector(probability=0.25)
        return [faults.judge(1, 0.0) for _ in range(4000)]

    first = run()
    assert first == run()  # same seed, same draws
    assert 800 < first.count(503) < 1200  # binomial(4000, 0.25): mean 1000, sd 27


@given(
    first=st.one_of(st.none(), st.integers(1, 5)),
    count=st.one_of(st.none(), st.integers(1, 20)),
    attempts=st.lists(st.integers(1, 8), max_size=60),
)
def test_a_failure_needs_every_condition(first, count, attempts):
    faults = injector(first_attempts=first, count=count)
    judged = [faults.judge(attempt, 0.0) for attempt in attempts]
    failed = [attempt for attempt, status in zip(attempts, judged, strict=True) if status is not None]
    assert all(first is None or attempt <= first for attempt in failed)
    assert count is None or len(failed) <= count
    qualifying = [attempt for attempt in attempts if first is None or attempt <= first]
    assert len(failed) == (len(qualifying) if count is None else min(count, len(qualifying)))
    assert faults.injected + faults.passed == len(attempts)


def test_arming_restarts_the_counters_and_disarming_keeps_them_readable():
    faults = injector(count=5)
    faults.judge(1, 0.0)
    faults.disarm()
    assert faults.judge(1, 1.0) is None
    assert (faults.to_json()["rule"], faults.injected, len(faults.recent)) == (None, 1, 1)
    faults.arm(FaultRule(status=500))
    assert (faults.injected, faults.passed, list(faults.recent)) == (0, 0, [])


def test_the_record_keeps_the_latest_attempts():
    faults = injector(first_attempts=1)
    for index in range(RECENT_CAPACITY + 10):
        faults.judge(2, float(index))
    assert len(faults.recent) == RECENT_CAPACITY
    assert faults.recent[0][0] == 10.0


RETRY_AFTER = "a whole number of seconds from 0 to 86400, or null (no header)"
FIRST_ATTEMPTS = "a whole number from 1 to 999,999,999, or null (no limit)"
COUNT = "a whole number from 1 to 1,000,000,000, or null (no limit)"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"status": 404}, "status: got 404, expected 429 or 500 to 599"),
        ({"status": 600}, "status: got 600, expected 429 or 500 to 599"),
        ({"retry_after_s": -1}, f"retry_after: got -1, expected {RETRY_AFTER}"),
        ({"retry_after_s": 86_401}, f"retry_after: got 86401, expected {RETRY_AFTER}"),
        ({"first_attempts": 0}, f"first_attempts: got 0, expected {FIRST_ATTEMPTS}"),
        ({"first_attempts": 10**9}, f"first_attempts: got 1000000000, expected {FIRST_ATTEMPTS}"),
        ({"count": 0}, f"count: got 0, expected {COUNT}"),
        ({"count": 10**9 + 1}, f"count: got 1000000001, expected {COUNT}"),
        ({"count": 10**400}, f"count: got a whole number of about 401 digits, expected {COUNT}"),
        ({"probability": 0.0}, "probability: got 0.0, expected a number > 0 and <= 1"),
        ({"probability": 1.5}, "probability: got 1.5, expected a number > 0 and <= 1"),
    ],
)
def test_a_rule_out_of_range_is_refused_naming_the_field(fields, message):
    # the rule checks itself however it is made (the admin API's body checks the same bounds first)
    with pytest.raises(UserError) as caught:
        FaultRule(**fields)
    assert str(caught.value) == message


def test_the_largest_values_are_a_rule():
    rule = FaultRule(retry_after_s=86_400, first_attempts=999_999_999, count=10**9)
    assert (rule.retry_after_s, rule.first_attempts, rule.count) == (86_400, 999_999_999, 10**9)


def test_the_attempt_header():
    assert parse_attempt(None) == 1
    assert parse_attempt(b"3") == 3
    assert parse_attempt(b" 12 ") == 12
    for bad in (b"0", b"-1", b"two", b"", b"1" * 12):
        with pytest.raises(UserError, match=r"Retrystorm-Attempt: got .*expected a whole number >= 1"):
            parse_attempt(bad)
