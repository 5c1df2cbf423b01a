"""Whether a live run measured the service or its own load generator: the saturation rule.

A load generator that runs out of CPU sends late: its users' think times and backoffs
end late, their attempts go out in bursts, and the latencies it records include its
own backlog. Its figures then describe the generator, not the service (one Locust
process saturates at about 2,000 attempts/s in a timeout storm here). Three signals,
per second of a strategy's run:

1. **CPU**: a generator process used at least ``cpu_limit`` (0.9, Locust's own warning
   threshold) of one core over the second. A Locust process is one event loop: at a
   full core it is behind.
2. **Demand**: the users started fewer logical requests than they demanded. Users
   thinking demand ``thinking / mean think`` requests per second (closed loop:
   ``thinking = active users - requests in progress``; open loop: every user thinks, so
   ``active / mean think`` is the configured rate). In a steady state this is
   ``users / (think + response time)`` (Little's law); it holds at any moment for an
   exponential think time (memoryless), and over a window several think times long
   for any other. A second's demand is the mean of the readings at its start and end
   (the trapezoid rule; the end alone overstates it while a drain returns users to
   thinking). Over a window of ``window_s`` (5 s, or five times the longest think
   time when it is not exponential) the second is *short* when the requests started
   are below ``demand_fraction`` (0.8) of those demanded *and* the gap exceeds
   ``noise_sd`` (3) standard deviations of a Poisson count of the demanded mean. This
   catches a generator starved of CPU by other processes, which its own CPU reading
   does not show. A window in which the user count changed (a ramp, a ``spike``'s start
   or end) is not judged by demand: the gauges are read at each second's end, so a user
   added within a second would count as thinking for all of it. Nor is a closed loop with
   a *constant* think time: users started together stay in step with each other and with
   the once-a-second readings (10 users thinking 200 ms for 50-ms answers are all thinking
   at every reading in one run, all waiting in another), so the thinking count is not a
   sample of the time they think. The CPU and lag signals still judge those seconds.
3. **Lag**: the users started late against their own plan. Every Locust process measures
   how late each planned start comes (a think time's or a backoff's end, an open-loop
   arrival) and how late its event loop wakes a watcher that sleeps 100 ms at a time
   (:mod:`retrystorm.loadgen.schedule_lag`); a starved loop is late on every wake-up, whatever
   its CPU share (a process the kernel gives a third of a core reads 33 %). The second is
   *lagging* when the mean lateness of the users' starts over it exceeds
   ``max(lag_floor_s, min(lag_limit_s, lag_think_share * mean think))`` (10 ms, 50 ms, 0.5),
   or the loop's exceeds ``lag_limit_s``. Absolute, 50 ms: every latency the generator
   records then carries that much of its own backlog. Relative to the think time ``T``: a
   closed-loop user meant to start every ``T + R`` (``R`` the response time) starts every
   ``T + R + lag``, so a lag of half the think time costs at least a third of the demand
   (300 users thinking 20 ms and starting 45 ms late send under a third of what they demand);
   the floor keeps a healthy loop's jitter from judging very short think times. Chosen from
   measurements on this project's 2-core machine under its neighbours' load (load average
   9-12; ``--workers 1``, 8 s runs, the runner's ``timeseries.csv`` columns
   ``schedule_lag_s`` and ``loop_lag_s``): a healthy generator (100 users, exponential
   500 ms think, a 10 ms model) read 1-4 ms a second (3-6 ms pinned to one CPU beside a
   busy loop), and 4-25 ms with a constant 500 ms think (its users wake in step, in
   bursts); a saturated one (300 to 1,000 users, constant 20-50 ms think, a zero-delay
   model, the process at 24-40 % of a core, pinned beside one or two busy loops) read
   35-215 ms for the users and 36-190 ms for the loop. This signal judges every think
   time, the constant one in a closed loop included.

A second is *saturated* when any of them holds. A strategy's run is **not valid** when its
saturated seconds exceed ``max_share`` (5 %) of the seconds measured and number at least
``min_saturated_s`` (2): one second alone is a blip (a busy neighbour, a collection), not a
generator that is behind, and in a run shorter than 20 s it would already exceed 5 %. A second with no
reading of a signal is not counted as saturated by it; with neither signal readable
the run is valid by default and says so (``seconds`` 0).

A missing reading is not "fine": a generator too busy to answer its ``/metrics`` within the
runner's read timeout is the generator most likely behind, and the seconds it leaves unread
are the ones the two signals cannot judge. A run is also **not valid** when more than
``max_missing_share`` (10 %) of the load generator's readings are missing, and at least
``min_saturated_s`` (2) of them (one lost reading is a blip). Its counts still come from the
generator's own totals (the first and last readings), never from the readings in between.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

from retrystorm.loadgen.think import ConstantThink, ExponentialThink, ThinkTime


@dataclasses.dataclass(frozen=True, slots=True)
class ValidityRule:
    """The thresholds of the saturation rule (see the module docstring)."""

    cpu_limit: float = 0.9
    demand_fraction: float = 0.8
    noise_sd: float = 3.0
    window_s: float = 5.0
    think_windows: float = 5.0
    max_share: float = 0.05
    min_saturated_s: int = 2
    max_missing_share: float = 0.1
    lag_limit_s: float = 0.05
    lag_think_share: float = 0.5
    lag_floor_s: float = 0.01

    def lag_limit_for(self, think_mean_s: float) -> float:
        """The mean lateness of the users' starts beyond which a second lags (module docstring, signal 3)."""
        return max(self.lag_floor_s, min(self.lag_limit_s, self.lag_think_share * think_mean_s))

    def describe(self) -> str:
        """The rule in one sentence, for the results document's ``choices`` and the report."""
        return (
            f"A second is saturated when a load-generator process used >= {self.cpu_limit:.0%} of a core, or the "
            f"users started < {self.demand_fraction:.0%} of the logical requests they demanded (thinking users / mean "
            f"think time, averaged over each second's start and end readings; the open-loop rate) "
            f"over {self.window_s:g} s (five think times for a non-exponential think "
            f"time; not across a change of the user count, nor for a closed loop with a constant think time), by more "
            f"than {self.noise_sd:g} Poisson standard deviations, or the users started late against their plan (think "
            f"times' and backoffs' ends, open-loop arrivals) by more than {self.lag_think_share:g} times the mean "
            f"think time (at least {self.lag_floor_s * 1000:g} ms, at most {self.lag_limit_s * 1000:g} ms) on average "
            f"over the second, or its event loop woke more than {self.lag_limit_s * 1000:g} ms late on average "
            "(any think time); a strategy's run is not "
            f"valid when more than {self.max_share:.0%} of its seconds, and at least {self.min_saturated_s}, are "
            "saturated, or more than "
            f"{self.max_missing_share:.0%} of the load generator's readings, and at least {self.min_saturated_s}, "
            "are missing (a generator too busy to be read is not judged fine)."
        )


