"""``retrystorm sim brooker``: Marc Brooker's collapse simulation (github.com/mbrooker/simulator_example).

``simple_collapse_sim/sim.py`` runs each client type 10 times through a 5 s spike from
40/s to 80/s and plots the mean per second: without backoff the successes fall to
nothing after the spike and retries take over; with backoff and jitter the system comes
back. The shipped scenario ``brooker-spike`` is one seed; the findings check 10, as the
source averages 10 runs.
"""

from __future__ import annotations

from retrystorm.durations import format_duration
from retrystorm.experiment.analysis import default_steady_window, goodput_fraction, steady_levels
from retrystorm.experiment.scenario import Scenario
from retrystorm.sim.config import RunConfig
from retrystorm.sim.engine import simulate
from retrystorm.sim.experiments.base import Finding, Report
from retrystorm.sim.experiments.scenario_runs import Progress, load_shipped, run_builtin

SCENARIO = "brooker-spike"
NO_BACKOFF, BACKOFF = "no-backoff", "backoff+jitter"
SEEDS = 10
#: Of the 10 seeds, how many must collapse without backoff (the source's mean falls to nothing after the spike).
COLLAPSES_AT_LEAST = 6

NOTES = [
    (
        "The source's server takes its delay from its concurrency on arrival, 1 s + 10 ms x c (the linear model); "
        "the network delay is exponential with mean 0.1 s each way (sim.network_delay), as its netdelay."
    ),
    (
        "retries_left = 3 makes 3 attempts in all (the source's comment says retries); the timeout runs 3 s from "
        "each send; backoff: backoff_time 10 s doubled before each wait, U(0, 20 s) then U(0, 40 s)."
    ),
    "The spike multiplies the Poisson arrivals by 2 from 20 s to 25 s: 40 more streams of 1/s, then none.",
    (
        f"Findings over {SEEDS} seeds (the scenario's and the next), as the source averages {SEEDS} runs; the "
        "tables show the scenario's own seed. Goodput after the spike: its mean over the last 20 s against steady."
    ),
]


def load(seed: int | None = None) -> Scenario:
    """The shipped scenario, with another seed if given."""
    return load_shipped(SCENARIO, seed)


def run(scenario: Scenario | None = None, progress: Progress | None = None) -> Report:
    """Run both clients through the spike and check the source's finding over 10 seeds."""
    return run_builtin(
        "brooker", scenario or load(), notes=NOTES, needs={NO_BACKOFF, BACKOFF}, check=findings, progress=progress
    )


def _over_seeds(scenario: Scenario, label: str) -> list[tuple[float | None, float | None]]:
    """Server recovery and late goodput (a fraction of steady) of ``label``, for each of the seeds."""
    found = []
    for seed in range(scenario.seed, scenario.seed + SEEDS):
        seeded = scenario.model_copy(update={"seed": seed})
        entry = next(entry for entry in seeded.strategies if entry.label == label)
        timeline = seeded.timeline()
        output = simulate(RunConfig.from_scenario(seeded, entry, timeline.outages, timeline.triggers))
        result = output.result()
        samples = output.series.samples()
        window = default_steady_window(timeline.episodes())
        levels = steady_levels(samples, window) if window else None
        end = seeded.load.duration
        late = goodput_fraction(samples, levels, end - 20, end) if levels else None
        found.append((result.recoveries[0].server_s if result.recoveries else None, late))
    return found


def findings(report: Report, scenario: Scenario) -> list[Finding]:
    """No backoff collapses (in most seeds) and stays down; backoff with jitter recovers (in every seed)."""
    plain, backoff = _over_seeds(scenario, NO_BACKOFF), _over_seeds(scenario, BACKOFF)
    report.extra["seeds"] = {
        label: [{"seed": scenario.seed + i, "server_recovery_s": server, "late_goodput": late}
                for i, (server, late) in enumerate(runs)]
        for label, runs in ((NO_BACKOFF, plain), (BACKOFF, backoff))
    }  # fmt: skip
    collapsed = [late for server, late in plain if server is None]
    late_text = f"{sum(v or 0 for v in collapsed) / len(collapsed):.0%}" if collapsed else "-"
    recovered = [server for server, _ in backoff if server is not None]
    slowest = format_duration(max(recovered)) if recovered else "-"
    return [
        Finding(
            f"{NO_BACKOFF} collapses after the spike and stays down: the server never recovers in {len(collapsed)} of "
            f"{SEEDS} seeds, whose goodput over the last 20 s is {late_text} of steady",
            len(collapsed) >= COLLAPSES_AT_LEAST and all((v or 0) < 0.2 for v in collapsed),
        ),
        Finding(
            f"{BACKOFF} recovers: the server is back in {len(recovered)} of {SEEDS} seeds, the slowest {slowest} "
            "after the spike",
            len(recovered) == SEEDS,
        ),
    ]
