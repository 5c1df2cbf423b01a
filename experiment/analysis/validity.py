"""Whether a live run measured the service or its own load generator: the saturation rule.

A load generator that runs out of CPU sends late: its users' think times and backoffs
end late, their attempts go out in bursts, and the latencies it records include its
own backlog. Its figures then describe the generator, not the service (one Locust
process saturates at about 2,000 attempts/s in a timeout storm here). Two signals,
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
   sample of the time they think. The CPU signal still judges those seconds.

A second is *saturated* when either holds. A strategy's run is **not valid** when its
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

    def describe(self) -> str:
        """The rule in one sentence, for the results document's ``choices`` and the report."""
        return (
            f"A second is saturated when a load-generator process used >= {self.cpu_limit:.0%} of a core, or the "
            f"users started < {self.demand_fraction:.0%} of the logical requests they demanded (thinking users / mean "
            f"think time, averaged over each second's start and end readings; the open-loop rate) "
            f"over {self.window_s:g} s (five think times for a non-exponential think "
            f"time; not across a change of the user count, nor for a closed loop with a constant think time), by more "
            f"than {self.noise_sd:g} Poisson standard deviations; a strategy's run is not valid when more than "
            f"{self.max_share:.0%} of its seconds, and at least {self.min_saturated_s}, are saturated, or more than "
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
        }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


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


def assess(
    seconds: GeneratorSeconds, think: ThinkTime, *, open_loop: bool, rule: ValidityRule = ValidityRule()
) -> Validity:
    """Apply the saturation rule (module docstring) to one strategy's run."""
    hot = [reading is not None and bool(reading) and max(reading.values()) >= rule.cpu_limit for reading in seconds.cpu]
    short, totals = short_seconds(seconds, think, open_loop=open_loop, rule=rule)
    measured = sum(1 for i, reading in enumerate(seconds.cpu) if reading or seconds.started[i] is not None)
    saturated = sum(1 for cpu_bound, behind in zip(hot, short, strict=True) if cpu_bound or behind)
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
    )
