"""Per-interval counters and gauge readings of a simulated run."""

from __future__ import annotations

import dataclasses
import math

from experiment.analysis import Samples

#: Counters: events per interval. Gauges: a reading at the interval's end.
COUNTERS = ("attempts", "successes", "timeouts", "rejections", "give_ups", "started")
GAUGES = ("in_flight", "peak_in_flight", "delay_s", "accept_queue", "frozen")


@dataclasses.dataclass(slots=True)
class Series:
    """Fixed-step series of one run: interval ``i`` is ``[i*step, (i+1)*step)``."""

    step_s: float
    length: int
    attempts: list[int] = dataclasses.field(default_factory=list)
    successes: list[int] = dataclasses.field(default_factory=list)
    timeouts: list[int] = dataclasses.field(default_factory=list)
    rejections: list[int] = dataclasses.field(default_factory=list)
    give_ups: list[int] = dataclasses.field(default_factory=list)
    started: list[int] = dataclasses.field(default_factory=list)
    in_flight: list[int] = dataclasses.field(default_factory=list)
    peak_in_flight: list[int] = dataclasses.field(default_factory=list)
    delay_s: list[float] = dataclasses.field(default_factory=list)
    accept_queue: list[int] = dataclasses.field(default_factory=list)
    frozen: list[int] = dataclasses.field(default_factory=list)

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
            goodput=self.rate("successes"),
            in_flight=[float(value) for value in self.in_flight],
            delay_s=list(self.delay_s),
            attempts=self.rate("attempts"),
        )

    def rows(self) -> list[dict[str, float]]:
        """One mapping per interval, for CSV: ``t_s`` (interval end), counters, gauges."""
        names = COUNTERS + GAUGES
        return [
            {"t_s": (i + 1) * self.step_s, **{name: getattr(self, name)[i] for name in names}}
            for i in range(self.length)
        ]
