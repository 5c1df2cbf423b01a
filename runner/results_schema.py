"""The published shape of a live run's files: ``results.json`` (a JSON Schema) and ``timeseries.csv`` (its columns).

``results.json`` carries ``schema_version`` (:data:`SCHEMA_VERSION`, an integer): it goes up when a field is
removed, renamed or changes meaning; a field added keeps it, so a reader ignores keys it does not know. The JSON
Schema (draft 2020-12) is generated from the pydantic models below, which name every field a run writes, with its
type and meaning; a test runs the runner and checks its document against them, so a field written but not described
fails the test suite. ``docs/reference/results.schema.json`` is its published copy (a test keeps it current;
``python -m retrystorm.runner.results_schema`` prints it).

``timeseries.csv`` has exactly the columns :data:`TIMESERIES_COLUMNS`, in that order, whatever the run measured (a
series nobody could read is an empty cell): a spreadsheet or a CI step can address them by name or position.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from retrystorm.experiment.analysis.mechanism import AfterResume

#: Goes up when a field is removed, renamed or changes meaning (see the module docstring).
SCHEMA_VERSION = 1
SCHEMA_ID = f"urn:retrystorm:results:{SCHEMA_VERSION}"

#: ``timeseries.csv``: one row per strategy per second. Rates are per second over the interval ending at ``t_s``;
#: gauges are read at its end; latencies in seconds (see :mod:`retrystorm.runner.series`).
TIMESERIES_COLUMNS: tuple[str, ...] = (
    "strategy",  # the strategy's label
    "t_s",  # the end of the interval, seconds after the load started
    "goodput",  # logical requests that succeeded, per second
    "attempts",  # attempts sent, per second
    "timeouts",  # attempts that timed out, per second
    "gave_up",  # logical requests given up, per second
    "started",  # logical requests started, per second
    "attempt_latency_s",  # mean latency of the attempts that ended in the interval
    "in_flight",  # the target's in-flight gauge
    "delay_s",  # the target's modelled delay
    "connections",  # the target's open connections
    "abandoned_in_flight",  # requests the target still holds whose client went away
    "users_in_backoff",  # users waiting out a backoff delay
    "active_users",  # users running
    "in_progress",  # logical requests in progress
    "latency_p50",  # censored latency percentiles of the interval (seconds)
    "latency_p95",
    "latency_p99",
    "generator_cpu",  # the busiest load-generator process's share of one core
    "fresh_in_time",  # 1: the fresh request sent in the interval was answered within the attempt timeout; 0: not
    "repeat",  # which run of its strategy (1 without --repeat)
    "schedule_lag_s",  # mean of how late users started against their plan (think, arrival, backoff), seconds
    "loop_lag_s",  # mean of how late the load generator's event-loop watchers woke, seconds
)

Pair = tuple[float | None, float | None]
PerOutage = float | None | list[float | None]


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Verdict(_Closed):
    """One assertion checked."""

    check: str = Field(description="The assertion's name, as the scenario writes it (max_amplification, ...).")
    bound: float | str = Field(description="Its bound (a duration as written, e.g. 15s, or a number).")
    measured: PerOutage = Field(description="What was measured (a list when there were several outages).")
    passed: bool = Field(description="The bound held (after every outage, for a recovery check).")


class Validity(_Closed):
    """Whether the load generator kept up (the saturation rule)."""

    valid: bool = Field(
        description="The generator kept up: saturated seconds at most 5 % of those measured, or fewer than 2; "
        "and at most 10 % of its readings missing, or fewer than 2."
    )
    saturated_share: float = Field(description="Saturated seconds per second measured.")
    saturated_s: int = Field(description="Seconds saturated by any signal (CPU, demand or lag).")
    seconds: int = Field(description="Seconds measured; 0: no signal could be read (valid by default).")
    cpu_saturated_s: int = Field(description="Seconds in which a generator process used at least 90 % of a core.")
    demand_short_s: int = Field(
        description="Seconds in which the users started under 80 % of the requests they demanded (beyond 3 sd)."
    )
    cpu_peak: dict[str, float] = Field(description="Each load-generator process's largest share of one core.")
    cpu_mean: dict[str, float] = Field(description="Each load-generator process's mean share of one core.")
    started_per_s: float | None = Field(description="Logical requests started per second, over the windows judged.")
    demanded_per_s: float | None = Field(description="Logical requests the users demanded per second, the same.")
    worst_started_to_demanded: float | None = Field(
        description="The lowest ratio of started to demanded over one window; null: no demand judged."
    )
    readings_missed_share: float = Field(
        default=0.0, description="The load generator's readings that went unanswered, per reading taken."
    )
    lagging_s: int = Field(
        default=0,
        description="Seconds in which the users started later against their plan than half the mean think time "
        "(at least 10 ms, at most 50 ms), or the generator's event loop woke more than 50 ms late, on average "
        "(saturated whatever the CPU share).",
    )
    schedule_lag_mean_s: float | None = Field(
        default=None,
        description="How late the users started against their plan (think times' and backoffs' ends, open-loop "
        "arrivals), the mean over the seconds read of each second's mean; null: not read.",
    )
    schedule_lag_worst_s: float | None = Field(default=None, description="The same, the worst second's mean.")
    loop_lag_mean_s: float | None = Field(
        default=None,
        description="How late the generator's event loop woke a watcher that sleeps 100 ms, the mean over the "
        "seconds read of each second's mean; null: not read.",
    )
    loop_lag_worst_s: float | None = Field(default=None, description="The same, the worst second's mean.")


class SteadyState(_Closed):
    """Whether the steady window showed the service working (the steady-state rule)."""

    valid: bool = Field(description="The steady window showed the service working; false: no verdict (exit 3).")
    window: Pair = Field(description="The seconds judged, [start_s, end_s] after time 0.")
    problem: str | None = Field(description="Why not, in one line (the request, what it got, its share); null: valid.")
    goodput_per_s: float | None = Field(description="Logical requests that succeeded per second in the window.")
    ok_share: float | None = Field(description="Attempts answered 1xx-3xx per attempt that ended in the window.")
    ok_share_by_request: dict[str, float | None] = Field(description="The same, per request of the mix.")


class Trigger(_Closed):
    """One trigger window as it happened, with its kind's settings."""

    kind: Literal["pause", "slow", "spike", "errors"] = Field(description="The trigger's kind.")
    target: str = Field(description="What it affected: target (the service) or load (a spike).")
    start_s: float = Field(description="When it took effect, seconds after time 0 (measured, not planned).")
    end_s: float = Field(description="When it ended, the same.")
    capacity: float | None = Field(default=None, description="slow: the fraction of its capacity the target kept.")
    factor: float | None = Field(default=None, description="spike: the load's multiplier.")
    status: int | None = Field(default=None, description="errors: the HTTP status answered.")
    probability: float | None = Field(default=None, description="errors: the share of attempts answered so.")


