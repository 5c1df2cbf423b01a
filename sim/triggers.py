"""Triggers in virtual time: a capacity cut (``slow``), a load spike (``spike``), an error burst (``errors``).

The timeline's windows (:mod:`retrystorm.experiment.scenario.timeline`) become events of the
run, each at a window's start or end:

* **slow**: the server runs on its own clock (:class:`retrystorm.target.models.ScaledServer`),
  which runs at the capacity in force: the lowest of the slows active (1 outside them).
  At each change the model's next wake-up is computed again.
* **spike**: at its start, ``round(users * (factor - 1))`` extra users join. Closed
  loop: each thinks first, as a new user does (the ``i``-th starting ``i /
  spawn_rate`` later when the load has a spawn rate), then sends like any other user.
  Open loop: each is one more arrival stream at ``rate / users`` requests per second
  (Poisson, or evenly staggered with ``open_arrivals: constant``), so the rate is
  ``rate * factor`` meanwhile. At the spike's end an extra user starts no new logical
  request; one it has in progress goes on to its end (success, give-up or deadline),
  retries included, as a stopping user that finishes its task. Overlapping spikes add
  their extra users.
* **errors**: while a burst is in force (the one with the highest probability when
  several overlap), each attempt that reaches the server is, with that probability
  (drawn from the run's ``errors`` random source), answered at once with the status:
  it never enters the model and fails for its client, which retries it as it retries
  any failure, but no sooner than :data:`retrystorm.sim.engine.LOCAL_RETRY_FLOOR_S` (in virtual
  time a zero delay after an answer at once would loop at one instant). An attempt
  reaching a frozen server is judged when the server resumes.

Without triggers none of this runs: a run with pauses only is the run it always was.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from typing import Any, Protocol

from retrystorm.experiment.scenario import (
    ErrorWindow,
    RunSpec,
    SlowWindow,
    SpikeWindow,
    TriggerWindow,
    rng_for,
)
from retrystorm.experiment.scenario.timeline import highest_probability, levels, lowest_capacity
from retrystorm.loadgen.spikes import added_users
from retrystorm.sim.config import RunConfig
from retrystorm.sim.events import ARRIVAL, NEW
from retrystorm.sim.network import NetworkPlay, has_network
from retrystorm.sim.population import PHASE, open_wait_s
from retrystorm.target.models import ScaledServer

Action = tuple[float, Callable[[float], None]]


class Simulation(Protocol):
    """What the triggers need of a simulation (:class:`retrystorm.sim.engine.Simulation`)."""

    config: RunConfig
    spec: RunSpec
    server: Any
    frozen: bool
    think_rng: random.Random
    arrival_rng: random.Random
    counts: dict[str, int]

    def add_client(self, requests_left: int | None) -> Any:
        """A new client with its own retry session."""
        ...

    def push(self, time_s: float, kind: int, client: Any = None, token: int = 0) -> None:
        """Schedule an event."""
        ...

    def reschedule_wake(self, now: float) -> None:
        """Forget the pending wake-up and ask the model for its next one."""
        ...

    def error_answer(self, now: float, payload: Any, status: int) -> None:
        """An attempt answered at once with the error ``status``."""
        ...


def of_kind(triggers: tuple[TriggerWindow, ...], kind: type[TriggerWindow]) -> list[TriggerWindow]:
    """The windows of one type."""
    return [window for window in triggers if isinstance(window, kind)]


class TriggerPlay:
    """The triggers of one run: what each of their events does."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.errors: ErrorWindow | None = None
        self.errors_rng = rng_for(sim.spec.seed, "errors")
        self.server_admit = sim.server.admit
        self.spikes = bool(of_kind(sim.config.triggers, SpikeWindow))
        config = sim.config
        #: The faults in the network, ``None`` without any.
        self.network = (
            NetworkPlay(config.triggers, sim.spec.seed, config.network_delay) if has_network(config.triggers) else None
        )

    @staticmethod
    def scaled(config: RunConfig, server: Any) -> Any:
        """``server`` on a clock of its own when the run has slows, else ``server`` itself."""
        return ScaledServer(server, 0.0) if of_kind(config.triggers, SlowWindow) else server

    def actions(self) -> list[Action]:
        """Every change the triggers make, with its time, in the order they are to be scheduled."""
        triggers = self.sim.config.triggers
        found: list[Action] = []
        for level in levels(of_kind(triggers, SlowWindow), lowest_capacity):
            capacity = level.window.capacity if isinstance(level.window, SlowWindow) else 1.0
            found.append((level.at_s, functools.partial(self.set_capacity, capacity=capacity)))
        for level in levels(of_kind(triggers, ErrorWindow), highest_probability):
            errors = level.window if isinstance(level.window, ErrorWindow) else None
            found.append((level.at_s, functools.partial(self.set_errors, window=errors)))
        spikes = [window for window in triggers if isinstance(window, SpikeWindow)]
        found.extend((window.start_s, functools.partial(self.start_spike, window=window)) for window in spikes)
        if self.network is not None:
            found.extend(self.network.actions())
        return found

    def set_capacity(self, now: float, capacity: float) -> None:
        """The server runs at ``capacity`` from now on; its pending wake-up moves accordingly."""
        sim = self.sim
        sim.server.set_capacity(now, capacity)
        if not sim.frozen:
            sim.reschedule_wake(now)

    def set_errors(self, now: float, window: ErrorWindow | None) -> None:
        """The error burst in force from now on (``None``: none)."""
        self.errors = window

    def admit(self, now: float, payload: Any) -> None:
        """An attempt reaches the server: answered at once with the burst's error, or admitted."""
        errors = self.errors
        if errors is not None and self.errors_rng.random() < errors.probability:
            self.sim.counts["injected_errors"] += 1
            self.sim.error_answer(now, payload, errors.status)
            return
        self.server_admit(now, payload)

    def start_spike(self, now: float, window: SpikeWindow) -> None:
        """``round(users * (factor - 1))`` extra users (closed loop) or arrival streams (open loop) start."""
        sim, spec = self.sim, self.sim.spec
        extra = added_users(spec.users, window.factor)
        for index in range(extra):
            if spec.arrival == "open":
                client = sim.add_client(1)
                client.stop_s = window.end_s
                if sim.config.open_arrivals == "constant":
                    client.think_s = (index + PHASE) / extra * spec.users / (spec.rate or 1.0)
                else:
                    client.think_s = open_wait_s(sim)
                sim.push(now + client.think_s, ARRIVAL, client)
                continue
            client = sim.add_client(sim.config.requests_per_user)
            client.stop_s = window.end_s
            client.think_s = spec.think.sample(sim.think_rng)
            start = now + (index / spec.spawn_rate if spec.spawn_rate else 0.0)
            sim.push(start + client.think_s, NEW, client)
