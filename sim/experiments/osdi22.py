"""``retrystorm sim osdi22``: the retry experiment of "Metastable Failures in the Wild" (OSDI'22).

The four published runs (github.com/lexiangh/Metastability, ``Retry_Metastability``:
``client/experiments.sh``), each a variant of the shipped scenario ``osdi22-retry`` (run
(b)): the cut's capacity (the CPUs given to the primary, of the 2 it has), its length, and
the client's rate (an insert every 75 us, or every 100 us: 25 % less load). Each run's
published verdict is its assertion, and a finding.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from retrystorm.durations import format_duration
from retrystorm.experiment.analysis import RunResult
from retrystorm.experiment.scenario import Scenario, scenario_data, scenario_from_data, shipped_scenario
from retrystorm.sim.experiments.base import Finding, Report
from retrystorm.sim.experiments.scenario_runs import Progress, run_scenario
from retrystorm.sim.result import RunOutput

SCENARIO = "osdi22-retry"
#: The CPUs of the primary's container outside the cut (primary/trigger.sh's last argument, 2).
CPUS = 2.0
#: A recovery the published "recovers" stands for: within this of the cut's end.
RECOVERS_WITHIN_S = 30.0


@dataclasses.dataclass(frozen=True, slots=True)
class Published:
    """One published run: the CPUs during the cut, how long, the load (1: an insert every 75 us), the verdict."""

    name: str
    cpus: float
    for_s: float
    load: float
    recovers: bool

    @property
    def label(self) -> str:
        """``(b) 0.40 CPUs, 10s``, with ``, 75 % load`` for a lighter load."""
        load = "" if self.load == 1 else f", {self.load:.0%} load"
        return f"({self.name}) {self.cpus:.2f} CPUs, {format_duration(self.for_s)}{load}"


PUBLISHED = (
    Published("a", 0.45, 10.0, 1.0, recovers=True),
    Published("b", 0.40, 10.0, 1.0, recovers=False),
    Published("c", 0.40, 9.0, 1.0, recovers=True),
    Published("d", 0.40, 10.0, 0.75, recovers=True),
)

NOTES = [
    (
        "A cut of the primary from 2 CPUs to C (docker update --cpus C) is a slow to capacity C / 2 "
        "(0.45 CPUs: 0.225, 0.40: 0.2); the server's work takes 2 / C as long meanwhile."
    ),
    (
        "The server is the linear model (capacity 1/slope) at utilisation 0.38, within 0.365-0.39, where the "
        "simulation gives all four published verdicts; the study does not give the primary's utilisation."
    ),
    (
        "The rate is 1/53 of the published 13,333 inserts/s (one every 4 ms), the capacity with it, a lone insert "
        "taking an eighth of the interval: with evenly spaced sends and a deterministic model the verdicts depend "
        "only on the utilisation, the cut, its length and the timeout (0.365-0.39 at 1/10 and 1/20 of the rate too)."
    ),
    (
        "Not modelled: the replica set, the Go driver's pool of connections (every attempt reaches the server), "
        "and the client stopping after 1,000,000 inserts (the load here goes on to the end of the run)."
    ),
]


def variant(data: dict[str, Any], source: str, run: Published, seed: int | None = None) -> Scenario:
    """The shipped scenario as published run ``run``, with its verdict as the assertion."""
    varied = copy.deepcopy(data)
    fault = varied["faults"][0]
    fault["capacity"] = run.cpus / CPUS
    fault["for"] = run.for_s
    varied["load"]["rate"] = varied["load"]["rate"] * run.load
    bound = format_duration(RECOVERS_WITHIN_S) if run.recovers else "never"
    label = varied["strategies"][0]["label"]
    varied["assertions"] = {label: {"server_recovers_within": bound}}
    if seed is not None:
        varied["seed"] = seed
    return scenario_from_data(varied, source=f"{source}, run ({run.name})")


def _relabel(result: RunResult, output: RunOutput, label: str) -> tuple[RunResult, RunOutput]:
    spec = dataclasses.replace(output.config.spec, label=label)
    output.config = dataclasses.replace(output.config, spec=spec)
    return dataclasses.replace(result, strategy=label), output


def run(seed: int | None = None, progress: Progress | None = None) -> Report:
    """The four published runs, each checked against its published verdict."""
    data, source = scenario_data(shipped_scenario(SCENARIO))
    report = Report(experiment="osdi22", kind="runs", rows=[], notes=list(NOTES))
    for published in PUBLISHED:
        scenario = variant(data, source, published, seed)
        found = run_scenario(scenario, progress)
        result, output = _relabel(found.results[0], found.runs[0], published.label)
        report.results.append(result)
        report.runs.append(output)
        report.rows.append(result.to_json())
        report.findings.append(finding(published, result))
    report.notes += found.notes[-1:]  # how recovery is judged
    return report


def finding(published: Published, result: RunResult) -> Finding:
    """Whether the run gives the published verdict."""
    server = result.recoveries[0].server_s if result.recoveries else None
    if published.recovers:
        seen = f"the server is back {format_duration(server)} after the cut" if server is not None else "it does not"
        holds = server is not None and server <= RECOVERS_WITHIN_S
        return Finding(f"{published.label} recovers (published): {seen}", holds)
    amplification = f"{result.amplification:.2f}" if result.amplification is not None else "-"
    seen = "it never does" if server is None else f"it recovers after {format_duration(server)}"
    return Finding(
        f"{published.label} stays metastable (published): {seen}, {amplification} attempts per request, "
        f"{result.peak_in_flight:,} in flight at the peak",
        server is None,
    )
