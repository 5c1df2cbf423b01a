"""One strategy's run, resolved from a scenario: what the simulator and the live runner both run.

A scenario describes its load once (``load:``) and each strategy's overrides beside
the strategy (``budget``, ``max_attempts``, ``request_deadline``). :meth:`RunSpec.of`
applies them: the result is the one description of a strategy's run, in seconds and
parsed specs, that both sides read. The simulator adds only its own knobs
(:class:`retrystorm.sim.config.RunConfig`); the live runner turns it into the load generator's
options with :func:`retrystorm.runner.locust_args.locust_options`.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from retrystorm.experiment.scenario.http_client import HttpClient
from retrystorm.experiment.scenario.model import Scenario, StrategyEntry
from retrystorm.loadgen.grpc_settings import GrpcSettings
from retrystorm.loadgen.request_mix import RequestSpec
from retrystorm.loadgen.strategies import RetryBudget, RetryPolicy
from retrystorm.loadgen.think import SEED_THINK_TIME, ThinkTime
from retrystorm.target.models import OverloadModel

Arrival = Literal["closed", "open"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RunSpec:
    """One strategy's run against a fresh target.

    ``policy`` holds the strategy and its controls (``max_attempts``, ``deadline_s``,
    ``reset_after_success``). ``spawn_rate`` is users started per second (``None``: all
    at once). ``arrival``: ``closed``, each user waits ``think`` between the end of one
    logical request and the start of the next; ``open``, logical requests start at
    ``rate`` per second in all, whether or not earlier ones have finished (``think`` is
    then unused). ``attempt_timeout_s``: a client gives up an attempt after this long
    (``None``: never). ``model`` is ``None`` for a scenario's own service without one;
    ``requests`` is what one logical request sends (empty: the default ``GET /api``). The
    failures retried are ``policy.retry_on``: the scenario's ``retry_on:`` when it has
    one, else the strategy's own (a preset's), else every failure but a client error. ``grpc``: the load is
    gRPC calls (the scenario's ``grpc:``, with the entry's ``grpc_mode``); ``None``: HTTP requests.
    """

    label: str
    model: OverloadModel | None
    policy: RetryPolicy
    budget: RetryBudget | None = None
    users: int
    spawn_rate: float | None = None
    think: ThinkTime = SEED_THINK_TIME
    arrival: Arrival = "closed"
    rate: float | None = None
    attempt_timeout_s: float | None = 2.0
    duration_s: float
    seed: int = 1
    requests: tuple[RequestSpec, ...] = ()
    grpc: GrpcSettings | None = None
    #: Who retries an HTTP load: the strategy's loop (``retrystorm``) or urllib3's own ``Retry`` (``urllib3``).
    http_client: HttpClient = "retrystorm"

    @classmethod
    def of(cls, scenario: Scenario, entry: StrategyEntry) -> RunSpec:
        """The run of ``entry`` in ``scenario``: ``load``'s settings, the entry's where it has its own."""
        load = scenario.load
        policy = entry.policy(load)
        if scenario.retry_on is not None:
            policy = dataclasses.replace(policy, retry_on=scenario.retry_on)
        return cls(
            label=entry.label,
            model=scenario.model,
            policy=policy,
            budget=entry.budget_for(load),  # the entry's, else load's, else a preset's own
            users=load.users,
            spawn_rate=load.spawn_rate,
            think=load.think_time,
            arrival=load.arrival,
            rate=load.rate,
            attempt_timeout_s=load.attempt_timeout,
            duration_s=load.duration,
            seed=scenario.seed,
            requests=tuple(entry.spec() for entry in scenario.requests or ()),
            grpc=scenario.grpc.settings(entry.grpc_mode) if scenario.grpc is not None else None,
            http_client=entry.http_client or "retrystorm",
        )
