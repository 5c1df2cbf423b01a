"""What a live run takes from the world: time, sleeping, blocking calls, the dead-man switch.

Production uses the defaults; tests pass a virtual clock and sleep (minutes of a run in
milliseconds), direct calls instead of worker threads, and a recording switch, so the
orchestration (:func:`retrystorm.runner.orchestrate.execute`) is tested with one-line fakes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable
from typing import Any

from retrystorm.chaos.lifecycle import DeadManSwitch


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Runtime:
    """The run's clock (seconds, monotonic), its sleep, how it calls blocking code, and its dead-man switch."""

    clock: Callable[[], float] = time.monotonic
    #: Wall-clock time (Unix seconds): where the run's windows sit in Grafana's time.
    wall: Callable[[], float] = time.time
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    run_blocking: Callable[..., Awaitable[Any]] = asyncio.to_thread
    #: ``None``: a watchdog process per pause (:class:`retrystorm.chaos.deadman.WatchdogSwitch`), journaling its resume.
    dead_man: DeadManSwitch | None = None

    async def sleep_until(self, deadline: float) -> None:
        """Sleep until ``clock()`` reaches ``deadline`` (at once if it has)."""
        delay = deadline - self.clock()
        if delay > 0:
            await self.sleep(delay)
