"""A run folder: ``results.json``, ``timeseries.csv``, and the report (PNGs, ``report.html``).

``results.json`` starts with ``schema_version`` (:mod:`retrystorm.runner.results_schema`, which publishes its JSON
Schema), then has the shape ``retrystorm sim --json`` prints
(:func:`retrystorm.experiment.analysis.results_document`), with the run's own keys beside ``results``:
``ok``, ``choices`` (how the live figures were measured), ``run`` (scenario, stack,
seed, times, what ran for each strategy, and the wall-clock time of each strategy's time 0:
``t0_unix_s`` and ``t0_utc``, to line ``t_s`` up with other logs), the scenario's ``description`` and, with
``--simulate``, ``simulated``.
``timeseries.csv`` has one row per strategy per second, with the fixed columns of
:data:`~retrystorm.runner.results_schema.TIMESERIES_COLUMNS`: ``strategy``, ``t_s`` (the end
of the interval, seconds after the load started), the rates per second and the gauges
of :class:`~retrystorm.runner.series.LiveSeries`, named as the simulator's
(:mod:`retrystorm.loadgen.series_names`).

The PNGs and ``report.html`` come from :mod:`retrystorm.experiment.report`.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from retrystorm.experiment.analysis import RunResult, results_document
from retrystorm.experiment.analysis.repeats import summarise
from retrystorm.experiment.analysis.stats import CENSORING_NOTE
from retrystorm.experiment.analysis.steady_state import SteadyRule
from retrystorm.experiment.analysis.validity import ValidityRule
from retrystorm.experiment.report import StrategyCurves, write_report
from retrystorm.loadgen.series_names import ATTEMPTS, DELAY_S, GAVE_UP, GOODPUT, IN_FLIGHT, TIMEOUTS
from retrystorm.runner.record import LATENCY_SOURCE, StrategyRecord
from retrystorm.runner.results_schema import SCHEMA_VERSION, TIMESERIES_COLUMNS
from retrystorm.runner.series import LiveSeries
from retrystorm.sim.report import csv_text

CHOICES = [
    (
        "Live figures: counters and gauges read once a second from the target's and the load generator's /metrics "
        "(local stack), or from Prometheus' query API, as last scraped, at most a scrape interval earlier (compose "
        "stack); a paused target does not answer, so its gauges are missing while it is paused."
    ),
    "Rates per second are counter differences on a 1-s grid, interpolated linearly across missed readings.",
    (
        "Attempts (the attempts/s curve, the attempts total and amplification) are counted when sent "
        "(retrystorm_client_attempts_started_total), as the simulator counts them; timeouts are counted when "
        "an attempt ends with that outcome (retrystorm_client_attempts_total)."
    ),
    "peak_in_flight is the largest once-a-second reading of the target's in-flight gauge.",
    f"Latency: {LATENCY_SOURCE}.",
    CENSORING_NOTE,
    "Recoveries are measured from the outages as they happened (pause and resume times taken by the controller).",
    (
        "Validity: each load-generator process's CPU is read every second, from /proc by the runner (local stack) "
        "or as the Locust master last heard it from its workers (compose stack, Locust's 10-s average), beside the "
        f"logical requests the users started against those they demanded. {ValidityRule().describe()} The finding "
        "is in results.json (validity, per strategy; valid), the terminal and the report; during the run each Locust "
        "process also serves retrystorm_client_generator_saturated and retrystorm_client_generator_cpu_seconds_total "
        "(per process) to Prometheus."
    ),
    SteadyRule().describe(),
    (
        "Server recovery without server readings (a service of one's own without metrics:) is judged from the "
        "clients: the first time after the resume from which, for 5 s, every second has attempts that ended, their "
        "mean latency at most max(1.5 x the largest steady second, 2 x the steady mean), and timeouts per second at "
        "most max(1.5 x the largest steady second, mean + 4 sqrt(max(mean, 1))) + 1; steady = the second half of "
        "the time before the first outage. Each result's server_recovery_signals says which readings judged it."
    ),
    (
        "Fresh requests (every live HTTP run): once a second, at the middle of the second, the runner sends the "
        "scenario's first request on a new connection of its own, outside every user's retry loop, and waits at most "
        "the attempt timeout. The server is back only from a second whose fresh request, and those of the 5 s after "
        "it, were answered below 400 in time, beside the gauges or the clients' signals; a gauge can read steady "
        "while new clients wait behind the backlog. They are not used when fewer than 90 % of the steady window's "
        "were answered in time (server_recovery_signals then says so); results.json fresh_requests counts them and "
        "timeseries.csv fresh_in_time shows each second."
    ),
    (
        "An in-flight gauge that cannot show a storm is not used: when its largest reading over the run is at or "
        "below its recovery threshold and at least 3 readings after the first resume sit within one request of it "
        "while the clients' timeouts were above their threshold or a fresh request waited (a thread pool's gauge, "
        "pinned at its thread count), the server is judged from the clients and the fresh requests, and "
        "server_recovery_signals says why."
    ),
]


REPEAT_CHOICE = (
    "Repeats (--repeat N): each strategy ran N times, the strategies taking turns; results holds, for each, the "
    "run in the middle by its recoveries (server, then users), with every headline figure's spread over the runs "
    "(spread: values, min, max, never); repeats.runs holds every run. A ranking key decides only when two "
    "strategies differ by more than its margin and by more than either one's own spread over its runs."
)


def live_curves(record: StrategyRecord, series: LiveSeries | None = None) -> StrategyCurves:
    """The curves of a live strategy run (outages as they happened)."""
    series = series or record.series()
    return StrategyCurves(
        label=record.label,
        times_s=series.times(),
        goodput=list(series.rates[GOODPUT]),
        attempts=list(series.rates[ATTEMPTS]),
        in_flight=list(series.gauges[IN_FLIGHT]),
        delay_s=list(series.gauges[DELAY_S]),
        outages=[(outage.start_s, outage.end_s) for outage in record.outages],
        more={TIMEOUTS: series.rates[TIMEOUTS], GAVE_UP: series.rates[GAVE_UP], **series.latency},
        triggers=tuple((window.kind, window.start_s, window.end_s) for window in record.triggers),
    )


def utc_text(unix_s: float | None) -> str | None:
    """Unix seconds as ISO 8601 UTC with milliseconds (``None`` stays ``None``)."""
    if unix_s is None:
        return None
    return datetime.datetime.fromtimestamp(unix_s, datetime.UTC).isoformat(timespec="milliseconds")


def timeseries_rows(records: Sequence[StrategyRecord]) -> list[dict[str, Any]]:
    """Every strategy's series, one row per strategy and second."""
    return [
        {"strategy": record.label, **row, "repeat": record.repeat}
        for record in records
        for row in record.series().rows()
    ]