class Missed(_Closed):
    """Readings without a target part and without a client part."""

    target: int = Field(description="Readings (one a second) without the target's gauges.")
    client: int = Field(description="Readings without the load generator's counters.")


class Spread(_Closed):
    """One figure over a strategy's runs (``--repeat``)."""

    values: list[float | None] = Field(description="The figure in each run, in run order (null: none, e.g. never).")
    min: float | None = Field(description="The smallest value over the runs (null: no run had one).")
    max: float | None = Field(description="The largest value over the runs (null: no run had one).")
    never: int = Field(description="Runs without a value (a recovery never seen).")


class GrpcFigures(_Closed):
    """A gRPC load's own figures."""

    mode: Literal["real", "emulated"] = Field(description="real: grpcio retried; emulated: the strategy did.")
    method: str = Field(description="The full method name every call invoked.")
    channels: int | None = Field(
        description="Processes that ran users, one gRPC channel each: gRPC's retry throttle is per channel."
    )
    attempts_at_target: int | None = Field(
        description="gRPC attempts the built-in target counted arriving (null: not counted there)."
    )


class FreshRequests(_Closed):
    """The fresh requests: one a second, each on a new connection, outside every user's retry loop."""

    sent: int = Field(description="Fresh requests sent, one at the middle of each second of the run.")
    answered_in_time: int = Field(description="Of those, the ones answered below 400 within the attempt timeout.")
    every_s: float = Field(description="Seconds between two fresh requests.")
    timeout_s: float = Field(description="How long each waited for its answer (the attempt timeout).")


