"""Run every strategy of a scenario in the simulator and analyse each run."""

from __future__ import annotations

from collections.abc import Callable

from retrystorm.durations import format_duration
from retrystorm.errors import UserError
from retrystorm.experiment.analysis.stats import CENSORING_NOTE
from retrystorm.experiment.scenario import Scenario, load_scenario, shipped_scenario
from retrystorm.experiment.scenario.grpc import simulation_notes
from retrystorm.sim.config import RunConfig, no_model_message
from retrystorm.sim.engine import simulate
from retrystorm.sim.experiments.base import Finding, Report

Progress = Callable[[str], None]
Check = Callable[[Report, Scenario], list[Finding]]


def load_shipped(name: str, seed: int | None = None) -> Scenario:
    """The shipped scenario ``NAME`` (``retrystorm scenarios``), with another seed if given."""
    return load_scenario(shipped_scenario(name), overrides={"seed": seed} if seed is not None else None)


def run_builtin(
    experiment: str,
    scenario: Scenario,
    *,
    notes: list[str],
    needs: set[str],
    check: Check,
    progress: Progress | None = None,
) -> Report:
    """Run ``scenario`` as a built-in experiment: its notes first, its findings checked when
    every strategy label in ``needs`` ran (added strategies are simply shown beside them)."""
    report = run_scenario(scenario, progress)
    report.experiment = experiment
    report.notes = [*notes, *report.notes]
    if needs <= {result.strategy for result in report.results}:
        report.findings = check(report, scenario)
    return report


def outage_notes(scenario: Scenario) -> list[str]:
    """The modelling choices that matter when a scenario has outages or other triggers."""
    if not scenario.faults:
        return []
    timeline = scenario.timeline()
    notes = _pause_notes(scenario) if timeline.outages else []
    kinds = {window.kind for window in timeline.triggers}
    notes += [note for kind, note in TRIGGER_NOTES.items() if kind in kinds]
    if not kinds:
        notes.append(
            "Recovery: server = in-flight <= max(1.5 x its largest steady reading, mean + 4 sqrt(max(mean, 1))) + 1 "
            "and delay <= 1.5 x its largest steady reading, for 5 s; client = goodput >= 90 % of its steady mean "
            "over a 5 s window; steady = the second half of the time before the first outage."
        )
    else:
        notes.append(
            "Recovery is judged after each trigger ends (triggers that overlap are one episode, judged after the "
            "last ends): server = in-flight <= max(1.5 x its largest steady reading, mean + 4 sqrt(max(mean, 1))) + 1 "
            "and delay <= 1.5 x its largest steady reading, for 5 s; client = goodput >= 90 % of its steady mean over "
            "a 5 s window; steady = the second half of the time before the first trigger."
        )
    return notes


#: What the simulator does for each trigger other than a pause (sim/triggers.py).
TRIGGER_NOTES = {
    "slow": (
        "A slow runs the model on a clock at its capacity: every delay, tick and service time takes 1/capacity as "
        "long, work in progress included; where slows overlap the lowest capacity holds."
    ),
    "spike": (
        "A spike adds users x (factor - 1) users (closed loop: each thinks first, as a new user does; open loop: "
        "arrival streams, rate x factor in all); at its end they start no new request, and finish the one in progress."
    ),
    "errors": (
        "An error burst answers each attempt reaching the server, with its probability, at once with its status; "
        "the attempt never enters the model and is retried as any failure (no sooner than 10 ms)."
    ),
    "delay": "A delay adds its latency (plus or minus its jitter) to each answer released while it holds.",
    "loss": (
        "A loss makes each attempt and answer, with its probability per transmission, wait for TCP's "
        "retransmissions (200 ms, doubling for each further loss)."
    ),
    "hang": (
        "A hang holds attempts and answers (with its probability per connection) until it ends, when their "
        "connection is closed: a connection error for a client still waiting."
    ),
    "reset": "A reset fails attempts, or the answers they wait for, with a connection error at once.",
    "partition": (
        "A partition loses what is sent while it holds; an attempt reaches the server only if a SYN retransmission "
        "(1, 3, 7, 15, 31, 63 s after its send) falls after the partition and before its client gives up."
    ),
}


def _pause_notes(scenario: Scenario) -> list[str]:
    backlog = scenario.sim.accept_backlog
    queue = (
        "unbounded (a kernel's backlog is not modelled unless sim.accept_backlog sets one)"
        if backlog is None
        else f"bounded at {backlog} (beyond it attempts are dropped)"
    )
    return [
        (
            "An outage freezes the server: nothing is released while it lasts; attempts sent meanwhile wait in "
            f"an accept queue, {queue}, and are admitted at the resume, after one catch-up evaluation."
        ),
        "A client that times out abandons its attempt; the server keeps the request until the model releases it.",
    ]


def run_scenario(scenario: Scenario, progress: Progress | None = None) -> Report:
    """Each strategy in turn against a fresh server, with the same seed and triggers.

    A scenario of its own service (``target:``) runs only with a ``model:`` that approximates it.
    """
    if scenario.model is None:
        url = scenario.target.url if scenario.target is not None else "target:"
        raise UserError(no_model_message(scenario.name, url))
    notes = outage_notes(scenario)
    grpc = scenario.grpc
    notes += simulation_notes(grpc, [entry.grpc_mode or grpc.mode for entry in scenario.strategies] if grpc else [])
    if scenario.target is not None:
        notes.insert(0, f"The model {scenario.model.spec()} stands for the service at {scenario.target.url}.")
    timeline = scenario.timeline()
    report = Report(experiment=scenario.name, kind="runs", rows=[], notes=[*notes, CENSORING_NOTE])
    if scenario.description:
        report.extra["description"] = scenario.description  # heads report.html
    for entry in scenario.strategies:
        if progress is not None:
            progress(f"simulating {entry.label} ({format_duration(scenario.load.duration)} of virtual time)")
        output = simulate(RunConfig.from_scenario(scenario, entry, timeline.outages, timeline.triggers))
        result = output.result(scenario.assertions.get(entry.label))
        report.runs.append(output)
        report.results.append(result)
        report.rows.append(result.to_json())
    return report
