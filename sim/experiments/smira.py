"""``retrystorm sim smira``: the seed outage (github.com/smira/exponential-backoff)."""

from __future__ import annotations

import dataclasses
import statistics

from retrystorm.experiment.analysis import default_steady_window, goodput_fraction, steady_levels
from retrystorm.experiment.scenario import Scenario
from retrystorm.sim.experiments.base import Finding, Report
from retrystorm.sim.experiments.scenario_runs import Progress, load_shipped, run_builtin
from retrystorm.target.models import ExponentialModel

SCENARIO = "smira-sigstop"

PLATEAU = (
    "The seed's Go server settles at 7,792 in flight: its delay is int64 nanoseconds, which overflows one "
    "request above that (server.go line 26) to about -292 years, so every request finishes at its next check, "
    "the count drops back, and clients get some answers through (65-80 OK/s in the seed's runs). That plateau "
    "is an artifact of the Go code, not of overload."
)
_BACKOFF = "smira's first backoff grows from the think time that preceded the request, as in the Go client."
NOTES = {
    "clamp": [
        (
            f"{PLATEAU} The model clamps the delay at max_delay (10 min) instead, so fixed's in-flight count keeps "
            "growing and its clients get nothing; --overflow go reproduces the overflow."
        ),
        _BACKOFF,
    ],
    "go": [
        (
            f"{PLATEAU} --overflow go reproduces it (exponential:overflow=go); the default clamps the delay at "
            "max_delay (10 min) instead."
        ),
        (
            "Through the overflow fixed's clients get a share of their steady goodput that the 90 % client-recovery "
            "rule may call a recovery: the scenario's fixed:100ms client_recovers_within: never is not checked "
            "here, the findings report that goodput instead. How large a share depends on how the stuck requests' "
            "checks are spread: admitted together at the resume, they check together and leave one per check, so "
            "fresh requests get most releases; spread evenly over a tick, fixed's clients would get about 4 OK/s."
        ),
        _BACKOFF,
    ],
}


def load(seed: int | None = None, overflow: str = "clamp") -> Scenario:
    """The shipped scenario, with another seed if given; ``overflow="go"``: the Go server's overflowing delay."""
    scenario = load_shipped(SCENARIO, seed)
    if overflow == "clamp":
        return scenario
    model = scenario.model
    if not isinstance(model, ExponentialModel):
        return scenario
    assertions = dict(scenario.assertions)
    if "fixed:100ms" in assertions:
        assertions["fixed:100ms"] = assertions["fixed:100ms"].model_copy(update={"client_recovers_within": None})
    model = dataclasses.replace(model, overflow=overflow)
    description = (
        "The seed outage against the Go server's own delay (exponential:overflow=go): fixed 100 ms retries hold "
        "it at 7,792 in flight, where the delay overflows; the seed's exponential backoff brings it back."
    )
    return scenario.model_copy(update={"model": model, "assertions": assertions, "description": description})


def run(scenario: Scenario | None = None, progress: Progress | None = None) -> Report:
    """Run fixed 100 ms and smira through the seed outage and check the seed's findings."""
    scenario = scenario or load()
    overflow = scenario.model.overflow if isinstance(scenario.model, ExponentialModel) else "clamp"
    return run_builtin(
        "smira", scenario, notes=NOTES[overflow], needs={"fixed:100ms", "smira"}, check=findings, progress=progress
    )


def findings(report: Report, scenario: Scenario) -> list[Finding]:
    """Fixed never recovers (with ``overflow=go``: stuck at the overflow point, some answers
    through); smira's server is back within 15 s of the resume; its users lag behind."""
    by_label = {result.strategy: result for result in report.results}
    fixed, smira = by_label["fixed:100ms"], by_label["smira"]
    fixed_server = [recovery.server_s for recovery in fixed.recoveries]
    if not smira.recoveries:
        return [Finding("the seed's findings need its outage; this scenario has none", holds=False)]
    smira_recovery = smira.recoveries[0]
    server_s, client_s = smira_recovery.server_s, smira_recovery.client_s
    run = next(run for run in report.runs if run.config.spec.label == "smira")
    samples = run.series.samples()
    window = default_steady_window([smira_recovery.outage])
    levels = steady_levels(samples, window) if window else None
    resume = smira_recovery.outage.end_s
    at_10s = goodput_fraction(samples, levels, resume + 5, resume + 15) if levels else None
    lag = f"{at_10s:.0%}" if at_10s is not None else "unknown"
    client = f"{client_s:.0f} s" if client_s is not None else "not within the run"
    return [
        *_fixed_findings(report, scenario, all(time is None for time in fixed_server), resume),
        Finding(
            f"smira brings the server back {server_s:.0f} s after the resume (bound: 15 s)"
            if server_s is not None
            else "smira brings the server back within 15 s of the resume: it did not",
            server_s is not None and server_s <= 15,
        ),
        Finding(
            f"smira's users lag behind: goodput {lag} of steady 5-15 s after the resume; client recovery {client}",
            server_s is not None
            and (client_s is None or client_s >= server_s + 10)
            and at_10s is not None
            and at_10s < 0.6,
        ),
    ]


def _fixed_findings(report: Report, scenario: Scenario, never: bool, resume_s: float) -> list[Finding]:
    """Fixed's server never recovers; its goodput from 10 s after the resume; with ``overflow=go``
    its in-flight count at the overflow point and that goodput in tens per second."""
    fixed = next(result for result in report.results if result.strategy == "fixed:100ms")
    run = next(run for run in report.runs if run.config.spec.label == "fixed:100ms")
    samples = run.series.samples()
    after = [i for i in range(len(samples)) if samples.interval_start(i) >= resume_s + 10 - 1e-9]
    ok_per_s = sum(samples.goodput[i] for i in after) / len(after) if after else 0.0
    window = default_steady_window([recovery.outage for recovery in fixed.recoveries])
    levels = steady_levels(samples, window) if window else None
    share = f" ({ok_per_s / levels.goodput:.0%} of steady)" if levels and levels.goodput > 0 else ""
    model = scenario.model
    overflow_at = model.overflow_at() if isinstance(model, ExponentialModel) else None
    if overflow_at is None:
        return [
            Finding(
                f"fixed:100ms never recovers: in-flight grows to {fixed.peak_in_flight:,}, no server recovery "
                f"within the run; its clients get {ok_per_s:.1f} OK/s from 10 s after the resume",
                never,
            )
        ]
    in_flight = [value for i in after if (value := samples.in_flight[i]) is not None]
    settled = statistics.median(in_flight) if in_flight else 0.0
    return [
        Finding(
            f"fixed:100ms never recovers: in-flight settles at {settled:,.0f} from 10 s after the resume (the "
            f"delay overflows from {overflow_at:,}; peak {fixed.peak_in_flight:,}), no server recovery within the run",
            never and abs(settled - (overflow_at - 1)) <= 5,
        ),
        Finding(
            f"through the overflow fixed:100ms's clients get {ok_per_s:.0f} OK/s{share} from 10 s after the resume "
            "(the seed's runs: 65-80; none with the clamped delay)",
            ok_per_s >= 10,
        ),
    ]