class StrategyResult(_Closed):
    """One strategy's run."""

    strategy: str = Field(description="The strategy's label, as the scenario writes it.")
    spec: str = Field(description="The strategy's full spec.")
    attempts: int = Field(description="Attempts sent (on the wire).")
    requests: int = Field(description="Logical requests started.")
    succeeded: int = Field(description="Logical requests that succeeded.")
    gave_up: int = Field(description="Logical requests given up (the strategy stopped retrying them).")
    unfinished: int = Field(description="Logical requests still in progress when the run ended.")
    rejected_locally: int = Field(description="Attempts or retries the retry budget refused.")
    amplification: float | None = Field(description="Attempts sent per logical request started.")
    success_ratio: float | None = Field(description="Succeeded per logical request started.")
    latency_p50: float | None = Field(description="Seconds, censored: unfinished requests at their age.")
    latency_p75: float | None = Field(description="Seconds, censored, as latency_p50.")
    latency_p90: float | None = Field(description="Seconds, censored, as latency_p50.")
    latency_p95: float | None = Field(description="Seconds, censored, as latency_p50.")
    latency_p99: float | None = Field(description="Seconds, censored, as latency_p50.")
    latency_max: float | None = Field(
        description="Seconds: the upper bound of the highest non-empty bucket; null: beyond 10 min."
    )
    latency_censored: int = Field(description="Requests counted at their age (unfinished).")
    peak_in_flight: int | None = Field(description="The largest of the target's once-a-second in-flight readings.")
    outages: list[Pair] = Field(
        description="Each recovery's window [start_s, end_s], as it happened (a pause: from when the target was "
        "frozen, after the journal and the watchdog, to its resume)."
    )
    server_recovery_s: PerOutage = Field(description="Seconds from each resume; null: not recovered; a list: several.")
    client_recovery_s: PerOutage = Field(
        description="Seconds from each resume until goodput is back to 90 % of steady."
    )
    server_recovery_signals: str | None = Field(
        default=None,
        description="Which readings judged the server's recovery: its gauges, or the client side, and whether "
        "fresh requests answered in time (or why they were not used), and why an in-flight gauge pinned at a "
        "ceiling below its threshold was not used.",
    )
    fresh_requests: FreshRequests | None = Field(
        default=None, description="The fresh requests a live HTTP run sent (absent: none, e.g. simulated or gRPC)."
    )
    assertions: list[Verdict] | None = Field(default=None, description="Each assertion checked (absent: none).")
    passed: bool | None = Field(default=None, description="Every assertion held (absent: none).")
    timeouts: int = Field(description="Attempts that timed out.")
    retries: int = Field(description="Retries scheduled (each followed by a backoff).")
    in_flight_end: int | None = Field(description="The target's in-flight gauge at its last reading.")
    abandoned_in_flight_end: int | None = Field(
        description="Of those, the requests whose client went away, at the same reading."
    )
    after_resume: list[AfterResume] = Field(description="The figures of each outage's aftermath, one per outage.")
    validity: Validity = Field(
        description="The saturation rule's finding: whether the load generator kept up, with its figures."
    )
    planned_outages: list[Pair] = Field(description="Each outage's window [start_s, end_s] as the scenario planned it.")
    readings_missed: Missed = Field(description="Readings that lacked a part, by part.")
    steady_state: SteadyState | None = Field(description="The steady-state rule; null: too short to judge.")
    repeat: int | None = Field(default=None, description="With --repeat: which run of the strategy this is (from 1).")
    runs: int | None = Field(default=None, description="With --repeat: the strategy's runs; this row stands for them.")
    spread: dict[str, Spread] | None = Field(
        default=None, description="With --repeat: each headline figure over the strategy's runs."
    )
    triggers: list[Trigger] | None = Field(default=None, description="Every window, with slow, spike or errors.")
    grpc: GrpcFigures | None = Field(default=None, description="A gRPC load's figures (absent: HTTP).")


class StrategyRun(_Closed):
    """What ran for one strategy, and when (UTC, ISO 8601)."""

    target: str = Field(description="The target as it ran, in words (what it was, its pid, its URL).")
    load: str = Field(description="The load generator as it ran, in words (its processes, its metrics URL).")
    started_utc: str = Field(description="When this strategy's run started (UTC, ISO 8601).")
    ended_utc: str = Field(description="When it ended.")
    t0_unix_s: float | None = Field(description="The wall clock (Unix seconds) at this strategy's time 0 (t_s = 0).")
    t0_utc: str | None = Field(description="The same moment in UTC, ISO 8601 with milliseconds.")
    generators: dict[str, float] | None = Field(
        default=None,
        description="Attempts each load-generator process sent (a master's workers kept apart by process): every "
        "worker's share of the load.",
    )
    agents: dict[str, list[dict[str, Any]]] | None = Field(
        default=None,
        description="Across hosts: each chaos agent's own record of the outages it held for this strategy, by host, "
        "as its GET /outages lists them.",
    )


class RunInfo(_Closed):
    """The run: its scenario, seed, stack, folder, and what ran for each strategy."""

    scenario: str = Field(description="The scenario's name.")
    seed: int = Field(description="The random seed of the run.")
    stack: str = Field(description="Where it ran, in words: local processes or the compose stack.")
    folder: str = Field(description="The run folder.")
    strategies: dict[str, StrategyRun] = Field(description="What ran for each strategy, by label.")


