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
from typing import Literal

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
    passed: bool


class Validity(_Closed):
    """Whether the load generator kept up (the saturation rule)."""

    valid: bool
    saturated_share: float = Field(description="Saturated seconds per second measured.")
    saturated_s: int
    seconds: int
    cpu_saturated_s: int
    demand_short_s: int
    cpu_peak: dict[str, float] = Field(description="Each load-generator process's largest share of one core.")
    cpu_mean: dict[str, float]
    started_per_s: float | None
    demanded_per_s: float | None
    worst_started_to_demanded: float | None


class SteadyState(_Closed):
    """Whether the steady window showed the service working (the steady-state rule)."""

    valid: bool
    window: Pair = Field(description="The seconds judged, [start_s, end_s] after time 0.")
    problem: str | None = Field(description="Why not, in one line (the request, what it got, its share); null: valid.")
    goodput_per_s: float | None
    ok_share: float | None = Field(description="Attempts answered 1xx-3xx per attempt that ended in the window.")
    ok_share_by_request: dict[str, float | None] = Field(description="The same, per request of the mix.")


class Trigger(_Closed):
    """One trigger window as it happened, with its kind's settings."""

    kind: Literal["pause", "slow", "spike", "errors"]
    target: str
    start_s: float
    end_s: float
    capacity: float | None = None
    factor: float | None = None
    status: int | None = None
    probability: float | None = None


class Missed(_Closed):
    """Readings without a target part and without a client part."""

    target: int
    client: int


class StrategyResult(_Closed):
    """One strategy's run."""

    strategy: str = Field(description="The strategy's label, as the scenario writes it.")
    spec: str = Field(description="The strategy's full spec.")
    attempts: int = Field(description="Attempts sent (on the wire).")
    requests: int = Field(description="Logical requests started.")
    succeeded: int
    gave_up: int
    unfinished: int = Field(description="Logical requests still in progress when the run ended.")
    rejected_locally: int = Field(description="Attempts or retries the retry budget refused.")
    amplification: float | None = Field(description="Attempts sent per logical request started.")
    success_ratio: float | None
    latency_p50: float | None = Field(description="Seconds, censored: unfinished requests at their age.")
    latency_p75: float | None
    latency_p90: float | None
    latency_p95: float | None
    latency_p99: float | None
    latency_max: float | None
    latency_censored: int = Field(description="Requests counted at their age (unfinished).")
    peak_in_flight: int | None
    outages: list[Pair] = Field(description="Each recovery's window [start_s, end_s], as it happened.")
    server_recovery_s: PerOutage = Field(description="Seconds from each resume; null: not recovered; a list: several.")
    client_recovery_s: PerOutage
    server_recovery_signals: str | None = None
    assertions: list[Verdict] | None = None
    passed: bool | None = Field(default=None, description="Every assertion held (absent: none).")
    timeouts: int
    retries: int
    in_flight_end: int | None
    abandoned_in_flight_end: int | None
    after_resume: list[AfterResume]
    validity: Validity
    planned_outages: list[Pair]
    readings_missed: Missed
    steady_state: SteadyState | None = Field(description="The steady-state rule; null: too short to judge.")
    triggers: list[Trigger] | None = Field(default=None, description="Every window, with slow, spike or errors.")


class StrategyRun(_Closed):
    """What ran for one strategy, and when (UTC, ISO 8601)."""

    target: str
    load: str
    started_utc: str
    ended_utc: str
    t0_unix_s: float | None = Field(description="The wall clock (Unix seconds) at this strategy's time 0 (t_s = 0).")
    t0_utc: str | None = Field(description="The same moment in UTC, ISO 8601 with milliseconds.")


class RunInfo(_Closed):
    """The run: its scenario, seed, stack, folder, and what ran for each strategy."""

    scenario: str
    seed: int
    stack: str
    folder: str
    strategies: dict[str, StrategyRun]


class SloBreach(_Closed):
    """The stop condition that stopped the run."""

    condition: str
    query: str = Field(description="The series' name or the PromQL text.")
    strategy: str
    at_s: float = Field(description="Seconds after the strategy's load started.")
    value: float


class Slo(_Closed):
    """The scenario's stop conditions (``slo:``) and what they did."""

    conditions: list[str]
    breached: SloBreach | None
    skipped: list[str] = Field(description="The strategies not run because the run stopped.")


class ResultsDocument(_Closed):
    """``results.json`` of ``retrystorm run``."""

    model_config = ConfigDict(extra="forbid", title="retrystorm results.json")

    schema_version: Literal[1] = Field(description="The shape's version (see docs/reference/results.md).")
    experiment: str = Field(description="The scenario's name.")
    results: list[StrategyResult]
    choices: list[str] = Field(description="How the live figures were measured, in sentences.")
    ok: bool = Field(description="No assertion failed and no stop condition was breached.")
    valid: bool = Field(
        description="Every steady state showed the service working and no load generator was saturated."
    )
    run: RunInfo
    description: str | None = Field(default=None, description="The scenario's description.")
    simulated: dict[str, object] | None = Field(default=None, description="With --simulate: the simulated runs.")
    slo: Slo | None = Field(default=None, description="With stop conditions: what they did.")


def results_schema() -> dict[str, object]:
    """The JSON Schema of ``results.json``, generated from :class:`ResultsDocument`."""
    schema = TypeAdapter(ResultsDocument).json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}


def schema_text() -> str:
    """The schema as the published file holds it."""
    return json.dumps(results_schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":  # pragma: no cover
    import sys

    sys.stdout.write(schema_text())
