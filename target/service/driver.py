"""Drives a pure overload model in real time with one clock task per server.

The model says when it next needs to be evaluated (:meth:`ModelServer.next_wakeup_s`);
the clock task sleeps until then, or until an arrival wakes it while the model is idle,
and calls :meth:`ModelServer.advance` with the current time. There is no per-request
timer and no polling: a response costs the one wake-up that releases it, and the
requests due at the same tick share it.

After the process has been frozen (SIGSTOP, ``docker pause``), the pending wake-up is
overdue: the clock task runs at once with the real monotonic time, so the model
catches up with the time that passed in a single evaluation, as the seed server's
goroutines do when they wake.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import random
from collections.abc import Callable
from typing import Generic, TypeVar

from retrystorm.target.models import Completion, ModelServer, OverloadModel, ScaledServer, switch_model

logger = logging.getLogger(__name__)

P = TypeVar("P")
#: Receives the requests a model released, and the time of that evaluation.
Release = Callable[[list[Completion[P]], float], None]
#: After the clock task fails, how long it waits before evaluating the model again.
_RETRY_AFTER_FAILURE_S = 1.0


class ModelDriver(Generic[P]):
    """Admits requests into one :class:`ModelServer` and runs its clock task.

    ``clock`` returns seconds and must advance with the event loop's clock (it may be
    offset from it); ``release`` answers the released requests.
    """

    def __init__(
        self, model: OverloadModel, *, clock: Callable[[], float], rng: random.Random, release: Release[P]
    ) -> None:
        self.model = model
        self._clock = clock
        self._rng = rng
        self._release = release
        self.server: ModelServer[P] = model.start(clock())
        self._task: asyncio.Task[None] | None = None
        self._wakeup: asyncio.Future[bool] | None = None
        self._scheduled_s = math.inf  # when the clock task will next run by itself

    @property
    def in_flight(self) -> int:
        """Requests in the model, abandoned ones included."""
        return self.server.in_flight

    @property
    def delay_s(self) -> float:
        """The model's delay at the current load."""
        return self.server.delay_s

    def start(self) -> None:
        """Start the clock task on the running loop."""
        self._task = asyncio.get_running_loop().create_task(self._run(), name="model-clock")

    async def stop(self) -> None:
        """Cancel the clock task."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def admit(self, payload: P) -> float:
        """Admit a request now; release at once what is due at once. Returns the time."""
        now = self._clock()
        server = self.server
        server.admit(now, payload)
        wake_s = server.next_wakeup_s(now)
        if wake_s is not None:
            if wake_s <= now:  # e.g. fixed:base_delay=0 answers without waiting for the clock task
                self._release(server.advance(now, self._rng), now)
            elif wake_s < self._scheduled_s:
                self._kick()
        return now

    def withdraw(self, payload: P) -> bool:
        """Remove a request before its release; ``True`` if it was in flight (the load drops,
        which may bring the next release forward: the clock task looks again)."""
        withdrawn = self.server.withdraw(payload)
        if withdrawn:
            self._kick()
        return withdrawn

    def switch(self, model: OverloadModel) -> None:
        """Run ``model`` from now on, keeping everything in flight (and the capacity in force)."""
        capacity, now = self.capacity, self._clock()
        self.server = switch_model(self.server, model, now)
        self.model = model
        if capacity != self.capacity:  # a new server of another kind: at the capacity in force too
            self.server = ScaledServer(self.server, now)
            self.server.set_capacity(now, capacity)
        self._kick()

    @property
    def capacity(self) -> float:
        """The fraction of the model's speed it runs at (1: full; see :mod:`retrystorm.target.models.capacity`)."""
        server = self.server
        return server.capacity if isinstance(server, ScaledServer) else 1.0

    def set_capacity(self, capacity: float) -> None:
        """Run the model at ``capacity`` (0 < capacity <= 1) of its speed from now on; 1 restores it.

        The model gets a clock of its own (:class:`~retrystorm.target.models.ScaledServer`) at the first
        cut and keeps it: work in progress goes on at the speed of the moment.
        """
        now, server = self._clock(), self.server
        if not isinstance(server, ScaledServer):
            if capacity == 1.0:
                return
            server = ScaledServer(server, now)
            self.server = server
        server.set_capacity(now, capacity)
        self._kick()

    def drain(self) -> list[tuple[float, P]]:
        """Remove and return everything in flight, oldest first."""
        return self.server.drain()

    def _kick(self) -> None:
        """Make the clock task re-read the model's next wake-up."""
        wakeup = self._wakeup
        if wakeup is not None and not wakeup.done():
            wakeup.set_result(False)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            now = self._clock()
            wake_s = self.server.next_wakeup_s(now)
            # A model's next wake-up may lie strictly after the time asked about (a tick
            # grid), so the evaluation runs when the awaited wake-up comes, not when a
            # fresh look says it is due.
            if (wake_s is None or wake_s > now) and not await self._sleep(loop, now, wake_s):
                continue  # kicked: the model changed, look again
            try:
                now = self._clock()
                self._release(self.server.advance(now, self._rng), now)
            except Exception:
                logger.exception("the model failed to advance; retrying in %s s", _RETRY_AFTER_FAILURE_S)
                await asyncio.sleep(_RETRY_AFTER_FAILURE_S)

    async def _sleep(self, loop: asyncio.AbstractEventLoop, now: float, wake_s: float | None) -> bool:
        """Wait until ``wake_s`` (forever if ``None``) or a :meth:`_kick`; ``True`` if the time came."""
        self._wakeup = wakeup = loop.create_future()
        handle = None
        if wake_s is not None:
            handle = loop.call_later(wake_s - now, _resolve, wakeup)
            self._scheduled_s = wake_s
        try:
            due: bool = await wakeup
        finally:
            self._scheduled_s = math.inf
            self._wakeup = None
            if handle is not None:
                handle.cancel()
        return due


def _resolve(future: asyncio.Future[bool]) -> None:
    if not future.done():
        future.set_result(True)
