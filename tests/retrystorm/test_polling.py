"""The one waiting rule: check at once, then every so often; the first answer wins; a deadline ends it."""

import asyncio

import pytest

from retrystorm.polling import poll_until, poll_until_sync


class LateError(Exception):
    pass


def answers(*values):
    """A check that gives ``values`` in turn and counts its calls."""
    calls = []

    def check():
        calls.append(1)
        return values[min(len(calls), len(values)) - 1]

    return check, calls


def test_the_first_answer_that_is_not_none_is_returned_without_waiting_more():
    check, calls = answers(None, None, "ready", "later")
    assert poll_until_sync(check, timeout_s=10, every_s=0.001, on_timeout=LateError) == "ready"
    assert len(calls) == 3


def test_no_answer_by_the_deadline_raises_what_the_caller_chose_after_a_last_check():
    check, calls = answers(None)
    with pytest.raises(LateError):
        poll_until_sync(check, timeout_s=0.0, every_s=0.001, on_timeout=LateError)
    assert len(calls) == 1  # checked once even with no time at all


def test_a_check_that_raises_ends_the_wait():
    def check():
        raise RuntimeError("the child died")

    with pytest.raises(RuntimeError, match="the child died"):
        poll_until_sync(check, timeout_s=10, every_s=0.001, on_timeout=LateError)


def test_the_async_wait_follows_the_same_rule():
    check, calls = answers(None, 0)

    async def asynchronous():
        return check()

    found = asyncio.run(poll_until(asynchronous, timeout_s=10, every_s=0.001, on_timeout=LateError))
    assert found == 0  # 0 is an answer
    assert len(calls) == 2
    nothing, _ = answers(None)

    async def never():
        return nothing()

    with pytest.raises(LateError):
        asyncio.run(poll_until(never, timeout_s=0.01, every_s=0.001, on_timeout=LateError))
