"""An in-flight gauge that cannot show a storm: one pinned at a ceiling that is not above its recovery threshold.

A thread-pool server (gunicorn's ``gthread`` or ``sync`` workers, a Java servlet pool, a connection pool in front
of a database) counts the requests its threads hold, and it has no more threads than it has: its in-flight gauge
never exceeds the thread count, however many connections wait in its accept queue behind them. When the recovery
threshold (:func:`retrystorm.experiment.analysis.recovery.noise_threshold` plus its slack: 1.5 x the steady
maximum + 1, at least) is at or above that ceiling, every reading of the gauge is "back", storm or not: a rule
that reads it calls a server holding thousands of sockets recovered at its first reading.

The ceiling is **inferred** from the run, not declared, because the user who most needs this is the one who does
not know that their gauge saturates. A gauge is judged saturated, and not used, when both hold:

* its largest reading over the whole run, ``M``, is at or below the in-flight threshold ``H``: it never once
  read above the level it is judged against, so it never could have said "not back";
* after the first trigger ended, at least ``min_pinned`` (3) of its readings are within ``pinned_room`` (1
  request) of ``M`` in seconds where the server was plainly not serving: the clients' timeouts per second were
  above their own threshold (the same noise rule as in-flight's), or that second's fresh request was not
  answered in time. A gauge that sits at its maximum while new requests wait is pinned at a ceiling, not
  reporting a load it could still serve.

The first condition alone would also catch a server that simply had nothing to drain (its gauge barely moved,
because nothing piled up); the second is what tells a ceiling from calm, and it takes three readings so that the
one or two seconds of timeouts of the requests caught by the pause itself (they time out after the resume) do
not decide. A server that drains at its ceiling for longer than that is saturated too; the clients and the fresh
requests then judge its recovery as well as the gauge would have, later by at most the attempt timeout.

Where the gauge is not used, server recovery is judged from the clients' signals and the fresh requests, and
``server_recovery_signals`` says why, with ``M``, ``H`` and the count of pinned readings.
"""

from __future__ import annotations

import dataclasses

from retrystorm.experiment.analysis.samples import Samples

#: The start of the reason written into ``server_recovery_signals`` when a gauge was not used.
GAUGE_NOT_USED = "in-flight gauge not used"


@dataclasses.dataclass(frozen=True, slots=True)
class CeilingRule:
    """How many readings at the ceiling, and how close to it, make a gauge saturated (module docstring)."""

    min_pinned: int = 3
    pinned_room: float = 1.0


@dataclasses.dataclass(frozen=True, slots=True)
class SaturatedGauge:
    """A gauge found pinned at its ceiling: its largest reading, the threshold, and the readings pinned there."""

    ceiling: float
    threshold: float
    pinned: int

    def reason(self) -> str:
        """``in-flight gauge not used: its largest reading, 16, is below its recovery threshold, 25.0, and ...``."""
        return (
            f"{GAUGE_NOT_USED}: its largest reading, {self.ceiling:g}, is at or below its recovery threshold, "
            f"{self.threshold:.1f}, and it sat there in {self.pinned} readings after the resume while clients timed "
            "out or fresh requests waited: a gauge with a ceiling (a thread pool's) cannot show a storm"
        )


def saturated_gauge(
    samples: Samples,
    after_s: float,
    in_flight_max: float,
    timeouts_max: float,
    rule: CeilingRule = CeilingRule(),
) -> SaturatedGauge | None:
    """The gauge of ``samples`` found pinned at a ceiling no higher than ``in_flight_max``, its recovery threshold,
    from the readings after ``after_s`` (the first trigger's end); ``None`` when it can show a storm, or when the
    clients' signals are not recorded (nothing then says the server was not serving). ``timeouts_max``: the
    timeouts per second above which the clients were timing out beyond their steady level."""
    readings = [value for value in samples.in_flight if value is not None]
    if not readings or not samples.timeouts:
        return None
    ceiling = max(readings)
    if ceiling > in_flight_max:
        return None
    pinned = sum(
        1
        for index, value in enumerate(samples.in_flight)
        if value is not None
        and samples.gauge_time(index) > after_s + 1e-9
        and value >= ceiling - rule.pinned_room
        and _not_serving(samples, index, timeouts_max)
    )
    return SaturatedGauge(ceiling, in_flight_max, pinned) if pinned >= rule.min_pinned else None


def _not_serving(samples: Samples, index: int, timeouts_max: float) -> bool:
    """Whether interval ``index`` shows the server not serving: timeouts above their threshold, or a fresh request
    not answered in time."""
    fresh = samples.fresh_in_time[index] if samples.fresh_in_time else None
    return samples.timeouts[index] > timeouts_max or fresh == 0.0
