"""The pending events, in ``(time, sequence)`` order: a calendar queue of small heaps.

Events fall into buckets of ``width_s`` seconds of virtual time; only the earliest
bucket is a heap, the others are plain lists heapified when their turn comes. The pop
order is exactly that of one big heap (bucket numbers are a monotone function of
time), but each push is an append and each pop works on a heap of one bucket's
events, not of everything pending. With 100,000 clients one big heap held ~120,000
events and ``heappop`` alone took 40 % of the run, growing with the heap; see
``bench/sim_bench.py``.
"""

from __future__ import annotations

import heapq
from collections import deque
from typing import Any

Event = tuple[float, int, int, Any, int]

#: Event kinds: a client's new logical request, its retry, an attempt's timeout, the
#: server's next check, an open-loop arrival, an attempt reaching the server and an answer
#: reaching its client (with a network delay), an outage's pause and resume, a trigger's change.
NEW, RETRY, TIMEOUT, WAKE, ARRIVAL, REACH, ANSWER, PAUSE, RESUME, TRIGGER = range(10)


class EventQueue:
    """``push`` events; ``pop_before`` the earliest, up to an end time.

    Events that come in time order anyway (a constant timeout after each send) take
    :meth:`push_in_order`, a FIFO lane beside the calendar.
    """

    __slots__ = ("_buckets", "_current", "_current_bucket", "_ids", "_in_order", "_inverse_width")

    def __init__(self, width_s: float = 0.05) -> None:
        self._inverse_width = 1.0 / width_s
        self._current: list[Event] = []
        self._current_bucket = -1
        self._buckets: dict[int, list[Event]] = {}
        self._ids: list[int] = []
        self._in_order: deque[Event] = deque()

    def push(self, event: Event) -> None:
        """Add ``event`` (never earlier than the last event popped)."""
        bucket = int(event[0] * self._inverse_width)
        if bucket <= self._current_bucket:
            heapq.heappush(self._current, event)
            return
        pending = self._buckets.get(bucket)
        if pending is None:
            self._buckets[bucket] = [event]
            heapq.heappush(self._ids, bucket)
        else:
            pending.append(event)

    def push_in_order(self, event: Event) -> None:
        """Add ``event``, no earlier than any event added this way before it."""
        self._in_order.append(event)

    def _refill(self) -> bool:
        while not self._current:
            if not self._ids:
                return False
            self._current_bucket = heapq.heappop(self._ids)
            self._current = self._buckets.pop(self._current_bucket)
            heapq.heapify(self._current)
        return True

    def pop_before(self, end_s: float) -> Event | None:
        """Remove and return the earliest event if it is earlier than ``end_s``, else ``None``."""
        current = self._current
        if not current:
            self._refill()
            current = self._current
        in_order = self._in_order
        if in_order and (not current or in_order[0] < current[0]):  # (time, sequence) decides
            return in_order.popleft() if in_order[0][0] < end_s else None
        if not current or current[0][0] >= end_s:
            return None
        return heapq.heappop(current)

    def __len__(self) -> int:
        pending = sum(len(events) for events in self._buckets.values())
        return len(self._current) + len(self._in_order) + pending
