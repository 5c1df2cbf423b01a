"""The plan of a run: what happens when, against what; and which phase a moment belongs to.

Times are seconds after the load starts (time 0 of every strategy's run). Phases:
``ramp-up`` until the steady window, ``steady`` during it (the second half of the time
before the first trigger, whose levels the recovery verdicts compare with), ``outage``
while a target is paused, the trigger's kind (``slow``, ``spike``, ``errors``; ``slow and
spike`` for two at once) while one of them is in force, ``recovery`` after the first
trigger, and ``steady`` throughout a run without triggers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from retrystorm.durations import seconds_text
from retrystorm.errors import UserError, did_you_mean
from retrystorm.experiment.analysis import default_steady_window
from retrystorm.experiment.scenario import Assertions, OutageWindow, RunSpec, Scenario, StrategyEntry, TriggerWindow

#: Wall-clock seconds a strategy's run takes beyond its duration (starting and stopping processes).
OVERHEAD_S = 10.0


def phase_at(time_s: float, windows: Sequence[TriggerWindow]) -> str:
    """The phase at ``time_s`` among the trigger ``windows``, outages included (see the module docstring)."""
    window = default_steady_window(windows)
    if window is None:
        return "steady"
    active = [found for found in windows if found.start_s <= time_s < found.end_s]
    if active:
        return " and ".join(dict.fromkeys("outage" if found.kind == "pause" else found.kind for found in active))
    if time_s >= min(found.start_s for found in windows):
        return "recovery"
    return "steady" if time_s >= window[0] else "ramp-up"


@dataclasses.dataclass(frozen=True, slots=True)
class Step:
    """One thing the plan does at ``at_s``."""

    at_s: float
    what: str


@dataclasses.dataclass(frozen=True, slots=True)
class StrategyPlan:
    """One strategy's run: its load, its steps, its checks."""

    entry: StrategyEntry
    spec: RunSpec
    steps: list[Step]
    checks: list[str]


@dataclasses.dataclass(frozen=True, slots=True)
class Plan:
    """Every strategy's run, in order, with the outages drawn once for all of them."""

    scenario: Scenario
    outages: list[OutageWindow]
    strategies: list[StrategyPlan]
    #: The other triggers' windows (slow, spike, errors), drawn once for every strategy as the outages are.
    triggers: list[TriggerWindow] = dataclasses.field(default_factory=list)
    #: The steady window: the second half of the time before the first trigger (``None``: no trigger).
    steady_window: tuple[float, float] | None = None
    #: How many times each strategy runs (``--repeat``), the strategies taking turns: A, B, A, B, ...
    repeat: int = 1

    @property
    def runs(self) -> int:
        """Strategy runs in all."""
        return self.repeat * len(self.strategies)

    @property
    def estimated_s(self) -> float:
        """Wall-clock estimate of the whole run."""
        return self.runs * (self.scenario.load.duration + OVERHEAD_S)


def select(scenario: Scenario, labels: Sequence[str]) -> list[StrategyEntry]:
    """The scenario's strategies named by ``labels`` (all of them when empty), in the scenario's order."""
    known = scenario.labels()
    for label in labels:
        if label not in known:
            hint = did_you_mean(label, known)
            raise UserError(
                f"--strategy: no strategy labelled {label!r} in {scenario.name}{hint}; labels: {', '.join(known)}"
            )
    return [entry for entry in scenario.strategies if not labels or entry.label in labels]


def check_fault_targets(
    windows: Sequence[TriggerWindow], known_for: Callable[[str], Sequence[str]], stack: str
) -> None:
    """Every target paused, slowed, failing or faulted in the network must exist in the stack (``known_for``: the
    names a window of a kind may give); raises :class:`UserError` naming it."""
    for window in windows:
        known = known_for(window.kind)
        if window.kind != "spike" and window.target not in known:
            hint = did_you_mean(window.target, known)
            raise UserError(
                f"faults: {window.kind}: {window.target!r} is not a target of the {stack}{hint}; "
                f"accepted: {', '.join(known) or 'none'}"
            )


def _checks(assertions: Assertions | None) -> list[str]:
    if assertions is None:
        return []
    found = []
    for name, value in assertions.model_dump(exclude_none=True).items():
        shown = seconds_text(value) if name.endswith("_within") and value != "never" else value
        found.append(f"{name} {shown}")
    return found


def check_live_triggers(scenario: Scenario, refusal: Callable[[str], str | None]) -> None:
    """Refuse a trigger the stack cannot play live (:class:`UserError`, exit 2, also on ``--dry-run``): the
    first one, by its place in ``faults``, with ``refusal``'s word on what would make it possible."""
    for index, fault in enumerate(scenario.faults):
        why = refusal(fault.kind)
        if why is not None:
            raise UserError(f"faults[{index}]: {fault.kind}: {fault.target}: {why}")


def make_plan(scenario: Scenario, entries: Sequence[StrategyEntry], repeat: int = 1) -> Plan:
    """The plan of running ``entries`` of ``scenario`` (each ``repeat`` times): every trigger listed, each at its
    start and end."""
    timeline = scenario.timeline()
    outages = list(timeline.outages)
    window = default_steady_window(timeline.episodes())
    steps = [Step(0.0, "load starts: time 0")]
    if window is not None:
        steps.append(Step(window[0], f"steady window until {seconds_text(window[1])} (levels for recovery)"))
    for outage in outages:
        steps.append(Step(outage.start_s, f"pause {outage.target} for {seconds_text(outage.duration_s)}"))
        steps.append(Step(outage.end_s, f"resume {outage.target}"))
    for trigger in timeline.triggers:
        steps.append(Step(trigger.start_s, f"{trigger.effect()} for {seconds_text(trigger.duration_s)}"))
        steps.append(Step(trigger.end_s, f"end: {trigger.effect()}"))
    steps.append(Step(scenario.load.duration, "stop the load and the target; analyse"))
    steps.sort(key=lambda step: step.at_s)
    plans = [
        StrategyPlan(entry, RunSpec.of(scenario, entry), steps, _checks(scenario.assertions.get(entry.label)))
        for entry in entries
    ]
    return Plan(scenario, outages, plans, list(timeline.triggers), window, repeat)