@dataclasses.dataclass(frozen=True, slots=True)
class GeneratorSeconds:
    """A strategy's run, second by second, as the saturation rule reads it.

    ``cpu[i]``: each generator process's share of one core over second ``i`` (``None``:
    not read); ``started[i]``: logical requests started per second; ``active[i]`` and
    ``in_progress[i]``: the client's gauges at the second's end (``None``: not read).
    """

    cpu: Sequence[Mapping[str, float] | None]
    started: Sequence[float | None]
    active: Sequence[float | None]
    in_progress: Sequence[float | None]
    #: The load generator's readings the runner took, and how many of them went unanswered (missing).
    readings: int = 0
    readings_missed: int = 0
    #: Per second, the mean lateness of the users' planned starts and of the event loop's wake-ups, seconds
    #: (``None``: nothing observed or not read; empty: not measured by this load generator).
    schedule_lag_s: Sequence[float | None] = ()
    loop_lag_s: Sequence[float | None] = ()


@dataclasses.dataclass(frozen=True, slots=True)
class Validity:
    """The verdict of the saturation rule on one strategy's run, with the figures behind it."""

    valid: bool
    seconds: int
    saturated_s: int
    cpu_saturated_s: int
    short_s: int
    cpu_peak: Mapping[str, float]
    cpu_mean: Mapping[str, float]
    started_per_s: float | None
    demanded_per_s: float | None
    worst_ratio: float | None
    readings: int = 0
    readings_missed: int = 0
    lagging_s: int = 0
    lag: LagFigures | None = None

    @property
    def share(self) -> float:
        """Saturated seconds per second measured."""
        return self.saturated_s / self.seconds if self.seconds else 0.0

    @property
    def missed_share(self) -> float:
        """The load generator's readings missing, per reading taken."""
        return self.readings_missed / self.readings if self.readings else 0.0

    def to_json(self) -> dict[str, object]:
        """The verdict and its figures (``share`` rounded to 4 places, CPU to 3)."""
        return {
            "valid": self.valid,
            "saturated_share": round(self.share, 4),
            "saturated_s": self.saturated_s,
            "seconds": self.seconds,
            "cpu_saturated_s": self.cpu_saturated_s,
            "demand_short_s": self.short_s,
            "cpu_peak": {name: round(value, 3) for name, value in self.cpu_peak.items()},
            "cpu_mean": {name: round(value, 3) for name, value in self.cpu_mean.items()},
            "started_per_s": _rounded(self.started_per_s),
            "demanded_per_s": _rounded(self.demanded_per_s),
            "worst_started_to_demanded": _rounded(self.worst_ratio),
            "readings_missed_share": round(self.missed_share, 4),
            "lagging_s": self.lagging_s,
            **(self.lag or LagFigures()).to_json(),
        }


