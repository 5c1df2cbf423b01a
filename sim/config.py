"""One simulated run: a strategy's :class:`~retrystorm.experiment.scenario.RunSpec`, the triggers, the simulator's
own knobs."""

from __future__ import annotations

import dataclasses
from typing import Literal

from retrystorm.errors import UserError
from retrystorm.experiment.scenario import (
    OutageWindow,
    RunSpec,
    Scenario,
    Span,
    SpikeUniform,
    StrategyEntry,
    TriggerWindow,
)
from retrystorm.experiment.scenario.timeline import episodes
from retrystorm.loadgen.think import ThinkTime
from retrystorm.target.models import FixedModel, OverloadModel


def no_model_message(scenario_name: str, url: str) -> str:
    """Why the simulator cannot run a scenario whose own service has no ``model:``, and what to do."""
    return (
        f"{scenario_name}: target: is your own service ({url}), which the simulator has no model of; "
        "add model: (an overload model that approximates it, e.g. queue:workers=2 or fixed:base_delay=50ms) to "
        "simulate it, and `retrystorm run SCENARIO --simulate` to compare the model with the service"
    )


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RunConfig:
    """The inputs of one simulated run (one strategy against a fresh server).

    ``spec`` is the run as the live runner runs it too; the rest is the simulator's:
    the outages (pauses, merged) and the other triggers' windows as drawn, the sampling
    step, and the scenario's ``sim:`` section (first requests, requests per user, the
    accept backlog, how open arrivals are spaced, the network delay).
    """

    spec: RunSpec
    outages: tuple[OutageWindow, ...] = ()
    triggers: tuple[TriggerWindow, ...] = ()
    sample_every_s: float = 1.0
    first_request: SpikeUniform | None = None
    requests_per_user: int | None = None
    accept_backlog: int | None = None
    open_arrivals: Literal["poisson", "constant"] = "poisson"
    network_delay: ThinkTime | None = None

    def __post_init__(self) -> None:
        if self.spec.model is None:
            raise UserError(no_model_message(self.spec.label, "target:"))
        if self.network_delay is not None and self.network_delay.mean_s <= 0:
            raise UserError(
                f"sim.network_delay {self.network_delay.spec()}: expected a mean above 0; leave it out for none"
            )
        if self.never_advances:
            spec = self.spec
            raise UserError(
                f"load.think_time {spec.think.spec()} with model {self.model.spec()}: each user would send request "
                "after request at one instant of virtual time, forever; give a think time or a model delay above 0, "
                "or sim.requests_per_user"
            )

    @property
    def model(self) -> OverloadModel:
        """The model simulated (a scenario without one is refused when the config is made)."""
        if self.spec.model is None:
            raise UserError(no_model_message(self.spec.label, "target:"))
        return self.spec.model

    @property
    def never_advances(self) -> bool:
        """True when closed-loop users would loop without virtual time passing.

        A zero think time against a model that answers at once (``fixed:base_delay=0``):
        each answer comes at the instant of its attempt, and the next request starts at
        that instant too. Live, such users just send as fast as they can; in virtual time
        the run would never end.
        """
        spec = self.spec
        answers_at_once = isinstance(spec.model, FixedModel) and spec.model.base_delay_s == 0
        return (
            spec.arrival == "closed" and self.requests_per_user is None and spec.think.mean_s == 0 and answers_at_once
        )

    def recovery_spans(self) -> list[Span]:
        """What recovery is judged after: the outages, or with other triggers the episodes (every window
        merged with those it overlaps; :func:`retrystorm.experiment.scenario.timeline.episodes`)."""
        return episodes(self.outages, self.triggers)

    @classmethod
    def from_scenario(
        cls,
        scenario: Scenario,
        entry: StrategyEntry,
        outages: tuple[OutageWindow, ...],
        triggers: tuple[TriggerWindow, ...] | None = None,
    ) -> RunConfig:
        """The run of ``entry`` in ``scenario`` with the (already drawn) ``outages``; ``triggers`` drawn
        from the scenario's seed unless given."""
        sim = scenario.sim
        return cls(
            spec=RunSpec.of(scenario, entry),
            outages=outages,
            triggers=scenario.timeline().triggers if triggers is None else triggers,
            sample_every_s=sim.sample_every,
            first_request=sim.first_request,
            requests_per_user=sim.requests_per_user,
            accept_backlog=sim.accept_backlog,
            open_arrivals=sim.open_arrivals,
            network_delay=sim.network_delay,
        )
