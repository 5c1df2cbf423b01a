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
from typing import Any

Event = tuple[float, int, int, Any, int]


class EventQueue:
    """``push`` events; ``pop_before`` the earliest, up to an end time."""

    __slots__ = ("_buckets", "_current", "_current_bucket", "_ids", "_inverse_width")

    def __init__(self, width_s: float = 0.05) -> None:
        self._inverse_width = 1.0 / width_s
        self._current: list[Event] = []
        self._current_bucket = -1
        self._buckets: dict[int, list[Event]] = {}
        self._ids: list[int] = []

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
            if not self._refill():
                return None
            current = self._current
        if current[0][0] >= end_s:
            return None
        return heapq.heappop(current)

    def __len__(self) -> int:
        return len(self._current) + sum(len(events) for events in self._buckets.values())
