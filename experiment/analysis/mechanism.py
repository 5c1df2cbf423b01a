"""What happened after each resume, in figures a sentence can quote: why a service came back or not.

A retry storm keeps a service down when, after the resume, the users offer attempts
faster than the server can finish them, the server still holds work its clients
abandoned, and so the in-flight count grows instead of draining. Each figure here is
one part of that mechanism, measured over the *window after a resume*: from the resume
until the server's recovery (when it recovered: the time it was draining) or else
until the next outage or the end of the data.

* ``steady_attempts_per_s``, ``steady_goodput_per_s``: the means over the steady window
  (:func:`retrystorm.experiment.analysis.recovery.default_steady_window`);
* ``attempts_per_s``: the mean attempts sent per second over the window, and
  ``attempts_ratio`` that against the steady mean (how much more the users offered);
* ``goodput_per_s``: the mean goodput over the window's last ``tail_s`` seconds
  (10 s, or the whole window when shorter);
* ``goodput_end_per_s``: the mean goodput over the last ``tail_s`` seconds before the next
  outage or the end of the data, whatever the window: where the users ended up;
* ``in_flight_at_resume``: the first in-flight reading taken after the resume (a gauge is
  read at an interval's end, so the interval it ends may have begun before the resume);
  ``peak_in_flight``: the largest reading taken in the window; ``in_flight_end``: its last;
* ``window_s``: the window's length;
* ``fresh_sent_s``, ``fresh_in_time_s``: the seconds of the window in which a fresh request was sent
  (:mod:`retrystorm.runner.fresh_probe`), and those whose fresh requests were all answered in time: whether a new
  client would have been served, measured, not inferred from a gauge (``None``: none were sent);
* ``in_flight_end_s``: seconds after the resume at which ``in_flight_end`` was read, so that no sentence quotes a
  stale reading as the present; ``in_flight_readings``, ``in_flight_missed``: the in-flight readings due in the
  window (one per interval ending in it) and those that did not arrive (a ``/metrics`` queued behind the backlog,
  or a paused target); ``rests_on_missed``: whether the server's verdict rests on those missing readings
  (:func:`retrystorm.experiment.analysis.recovery.rests_on_missed`). All ``None`` without server readings.

A figure is ``None`` where its series has no reading in its span.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

from retrystorm.experiment.analysis.recovery import Recovery, default_steady_window
from retrystorm.experiment.analysis.samples import Samples

#: Seconds at the end of the window over which the goodput the users ended up with is averaged.
TAIL_S = 10.0


@dataclasses.dataclass(frozen=True, slots=True)
class AfterResume:
    """The figures of one outage's aftermath (see the module docstring)."""

    window_s: float
    steady_attempts_per_s: float | None
    steady_goodput_per_s: float | None
    attempts_per_s: float | None
    attempts_ratio: float | None
    goodput_per_s: float | None
    in_flight_at_resume: float | None
    peak_in_flight: float | None
    in_flight_end: float | None
    goodput_end_per_s: float | None = None
    fresh_sent_s: float | None = None
    fresh_in_time_s: float | None = None
    in_flight_end_s: float | None = None
    in_flight_readings: int | None = None
    in_flight_missed: int | None = None
    rests_on_missed: bool | None = None

    def to_json(self) -> dict[str, float | bool | None]:
        """The figures, rounded for the results document."""
        return {field.name: _rounded(getattr(self, field.name)) for field in dataclasses.fields(self)}


def _rounded(value: float | bool | None) -> float | bool | None:
    return value if value is None or isinstance(value, bool | int) else round(value, 3)


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def _between(samples: Samples, start_s: float, end_s: float) -> list[int]:
    """The intervals lying inside ``[start_s, end_s]``."""
    return [
        i
        for i in range(len(samples))
        if samples.interval_start(i) >= start_s - 1e-9 and samples.gauge_time(i) <= end_s + 1e-9
    ]


def _fresh(samples: Samples, inside: Sequence[int]) -> dict[str, Any]:
    """``fresh_sent_s`` and ``fresh_in_time_s`` over the intervals ``inside`` (``None``: no fresh requests)."""
    sent = [value for i in inside if samples.fresh_in_time and (value := samples.fresh_in_time[i]) is not None]
    if not sent:
        return {"fresh_sent_s": None, "fresh_in_time_s": None}
    return {"fresh_sent_s": float(len(sent)), "fresh_in_time_s": math.fsum(sent)}


def _readings(samples: Samples, read: Sequence[int], recovery: Recovery, resume_s: float) -> dict[str, Any]:
    """``in_flight_end_s``, ``in_flight_readings``, ``in_flight_missed`` and ``rests_on_missed`` over the
    readings ``read`` (see the module docstring)."""
    if not samples.has_server_gauges:
        return {}
    taken = [i for i in read if samples.in_flight[i] is not None]
    return {
        "in_flight_end_s": samples.gauge_time(taken[-1]) - resume_s if taken else None,
        "in_flight_readings": len(read),
        "in_flight_missed": len(read) - len(taken),
        "rests_on_missed": recovery.rests_on_missed,
    }


def after_resumes(samples: Samples, found: Sequence[Recovery]) -> list[AfterResume]:
    """The aftermath of each outage of ``found`` (the recoveries, in order), as figures."""
    outages = [recovery.outage for recovery in found]
    window = default_steady_window(outages)
    steady = _between(samples, *window) if window else []
    steady_attempts = _mean([samples.attempts[i] for i in steady]) if len(samples.attempts) == len(samples) else None
    steady_goodput = _mean([samples.goodput[i] for i in steady])
    data_end = samples.gauge_time(len(samples) - 1) if len(samples) else 0.0
    figures = []
    for index, recovery in enumerate(found):
        resume = recovery.outage.end_s
        until = outages[index + 1].start_s if index + 1 < len(outages) else data_end
        end = min(until, resume + recovery.server_s) if recovery.server_s is not None else until
        # at least the first whole interval after the resume, when there is one (a live resume is off the grid)
        first_whole = (
            samples.start_s + (math.ceil((resume - samples.start_s) / samples.step_s - 1e-9) + 1) * samples.step_s
        )
        end = max(end, min(until, first_whole))
        inside = _between(samples, resume, end)
        attempts = _mean([samples.attempts[i] for i in inside]) if len(samples.attempts) == len(samples) else None
        tail = [i for i in inside if samples.interval_start(i) >= end - TAIL_S - 1e-9]
        read = [i for i in range(len(samples)) if resume + 1e-9 < samples.gauge_time(i) <= end + 1e-9]
        in_flight = [value for i in read if (value := samples.in_flight[i]) is not None]
        last = _between(samples, max(resume, until - TAIL_S), until)
        ratio = attempts / steady_attempts if attempts is not None and steady_attempts else None
        figures.append(
            AfterResume(
                window_s=end - resume,
                steady_attempts_per_s=steady_attempts,
                steady_goodput_per_s=steady_goodput,
                attempts_per_s=attempts,
                attempts_ratio=ratio,
                goodput_per_s=_mean([samples.goodput[i] for i in tail]),
                in_flight_at_resume=in_flight[0] if in_flight else None,
                peak_in_flight=max(in_flight, default=None),
                in_flight_end=in_flight[-1] if in_flight else None,
                goodput_end_per_s=_mean([samples.goodput[i] for i in last]),
                **_fresh(samples, inside),
                **_readings(samples, read, recovery, resume),
            )
        )
    return figures
