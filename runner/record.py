"""What one strategy's live run recorded, and its analysis into the shared results shape.

Totals are differences between the first reading (time 0, when the load started) and
the last (the end of the run), so counters that did not start at zero read the same.

* ``requests``: logical requests started between the readings, plus those already in
  progress at the first (their outcome is counted too; a load generator with a short
  think time has hundreds in progress by the first reading); ``unfinished``: those in
  progress at the last reading, from the client's gauge histogram of them, so that
  ``requests = succeeded + gave_up + unfinished``. Without that gauge (a load
  generator that does not serve it): started - ok - gave up, at least 0.
* ``attempts``: attempts sent (``retrystorm_client_attempts_started_total``), counted
  when sent as the simulator counts them, so ``amplification`` is attempts sent per
  logical request started, live and simulated alike; ``timeouts`` are counted when an
  attempt ends with that outcome (``retrystorm_client_attempts_total``).
* ``latency_*``: every logical request started, censored as the simulator's
  (:mod:`retrystorm.experiment.analysis.stats`): the ones that ended (succeeded or given up, backoff
  included) from the client's histogram ``retrystorm_client_request_latency_seconds``
  over the run, and the ones still in progress at the last reading at their age, from
  the gauge histogram ``retrystorm_client_requests_in_progress_age_seconds`` the Locust
  user serves (each user knows when its request started); both over the same buckets,
  summed, quantiles interpolated as Prometheus' ``histogram_quantile`` does (exact to
  the bucket: 10 ms ... 10 min, ~3 per decade). ``latency_max`` is the upper bound of
  the highest non-empty bucket (``null`` beyond the last finite bucket, 10 min);
  ``latency_censored`` the number of requests in progress at the end.
* ``peak_in_flight``: the largest of the once-a-second readings of the target's gauge
  (a peak between two readings is not seen; the simulator's peak is exact).
* recoveries: :func:`retrystorm.experiment.analysis.recoveries` after each outage as it actually
  happened (pause and resume times measured, not planned); ``after_resume``: the
  figures of each outage's aftermath (:mod:`retrystorm.experiment.analysis.mechanism`);
  ``abandoned_in_flight_end``: the target's gauge of requests it still holds whose
  client went away, at its last reading.
* ``steady_state``: whether the steady window showed the service working
  (:mod:`retrystorm.experiment.analysis.steady_state`); a run with triggers that was not valid stopped before them
  and wrote nothing.
* ``grpc`` (a gRPC load only): who retried (``mode``), the ``method``, how many ``channels`` the load had
  (one per process running users: gRPC's retry throttle is one token bucket per channel) and the
  ``attempts_at_target``, the gRPC attempts the built-in target counted arriving (``null`` for a service of
  one's own): beside ``attempts``, which the client counted (emulated: as sent; real: channelz's
  ``calls_started`` of the channel's subchannels).
* ``fresh_requests``: how many fresh requests the run sent (one a second on a new connection) and how many were
  answered in time (:mod:`retrystorm.runner.fresh_probe`); server recovery asks them too.
* ``validity``: whether the load generator kept up (:mod:`retrystorm.experiment.analysis.validity`),
  from each generator process's CPU, the requests started against those demanded, and how late the users
  started against their plan and the event loop woke (the schedule and loop lag).
  happened (pause and resume times measured, not planned); with slow or errors
  triggers, after each episode (:func:`retrystorm.experiment.scenario.timeline.episodes`) of the
  windows as they happened, which ``triggers`` lists, as the simulator's results do.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from retrystorm.experiment.analysis import LatencySummary, RunResult, default_steady_window, recoveries
from retrystorm.experiment.analysis.mechanism import after_resumes
from retrystorm.experiment.analysis.quantiles import combine, difference
from retrystorm.experiment.analysis.validity import GeneratorSeconds, Validity, assess
from retrystorm.experiment.analysis.verdicts import evaluate
from retrystorm.experiment.scenario import Assertions, OutageWindow, RunSpec, TriggerWindow
from retrystorm.experiment.scenario.timeline import episodes
from retrystorm.loadgen.readings import ClientReading, Reading
from retrystorm.loadgen.series_names import IN_FLIGHT, IN_PROGRESS, STARTED
from retrystorm.runner.fresh_probe import FreshAnswer, fresh_timeout_s, summary
from retrystorm.runner.locust_args import think_time
from retrystorm.runner.series import LOOP_LAG_S, SCHEDULE_LAG_S, LiveSeries, build_series
from retrystorm.runner.steady import judge_readings, request_names, steady_ticks

LATENCY_SOURCE = (
    "client histogram retrystorm_client_request_latency_seconds (logical requests that ended, ok or given up, "
    "backoff included) plus the gauge histogram retrystorm_client_requests_in_progress_age_seconds at the last "
    "reading (the ages of the requests still in progress, which the Locust user tracks from their start), quantiles "
    "interpolated within the shared buckets as Prometheus' histogram_quantile does; latency_max is the upper bound "
    "of the highest non-empty bucket"
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
    #: Unix seconds (the wall clock) at the run's time 0, when the load started; ``None``: not taken.
    wall_t0: float | None = None
    #: The whole seconds the steady state was judged over (:mod:`retrystorm.runner.steady`); ``None``: from the
    #: planned outages and the triggers.
    steady_ticks: tuple[int, int] | None = None
    #: Which run of its strategy this was (``--repeat``), from 1.
    repeat: int = 1
    #: How many processes ran users (one gRPC channel each); ``None``: not known.
    user_processes: int | None = None
    #: Across hosts: each chaos agent's own record of its outages, by host (``None``: no agents).
    agents: Mapping[str, Any] | None = None
    #: The fresh requests' answers (:mod:`retrystorm.runner.fresh_probe`); ``None``: none were sent.
    fresh: Sequence[FreshAnswer] | None = None

    @property
    def label(self) -> str:
        """The strategy's label."""
        return self.spec.label

    def series(self) -> LiveSeries:
        """The readings on the one-second grid."""
        return build_series(self.readings, self.spec.duration_s, self.fresh)

    def generator_attempts(self) -> dict[str, float]:
        """The attempts each load-generator process sent during the run (first to last reading), by process:
        every worker's share of the load, as its master counted it."""
        ends = _ends(self.readings)
        if ends is None:
            return {}
        first, last = ends
        return {
            process: sent - first.generator_attempts.get(process, 0.0)
            for process, sent in sorted(last.generator_attempts.items())
        }

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
    """Censored percentiles of the requests between two readings (see the module docstring)."""
    ended = difference(last.ended_buckets, first.ended_buckets)
    censored = round(last.in_progress) if last.in_progress is not None else 0
    return LatencySummary.of_histogram(combine(ended, last.in_progress_buckets), censored)


