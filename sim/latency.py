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


def _cumulative(counts: list[int]) -> Buckets:
    """Per-bucket counts (the last one beyond every bound) as Prometheus-style cumulative buckets."""
    total = 0
    found = []
    for bound, count in zip((*LATENCY_BUCKETS_S, float("inf")), counts, strict=True):
        total += count
        found.append((bound, float(total)))
    return found


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

    def start(self, key: Hashable, now_s: float) -> None:
        """A logical request of ``key`` (a client) starts."""
        self.open[key] = now_s

    def end(self, key: Hashable, now_s: float, interval: int, attempts: int, *, ok: bool) -> None:
        """The logical request of ``key`` ended in ``interval``, ``ok`` or given up, after ``attempts``."""
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
        ages = at_s - np.fromiter(self.open.values(), dtype=float, count=count)
        slots = np.searchsorted(_BOUNDS, ages, side="left")  # a bucket holds ages up to its bound
        self._in_progress.append(np.bincount(slots, minlength=len(LATENCY_BUCKETS_S) + 1).tolist())

    def histograms(self, intervals: int) -> tuple[list[Buckets], list[Buckets]]:
        """Per interval: the histogram of the requests that ended in it, and of the ages in progress at its end."""
        ended = [_cumulative(counts) for counts in self._ended[:intervals]]
        waiting = [_cumulative(counts) for counts in self._in_progress[:intervals]]
        return ended, waiting

    def unfinished(self, now_s: float, attempts_of: Callable[[Hashable], int]) -> Unfinished:
        """The requests in progress at ``now_s`` (the end of the run): ages and attempts so far."""
        return Unfinished(
            ages=[now_s - started for started in self.open.values()],
            attempts=[attempts_of(key) for key in self.open],
        )
