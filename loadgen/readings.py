"""Readings of a run's metrics, and the one way their cumulative counters become rates per second.

A :class:`Reading` is the target's gauges and counters and the client's counters at one moment. Both the live
runner (one a second, scraped or queried from Prometheus) and the Locust web UI's Retry storm tab (one a second,
from its own registry and the target's in-flight gauge) take them; both turn them into rates here.

Readings are built from a list of samples ``(name, labels, value)``: parsed from Prometheus text or read from a
``prometheus_client`` registry (:mod:`retrystorm.loadgen.exposition`), or rebuilt from Prometheus' HTTP API
(:mod:`retrystorm.runner.compose.prometheus`). Series are summed over labels no consumer splits by (the client's
``strategy``); counters are cumulative and never reset (:mod:`retrystorm.loadgen.metrics`), and only their
differences are read, so a load generator whose counters started before the run (a long-lived Locust master)
reads the same.

**Counters to rates** (:class:`Counter`). A counter between readings is the piecewise-linear function through
them, and its rate over ``[a, b]`` is ``(C(b) - C(a)) / (b - a)``:

* *uneven intervals*: between two consecutive readings this is exactly ``(c1 - c0) / (t1 - t0)`` over the time
  that really passed (the storm tab's points, one per reading); on a fixed grid (the runner's seconds, the
  simulator's grid) it is the increase of the interpolated counter, so a reading taken 0.3 s late neither
  doubles nor drops a second's count: it is shared between the two seconds it touches;
* *missing readings* (a busy load generator, a paused target): the interpolation spreads a gap's increase evenly
  over the seconds it covers instead of losing it or piling it into one; before the first and after the last
  reading there is no value, except within half a second of them (a first reading taken just after time 0);
* *a counter that went down* between two readings the interval spans (its source restarted, or a worker left a
  master's sum): no rate (``None``), never a negative one and never a made-up 0. Prometheus' ``rate()``
  assumes a restart from 0 instead; over a master's sum that assumption is wrong, and a gap says so honestly.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence

TARGET = "retrystorm_target_"
CLIENT = "retrystorm_client_"
#: The gauge histogram of the ages of the logical requests in progress (:mod:`retrystorm.loadgen.metrics`).
IN_PROGRESS_AGE = CLIENT + "requests_in_progress_age_seconds"


@dataclasses.dataclass(frozen=True, slots=True)
class TargetReading:
    """The target's state and counters at one moment.

    A target that does not serve a series reads 0 for it (the sum of no samples), as a user's own service with
    only an in-flight gauge does: the storm tab reads that one gauge alone.
    """

    in_flight: float
    delay_s: float = 0.0
    connections: float = 0.0
    abandoned_in_flight: float = 0.0
    served: Mapping[str, float] = dataclasses.field(default_factory=dict)
    #: gRPC attempts that arrived (``retrystorm_target_grpc_attempts_total``, every attempt number): the attempts
    #: counted at the target, whichever client sent them; 0 for a target without a gRPC front.
    grpc_attempts: float = 0.0


@dataclasses.dataclass(frozen=True, slots=True)
class ClientReading:
    """The load generator's cumulative counters and gauges at one moment.

    ``attempts_started`` counts attempts when they are sent (the attempts per second
    on the wire, and the simulator's count); ``attempts`` counts them by outcome when
    they end, so it lags by up to the attempt timeout while a server answers nothing.
    ``ended_buckets`` is the cumulative histogram of the latency of the logical requests
    that ended, ``ok`` or given up (backoff included): ``(upper bound in seconds,
    count)``, ascending, ending with ``inf``. ``in_progress_buckets`` is the histogram of
    the ages of the logical requests in progress at this moment, ``in_progress`` their
    number; ``None`` and ``()`` when the load generator does not expose them.
    """

    attempts: Mapping[str, float]
    attempts_started: float
    requests_ok: float
    requests_gave_up: float
    requests_started: float
    users_in_backoff: float
    active_users: float
    retries: float
    budget_refusals: float
    ended_buckets: tuple[tuple[float, float], ...]
    in_progress_buckets: tuple[tuple[float, float], ...] = ()
    in_progress: float | None = None
    #: Sum (seconds) and count of every ended attempt's latency, all outcomes: the mean per interval.
    attempt_latency_sum: float = 0.0
    attempt_latency_count: float = 0.0
    #: Attempts that ended, by ``(request, outcome)``; and attempts answered, by ``(request, HTTP status)``.
    outcomes_by_request: Mapping[tuple[str, str], float] = dataclasses.field(default_factory=dict)
    statuses_by_request: Mapping[tuple[str, str], float] = dataclasses.field(default_factory=dict)
    #: Attempts sent by each load-generator process (``process`` label: a master's workers, kept apart).
    generator_attempts: Mapping[str, float] = dataclasses.field(default_factory=dict)
    #: The load factor in force (the largest over strategies: only the running one's is above 1); ``None``: no
    #: load spike was ever played by this load generator.
    load_factor: float | None = None
    #: Sum (seconds) and count of how late users started against their plan (think, arrival, backoff), and of
    #: how late the event loops' watchers woke (:mod:`retrystorm.loadgen.schedule_lag`): the mean per interval.
    schedule_lag_sum: float = 0.0
    schedule_lag_count: float = 0.0
    loop_lag_sum: float = 0.0
    loop_lag_count: float = 0.0

    @property
    def attempts_total(self) -> float:
        """Attempts that ended, of every outcome."""
        return math.fsum(self.attempts.values())


@dataclasses.dataclass(frozen=True, slots=True)
class Reading:
    """Both parts of one reading; ``None``: no answer in time.

    ``tick`` is the whole second after the load started (the storm tab: after its first reading) that the
    reading was taken for, ``time_s`` when it was actually taken, on a monotonic clock (a little later, or much
    later on a starved machine). ``generators``: each load-generator process's share of one core since the
    previous reading (``None``: not read).
    """

    tick: int
    time_s: float
    target: TargetReading | None
    client: ClientReading | None
    generators: Mapping[str, float] | None = None


#: One sample: metric name (``_total``, ``_bucket`` suffixes included), labels, value.
Sample = tuple[str, dict[str, str], float]


def _total(samples: Iterable[Sample], name: str, **labels: str) -> float:
    return math.fsum(
        value
        for sample_name, sample_labels, value in samples
        if sample_name == name and all(sample_labels.get(key) == wanted for key, wanted in labels.items())
    )


def _by_label(samples: Iterable[Sample], name: str, label: str) -> dict[str, float]:
    found: dict[str, float] = {}
    for sample_name, labels, value in samples:
        if sample_name == name and label in labels:
            found[labels[label]] = found.get(labels[label], 0.0) + value
    return found


def _by_labels(samples: Iterable[Sample], name: str, first: str, second: str) -> dict[tuple[str, str], float]:
    found: dict[tuple[str, str], float] = {}
    for sample_name, labels, value in samples:
        if sample_name == name and first in labels and second in labels:
            key = (labels[first], labels[second])
            found[key] = found.get(key, 0.0) + value
    return found


def target_from_samples(samples: Sequence[Sample]) -> TargetReading:
    """A :class:`TargetReading` from the target's samples (scraped, or queried from Prometheus)."""
    return TargetReading(
        in_flight=_total(samples, TARGET + "in_flight_requests"),
        delay_s=_total(samples, TARGET + "delay_seconds"),
        connections=_total(samples, TARGET + "open_connections"),
        abandoned_in_flight=_total(samples, TARGET + "abandoned_in_flight_requests"),
        served=_by_label(samples, TARGET + "requests_total", "outcome"),
        grpc_attempts=_total(samples, TARGET + "grpc_attempts_total"),
    )


def _buckets(samples: Iterable[Sample], name: str) -> tuple[tuple[float, float], ...]:
    """The cumulative buckets of histogram ``name``, summed over every other label, ascending."""
    return tuple(sorted((float(bound), count) for bound, count in _by_label(samples, name + "_bucket", "le").items()))


def client_from_samples(samples: Sequence[Sample]) -> ClientReading:
    """A :class:`ClientReading` from the load generator's samples (scraped, or queried from Prometheus)."""
    ages = _buckets(samples, IN_PROGRESS_AGE)
    factors = [value for name, _, value in samples if name == CLIENT + "load_factor"]  # a factor: never summed
    return ClientReading(
        attempts=_by_label(samples, CLIENT + "attempts_total", "outcome"),
        attempts_started=_total(samples, CLIENT + "attempts_started_total"),
        requests_ok=_total(samples, CLIENT + "requests_total", outcome="ok"),
        requests_gave_up=_total(samples, CLIENT + "requests_total", outcome="gave_up"),
        requests_started=_total(samples, CLIENT + "requests_started_total"),
        users_in_backoff=_total(samples, CLIENT + "users_in_backoff"),
        active_users=_total(samples, CLIENT + "active_users"),
        retries=_total(samples, CLIENT + "retries_total"),
        budget_refusals=_total(samples, CLIENT + "budget_refusals_total"),
        ended_buckets=_buckets(samples, CLIENT + "request_latency_seconds"),
        in_progress_buckets=ages,
        in_progress=ages[-1][1] if ages else None,
        attempt_latency_sum=_total(samples, CLIENT + "attempt_latency_seconds_sum"),
        attempt_latency_count=_total(samples, CLIENT + "attempt_latency_seconds_count"),
        outcomes_by_request=_by_labels(samples, CLIENT + "attempts_total", "request", "outcome"),
        statuses_by_request=_by_labels(samples, CLIENT + "responses_total", "request", "status"),
        generator_attempts=_by_label(samples, CLIENT + "generator_attempts_started_total", "process"),
        load_factor=max(factors) if factors else None,
        schedule_lag_sum=_total(samples, CLIENT + "schedule_lag_seconds_sum"),
        schedule_lag_count=_total(samples, CLIENT + "schedule_lag_seconds_count"),
        loop_lag_sum=_total(samples, CLIENT + "loop_lag_seconds_sum"),
        loop_lag_count=_total(samples, CLIENT + "loop_lag_seconds_count"),
    )


class Counter:
    """One cumulative counter through its readings ``(time_s, value)``, ascending in time (module docstring)."""

    def __init__(self, points: Iterable[tuple[float, float]]) -> None:
        self.points = list(points)
        self.times = [time_s for time_s, _ in self.points]

    def at(self, at_s: float) -> float | None:
        """The piecewise-linear counter at ``at_s``; ``None`` beyond half a second outside the readings."""
        points, index = self.points, bisect.bisect_left(self.times, at_s)
        if not points:
            return None
        if index < len(points) and math.isclose(self.times[index], at_s, abs_tol=1e-9):
            return points[index][1]
        if index == 0:
            return points[0][1] if self.times[0] - at_s <= 0.5 else None
        if index == len(points):
            return points[-1][1] if at_s - self.times[-1] <= 0.5 else None
        (t0, v0), (t1, v1) = points[index - 1], points[index]
        return v0 + (v1 - v0) * (at_s - t0) / (t1 - t0)

    def increase(self, start_s: float, end_s: float) -> float | None:
        """``C(end_s) - C(start_s)``; ``None`` without a value at either end or if it went down in between."""
        low, high = self.at(start_s), self.at(end_s)
        if low is None or high is None or end_s < start_s:
            return None
        first = max(0, bisect.bisect_right(self.times, start_s) - 1)
        spanned = self.points[first : bisect.bisect_left(self.times, end_s) + 1]
        if any(later < earlier for (_, earlier), (_, later) in itertools.pairwise(spanned)):
            return None
        return max(0.0, high - low)

    def per_second(self, start_s: float, end_s: float) -> float | None:
        """The rate over ``[start_s, end_s]``: its increase over its length; ``None`` for an empty interval."""
        increase = self.increase(start_s, end_s)
        return None if increase is None or end_s <= start_s else float(increase / (end_s - start_s))

    def on_grid(self, length: int, step_s: float = 1.0) -> list[float | None]:
        """The increase over each interval ``[k * step_s, (k + 1) * step_s)``, ``k < length``."""
        return [self.increase(k * step_s, (k + 1) * step_s) for k in range(length)]


def client_counter(readings: Iterable[Reading], read: Callable[[ClientReading], float]) -> Counter:
    """The client counter ``read`` through the readings that have a client part (gaps are interpolated)."""
    return Counter((reading.time_s, read(reading.client)) for reading in readings if reading.client is not None)