def validity_of(spec: RunSpec, series: LiveSeries, readings: int = 0, readings_missed: int = 0) -> Validity:
    """The saturation rule (:mod:`retrystorm.experiment.analysis.validity`) on one strategy's series, of which
    ``readings_missed`` of the load generator's ``readings`` went unanswered."""
    seconds = GeneratorSeconds(
        cpu=series.cpu or [None] * series.length,
        started=series.rates[STARTED],
        active=series.gauges["active_users"],
        in_progress=series.gauges[IN_PROGRESS],
        readings=readings,
        readings_missed=readings_missed,
        schedule_lag_s=series.rates[SCHEDULE_LAG_S],
        loop_lag_s=series.rates[LOOP_LAG_S],
    )
    return assess(seconds, think_time(spec), open_loop=spec.arrival == "open")


def steady_state_of(record: StrategyRecord) -> dict[str, object] | None:
    """The steady-state rule (:mod:`retrystorm.runner.steady`) on the run's steady window; ``None``: too short to
    judge (a trigger in the first two seconds)."""
    ticks = record.steady_ticks
    if ticks is None:
        window = default_steady_window(episodes(record.planned_outages, record.triggers))
        ticks = steady_ticks(window, record.spec.duration_s)
    if ticks is None:
        return None
    return judge_readings(record.readings, ticks, request_names(record.spec)).to_json()


