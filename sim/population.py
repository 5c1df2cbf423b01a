"""Who sends requests when: closed-loop users and their first requests, open-loop arrivals."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sim.engine import Simulation

#: Event kinds, as in :mod:`sim.engine` (kept here to avoid an import cycle).
_NEW, _ARRIVAL = 0, 4


def start_population(sim: Simulation) -> None:
    """Schedule every closed-loop user's first request, or the first open-loop arrival.

    Closed loop: user ``i`` starts at ``i / spawn_rate`` (all at 0 without a spawn
    rate) and thinks before its first request, as the seed's Go client does. With
    ``first_request: spike+uniform`` the first ``round(spike_fraction * users)`` users
    send their first request uniformly within ``[spike_at, spike_at + spike_width)``
    and the rest uniformly within ``[0, uniform_over)``; no think time precedes it.
    """
    config = sim.config
    if config.arrival == "open":
        sim.push(next_arrival_s(sim), _ARRIVAL)
        return
    pattern = config.first_request
    spiking = round(pattern.spike_fraction * config.users) if pattern is not None else 0
    for index in range(config.users):
        client = sim.add_client(config.requests_per_user)
        if pattern is not None:
            if index < spiking:
                first = pattern.spike_at + sim.arrival_rng.uniform(0.0, pattern.spike_width)
            else:
                first = sim.arrival_rng.uniform(0.0, pattern.uniform_over)
            sim.push(first, _NEW, client)
            continue
        start = index / config.spawn_rate if config.spawn_rate else 0.0
        client.think_s = config.think.sample(sim.think_rng)
        sim.push(start + client.think_s, _NEW, client)


def next_arrival_s(sim: Simulation) -> float:
    """Seconds to the next open-loop arrival: ``Exp(1/rate)`` (Poisson) or ``1/rate`` (constant)."""
    rate = sim.config.rate or 1.0
    if sim.config.open_arrivals == "constant":
        return 1.0 / rate
    return sim.arrival_rng.expovariate(rate)
