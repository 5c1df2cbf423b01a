"""The retry-storm view's numbers: per-second points from cumulative readings, and outage bands.

Pure: no clock, no I/O, no Locust. The web UI's process takes a
:class:`~retrystorm.loadgen.readings.Reading` once a second (the client counters of ``/metrics``, summed over
workers on a master, and the target's in-flight gauge when it answered: the runner's readings, of the same
type) and :class:`StormHistory` turns consecutive readings into a :class:`Point`:

* a rate is ``(c_now - c_before) / (t_now - t_before)`` of a cumulative counter, by the runner's rule
  (:class:`retrystorm.loadgen.readings.Counter`); the counters are never reset, so a run is delimited by the
  reading at its start, not by zeroing anything. A counter that went down (its source
  restarted) gives no rate for that second, never a negative one;
* goodput is the rate of successful logical requests; attempts sent and logical
  requests started are separate rates, never summed;
* amplification is attempts sent per logical request started: over the last second
  (``None`` when no request started in it) and since the run started;
* a gauge (users in backoff, in flight on the target) is its value at the reading;
  ``None`` when there was none (a paused target answers nothing: a gap, not a zero).

Points sit in a ring bounded to :data:`WINDOW_S` seconds. Times on the view's axis are
seconds since the run started (since the view started, before any run).

Outages come from the chaos API as ``started_utc`` / ``ended_utc``; :func:`outage_bands`
places them on the same axis and :func:`merge_bands` joins overlapping ones of a kind.
Load spikes come from the points themselves: :func:`spike_bands` shades the seconds whose
load factor (``retrystorm_client_load_factor``, served by the process that plays
``--load-spikes``) was above 1.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from retrystorm.loadgen.readings import ClientReading, Counter, Reading
from retrystorm.loadgen.series_names import ACTIVE_USERS, ATTEMPTS, GAVE_UP, GOODPUT, IN_FLIGHT, USERS_IN_BACKOFF

#: Seconds of history the view keeps: 15 minutes of one point a second.
WINDOW_S = 900
#: Decimals of the numbers the data route serves (times to the millisecond).
DIGITS = 3


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Point:
    """One second of the view; every rate per second, ``None`` where there is no value."""

    t_s: float
    attempts_per_s: float | None
    requests_started_per_s: float | None
    goodput_per_s: float | None
    gave_up_per_s: float | None
    users_in_backoff: float | None
    active_users: float | None
    amplification: float | None
    amplification_total: float | None
    in_flight: float | None
    load_factor: float | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Band:
    """A shaded stretch of the time axis: an outage (``kind`` pause) or another trigger.

    ``end_s`` is ``None`` while it lasts; ``labels`` name what it froze (targets).
    """

    start_s: float
    end_s: float | None
    kind: str
    labels: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        """As the data route answers it."""
        return {"start_s": self.start_s, "end_s": self.end_s, "kind": self.kind, "labels": list(self.labels)}


def rate(before: Reading, now: Reading, read: Callable[[ClientReading], float]) -> float | None:
    """Per second of the client counter ``read`` between two readings; ``None`` if time or the counter went back."""
    return increase_between(before, now, read, per_second=True)


def increase_between(
    before: Reading, now: Reading, read: Callable[[ClientReading], float], *, per_second: bool = False
) -> float | None:
    """The increase of a client counter from ``before`` to ``now`` (per second if asked); ``None`` as :func:`rate`."""
    if before.client is None or now.client is None:
        return None
    counter = Counter([(before.time_s, read(before.client)), (now.time_s, read(now.client))])
    if per_second:
        return counter.per_second(before.time_s, now.time_s)
    return counter.increase(before.time_s, now.time_s) if now.time_s > before.time_s else None


def ratio(attempts: float, requests: float) -> float | None:
    """Attempts per logical request: ``None`` when no request started (the ratio has no value)."""
    if requests <= 0 or attempts < 0:
        return None
    return attempts / requests


def _attempts(client: ClientReading) -> float:
    return client.attempts_started


def _started(client: ClientReading) -> float:
    return client.requests_started


def _amplification(first: Reading, last: Reading) -> float | None:
    attempts, started = increase_between(first, last, _attempts), increase_between(first, last, _started)
    return None if attempts is None or started is None else ratio(attempts, started)


def point_between(start: Reading, before: Reading, now: Reading) -> Point:
    """The point of ``now``: rates since ``before``, totals since ``start`` (the run's first reading)."""
    client = now.client
    return Point(
        t_s=now.time_s - start.time_s,
        attempts_per_s=rate(before, now, _attempts),
        requests_started_per_s=rate(before, now, _started),
        goodput_per_s=rate(before, now, lambda c: c.requests_ok),
        gave_up_per_s=rate(before, now, lambda c: c.requests_gave_up),
        users_in_backoff=client.users_in_backoff if client is not None else None,
        active_users=client.active_users if client is not None else None,
        amplification=_amplification(before, now),
        amplification_total=_amplification(start, now),
        in_flight=now.target.in_flight if now.target is not None else None,
        load_factor=client.load_factor if client is not None else None,
    )


class StormHistory:
    """The last ``window_s`` seconds of points, one per reading; restarted by :meth:`start_run`."""

    def __init__(self, window_s: int = WINDOW_S) -> None:
        if window_s < 1:
            raise ValueError(f"window_s: got {window_s}, expected at least 1")
        self.points: collections.deque[Point] = collections.deque(maxlen=window_s)
        self.start: Reading | None = None
        self.start_utc: datetime.datetime | None = None
        self.run_started = False
        self._previous: Reading | None = None

    def start_run(self, reading: Reading, now_utc: datetime.datetime) -> None:
        """Forget every point: a run starts at ``reading`` (taken at ``now_utc``)."""
        self.points.clear()
        self.start = self._previous = reading
        self.start_utc = now_utc
        self.run_started = True

    def add(self, reading: Reading, now_utc: datetime.datetime) -> Point | None:
        """Add the point of ``reading``; the first reading of the view only sets its start."""
        if self.start is None or self._previous is None:
            self.start = self._previous = reading
            self.start_utc = now_utc
            return None
        point = point_between(self.start, self._previous, reading)
        self._previous = reading
        self.points.append(point)
        return point

    def since(self, t_s: float | None) -> list[Point]:
        """The points after ``t_s`` as served (rounded to :data:`DIGITS`; all for ``None``), oldest first."""
        return [point for point in self.points if t_s is None or round(point.t_s, DIGITS) > t_s]

    def seconds_at(self, when_utc: datetime.datetime) -> float | None:
        """``when_utc`` on the view's axis (seconds since the run started); ``None`` before any reading."""
        if self.start_utc is None:
            return None
        return (when_utc - self.start_utc).total_seconds()


@dataclasses.dataclass(frozen=True, slots=True)
class Series:
    """One line of the view: the :class:`Point` field it reads, what it is and its unit."""

    key: str
    field: str
    label: str
    unit: str


#: Every series the data route serves, in the order the view draws them, named as the runner's and the
#: simulator's (:mod:`retrystorm.loadgen.series_names`). ``requests_started`` is the runner's ``started``: its
#: key is kept, as the tab's script and any client of the route read it.
SERIES = (
    Series(ATTEMPTS, "attempts_per_s", "attempts sent", "attempts/s"),
    Series("requests_started", "requests_started_per_s", "logical requests started", "requests/s"),
    Series(GOODPUT, "goodput_per_s", "goodput (logical requests that succeeded)", "requests/s"),
    Series(GAVE_UP, "gave_up_per_s", "logical requests given up", "requests/s"),
    Series(USERS_IN_BACKOFF, "users_in_backoff", "users in backoff", "users"),
    Series(ACTIVE_USERS, "active_users", "users running", "users"),
    Series("amplification", "amplification", "amplification over the last second", "attempts per request"),
    Series("amplification_total", "amplification_total", "amplification since the run started", "attempts per request"),
    Series(IN_FLIGHT, "in_flight", "in flight on the target", "requests"),
)


def columns(points: Sequence[Point]) -> dict[str, Any]:
    """``{"t_s": [...], "series": {key: {label, unit, values}}}``: one column per series, ``None`` for gaps."""

    def rounded(value: float | None) -> float | None:
        return None if value is None else round(value, DIGITS)

    return {
        "t_s": [round(point.t_s, DIGITS) for point in points],
        "series": {
            series.key: {
                "label": series.label,
                "unit": series.unit,
                "values": [rounded(getattr(point, series.field)) for point in points],
            }
            for series in SERIES
        },
    }


def _utc(text: Any) -> datetime.datetime | None:
    if not isinstance(text, str):
        return None
    try:
        when = datetime.datetime.fromisoformat(text)
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=datetime.UTC)


