"""``retrystorm sim smira``: the seed outage (github.com/smira/exponential-backoff)."""

from __future__ import annotations

from experiment.analysis import default_steady_window, goodput_fraction, steady_levels
from experiment.scenario import Scenario
from sim.experiments.base import Finding, Report
from sim.experiments.scenario_runs import Progress, load_shipped, run_builtin

SCENARIO = "smira-sigstop"

NOTES = [
    (
        "The seed's Go server overflows its delay above ~6,000 in flight (so its in-flight count settled near "
        "7,800); the model clamps the delay at max_delay (10 min), so fixed's in-flight count keeps growing."
    ),
    "smira's first backoff grows from the think time that preceded the request, as in the Go client.",
]


def load(seed: int | None = None) -> Scenario:
    """The shipped scenario, with another seed if given."""
    return load_shipped(SCENARIO, seed)


def run(scenario: Scenario | None = None, progress: Progress | None = None) -> Report:
    """Run fixed 100 ms and smira through the seed outage and check the seed's findings."""
    return run_builtin(
        "smira", scenario or load(), notes=NOTES, needs={"fixed:100ms", "smira"}, check=findings, progress=progress
    )


def findings(report: Report, _scenario: Scenario) -> list[Finding]:
    """Fixed never recovers; smira's server is back within 15 s of the resume; its users lag behind."""
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
        Finding(
            f"fixed:100ms never recovers: in-flight grows to {fixed.peak_in_flight:,}, no server recovery "
            "within the run",
            all(time is None for time in fixed_server),
        ),
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
