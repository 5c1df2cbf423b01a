"""One strategy's run, resolved from a scenario: everything the engine reads."""

from __future__ import annotations

import dataclasses
from typing import Literal

from experiment.scenario import Outage, Scenario, SpikeUniform, StrategyEntry, ThinkTime
from loadgen.strategies import RetryBudget, RetryPolicy
from retrystorm.errors import UserError
from target.models import FixedModel, OverloadModel

SEED_THINK_TIME = ThinkTime("exponential", 10.0)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RunConfig:
    """The inputs of one simulated run (one strategy against a fresh server)."""

    label: str
    model: OverloadModel
    policy: RetryPolicy
    budget: RetryBudget | None = None
    users: int
    duration_s: float
    think: ThinkTime = SEED_THINK_TIME
    spawn_rate: float | None = None
    arrival: Literal["closed", "open"] = "closed"
    rate: float | None = None
    open_arrivals: Literal["poisson", "constant"] = "poisson"
    attempt_timeout_s: float | None = 2.0
    outages: tuple[Outage, ...] = ()
    sample_every_s: float = 1.0
    first_request: SpikeUniform | None = None
    requests_per_user: int | None = None
    accept_backlog: int | None = None
    seed: int = 1

    def __post_init__(self) -> None:
        if self.never_advances:
            raise UserError(
                f"load.think_time {self.think.text()} with model {self.model.spec()}: each user would send request "
                "after request at one instant of virtual time, forever; give a think time or a model delay above 0, "
                "or sim.requests_per_user"
            )

    @property
    def never_advances(self) -> bool:
        """True when closed-loop users would loop without virtual time passing.

        A zero think time against a model that answers at once (``fixed:base_delay=0``):
        each answer comes at the instant of its attempt, and the next request starts at
        that instant too. Live, such users just send as fast as they can; in virtual time
        the run would never end.
        """
        answers_at_once = isinstance(self.model, FixedModel) and self.model.base_delay_s == 0
        return (
            self.arrival == "closed" and self.requests_per_user is None and self.think.mean_s == 0 and answers_at_once
        )

    @classmethod
    def from_scenario(cls, scenario: Scenario, entry: StrategyEntry, outages: tuple[Outage, ...]) -> RunConfig:
        """The run of ``entry`` in ``scenario`` with the (already drawn) ``outages``."""
        load, sim = scenario.load, scenario.sim
        return cls(
            label=entry.label,
            model=scenario.model,
            policy=entry.policy(load),
            budget=entry.budget_for(load),
            users=load.users,
            duration_s=load.duration,
            think=load.think_time,
            spawn_rate=load.spawn_rate,
            arrival=load.arrival,
            rate=load.rate,
            open_arrivals=sim.open_arrivals,
            attempt_timeout_s=load.attempt_timeout,
            outages=outages,
            sample_every_s=sim.sample_every,
            first_request=sim.first_request,
            requests_per_user=sim.requests_per_user,
            accept_backlog=sim.accept_backlog,
            seed=scenario.seed,
        )
