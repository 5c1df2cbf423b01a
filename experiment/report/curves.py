"""One strategy's curves over a run, as the report draws them (live or simulated)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from retrystorm.experiment.analysis import Samples
from retrystorm.experiment.scenario.timeline import OutageWindow


@dataclasses.dataclass(frozen=True, slots=True)
class StrategyCurves:
    """Per-second series of one strategy's run.

    ``times_s[i]`` is the end of interval ``i`` in seconds since the load started;
    ``goodput`` and ``attempts`` are rates over that interval, ``in_flight`` and
    ``delay_s`` the target's gauges read at its end; ``None`` where nothing was read
    (a paused target does not answer). ``outages`` are ``(pause, resume)`` as they
    happened, in the same seconds. ``peak_in_flight`` is the exact peak when the source
    knows it (the simulator sees every event; once-a-second readings can miss a flood
    that drains within the second); without it the peak is the largest reading.

    ``more`` holds the series some plots add when the source has them, by their
    timeseries names: ``timeouts`` and ``gave_up`` (per second: the outcomes over time,
    with ``goodput`` as the ``ok`` ones) and ``latency_p50``, ``latency_p95``,
    ``latency_p99`` (censored, :mod:`retrystorm.experiment.analysis.latency_series`); each one
    value per interval.
    ``triggers`` are the other triggers' windows as ``(kind, start, end)``.
    """

    label: str
    times_s: list[float]
    goodput: list[float | None]
    attempts: list[float | None]
    in_flight: list[float | None]
    delay_s: list[float | None]
    outages: list[tuple[float, float]]
    peak_in_flight: float | None = None
    more: Mapping[str, Sequence[float | None]] = dataclasses.field(default_factory=dict)
    triggers: tuple[tuple[str, float, float], ...] = ()

    def __post_init__(self) -> None:
        lengths = {len(self.times_s), len(self.goodput), len(self.attempts), len(self.in_flight), len(self.delay_s)}
        if len(lengths) != 1:
            raise ValueError(f"{self.label}: times_s, goodput, attempts, in_flight and delay_s differ in length")
        for name, values in self.more.items():
            if len(values) != len(self.times_s):
                raise ValueError(f"{self.label}: {name} has {len(values)} values for {len(self.times_s)} intervals")

    def series(self, name: str) -> list[float | None] | None:
        """The series ``name`` (one of the fields, or of ``more``); ``None`` when these curves lack it."""
        if name in self.more:
            return list(self.more[name])
        found = getattr(self, name, None)
        return list(found) if isinstance(found, list) else None

    @classmethod
    def from_samples(cls, label: str, samples: Samples, outages: Sequence[OutageWindow]) -> StrategyCurves:
        """The curves of analysis ``samples`` (the simulator's or the live runner's) and their outages."""
        count = len(samples)
        attempts = list(samples.attempts) if len(samples.attempts) == count else [None] * count
        return cls(
            label=label,
            times_s=[samples.gauge_time(i) for i in range(count)],
            goodput=list(samples.goodput),
            attempts=list(attempts),
            in_flight=list(samples.in_flight),
            delay_s=list(samples.delay_s),
            outages=[(outage.start_s, outage.end_s) for outage in outages],
        )

    def samples(self) -> Samples:
        """These curves as analysis samples (one-second grid; a rate nobody read counts as 0)."""
        step_s = self.times_s[1] - self.times_s[0] if len(self.times_s) >= 2 else 1.0
        start_s = self.times_s[0] - step_s if self.times_s else 0.0
        return Samples(
            step_s=step_s,
            goodput=[value or 0.0 for value in self.goodput],
            in_flight=list(self.in_flight),
            delay_s=list(self.delay_s),
            attempts=[value or 0.0 for value in self.attempts],
            start_s=start_s,
        )

    def recovery_outages(self) -> list[OutageWindow]:
        """The outages as :class:`~retrystorm.experiment.scenario.timeline.OutageWindow` for the recovery analysis."""
        return [OutageWindow(start_s, end_s) for start_s, end_s in self.outages]
