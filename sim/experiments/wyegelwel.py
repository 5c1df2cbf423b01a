"""``retrystorm sim wyegelwel``: the seed simulation (Yegelwel, "Exploring backoff", 2016)."""

from __future__ import annotations

import statistics

from retrystorm.experiment.scenario import Scenario
from retrystorm.sim.experiments.base import Finding, Report
from retrystorm.sim.experiments.scenario_runs import Progress, load_shipped, run_builtin
from retrystorm.target.models import QueueModel

SCENARIO = "wyegelwel-burst"
FAST = ("NB", "CB", "URB")
BACKING_OFF = ("EB", "REB")

NOTES = [
    "One tick is read as one second; first requests and backoffs fall at any time and are served from the next tick.",
    (
        "Spike timing (unstated): the 160 spike clients send their first request uniformly within ticks [25, 35), "
        "where the article's figure shows its spike."
    ),
    (
        "Progress when overwhelmed (unstated): 25 (= overwhelm_at) outstanding requests, chosen uniformly, make one "
        "tick of progress per tick (queue model, progress_per_tick=auto)."
    ),
    (
        "Run length: 3000 ticks as stated; clients still retrying then count as unfinished, in the latency "
        "percentiles at their age at tick 3000 (the article's latencies, up to ~3,600 ticks, suggest its run went on "
        "until all had succeeded)."
    ),
    "EB waits min(2^n, 30) ticks before retry n (the article writes max, which cannot be meant); REB U(0, that).",
]


def load(seed: int | None = None) -> Scenario:
    """The shipped scenario, with another seed if given."""
    return load_shipped(SCENARIO, seed)


def run(scenario: Scenario | None = None, progress: Progress | None = None) -> Report:
    """Run the five strategies and check the article's findings."""
    return run_builtin(
        "wyegelwel", scenario or load(), notes=NOTES, needs={*FAST, *BACKING_OFF}, check=findings, progress=progress
    )


def findings(report: Report, scenario: Scenario) -> list[Finding]:
    """Fewer attempts and far lower latency for EB/REB; NB's plateau at the overwhelm threshold."""
    by_label = {result.strategy: result for result in report.results}
    ratios = [by_label[f].attempts / max(1, by_label[b].attempts) for f in FAST for b in BACKING_OFF]
    ratio = min(ratios)
    fast_p50 = min(by_label[f].latency.p50 or float("inf") for f in FAST)
    slow_p50 = max(by_label[b].latency.p50 or float("inf") for b in BACKING_OFF)
    unfinished_fast = sum(by_label[f].unfinished for f in FAST)
    unfinished_backing = sum(by_label[b].unfinished for b in BACKING_OFF)
    found = [
        Finding(
            f"EB and REB send {ratio:.0f}-{max(ratios):.0f}x fewer attempts than NB, CB and URB (the article: 33-57x)",
            ratio >= 10,
        ),
        Finding(
            f"EB and REB have far lower latency: median <= {slow_p50:.1f} ticks against >= {fast_p50:.0f}; "
            f"all their clients finish ({unfinished_backing} unfinished) while NB, CB and URB leave "
            f"{unfinished_fast} unfinished at tick 3000",
            slow_p50 * 10 <= fast_p50 and unfinished_backing == 0,
        ),
    ]
    nb_run = next(run for run in report.runs if run.config.spec.label == "NB")
    threshold = scenario.model.overwhelm_at if isinstance(scenario.model, QueueModel) else 25
    during = nb_run.series.attempts[100:1000]
    after = nb_run.series.attempts[1000:]
    windows = [statistics.fmean(during[i : i + 50]) for i in range(0, len(during), 50)]
    mean = statistics.fmean(during) if during else 0.0
    found.append(
        Finding(
            f"NB sits on a plateau at the overwhelm threshold ({threshold}): {mean:.1f} attempts per tick over "
            f"ticks 100-1000 (50-tick means {min(windows, default=0):.1f}-{max(windows, default=0):.1f}), "
            f"and still {statistics.fmean(after) if after else 0:.1f} after arrivals stop, its spike clients "
            "never draining",
            bool(windows) and all(abs(window - threshold) <= 0.1 * threshold for window in windows),
        )
    )
    return found
