"""Each logical request's latency in a simulated run, and the ages of those still in progress.

The engine tells a :class:`RequestLog` when a logical request starts and when it ends
(``ok`` or given up), and asks it for a reading at every sample boundary. It keeps:

* every ended request's latency and attempts (the per-request plot, the summary);
* per interval, a histogram of the latencies of the requests that ended in it, and at
  its end one of the ages of the requests in progress, over the shared buckets
  (:mod:`retrystorm.loadgen.buckets`): the censored latency percentiles over time
  (:mod:`retrystorm.experiment.analysis.latency_series`), as the live runner reads them from the
  client's histograms;
* at the end of the run, each unfinished request's age and attempts (censored values).

The ages at a boundary are computed with numpy over the start times of the requests in
progress: one pass per interval, however many there are.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Callable, Hashable

import numpy as np

from retrystorm.experiment.analysis.quantiles import Buckets
from retrystorm.loadgen.buckets import LATENCY_BUCKETS_S

_BOUNDS = np.asarray(LATENCY_BUCKETS_S)


_BOUNDS_AND_INF = (*LATENCY_BUCKETS_S, float("inf"))


@dataclasses.dataclass(slots=True)
class Unfinished:
    """The requests still in progress when the run ended: their ages so far and attempts so far."""

    ages: list[float]
    attempts: list[int]


class RequestLog:
    """Latencies, attempts and ages of logical requests (see the module docstring)."""

    def __init__(self, intervals: int) -> None:
        self.open: dict[Hashable, float] = {}
        self.latencies: list[float] = []
        self.attempts: list[int] = []
        self.ok: list[bool] = []
        self._ended = [[0] * (len(LATENCY_BUCKETS_S) + 1) for _ in range(intervals + 1)]
        self._in_progress: list[list[int]] = []
        self.in_progress: list[int] = []
        # The start times of the requests in progress, in slots of an array (``_alive`` marks the slots in use),
        # so a sample reads them without a pass of Python over the open requests.
        self._slot: dict[Hashable, int] = {}
        self._starts = np.zeros(1024)
        self._alive = np.zeros(1024, dtype=bool)
        self._used = 0

    def start(self, key: Hashable, now_s: float) -> None:
        """A logical request of ``key`` (a client) starts."""
        if (replaced := self._slot.pop(key, None)) is not None:  # a request of ``key`` that never ended
            self._alive[replaced] = False
        self.open[key] = now_s
        if self._used == len(self._starts):
            self._make_room(len(self.open))  # packs every request in progress, this one included
            return
        slot = self._slot[key] = self._used
        self._used += 1
        self._starts[slot] = now_s
        self._alive[slot] = True

    def _make_room(self, needed: int) -> None:
        """Slots for the requests in progress only, packed, in arrays at least twice as large as ``needed``."""
        size = max(1024, 2 * needed)
        self._starts, self._alive = np.zeros(size), np.zeros(size, dtype=bool)
        for slot, (key, started) in enumerate(self.open.items()):
            self._slot[key] = slot
            self._starts[slot] = started
        self._used = len(self.open)
        self._alive[: self._used] = True

    def end(self, key: Hashable, now_s: float, interval: int, attempts: int, *, ok: bool) -> None:
        """The logical request of ``key`` ended in ``interval``, ``ok`` or given up, after ``attempts``."""
        self._alive[self._slot.pop(key)] = False
        latency = now_s - self.open.pop(key)
        self.latencies.append(latency)
        self.attempts.append(attempts)
        self.ok.append(ok)
        self._ended[interval][bisect.bisect_left(LATENCY_BUCKETS_S, latency)] += 1

    def sample(self, at_s: float) -> None:
        """Read the requests in progress at the boundary ``at_s``: their number and the histogram of their ages."""
        count = len(self.open)
        self.in_progress.append(count)
        if count == 0:
            self._in_progress.append([0] * (len(LATENCY_BUCKETS_S) + 1))
            return
        ages = at_s - self._starts[: self._used][self._alive[: self._used]]
        slots = np.searchsorted(_BOUNDS, ages, side="left")  # a bucket holds ages up to its bound
        self._in_progress.append(np.bincount(slots, minlength=len(LATENCY_BUCKETS_S) + 1).tolist())

    def histograms(self, intervals: int) -> list[Buckets]:
        """Per interval, one histogram of the requests that ended in it and the ages of those in progress at its end.

        Both are counted over the shared buckets, so they are added bucket by bucket (what
        :func:`retrystorm.experiment.analysis.quantiles.combine` does on shared bounds), then made cumulative.
        """
        ended = np.asarray(self._ended[:intervals], dtype=np.int64).reshape(-1, len(_BOUNDS_AND_INF))
        waiting = np.asarray(self._in_progress[:intervals], dtype=np.int64).reshape(-1, len(_BOUNDS_AND_INF))
        totals = np.cumsum(ended + waiting, axis=1).astype(float).tolist()
        return [list(zip(_BOUNDS_AND_INF, row, strict=True)) for row in totals]

    def unfinished(self, now_s: float, attempts_of: Callable[[Hashable], int]) -> Unfinished:
        """The requests in progress at ``now_s`` (the end of the run): ages and attempts so far."""
        return Unfinished(
            ages=[now_s - started for started in self.open.values()],
            attempts=[attempts_of(key) for key in self.open],
        )