def grpc_figures(record: StrategyRecord) -> dict[str, object]:
    """A gRPC run's own figures (see the module docstring)."""
    settings = record.spec.grpc
    targets = [reading.target for reading in record.readings if reading.target is not None]
    arrived = round(targets[-1].grpc_attempts - targets[0].grpc_attempts) if len(targets) >= 2 else None
    return {
        "mode": settings.mode.value if settings is not None else None,
        "method": settings.method if settings is not None else None,
        "channels": record.user_processes,
        "attempts_at_target": arrived or None,
    }


def _requests(first: ClientReading, last: ClientReading, ended: int) -> tuple[int, int]:
    """``(requests, unfinished)`` between two readings (see the module docstring)."""
    started = round(last.requests_started - first.requests_started)
    if first.in_progress is None or last.in_progress is None:
        return started, max(0, started - ended)
    return started + round(first.in_progress), round(last.in_progress)


def analyse(record: StrategyRecord, assertions: Assertions | None = None) -> RunResult:
    """The run as a :class:`RunResult`: totals, latencies, peak, recoveries and verdicts."""
    ends = _ends(record.readings)
    if ends is None:
        raise ValueError(f"{record.label}: fewer than two readings of the load generator; nothing to analyse")
    first, last = ends
    series = record.series()
    samples = series.samples()
    succeeded = round(last.requests_ok - first.requests_ok)
    gave_up = round(last.requests_gave_up - first.requests_gave_up)
    started, unfinished = _requests(first, last, succeeded + gave_up)
    last_target = next((r.target for r in reversed(record.readings) if r.target is not None), None)
    peak = series.peak(IN_FLIGHT)
    spans = episodes(record.outages, record.triggers)  # what recovery is judged after
    found = recoveries(samples, spans) if spans else []
    extra: dict[str, object] = {
        "timeouts": round(last.attempts.get("timeout", 0.0) - first.attempts.get("timeout", 0.0)),
        "retries": round(last.retries - first.retries),
        "in_flight_end": round(last_target.in_flight) if last_target is not None else None,
        "abandoned_in_flight_end": round(last_target.abandoned_in_flight) if last_target is not None else None,
        "after_resume": [figures.to_json() for figures in after_resumes(samples, found)],
        "validity": validity_of(record.spec, series, len(record.readings), record.missed()["client"]).to_json(),
        "planned_outages": [[outage.start_s, outage.end_s] for outage in record.planned_outages],
        "readings_missed": record.missed(),
        "steady_state": steady_state_of(record),
    }
    if record.spec.grpc is not None:
        extra["grpc"] = grpc_figures(record)
    if record.fresh is not None:
        extra["fresh_requests"] = summary(record.fresh, fresh_timeout_s(record.spec))
    if record.triggers:  # a run with pauses only keeps the shape it always had
        windows = sorted([*record.outages, *record.triggers], key=lambda w: (w.start_s, w.end_s))
        extra["triggers"] = [window.to_json() for window in windows]
    result = RunResult(
        strategy=record.label,
        spec=record.spec.policy.strategy.spec(),
        attempts=round(last.attempts_started - first.attempts_started),
        requests=started,
        succeeded=succeeded,
        gave_up=gave_up,
        unfinished=unfinished,
        latency=latency_summary(first, last),
        peak_in_flight=round(peak) if peak is not None else None,
        recoveries=found,
        rejected_locally=round(last.budget_refusals - first.budget_refusals),
        extra=extra,
    )
    if assertions is None:
        return result
    return dataclasses.replace(result, verdicts=evaluate(assertions, result))