@dataclasses.dataclass(frozen=True, slots=True)
class LagFigures:
    """How late the load generator ran: the mean and the worst second's mean of each lag, seconds (``None``: not
    read)."""

    schedule_mean_s: float | None = None
    schedule_worst_s: float | None = None
    loop_mean_s: float | None = None
    loop_worst_s: float | None = None

    @classmethod
    def of(cls, seconds: GeneratorSeconds) -> LagFigures:
        """The figures of the seconds in which each lag was read."""
        schedule = [value for value in seconds.schedule_lag_s if value is not None]
        loop = [value for value in seconds.loop_lag_s if value is not None]
        return cls(
            schedule_mean_s=math.fsum(schedule) / len(schedule) if schedule else None,
            schedule_worst_s=max(schedule, default=None),
            loop_mean_s=math.fsum(loop) / len(loop) if loop else None,
            loop_worst_s=max(loop, default=None),
        )

    def to_json(self) -> dict[str, float | None]:
        """Milliseconds would read better, but every duration of the results is in seconds: rounded to 0.1 ms."""
        return {
            "schedule_lag_mean_s": _rounded(self.schedule_mean_s, 4),
            "schedule_lag_worst_s": _rounded(self.schedule_worst_s, 4),
            "loop_lag_mean_s": _rounded(self.loop_mean_s, 4),
            "loop_lag_worst_s": _rounded(self.loop_worst_s, 4),
        }


def _rounded(value: float | None, places: int = 3) -> float | None:
    return None if value is None else round(value, places)


def demand_window_s(think: ThinkTime, rule: ValidityRule = ValidityRule()) -> float:
    """The window over which demand is compared: ``window_s``, or ``think_windows`` times the longest think."""
    if isinstance(think, ExponentialThink):
        return rule.window_s
    longest = max(think.mean_s, getattr(think, "high_s", 0.0), getattr(think, "wait_s", 0.0))
    return max(rule.window_s, rule.think_windows * longest)


def demanded_per_s(
    active: float | None, in_progress: float | None, think_mean_s: float, *, open_loop: bool
) -> float | None:
    """Logical requests per second the users demand at one moment; ``None`` when unknown or undefined."""
    if active is None or think_mean_s <= 0:
        return None  # users that never think demand without bound: only the CPU signal applies
    if open_loop:
        return active / think_mean_s
    if in_progress is None:
        return None
    return max(0.0, active - in_progress) / think_mean_s


def over_second(at_start: float | None, at_end: float | None) -> float | None:
    """The demand over one second from the readings at its start and end: their mean (the trapezoid rule).

    The end reading alone is biased wherever the number thinking moves: as a paused
    service drains, users come back from their requests all through the second, so the
    count at its end overstates the thinking over it (by half a second's rise: measured
    17-21 s after a 5 s pause, 30 users, exponential 1 s think, it read 90 demanded for
    78 started, a false 0.87, where the trapezoid reads 77.5). With no reading at the
    start, the end reading stands alone.
    """
    if at_end is None:
        return None
    return at_end if at_start is None else (at_start + at_end) / 2