def _valid(result: RunResult) -> bool:
    """False only when the saturation rule or the steady-state rule found the run not valid."""
    found = [result.extra.get("validity"), result.extra.get("steady_state")]
    return not any(isinstance(each, Mapping) and each.get("valid") is False for each in found)


def run_document(
    scenario_name: str,
    results: Sequence[RunResult],
    records: Sequence[StrategyRecord],
    run: Mapping[str, Any],
    simulated: Mapping[str, Any] | None = None,
    *,
    description: str = "",
) -> dict[str, object]:
    """The ``results.json`` document (see the module docstring); ``description``, the
    scenario's, heads the report. With several runs of each strategy (``--repeat``), ``results`` holds the run that
    stands for each with every figure's spread, and ``repeats.runs`` every run
    (:mod:`retrystorm.experiment.analysis.repeats`)."""
    repeated = any(record.repeat > 1 for record in records)
    details = {
        run_name(record, repeated=repeated): {
            "target": record.target,
            "load": record.load,
            "started_utc": record.started_utc,
            "ended_utc": record.ended_utc,
            "t0_unix_s": record.wall_t0,
            "t0_utc": utc_text(record.wall_t0),
            **({"generators": generators} if (generators := record.generator_attempts()) else {}),
            **({"agents": dict(record.agents)} if record.agents is not None else {}),
        }
        for record in records
    }
    extra: dict[str, object] = {
        "choices": list(CHOICES),
        "ok": all(result.passed is not False for result in results),
        "valid": all(_valid(result) for result in results),
        "run": {**run, "strategies": details},
    }
    if simulated is not None:
        extra["simulated"] = dict(simulated)
    if description:
        extra["description"] = description
    rows: Sequence[Mapping[str, object] | RunResult] = results
    if repeated:
        runs = [{**result.to_json(), "repeat": record.repeat} for result, record in zip(results, records, strict=True)]
        extra["repeats"] = {"count": max(record.repeat for record in records), "runs": runs}
        extra["choices"] = [*CHOICES, REPEAT_CHOICE]
        rows = summarise(runs)
    return {"schema_version": SCHEMA_VERSION, **results_document(scenario_name, rows, **extra)}


def run_name(record: StrategyRecord, *, repeated: bool) -> str:
    """``smira``, or ``smira run 2`` when each strategy ran several times."""
    return f"{record.label} run {record.repeat}" if repeated else record.label


def standing_records(document: Mapping[str, Any], records: Sequence[StrategyRecord]) -> list[StrategyRecord]:
    """The records of the runs that stand for their strategies (``results``): all of them without ``--repeat``."""
    wanted = {(str(row["strategy"]), row.get("repeat", 1)) for row in document.get("results", [])}
    return [record for record in records if (record.label, record.repeat) in wanted]


def write_results(folder: Path, document: Mapping[str, Any], records: Sequence[StrategyRecord]) -> list[Path]:
    """Write ``results.json`` and ``timeseries.csv`` into ``folder`` (made if missing); the paths written."""
    folder.mkdir(parents=True, exist_ok=True)
    results = folder / "results.json"
    results.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    series = folder / "timeseries.csv"
    series.write_text(csv_text(timeseries_rows(records), columns=TIMESERIES_COLUMNS), encoding="utf-8")
    return [results, series]


def write_report_files(
    folder: Path,
    document: Mapping[str, Any],
    records: Sequence[StrategyRecord],
    simulated: Sequence[StrategyCurves] = (),
) -> list[Path]:
    """Draw the report of the runs that stand for their strategies into ``folder``: the PNGs and ``report.html``."""
    live = [live_curves(record) for record in standing_records(document, records)]
    return write_report(folder, document, live, simulated)


def write_run(
    folder: Path,
    document: Mapping[str, Any],
    records: Sequence[StrategyRecord],
    simulated: Sequence[StrategyCurves] = (),
) -> list[Path]:
    """Write ``results.json``, ``timeseries.csv`` and the report into ``folder``; the paths written."""
    return [*write_results(folder, document, records), *write_report_files(folder, document, records, simulated)]
