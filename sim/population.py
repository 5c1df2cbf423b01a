"""Who sends requests when: closed-loop users and their first requests, open-loop arrivals."""

from __future__ import annotations

import random
from typing import Any, Protocol

from retrystorm.experiment.scenario import RunSpec
from retrystorm.sim.config import RunConfig
from retrystorm.sim.events import ARRIVAL, NEW

#: Where constant open-loop arrivals fall within their interval: the golden ratio's fraction, ``(sqrt 5 - 1) / 2``,
#: far from every simple fraction, so no reading at a whole second (or a simple fraction of one) meets an arrival.
PHASE = (5**0.5 - 1) / 2


class Simulation(Protocol):
    """What the population needs of a simulation (:class:`retrystorm.sim.engine.Simulation`)."""

    config: RunConfig
    spec: RunSpec
    think_rng: random.Random
    arrival_rng: random.Random

    def add_client(self, requests_left: int | None) -> Any:
        """A new client with its own retry session."""
        ...

    def push(self, time_s: float, kind: int, client: Any = None, token: int = 0) -> None:
        """Schedule an event."""
        ...


def start_population(sim: Simulation) -> None:
    """Schedule every closed-loop user's first request, or every open-loop user's first.

    Closed loop: user ``i`` starts at ``i / spawn_rate`` (all at 0 without a spawn
    rate) and thinks before its first request, as the seed's Go client does. With
    ``first_request: spike+uniform`` the first ``round(spike_fraction * users)`` users
    send their first request uniformly within ``[spike_at, spike_at + spike_width)``
    and the rest uniformly within ``[0, uniform_over)``; no think time precedes it.

    Open loop: user ``i`` also starts at ``i / spawn_rate`` and waits :func:`open_wait_s`
    before each request, whether or not its earlier ones have finished, as the live
    user does with ``--arrival open`` (the runner gives it the think time
    ``exponential:(users / rate)``): ``rate`` requests per second in all. With constant
    arrivals the users take turns, the first wait of user ``i`` being ``(i + PHASE) / rate``,
    so that requests come every ``1 / rate``, :data:`PHASE` of an interval off the
    whole seconds: a run's readings (every ``sample_every``) then never fall on an
    arrival's instant, where float rounding in the sum of the waits would decide whether a
    reading sees it (and a steady reading and a later one differ by that alone). The wait is what the request's session
    sees as the sleep before it, as the live user's think time (``smira`` grows its
    first backoff from it).
    """
    config, spec = sim.config, sim.spec
    pattern = config.first_request
    spiking = round(pattern.spike_fraction * spec.users) if pattern is not None else 0
    for index in range(spec.users):
        client = sim.add_client(1 if spec.arrival == "open" else config.requests_per_user)
        start = index / spec.spawn_rate if spec.spawn_rate else 0.0
        if spec.arrival == "open":
            constant = config.open_arrivals == "constant"
            client.think_s = (index + PHASE) / (spec.rate or 1.0) if constant else open_wait_s(sim)
            sim.push(start + client.think_s, ARRIVAL, client)
            continue
        if pattern is not None:
            if index < spiking:
                first = pattern.spike_at + sim.arrival_rng.uniform(0.0, pattern.spike_width)
            else:
                first = sim.arrival_rng.uniform(0.0, pattern.uniform_over)
            sim.push(first, NEW, client)
            continue
        client.think_s = spec.think.sample(sim.think_rng)
        sim.push(start + client.think_s, NEW, client)


def open_wait_s(sim: Simulation) -> float:
    """An open-loop user's wait before its next request: ``Exp(users / rate)`` (Poisson), or ``users / rate``."""
    mean_s = sim.spec.users / (sim.spec.rate or 1.0)
    if sim.config.open_arrivals == "constant":
        return mean_s
    return sim.arrival_rng.expovariate(1.0 / mean_s)
