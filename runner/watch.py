"""Watching a long-lived service during a run: a probe every second, a verdict on demand.

The orchestration calls ``check()`` of the target and the load once a second and it
must not block, so a :class:`Watch` probes in a background task and ``check()`` only
reads what it found. A probe returns ``None`` when the service is fine (or excused,
like a target paused on purpose), a reason when it is not; it raises
:class:`~retrystorm.runner.errors.RunFailedError` when the run cannot go on at all. The
watch fails the run once the service has not been fine for ``allowed_s`` seconds, so
one slow answer on a busy machine is not a failure.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from retrystorm.runner.errors import RunFailedError

log = logging.getLogger(__name__)

Probe = Callable[[], Awaitable[str | None]]


class Watch:
    """Runs ``probe`` every ``interval_s``; :meth:`check` raises once it failed for ``allowed_s``."""

    def __init__(
        self,
        what: str,
        probe: Probe,
        *,
        allowed_s: float,
        interval_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.what = what
        self.probe = probe
        self.allowed_s = allowed_s
        self.interval_s = interval_s
        self.clock = clock
        self.failure: RunFailedError | None = None
        self._last_fine = clock()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start probing in the background (in the running event loop)."""
        self._last_fine = self.clock()
        self._task = asyncio.create_task(self._run(), name=f"watch {self.what}")

    async def observe(self) -> None:
        """Probe once and judge (the background task calls this every ``interval_s``); a failure stays."""
        if self.failure is not None:
            return
        try:
            reason = await self.probe()
        except RunFailedError as error:
            self.failure = error
            return
        now = self.clock()
        if reason is None:
            self._last_fine = now
        elif now - self._last_fine > self.allowed_s:
            self.failure = RunFailedError(f"{self.what} has failed for {now - self._last_fine:.0f} s: {reason}")
        else:
            log.debug("%s: %s", self.what, reason)

    async def _run(self) -> None:
        while self.failure is None:
            await self.observe()
            await asyncio.sleep(self.interval_s)

    def check(self) -> None:
        """Raise what the probes found, if the run cannot go on."""
        if self.failure is not None:
            raise self.failure

    async def stop(self) -> None:
        """Stop probing."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.wait([self._task])  # unlike awaiting it, keeps a cancellation of the caller
            self._task = None
