"""The validated scenario: what ``retrystorm sim`` and ``retrystorm run`` both read.

A scenario names the target model (or its own service, ``target:``, with what one
request is, ``requests:``, and which failures are retried, ``retry_on:``; see
:mod:`.service`), the load, the strategies to compare (each run in
turn against a fresh target), a fault timeline, assertions per strategy, and
simulator-only knobs under ``sim:`` that the live runner ignores. Field types are in
:mod:`.fields`; cross-field rules are in :meth:`Scenario.problems`, which returns
``(location, message)`` pairs so the loader can point at the line.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from retrystorm.durations import format_duration
from retrystorm.errors import SpecError, did_you_mean
from retrystorm.experiment.scenario.fields import (
    BudgetField,
    Duration,
    ModelField,
    PositiveDuration,
    RecoveryBound,
    StrategyField,
    ThinkTimeField,
)
from retrystorm.experiment.scenario.grpc import GrpcSection, grpc_problems
from retrystorm.experiment.scenario.hosts import Hosts, hosts_problems
from retrystorm.experiment.scenario.http_client import HttpClient, http_client_problems
from retrystorm.experiment.scenario.service import (
    Requests,
    RetryOnField,
    ServiceTarget,
    request_problems,
)
from retrystorm.experiment.scenario.slo import MAX_SLO, StopCondition
from retrystorm.experiment.scenario.timeline import OutageWindow, Timeline, expand_faults
from retrystorm.experiment.scenario.triggers import MAX_WINDOWS, SpikeFault, Trigger
from retrystorm.loadgen.strategies import RetryBudget, RetryPolicy, parse_strategy, resolve
from retrystorm.loadgen.think import SEED_THINK_TIME

Loc = tuple[str | int, ...]

#: Ceilings on sizes, so that no scenario can hang the simulator or exhaust memory (the scenario reference).
MAX_USERS = 1_000_000
MAX_RATE = 1_000_000.0
MAX_RUN_S = 24 * 3600.0
MAX_STRATEGIES = 100
MAX_FAULTS = 1000
MAX_ATTEMPTS = 1_000_000
MAX_NAME_CHARS = 200
MIN_SAMPLE_EVERY_S = 0.01
MAX_INTERVALS = 1_000_000


def rng_for(seed: int, component: str) -> random.Random:
    """The random source of one component (``think``, ``faults``, ``server``...) of a run.

    Seeded from the text ``"{seed}/{component}"``, which :class:`random.Random` hashes
    with SHA-512: stable across processes and Python versions, and independent between
    components, so changing how one component draws leaves the others' draws alone.
    """
    return random.Random(f"{seed}/{component}")


class _Strict(BaseModel):
    # each field's docstring is its description: the scenario reference is generated from them
    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True, use_attribute_docstrings=True)


class Load(_Strict):
    """The users and how they send requests."""

    users: int = Field(ge=1, le=MAX_USERS)
    """How many users send logical requests (closed loop), or share the arrival rate (open loop)."""
    spawn_rate: float | None = Field(default=None, gt=0, le=MAX_USERS)
    """Users started per second at the start; none: every user in the first second."""
    think_time: ThinkTimeField = SEED_THINK_TIME
    """A user's wait before each logical request (closed loop): ``exponential:10s`` (or just the mean),
    ``constant:1s``, ``between:1s,3s``; at most 24h.
    """
    arrival: Literal["closed", "open"] = "closed"
    """``closed``: each user waits for its request (and its retries) before thinking again; ``open``: requests start
    at ``rate`` whatever came back.
    """
    rate: float | None = Field(default=None, gt=0, le=MAX_RATE)
    """Open loop only: logical requests started per second, in all."""
    attempt_timeout: PositiveDuration | None = 2.0
    """An attempt is given up after this long (the server keeps working on it); null: wait for every answer."""
    duration: PositiveDuration = Field(le=MAX_RUN_S)
    """How long the load runs, from its start; every trigger must end within it."""
    max_attempts: int | None = Field(default=None, ge=1, le=MAX_ATTEMPTS)
    """Attempts per logical request, the first included; none: no cap (a preset's own cap applies)."""
    request_deadline: PositiveDuration | None = None
    """A logical request is given up after this long, backoff included; none: never."""
    budget: BudgetField | None = None
    """A retry budget shared by the users of one load-generating process, for every strategy (a strategy entry's own
    wins).
    """
    reset_after_success: bool = True
    """The backoff starts afresh after a success; false keeps the retry counter (``--keep-backoff``)."""


class StrategyEntry(_Strict):
    """One strategy to compare: a label (what reports call it) and its retry controls.

    Written as a spec string (the label is the string as written), as a spec mapping
    with ``name`` and an optional ``label``, or as ``{label, strategy, budget,
    max_attempts, request_deadline}``, the last three overriding ``load``'s. A preset
    brings its own attempt cap and budget, which the entry's or ``load``'s override
    (``retrystorm.loadgen.strategies.presets.base``).
    """

    label: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    """What outputs and ``assertions`` call this strategy; default: the spec as written."""
    strategy: StrategyField
    """The strategy or preset spec (``fixed:100ms``, ``envoy:num_retries=2``), or ``grpc-service-config:FILE.json``."""
    budget: BudgetField | None = None
    """This strategy's retry budget, overriding ``load.budget`` and a preset's own."""
    max_attempts: int | None = Field(default=None, ge=1, le=MAX_ATTEMPTS)
    """This strategy's attempt cap, overriding ``load.max_attempts`` and a preset's own."""
    request_deadline: PositiveDuration | None = None
    """This strategy's deadline per logical request, overriding ``load.request_deadline``."""
    grpc_mode: Literal["real", "emulated"] | None = None
    """A gRPC load only: who retries this strategy's calls, overriding ``grpc.mode`` (``real``: grpcio from the
    strategy's service config; ``emulated``: the strategy over grpcio)."""
    http_client: HttpClient | None = None
    """An HTTP load only: who retries this strategy's requests: ``retrystorm`` (default), the strategy's loop;
    ``urllib3``, urllib3's own ``Retry`` from the ``urllib3`` preset's settings (see
    :mod:`retrystorm.experiment.scenario.http_client`)."""

    @model_validator(mode="before")
    @classmethod
    def _normalise(cls, raw: Any) -> Any:
        if isinstance(raw, str):
            return {"label": raw.strip(), "strategy": raw}
        if not isinstance(raw, dict):
            return raw
        if "strategy" not in raw and "name" in raw:
            spec = {key: value for key, value in raw.items() if key != "label"}
            raw = {"strategy": spec, **({"label": raw["label"]} if "label" in raw else {})}
        if "label" not in raw and "strategy" in raw:
            raw = {**raw, "label": _default_label(raw["strategy"])}
        return raw

    def policy(self, load: Load) -> RetryPolicy:
        """The retry policy of this entry: its controls, else ``load``'s, else a preset's own."""
        return self._resolved(load)[0]

    def budget_for(self, load: Load) -> RetryBudget | None:
        """The budget of this entry: its own, else ``load``'s, else a preset's own."""
        return self._resolved(load)[1]

    def _resolved(self, load: Load) -> tuple[RetryPolicy, RetryBudget | None]:
        return resolve(
            self.strategy,
            max_attempts=self.max_attempts if self.max_attempts is not None else load.max_attempts,
            budget=self.budget if self.budget is not None else load.budget,
            deadline_s=self.request_deadline if self.request_deadline is not None else load.request_deadline,
            reset_after_success=load.reset_after_success,
        )


def _default_label(strategy: object) -> object:
    if isinstance(strategy, str):
        return strategy.strip()
    try:
        return parse_strategy(strategy).spec()
    except SpecError:
        return "strategy"  # the strategy field reports the real problem


class Assertions(_Strict):
    """What one strategy's run must show; each bound is checked after every outage."""

    server_recovers_within: RecoveryBound | None = None
    """The server's recovery after every outage takes at most this long; ``never``: it must not recover (a metastable
    failure must happen).
    """
    client_recovers_within: RecoveryBound | None = None
    """The users' goodput is back to 90 % of steady within this long after every outage; ``never``: it must not be."""
    min_success_ratio: float | None = Field(default=None, ge=0, le=1)
    """Succeeded logical requests over those started, at least this."""
    max_amplification: float | None = Field(default=None, ge=1)
    """Attempts sent per logical request started, at most this."""
    max_peak_in_flight: int | None = Field(default=None, ge=0, le=2**53)
    """The most requests the server held at once, at most this."""


class SpikeUniform(_Strict):
    """First requests as in the seed simulation: a spike, then the rest uniform.

    ``spike_fraction`` of the users send their first request uniformly within
    ``[spike_at, spike_at + spike_width)``, the others uniformly within
    ``[0, uniform_over)``.
    """

    pattern: Literal["spike+uniform"] = "spike+uniform"
    """The pattern's name; the only one is ``spike+uniform``."""
    spike_fraction: float = Field(default=0.2, ge=0, le=1)
    """The share of users whose first request falls in the spike."""
    spike_at: Duration = 25.0
    """When the spike starts."""
    spike_width: Duration = 10.0
    """How long the spike lasts."""
    uniform_over: PositiveDuration = 1000.0
    """The other users' first requests fall uniformly within this, from the start."""


class SimOptions(_Strict):
    """Simulator-only knobs; the live runner ignores this section."""

    sample_every: PositiveDuration = Field(default=1.0, ge=MIN_SAMPLE_EVERY_S)
    """The time series' resolution (at least 10ms; at most 1,000,000 intervals in ``load.duration``)."""
    first_request: SpikeUniform | None = None
    """When each closed-loop user sends its first request (as in the seed simulation); none: after a think time."""
    requests_per_user: int | None = Field(default=None, ge=1, le=MAX_ATTEMPTS)
    """Each user sends this many logical requests, then stops; none: no limit."""
    accept_backlog: int | None = Field(default=None, ge=0, le=100 * MAX_USERS)
    """The most attempts that wait in the accept queue while the server is frozen; none: no bound."""
    open_arrivals: Literal["poisson", "constant"] = "poisson"
    """Open loop: ``poisson`` arrivals, or ``constant`` (evenly spaced)."""
    network_delay: ThinkTimeField | None = None
    """Each way between a client and the server, a think-time distribution (``exponential:100ms``, ``constant:5ms``);
    none: no delay."""


class Scenario(_Strict):
    """A whole scenario file."""

    name: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    """The scenario's name, in every output."""
    description: str = Field(default="", max_length=10_000)
    """What the scenario shows; heads the report and ``retrystorm scenarios``."""
    seed: int = Field(default=1, ge=0, lt=2**63)
    """Seeds every random source of a run (think times, jitter, random starts, the server's draws): the same seed,
    the same simulation.
    """
    model: ModelField | None = None
    """The built-in target's overload model (a spec or a mapping with ``name``); with ``target:``, the simulator's
    approximation of your service.
    """
    target: ServiceTarget | None = None
    """Your own service instead of the built-in target: where requests go and what a pause freezes."""
    grpc: GrpcSection | None = None
    """The load is gRPC calls: who retries them (``mode``), the method and the request message (see
    :mod:`retrystorm.experiment.scenario.grpc`)."""
    requests: Requests | None = None
    """What one logical request is, drawn by weight (1 to 20 requests); default: ``GET /api``."""
    retry_on: RetryOnField | None = None
    """The failures retried: ``timeout``, ``connection``, ``4xx``, ``5xx``, a status ``NNN``, ``NNN/retry-after``;
    default: the strategy's own (a preset's), else ``[timeout, connection, 5xx, 429]``.
    """
    load: Load
    """The users and how they send requests."""
    strategies: list[StrategyEntry] = Field(min_length=1, max_length=MAX_STRATEGIES)
    """The strategies to compare, each run in turn against a fresh target (1 to 100)."""
    faults: list[Trigger] = Field(default=[], max_length=MAX_FAULTS)
    """The triggers on the timeline: ``pause``, ``slow``, ``spike``, ``errors``, and faults in the network
    (``delay``, ``loss``, ``hang``, ``reset``, ``partition``) (at most 1,000 entries, 10,000 windows once repeated).
    """
    assertions: dict[str, Assertions] = {}
    """What each strategy's run must show, by label; checked after every outage."""
    slo: list[StopCondition] = Field(default=[], max_length=MAX_SLO)
    """Stop conditions: a query and a bound whose breach stops the run early, every fault reverted, exit 4."""
    sim: SimOptions = SimOptions()
    """Simulator-only settings; the live runner ignores them."""
    hosts: Hosts | None = None
    """Where the load's workers and the targets' chaos agents are, when they run on several hosts: the Locust
    master's address for workers, how many must join, and each host's agent."""

    def labels(self) -> list[str]:
        """The strategies' labels, in order."""
        return [entry.label for entry in self.strategies]

    def timeline(self) -> Timeline:
        """This scenario's timeline: every trigger's windows, random starts drawn from its seed."""
        plans = [fault.plan() for fault in self.faults]
        return Timeline.of(expand_faults(plans, self.load.duration, rng_for(self.seed, "faults")))

    def outages(self) -> list[OutageWindow]:
        """The merged outages (pauses) of this scenario's timeline."""
        return list(self.timeline().outages)

    def problems(self) -> Iterator[tuple[Loc, str]]:
        """Cross-field rules the field types cannot express, as ``(location, message)``."""
        yield from self._target_problems()
        yield from self._load_problems()
        yield from grpc_problems(self)
        yield from http_client_problems(self)
        seen: dict[str, int] = {}
        for index, entry in enumerate(self.strategies):
            if entry.label in seen:
                yield (
                    ("strategies", index, "label"),
                    f"duplicate label {entry.label!r}; give each strategy its own label",
                )
            seen[entry.label] = index
        yield from self._fault_problems()
        for label, checks in self.assertions.items():
            if label not in seen:
                hint = did_you_mean(label, seen)
                yield ("assertions", label), f"no strategy labelled {label!r}{hint}; labels: {', '.join(seen)}"
            for key in ("server_recovers_within", "client_recovers_within"):
                if getattr(checks, key) is not None and not self.faults:
                    yield ("assertions", label, key), "needs a trigger to recover from; add one under faults"

    def _fault_problems(self) -> Iterator[tuple[Loc, str]]:
        windows = 0
        for index, fault in enumerate(self.faults):
            windows += fault.plan().most_starts(self.load.duration)
            if windows > MAX_WINDOWS:
                yield (
                    ("faults", index),
                    f"the timeline would hold more than {MAX_WINDOWS:,} windows; repeat less often or fewer times",
                )
                break
        for index, fault in enumerate(self.faults):
            end = fault.plan().latest_end_s()
            if end == float("inf"):  # repeats until the run ends: only the first must fit
                end = fault.at + fault.random_start + fault.for_s
            if end > self.load.duration:
                yield (
                    ("faults", index),
                    (
                        f"may end at {format_duration(end)}, after the run ends (load.duration "
                        f"{format_duration(self.load.duration)}); expected every trigger to end within the run"
                    ),
                )
            if isinstance(fault, SpikeFault):
                yield from self._spike_problems(index, fault)

    def _spike_problems(self, index: int, spike: SpikeFault) -> Iterator[tuple[Loc, str]]:
        load = self.load
        if load.arrival == "open" and load.rate is not None and load.rate * spike.factor > MAX_RATE:
            yield (("faults", index, "factor"), f"load.rate x factor is above {MAX_RATE:,.0f} requests/s")
        if load.users * spike.factor > MAX_USERS:
            yield (("faults", index, "factor"), f"load.users x factor is above {MAX_USERS:,} users")

    def _target_problems(self) -> Iterator[tuple[Loc, str]]:
        if self.model is None and self.target is None:
            yield ("model",), "missing; give model: (the built-in model server) or target: (your own service)"
        yield from request_problems(self.requests)
        target_host = self.target.host if self.target is not None else None
        located = {index: (fault.kind, fault.target) for index, fault in enumerate(self.faults)}
        yield from hosts_problems(self.hosts, target_host, located)
        if self.hosts is not None and self.target is None:
            yield ("target",), "hosts: needs target: {url, host} (with model_server: true for `retrystorm target`)"
        if self.hosts is not None and self.grpc is not None:
            yield ("grpc",), "a gRPC load does not run across hosts yet; remove hosts: to run it on this host"
        if self.target is None:
            return
        yield from self.target.problems()
        if self.target.grpc_address is not None and self.grpc is None:
            yield ("target", "url"), "a gRPC service; add a grpc: section saying what one call is (method, request)"
        if self.target.grpc_address is None and self.grpc is not None:
            yield ("target", "url"), "a gRPC load calls grpc://HOST:PORT; give the service's gRPC address"
        if self.target.model_server and self.model is None:
            yield ("target", "model_server"), "needs model: (the model each strategy sets on the target)"
        if self.target.host is not None:
            return  # its agent pauses what it registered
        pauses = [index for index, fault in enumerate(self.faults) if fault.kind == "pause"]
        if pauses and self.target.pause_kind is None:
            yield (
                ("faults", pauses[0]),
                (
                    "target: names nothing to pause; add command (everything it starts is paused), pid, tree, "
                    "cgroup, unit, container or service"
                ),
            )

    def _load_problems(self) -> Iterator[tuple[Loc, str]]:
        load = self.load
        intervals = load.duration / self.sim.sample_every
        if intervals > MAX_INTERVALS:
            yield (
                ("sim", "sample_every"),
                (
                    f"{intervals:,.0f} intervals of {format_duration(self.sim.sample_every)} in load.duration; "
                    f"at most {MAX_INTERVALS:,}: sample less often"
                ),
            )
        if load.arrival == "open" and load.rate is None:
            yield ("load", "arrival"), "open arrivals need load.rate (logical requests per second, e.g. rate: 100)"
        if load.arrival == "closed" and load.rate is not None:
            yield ("load", "rate"), "only used with arrival: open; remove it or set arrival: open"
        if load.arrival == "open" and self.sim.first_request is not None:
            yield ("sim", "first_request"), "only applies to arrival: closed"