class SloBreach(_Closed):
    """The stop condition that stopped the run."""

    condition: str = Field(description="The stop condition as the scenario writes it.")
    query: str = Field(description="The series' name or the PromQL text.")
    strategy: str = Field(description="The strategy whose run it stopped.")
    at_s: float = Field(description="Seconds after the strategy's load started.")
    value: float = Field(description="The value that breached it.")


class Slo(_Closed):
    """The scenario's stop conditions (``slo:``) and what they did."""

    conditions: list[str] = Field(description="The stop conditions, as the scenario writes them.")
    breached: SloBreach | None = Field(description="The condition that stopped the run; null: none did.")
    skipped: list[str] = Field(description="The strategies not run because the run stopped.")


class Repeats(_Closed):
    """Every run of every strategy, with ``--repeat``."""

    count: int = Field(description="Runs of each strategy.")
    runs: list[StrategyResult] = Field(description="Every run, each with its repeat number.")


class ResultsDocument(_Closed):
    """``results.json`` of ``retrystorm run``."""

    model_config = ConfigDict(extra="forbid", title="retrystorm results.json")

    schema_version: Literal[1] = Field(description="The shape's version (see docs/reference/results.md).")
    experiment: str = Field(description="The scenario's name.")
    results: list[StrategyResult] = Field(description="One object per strategy, in the order they ran.")
    choices: list[str] = Field(description="How the live figures were measured, in sentences.")
    ok: bool = Field(description="No assertion failed and no stop condition was breached.")
    valid: bool = Field(
        description="Every steady state showed the service working and no load generator was saturated."
    )
    run: RunInfo = Field(description="The run: scenario, seed, stack, folder, and what ran for each strategy.")
    description: str | None = Field(default=None, description="The scenario's description.")
    simulated: dict[str, object] | None = Field(default=None, description="With --simulate: the simulated runs.")
    slo: Slo | None = Field(default=None, description="With stop conditions: what they did.")
    repeats: Repeats | None = Field(default=None, description="With --repeat: every run of every strategy.")


#: The fields of :class:`~retrystorm.experiment.analysis.mechanism.AfterResume` (a dataclass of the analysis, which
#: imports no pydantic), described here; the window is from the resume until the server recovered, else until the
#: next outage or the end of the data.
AFTER_RESUME_FIELDS: dict[str, str] = {
    "window_s": "Seconds from the resume to the end of the window.",
    "steady_attempts_per_s": "Attempts sent per second over the steady window.",
    "steady_goodput_per_s": "Logical requests that succeeded per second over the steady window.",
    "attempts_per_s": "Attempts sent per second over the window.",
    "attempts_ratio": "attempts_per_s over steady_attempts_per_s: how much more the users offered.",
    "goodput_per_s": "Goodput over the window's last 10 s (or all of it when shorter).",
    "in_flight_at_resume": "The target's first in-flight reading taken after the resume (in the window).",
    "peak_in_flight": "The largest in-flight reading taken in the window: the peak the headline quotes.",
    "in_flight_end": "The last in-flight reading taken in the window.",
    "goodput_end_per_s": "Goodput over the last 10 s before the next outage or the end of the run: where the users "
    "ended up.",
    "fresh_sent_s": "Seconds of the window in which a fresh request was sent (null: none were sent).",
    "fresh_in_time_s": "Of those, the seconds whose fresh requests were answered within the attempt timeout.",
    "in_flight_end_s": "Seconds after the resume at which in_flight_end was read (null: no reading in the window).",
    "in_flight_readings": "In-flight readings due in the window, one a second (null: no server readings).",
    "in_flight_missed": "Of those, the readings that did not arrive (a /metrics unanswered, a paused target).",
    "rests_on_missed": "Whether the server's verdict rests on the missing readings: it would differ had they read "
    "back at steady levels.",
}


def results_schema() -> dict[str, object]:
    """The JSON Schema of ``results.json``, generated from :class:`ResultsDocument`, every field described."""
    schema = TypeAdapter(ResultsDocument).json_schema()
    after_resume = schema["$defs"]["AfterResume"]
    after_resume["description"] = (
        "The figures of one outage's aftermath; a figure is null where its series has no reading."
    )
    for name, field in after_resume["properties"].items():
        field["description"] = AFTER_RESUME_FIELDS[name]
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}


def schema_text() -> str:
    """The schema as the published file holds it."""
    return json.dumps(results_schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":  # pragma: no cover
    import sys

    sys.stdout.write(schema_text())
