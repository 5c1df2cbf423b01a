"""What one strategy's live run recorded, and its analysis into the shared results shape.

Totals are differences between the first reading (time 0, when the load started) and
the last (the end of the run), so counters that did not start at zero read the same.

* ``requests``: logical requests started; ``unfinished`` = started - ok - gave up.
* ``attempts``: attempts sent (``retrystorm_client_attempts_started_total``), counted
  when sent as the simulator counts them, so ``amplification`` is attempts sent per
  logical request started, live and simulated alike; ``timeouts`` are counted when an
  attempt ends with that outcome (``retrystorm_client_attempts_total``).
* ``latency_*``: successful logical requests (backoff included, as the simulator's),
  from the client's histogram ``retrystorm_client_request_latency_seconds{outcome="ok"}``
  over the run, interpolated as Prometheus' ``histogram_quantile`` does (exact to the
  bucket: 10 ms ... 10 min, ~3 per decade); ``latency_max`` is the upper bound of the
  highest non-empty bucket, the smallest bound known to hold every latency (``null``
  when some latency exceeded the last finite bucket, 10 min).
* ``peak_in_flight``: the largest of the once-a-second readings of the target's gauge
  (a peak between two readings is not seen; the simulator's peak is exact).
* recoveries: :func:`experiment.analysis.recoveries` after each outage as it actually
  happened (pause and resume times measured, not planned); with slow or errors
  triggers, after each episode (:func:`experiment.scenario.timeline.episodes`) of the
  windows as they happened, which ``triggers`` lists, as the simulator's results do.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from experiment.analysis import LatencySummary, RunResult, recoveries
from experiment.analysis.series_names import IN_FLIGHT
from experiment.analysis.verdicts import evaluate
from experiment.scenario import Assertions, OutageWindow, RunSpec, TriggerWindow
from experiment.scenario.timeline import episodes
from runner.quantiles import difference, histogram_quantile, upper_bound_of_max
from runner.readings import ClientReading, Reading
from runner.series import LiveSeries, build_series

LATENCY_SOURCE = (
    'client histogram retrystorm_client_request_latency_seconds{outcome="ok"} (successful logical requests, '
    "backoff included), quantiles interpolated within buckets as Prometheus' histogram_quantile does; "
    "latency_max is the upper bound of the highest non-empty bucket"
)


@dataclasses.dataclass(frozen=True, slots=True)
class StrategyRecord:
    """Everything measured during one strategy's run."""

    spec: RunSpec
    readings: Sequence[Reading]
    outages: Sequence[OutageWindow]
    planned_outages: Sequence[OutageWindow]
    started_utc: str
    ended_utc: str
    target: str
    load: str
    #: The slow and errors windows as they happened (empty: a run of pauses only).
    triggers: Sequence[TriggerWindow] = ()

    @property
    def label(self) -> str:
        """The strategy's label."""
        return self.spec.label

    def series(self) -> LiveSeries:
        """The readings on the one-second grid."""
        return build_series(self.readings, self.spec.duration_s)

    def missed(self) -> dict[str, int]:
        """How many readings had no target part and no client part."""
        return {
            "target": sum(reading.target is None for reading in self.readings),
            "client": sum(reading.client is None for reading in self.readings),
        }


def _ends(readings: Sequence[Reading]) -> tuple[ClientReading, ClientReading] | None:
    clients = [reading.client for reading in readings if reading.client is not None]
    return (clients[0], clients[-1]) if len(clients) >= 2 else None


def latency_summary(first: ClientReading, last: ClientReading) -> LatencySummary:
    """Percentiles of the successful requests between two readings (see the module docstring)."""
    buckets = difference(last.latency_buckets, first.latency_buckets)
    p50, p75, p90, p99 = (histogram_quantile(q, buckets) for q in (0.5, 0.75, 0.9, 0.99))
    top = upper_bound_of_max(buckets)
    return LatencySummary(p50, p75, p90, p99, None if top is not None and math.isinf(top) else top)


def analyse(record: StrategyRecord, assertions: Assertions | None = None) -> RunResult:
    """The run as a :class:`RunResult`: totals, latencies, peak, recoveries and verdicts."""
    ends = _ends(record.readings)
    if ends is None:
        raise ValueError(f"{record.label}: fewer than two readings of the load generator; nothing to analyse")
    first, last = ends
    series = record.series()
    started = round(last.requests_started - first.requests_started)
    succeeded = round(last.requests_ok - first.requests_ok)
    gave_up = round(last.requests_gave_up - first.requests_gave_up)
    last_target = next((r.target for r in reversed(record.readings) if r.target is not None), None)
    peak = series.peak(IN_FLIGHT)
    extra: dict[str, object] = {
        "timeouts": round(last.attempts.get("timeout", 0.0) - first.attempts.get("timeout", 0.0)),
        "retries": round(last.retries - first.retries),
        "in_flight_end": round(last_target.in_flight) if last_target is not None else None,
        "planned_outages": [[outage.start_s, outage.end_s] for outage in record.planned_outages],
        "readings_missed": record.missed(),
    }
    if record.triggers:  # a run with pauses only keeps the shape it always had
        windows = sorted([*record.outages, *record.triggers], key=lambda w: (w.start_s, w.end_s))
        extra["triggers"] = [window.to_json() for window in windows]
    spans = episodes(record.outages, record.triggers)
    result = RunResult(
        strategy=record.label,
        spec=record.spec.policy.strategy.spec(),
        attempts=round(last.attempts_started - first.attempts_started),
        requests=started,
        succeeded=succeeded,
        gave_up=gave_up,
        unfinished=max(0, started - succeeded - gave_up),
        latency=latency_summary(first, last),
        peak_in_flight=round(peak) if peak is not None else None,
        recoveries=recoveries(series.samples(), spans) if spans else [],
        rejected_locally=round(last.budget_refusals - first.budget_refusals),
        extra=extra,
    )
    if assertions is None:
        return result
    return dataclasses.replace(result, verdicts=evaluate(assertions, result))