def outage_bands(outages: Iterable[Mapping[str, Any]], history: StormHistory) -> list[Band]:
    """The chaos API's outages (``GET /outages``) that paused something, on the view's axis.

    An active outage has no end yet; a failed one paused nothing and is left out, as is
    one that ended before the run started. ``kind`` is the outage's own when the chaos
    API gives one, else ``pause``.
    """
    bands = []
    for outage in outages:
        started = _utc(outage.get("started_utc"))
        if started is None or outage.get("status") == "failed":
            continue
        start_s = history.seconds_at(started)
        ended = _utc(outage.get("ended_utc"))
        end_s = history.seconds_at(ended) if ended is not None else None
        if start_s is None or (end_s is not None and end_s < 0):
            continue
        label = str(outage.get("target", ""))
        bands.append(Band(start_s, end_s, str(outage.get("kind") or "pause"), (label,) if label else ()))
    return bands


def spike_bands(points: Sequence[Point]) -> list[Band]:
    """Each stretch of points with a load factor above 1 as a ``spike`` band, labelled with its largest factor.

    A point stands for the second that ends at its time, so a band runs from a second
    before its first point to its last; one that reaches the newest point is still going
    (no end).
    """
    bands: list[Band] = []
    for spiking, run in itertools.groupby(points, key=lambda point: (point.load_factor or 1.0) > 1):
        if not spiking:
            continue
        stretch = list(run)
        going = stretch[-1] is points[-1]
        peak = max(point.load_factor or 1.0 for point in stretch)
        start_s = max(0.0, stretch[0].t_s - 1.0)
        bands.append(Band(start_s, None if going else stretch[-1].t_s, "spike", (f"x{peak:.3g}",)))
    return bands


def merge_bands(bands: Sequence[Band]) -> list[Band]:
    """Overlapping or touching bands of one kind as one band (labels joined), by start.

    A band without an end (still going) swallows every later band of its kind.
    """
    merged: list[Band] = []
    for kind in sorted({band.kind for band in bands}):
        current: Band | None = None
        for band in sorted((b for b in bands if b.kind == kind), key=lambda b: b.start_s):
            if current is not None and (current.end_s is None or band.start_s <= current.end_s):
                end = None if current.end_s is None or band.end_s is None else max(current.end_s, band.end_s)
                labels = current.labels + tuple(label for label in band.labels if label not in current.labels)
                current = Band(current.start_s, end, kind, labels)
                continue
            if current is not None:
                merged.append(current)
            current = band
        if current is not None:
            merged.append(current)
    return sorted(merged, key=lambda band: (band.start_s, band.kind))
