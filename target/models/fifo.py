"""Models whose requests always finish oldest first: ``exponential`` and ``fixed``.

When every in-flight request sees the same delay, the ones past it are the oldest, so
a server can keep its requests in a FIFO and release from the head: O(1) amortised
per request, never a scan of everything in flight.
"""

from __future__ import annotations

import random
from collections import deque
from typing import TypeVar

from retrystorm.target.models.base import Completion, ModelServer, Outcome

P = TypeVar("P")


class FifoServer(ModelServer[P]):
    """In-flight requests in arrival order; subclasses say when the head is done."""

    def __init__(self) -> None:
        self._queue: deque[tuple[float, P]] = deque()

    @property
    def in_flight(self) -> int:
        return len(self._queue)

    def admit(self, now_s: float, payload: P) -> None:
        self._queue.append((now_s, payload))

    def advance(self, now_s: float, rng: random.Random) -> list[Completion[P]]:
        released: list[Completion[P]] = []
        queue, ok = self._queue, Outcome.OK
        while queue and self._is_done(queue[0][0], now_s, len(queue)):
            admitted_s, payload = queue.popleft()
            released.append((payload, ok, admitted_s))
        return released

    def _is_done(self, admitted_s: float, now_s: float, in_flight: int) -> bool:
        """Whether a request admitted at ``admitted_s`` is released at ``now_s``."""
        raise NotImplementedError

    def withdraw(self, payload: P) -> bool:
        # A scan, used only with --cancel-on-disconnect. Clients give up on their oldest
        # requests (timeouts), which stand at the head, so the scan starts there.
        queue = self._queue
        for index, (_, item) in enumerate(queue):
            if item is payload:
                del queue[index]
                return True
        return False

    def drain(self) -> list[tuple[float, P]]:
        drained = list(self._queue)
        self._queue.clear()
        return drained
