"""A watch fails the run only once its probe has not been fine for the allowed time, or at once when it raises."""

import asyncio

import pytest

from retrystorm.runner.errors import RunFailedError
from retrystorm.runner.watch import Watch


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def watch_of(answers, clock, allowed_s=5.0):
    replies = iter(answers)

    async def probe():
        reply = next(replies)
        if isinstance(reply, Exception):
            raise reply
        return reply

    return Watch("the thing", probe, allowed_s=allowed_s, clock=clock)


def observe_each_second(watch, clock, times):
    async def run():
        for _ in range(times):
            await watch.observe()
            clock.now += 1.0

    asyncio.run(run())


def test_failing_for_less_than_allowed_is_tolerated():
    clock = Clock()
    watch = watch_of(["slow", "slow", "slow", None, "slow", "slow"], clock)
    observe_each_second(watch, clock, 6)
    watch.check()


def test_failing_for_longer_than_allowed_fails_with_the_last_reason():
    clock = Clock()
    watch = watch_of([None] + ["no answer"] * 7, clock)
    observe_each_second(watch, clock, 8)
    with pytest.raises(RunFailedError, match=r"the thing has failed for 6 s: no answer"):
        watch.check()


def test_a_probe_that_raises_fails_at_once():
    clock = Clock()
    watch = watch_of([None, RunFailedError("the target is gone")], clock)
    observe_each_second(watch, clock, 2)
    with pytest.raises(RunFailedError, match="the target is gone"):
        watch.check()


def test_the_background_task_probes_until_stopped():
    calls = []

    async def probe():
        calls.append(1)

    async def run():
        watch = Watch("thing", probe, allowed_s=1.0, interval_s=0.01)
        watch.start()
        while len(calls) < 3:
            await asyncio.sleep(0.01)
        await watch.stop()
        seen = len(calls)
        await asyncio.sleep(0.05)
        return seen

    seen = asyncio.run(run())
    assert len(calls) == seen >= 3
