"""The seed's goroutines, one check at a time: what the exponential model is measured against.

``server.go`` of github.com/smira/exponential-backoff, lines 35-47: each request is a
goroutine that sleeps 50 ms, compares its age with ``getDelay()`` at the current
concurrency, and loops until the age exceeds it. :class:`GoroutineServer` does exactly
that and nothing clever: every pending check of every request sits in one heap and is
evaluated in turn, so it costs O(log n) per check and O(in flight) per tick. It is the
definition that :class:`~retrystorm.target.models.own_grid.OwnGridServer` (which visits only the
checks that can pass) is tested and benchmarked against; it is not meant to serve.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from heapq import heapify, heappop, heappush
from typing import TypeVar

from retrystorm.target.models.base import GRID_SLACK_S, Completion, ModelServer, Outcome
from retrystorm.target.models.grid import check_time

P = TypeVar("P")


class GoroutineServer(ModelServer[P]):
    """Each request checks at ``admitted + n * tick`` (n >= 1, to the nanosecond) and leaves
    at the first check where ``n * tick >= delay_at(count)``, the count of that instant.

    Checks at one instant run oldest first, each seeing the count left by those before
    it; an admission counts for the checks evaluated after it.
    """

    def __init__(self, delay_at: Callable[[int], float], tick_s: float) -> None:
        self._delay_at = delay_at
        self._tick_s = tick_s
        self._checks: list[tuple[float, int, int, float, P]] = []  # (time, seq, n, admitted, payload)
        self._seq = 0

    @property
    def in_flight(self) -> int:
        return len(self._checks)

    @property
    def delay_s(self) -> float:
        return self._delay_at(self.in_flight)

    def admit(self, now_s: float, payload: P) -> None:
        heappush(self._checks, (check_time(now_s, 1, self._tick_s), self._seq, 1, now_s, payload))
        self._seq += 1

    def next_wakeup_s(self, now_s: float) -> float | None:
        return self._checks[0][0] if self._checks else None

    def advance(self, now_s: float, rng: random.Random) -> list[Completion[P]]:
        checks, tick_s, released = self._checks, self._tick_s, []
        while checks and checks[0][0] <= now_s:
            _, seq, n, admitted_s, payload = heappop(checks)
            if n * tick_s >= self._delay_at(len(checks) + 1) - GRID_SLACK_S:
                released.append((payload, Outcome.OK, admitted_s))
            else:
                heappush(checks, (check_time(admitted_s, n + 1, tick_s), seq, n + 1, admitted_s, payload))
        released.sort(key=lambda completion: completion[2])
        return released

    def withdraw(self, payload: P) -> bool:
        for index, item in enumerate(self._checks):
            if item[4] is payload:
                self._checks[index] = self._checks[-1]
                self._checks.pop()
                heapify(self._checks)
                return True
        return False

    def drain(self) -> list[tuple[float, P]]:
        drained = sorted((item[1], item[3], item[4]) for item in self._checks)
        self._checks = []
        return [(admitted_s, payload) for _, admitted_s, payload in drained]
