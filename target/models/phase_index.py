"""Every request by the phase of its grid: the next check of any request in O(log n).

Used where a delay can overflow to negative values (``exponential:overflow=go``): past
that point every check passes, so the next release is the next check of any request,
and checking every request every tick to find it would cost O(in flight) per tick. A
request admitted at ``a`` checks at instants congruent to ``a`` modulo the tick, so
ordered by ``a mod tick`` (its phase) the requests come in the order of their next
checks, starting from the phase of the present instant. The phases are kept in a
:class:`~retrystorm.target.models.sorted_tuples.SortedTuples`; a lookup visits one or two phases,
never the requests whose checks fail.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Generic, TypeVar

from retrystorm.target.models.base import GRID_SLACK_S
from retrystorm.target.models.grid import GONE, Request, check_time, first_pending
from retrystorm.target.models.sorted_tuples import SortedTuples

P = TypeVar("P")

#: A check: ``(time, seq, request)``.
Check = tuple[float, int, Request[P]]


class PhaseIndex(Generic[P]):
    """Requests by phase, and those admitted since the index last caught up (by arrival)."""

    __slots__ = ("_fresh", "_phases", "_tick_s")

    def __init__(self, tick_s: float) -> None:
        self._tick_s = tick_s
        self._phases = SortedTuples()
        self._fresh: deque[Request[P]] = deque()

    def admit(self, request: Request[P]) -> None:
        """Add a request just admitted."""
        self._fresh.append(request)

    def remove(self, request: Request[P]) -> None:
        """Forget a request that left (one still fresh is dropped when the index catches up)."""
        if request.phase is not None:
            self._phases.remove((request.phase, request.seq, request))
            request.phase = None

    def catch_up(self, settled_s: float) -> None:
        """Index by phase the requests admitted before ``settled_s``: a check of theirs lies
        after it, so their phase alone finds their next one."""
        fresh, phases, tick_s = self._fresh, self._phases, self._tick_s
        while fresh and fresh[0].admitted_s < settled_s - 2 * GRID_SLACK_S:
            request = fresh.popleft()
            if request.place != GONE:
                request.phase = request.admitted_s % tick_s
                phases.add((request.phase, request.seq, request))

    def next_check(self, settled_s: float, settled_seq: float) -> Check[P] | None:
        """The first check of any request after ``(settled_s, settled_seq)``."""
        self.catch_up(settled_s)
        fresh = self._fresh
        while fresh and fresh[0].place == GONE:
            fresh.popleft()
        best: Check[P] | None = None
        if fresh:  # admitted since: the first check is one tick after arrival, the oldest's first
            request = fresh[0]
            n = first_pending(request.admitted_s, request.seq, self._tick_s, settled_s, settled_seq)
            best = (check_time(request.admitted_s, n, self._tick_s), request.seq, request)
        indexed = self._next_indexed(settled_s, settled_seq)
        if indexed is not None and (best is None or indexed[:2] < best[:2]):
            best = indexed
        return best

    def _next_indexed(self, settled_s: float, settled_seq: float) -> Check[P] | None:
        """Among indexed requests, the first check after ``(settled_s, settled_seq)``.

        Phases come in circular order from just before the settled instant's phase; the
        first request of each phase gives that phase's next check, computed exactly (a
        phase is a float remainder, so phases a few ns apart are all looked at). O(log n)
        per phase looked at, usually one or two.
        """
        phases, tick_s = self._phases, self._tick_s
        if not len(phases):
            return None
        start = (settled_s - 2 * GRID_SLACK_S) % tick_s
        item = phases.at_or_after((start, -1)) or phases.first()
        first_item = item
        best: Check[P] | None = None
        while item is not None:
            phase, seq, request = item
            offset = (phase - start) % tick_s
            if best is not None and offset > best[0] - settled_s + 4 * GRID_SLACK_S:
                break
            n = first_pending(request.admitted_s, seq, tick_s, settled_s, settled_seq)
            candidate = (check_time(request.admitted_s, n, tick_s), seq, request)
            if best is None or candidate[:2] < best[:2]:
                best = candidate
            item = phases.at_or_after((phase, math.inf)) or phases.first()
            if item is first_item:
                break
        return best
