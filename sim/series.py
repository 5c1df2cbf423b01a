"""Per-interval counters and gauge readings of a simulated run.

The series carry the names the live runner's do (:mod:`retrystorm.loadgen.series_names`):
the engine counts events per interval under each rate's name, and :meth:`Series.rate`
and :meth:`Series.rows` give them per second, as the live runner records them.
"""

from __future__ import annotations

import dataclasses
import math

from retrystorm.experiment.analysis import Samples
from retrystorm.experiment.analysis.latency_series import quantiles_over_time
from retrystorm.experiment.analysis.quantiles import Buckets
from retrystorm.loadgen.series_names import (
    ATTEMPTS,
    DELAY_S,
    GAVE_UP,
    GOODPUT,
    IN_FLIGHT,
    IN_PROGRESS,
    LATENCY_QUANTILES,
    STARTED,
    TIMEOUTS,
)

#: The simulator's own rate: answers that refused an attempt (the ``queue`` model's rejections).
REJECTIONS = "rejections"
#: Counters: events per interval, written per second. Gauges: a reading at the interval's end.
COUNTERS = (ATTEMPTS, GOODPUT, TIMEOUTS, REJECTIONS, GAVE_UP, STARTED)
GAUGES = (IN_FLIGHT, "peak_in_flight", DELAY_S, "accept_queue", "frozen")


def per_second(count: int, step_s: float) -> float:
    """``count / step_s``, the rate of ``count`` events over an interval of ``step_s``, for the CSV.

    Over a 1-s interval the count itself, so a whole number stays written whole (``114``).
    """
    return count if step_s == 1.0 else count / step_s


@dataclasses.dataclass(slots=True)
class Series:
    """Fixed-step series of one run: interval ``i`` is ``[i*step, (i+1)*step)``.

    A counter's list holds its events per interval (``goodput``: requests that succeeded
    in it); :meth:`rate` divides by the step.
    """

    step_s: float
    length: int
    attempts: list[int] = dataclasses.field(default_factory=list)
    goodput: list[int] = dataclasses.field(default_factory=list)
    timeouts: list[int] = dataclasses.field(default_factory=list)
    rejections: list[int] = dataclasses.field(default_factory=list)
    gave_up: list[int] = dataclasses.field(default_factory=list)
    started: list[int] = dataclasses.field(default_factory=list)
    in_flight: list[int] = dataclasses.field(default_factory=list)
    peak_in_flight: list[int] = dataclasses.field(default_factory=list)
    delay_s: list[float] = dataclasses.field(default_factory=list)
    accept_queue: list[int] = dataclasses.field(default_factory=list)
    frozen: list[int] = dataclasses.field(default_factory=list)
    #: Logical requests in progress at each interval's end.
    in_progress: list[int] = dataclasses.field(default_factory=list)
    #: ``latency_p50``, ``latency_p95``, ``latency_p99``: censored percentiles per interval (seconds).
    latency: dict[str, list[float | None]] = dataclasses.field(default_factory=dict)

    @classmethod
    def empty(cls, duration_s: float, step_s: float) -> Series:
        """Zeroed counters for ``ceil(duration / step)`` intervals (plus one spare)."""
        length = max(1, math.ceil(duration_s / step_s - 1e-9))
        series = cls(step_s, length)
        for name in COUNTERS:
            setattr(series, name, [0] * (length + 1))
        return series

    def trim(self) -> None:
        """Drop the spare interval once the run is over."""
        for name in COUNTERS:
            del getattr(self, name)[self.length :]
        for name in GAUGES:
            del getattr(self, name)[self.length :]

    def add_latency(self, combined: list[Buckets], in_progress: list[int]) -> None:
        """Set the censored latency percentiles per interval and the requests in progress at each end.

        ``combined[i]``: the histogram of the requests that ended in interval ``i`` and of the ages of those in
        progress at its end, together
        (:func:`retrystorm.experiment.analysis.latency_series.latency_over_time`).
        """
        self.in_progress = list(in_progress)
        self.latency = quantiles_over_time(combined)

    def times(self) -> list[float]:
        """The end of each interval."""
        return [(i + 1) * self.step_s for i in range(self.length)]

    def rate(self, name: str) -> list[float]:
        """Counter ``name`` per second."""
        values: list[int] = getattr(self, name)
        return [value / self.step_s for value in values]

    def samples(self) -> Samples:
        """The series the recovery analysis reads."""
        return Samples(
            step_s=self.step_s,
            goodput=self.rate(GOODPUT),
            in_flight=[float(value) for value in self.in_flight],
            delay_s=list(self.delay_s),
            attempts=self.rate(ATTEMPTS),
        )

    def rows(self) -> list[dict[str, float | None]]:
        """One mapping per interval, for CSV: ``t_s`` (interval end), counters per second, gauges."""
        return [
            {
                "t_s": (i + 1) * self.step_s,
                **{name: per_second(getattr(self, name)[i], self.step_s) for name in COUNTERS},
                **{name: getattr(self, name)[i] for name in GAUGES},
                **({IN_PROGRESS: self.in_progress[i]} if self.in_progress else {}),
                **{name: self.latency[name][i] for name in LATENCY_QUANTILES if name in self.latency},
            }
            for i in range(self.length)
        ]