def short_seconds(
    seconds: GeneratorSeconds, think: ThinkTime, *, open_loop: bool, rule: ValidityRule = ValidityRule()
) -> tuple[list[bool], list[tuple[float, float]]]:
    """Per second, whether the window ending there fell short of demand; and each window's (started, demanded)."""
    window = max(1, math.ceil(demand_window_s(think, rule) - 1e-9))
    if isinstance(think, ConstantThink) and not open_loop:  # in step with the readings: see the module docstring
        return [False] * len(seconds.started), []
    at_end = [
        demanded_per_s(active, waiting, think.mean_s, open_loop=open_loop)
        for active, waiting in zip(seconds.active, seconds.in_progress, strict=True)
    ]
    demand = [over_second(start, end) for start, end in zip([None, *at_end], at_end, strict=False)]
    changed = [
        index > 0 and None not in (now, before) and now != before
        for index, (before, now) in enumerate(zip([None, *seconds.active], seconds.active, strict=False))
    ]
    short: list[bool] = []
    totals: list[tuple[float, float]] = []
    for end in range(len(demand)):
        span = range(end - window + 1, end + 1)
        if span.start < 0 or any(demand[i] is None or seconds.started[i] is None or changed[i] for i in span):
            short.append(False)
            continue
        wanted = math.fsum(demand[i] or 0.0 for i in span)
        got = math.fsum(seconds.started[i] or 0.0 for i in span)
        totals.append((got, wanted))
        gap = wanted - got
        short.append(got < rule.demand_fraction * wanted and gap > rule.noise_sd * math.sqrt(max(wanted, 1.0)))
    return short, totals


def _padded(values: Sequence[float | None], length: int) -> list[float | None]:
    return [*values[:length], *[None] * (length - len(values))]


def lagging_seconds(seconds: GeneratorSeconds, think: ThinkTime, rule: ValidityRule = ValidityRule()) -> list[bool]:
    """Per second, whether the users' planned starts came later than :meth:`ValidityRule.lag_limit_for` the think
    time on average, or the event loop's wake-ups later than ``lag_limit_s`` (module docstring, signal 3)."""
    length = len(seconds.started)
    users_limit_s = rule.lag_limit_for(think.mean_s)
    both = zip(_padded(seconds.schedule_lag_s, length), _padded(seconds.loop_lag_s, length), strict=True)
    return [
        (users is not None and users > users_limit_s) or (loop is not None and loop > rule.lag_limit_s)
        for users, loop in both
    ]


def assess(
    seconds: GeneratorSeconds, think: ThinkTime, *, open_loop: bool, rule: ValidityRule = ValidityRule()
) -> Validity:
    """Apply the saturation rule (module docstring) to one strategy's run."""
    hot = [reading is not None and bool(reading) and max(reading.values()) >= rule.cpu_limit for reading in seconds.cpu]
    short, totals = short_seconds(seconds, think, open_loop=open_loop, rule=rule)
    late = lagging_seconds(seconds, think, rule)
    lags = zip(_padded(seconds.schedule_lag_s, len(late)), _padded(seconds.loop_lag_s, len(late)), strict=True)
    measured = sum(
        1
        for i, (schedule, loop) in enumerate(lags)
        if seconds.cpu[i] or seconds.started[i] is not None or schedule is not None or loop is not None
    )
    saturated = sum(1 for signals in zip(hot, short, late, strict=True) if any(signals))
    readings = [reading for reading in seconds.cpu if reading]
    names = sorted({name for reading in readings for name in reading})
    by_name = {name: [reading[name] for reading in readings if name in reading] for name in names}
    window = max(1, math.ceil(demand_window_s(think, rule) - 1e-9))
    span_s = len(totals) * window
    ratios = [got / wanted for got, wanted in totals if wanted > 0]
    missed = seconds.readings_missed
    read_enough = missed <= rule.max_missing_share * seconds.readings or missed < rule.min_saturated_s
    return Validity(
        valid=(saturated <= rule.max_share * measured or saturated < rule.min_saturated_s) and read_enough,
        seconds=measured,
        saturated_s=saturated,
        cpu_saturated_s=sum(hot),
        short_s=sum(short),
        cpu_peak={name: max(values) for name, values in by_name.items()},
        cpu_mean={name: math.fsum(values) / len(values) for name, values in by_name.items()},
        started_per_s=math.fsum(got for got, _ in totals) / span_s if span_s else None,
        demanded_per_s=math.fsum(wanted for _, wanted in totals) / span_s if span_s else None,
        worst_ratio=min(ratios, default=None),
        readings=seconds.readings,
        readings_missed=missed,
        lagging_s=sum(late),
        lag=LagFigures.of(seconds),
    )
