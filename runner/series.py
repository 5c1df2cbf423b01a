"""A live run's readings on the analysis grid: rates per second and gauge readings.

Readings are taken once a second after the load starts (time 0), at slightly uneven
times and with gaps (a paused target does not answer; a busy load generator may not
in time). The grid is interval ``i = [i, i + 1)`` seconds:

* **counters** (successes, attempts, ...) become rates by the one rule of
  :class:`retrystorm.loadgen.readings.Counter` (the storm tab's too): interpolated linearly between the
  readings that have them, evaluated at the grid times, and differenced; a gap spreads
  its count evenly over the seconds it covers instead of losing it, and a second over which a counter went
  down has no rate (empty in ``timeseries.csv``; the recovery analysis reads it as 0);
* **attempt latency** of interval ``i`` is the mean latency of the attempts that ended
  in it: the difference of the latency histogram's sum over that of its count, both
  interpolated as counters (``None`` when no attempt ended);
* **schedule lag** (``schedule_lag_s``) and **loop lag** (``loop_lag_s``) of interval ``i``: the mean of how late
  users started against their plan, and of how late the load generator's event-loop watchers woke, over the
  wake-ups observed in it (:mod:`retrystorm.loadgen.schedule_lag`), read as attempt latency is (``None``: none);
* **gauges** (in flight, delay, ...) of interval ``i`` are the reading taken for grid
  time ``i + 1`` (its end, :attr:`Reading.tick`), ``None`` when that reading has no
  such part (also ``generator_cpu``, the busiest load-generator process's share of a
  core over the interval, as the runner measured it);
* **fresh requests** (``fresh_in_time``) of interval ``i``: 1 when every fresh request sent in it was answered
  within the attempt timeout, 0 when one was not, ``None`` when none was sent (:mod:`retrystorm.runner.fresh_probe`);
* **latency percentiles** (``latency_p50``, ``latency_p95``, ``latency_p99``) of interval
  ``i``: the requests that ended between the readings for ``i`` and ``i + 1`` (the
  difference of the client's latency histograms) with the ages of those in progress
  at ``i + 1``, censored (:mod:`retrystorm.experiment.analysis.latency_series`); only the ages
  when either reading is missing.

This is what :class:`retrystorm.experiment.analysis.Samples` reads, the same as the simulator's series,
under the same names (:mod:`retrystorm.loadgen.series_names`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence

from retrystorm.experiment.analysis import Samples
from retrystorm.experiment.analysis.latency_series import latency_over_time
from retrystorm.experiment.analysis.quantiles import Buckets, difference
from retrystorm.loadgen.readings import ClientReading, Reading, TargetReading, client_counter
from retrystorm.loadgen.series_names import (
    ACTIVE_USERS,
    ATTEMPT_LATENCY_S,
    ATTEMPTS,
    DELAY_S,
    GAVE_UP,
    GOODPUT,
    IN_FLIGHT,
    IN_PROGRESS,
    STARTED,
    TIMEOUTS,
    USERS_IN_BACKOFF,
)
from retrystorm.runner.fresh_probe import FreshAnswer, in_time_per_second

#: The timeseries column of the busiest load-generator process's share of a core in each second.
GENERATOR_CPU = "generator_cpu"
#: The timeseries columns of the mean schedule lag and event-loop lag of the load generator in each second.
SCHEDULE_LAG_S = "schedule_lag_s"
LOOP_LAG_S = "loop_lag_s"
#: The timeseries column of whether each second's fresh request was answered in time (1 or 0; empty: none sent).
FRESH_IN_TIME = "fresh_in_time"
#: Client counters: series name -> how to read it. ``attempts`` are counted when sent,
#: as the simulator counts them; ``timeouts`` when they time out.
COUNTERS: dict[str, Callable[[ClientReading], float]] = {
    GOODPUT: lambda c: c.requests_ok,
    ATTEMPTS: lambda c: c.attempts_started,
    TIMEOUTS: lambda c: c.attempts.get("timeout", 0.0),
    GAVE_UP: lambda c: c.requests_gave_up,
    STARTED: lambda c: c.requests_started,
}
#: Gauges: series name -> how to read it from the target or the client.
TARGET_GAUGES: dict[str, Callable[[TargetReading], float]] = {
    IN_FLIGHT: lambda t: t.in_flight,
    DELAY_S: lambda t: t.delay_s,
    "connections": lambda t: t.connections,
    "abandoned_in_flight": lambda t: t.abandoned_in_flight,
}
CLIENT_GAUGES: dict[str, Callable[[ClientReading], float | None]] = {
    USERS_IN_BACKOFF: lambda c: c.users_in_backoff,
    ACTIVE_USERS: lambda c: c.active_users,
    IN_PROGRESS: lambda c: c.in_progress,
}


@dataclasses.dataclass(frozen=True, slots=True)
class LiveSeries:
    """Per-second series of one strategy's run (``rates`` per second, ``gauges`` read at each second's end)."""

    length: int
    rates: dict[str, list[float | None]]
    gauges: dict[str, list[float | None]]
    #: ``latency_p50``, ``latency_p95``, ``latency_p99`` per interval, seconds, censored.
    latency: dict[str, list[float | None]] = dataclasses.field(default_factory=dict)
    #: Each load-generator process's share of a core over each interval (read at its end).
    cpu: list[Mapping[str, float] | None] = dataclasses.field(default_factory=list)

    def times(self) -> list[float]:
        """The end of each interval, in seconds after the load started."""
        return [float(i + 1) for i in range(self.length)]

    def samples(self) -> Samples:
        """The series the recovery analysis reads (a rate nobody could read counts as 0)."""
        return Samples(
            step_s=1.0,
            goodput=[value or 0.0 for value in self.rates[GOODPUT]],
            in_flight=list(self.gauges[IN_FLIGHT]),
            delay_s=list(self.gauges[DELAY_S]),
            attempts=[value or 0.0 for value in self.rates[ATTEMPTS]],
            attempt_latency_s=list(self.rates[ATTEMPT_LATENCY_S]),
            timeouts=[value or 0.0 for value in self.rates[TIMEOUTS]],
            fresh_in_time=self.gauges.get(FRESH_IN_TIME, []),
        )

    def rows(self) -> list[dict[str, float | None]]:
        """One mapping per interval: ``t_s`` (its end), rates, gauges."""
        return [
            {
                "t_s": float(i + 1),
                **{name: values[i] for name, values in self.rates.items()},
                **{name: values[i] for name, values in self.gauges.items()},
                **{name: values[i] for name, values in self.latency.items()},
                **({GENERATOR_CPU: _busiest(self.cpu[i])} if self.cpu else {}),
            }
            for i in range(self.length)
        ]

    def peak(self, name: str) -> float | None:
        """The largest reading of gauge ``name``, ``None`` if it was never read."""
        return max((value for value in self.gauges[name] if value is not None), default=None)


def build_series(
    readings: Sequence[Reading], duration_s: float, fresh: Sequence[FreshAnswer] | None = None
) -> LiveSeries:
    """The grid series of ``readings`` (the first taken at time 0) over ``duration_s``, with the ``fresh`` requests'
    answers per second (:func:`retrystorm.runner.fresh_probe.in_time_per_second`) when the run sent them."""
    length = max(1, math.ceil(duration_s - 1e-9))
    rates = {name: client_counter(readings, read).on_grid(length) for name, read in COUNTERS.items()}
    rates[ATTEMPT_LATENCY_S] = _mean_per_interval(
        readings, length, lambda c: c.attempt_latency_sum, lambda c: c.attempt_latency_count
    )
    rates[SCHEDULE_LAG_S] = _mean_per_interval(
        readings, length, lambda c: c.schedule_lag_sum, lambda c: c.schedule_lag_count
    )
    rates[LOOP_LAG_S] = _mean_per_interval(readings, length, lambda c: c.loop_lag_sum, lambda c: c.loop_lag_count)
    gauges: dict[str, list[float | None]] = {name: [None] * length for name in (*TARGET_GAUGES, *CLIENT_GAUGES)}
    cpu: list[Mapping[str, float] | None] = [None] * length
    for reading in readings:
        slot = reading.tick - 1
        if not 0 <= slot < length:
            continue
        cpu[slot] = reading.generators
        for name, read_target in TARGET_GAUGES.items():
            gauges[name][slot] = read_target(reading.target) if reading.target is not None else None
        for name, read_client in CLIENT_GAUGES.items():
            gauges[name][slot] = read_client(reading.client) if reading.client is not None else None
    if fresh is not None:
        gauges[FRESH_IN_TIME] = in_time_per_second(fresh, length)
    return LiveSeries(length, rates, gauges, live_latency(readings, length), cpu)


def _busiest(shares: Mapping[str, float] | None) -> float | None:
    """The largest share of a core among the load-generator processes (``None``: not read)."""
    return max(shares.values()) if shares else None


def live_latency(readings: Sequence[Reading], length: int) -> dict[str, list[float | None]]:
    """The censored latency percentiles of each interval (see the module docstring)."""
    by_tick = {reading.tick: reading.client for reading in readings if reading.client is not None}
    ended: list[Buckets | None] = []
    waiting: list[Buckets | None] = []
    for slot in range(length):
        start, end = by_tick.get(slot), by_tick.get(slot + 1)
        ended.append(None if start is None or end is None else difference(end.ended_buckets, start.ended_buckets))
        waiting.append(end.in_progress_buckets if end is not None else None)
    return latency_over_time(ended, waiting)


def _mean_per_interval(
    readings: Sequence[Reading],
    length: int,
    sum_of: Callable[[ClientReading], float],
    count_of: Callable[[ClientReading], float],
) -> list[float | None]:
    """Per interval, the mean of what a histogram observed in it (the difference of its sum over that of its count):
    the attempts' latency, the generator's lag; ``None`` when nothing was observed, or with no reading."""
    sums = client_counter(readings, sum_of).on_grid(length)
    counts = client_counter(readings, count_of).on_grid(length)
    return [
        None if total_s is None or count is None or count < 0.5 else total_s / count
        for total_s, count in zip(sums, counts, strict=True)
    ]
