"""The load generator's own CPU, as Prometheus metrics: is this Locust process the bottleneck?

A Locust process is one event loop on one core. Near a full core it sends late, and
what it measures is its own backlog (:mod:`retrystorm.experiment.analysis.validity`). Each process
serves, labelled ``process="<hostname> pid <pid>"`` so that a master's sum of its
workers' series keeps them apart (:mod:`retrystorm.loadgen.aggregate`):

* ``retrystorm_client_generator_cpu_seconds_total``: user plus system CPU seconds
  the process used; ``rate()`` of it is its share of a core;
* ``retrystorm_client_generator_saturated``: 1 while the process used at least
  :data:`SATURATED_SHARE` (0.9, Locust's own warning threshold) of a core over the last
  :data:`WINDOW_S` (at least 1 s, measured between collections), else 0: the
  saturation rule's CPU signal, readable in Prometheus and Grafana during the run;
* ``retrystorm_client_generator_attempts_started_total``: the attempts this process sent, so a master's
  sum shows each worker's share of the load, wherever the workers run (a run across hosts checks that every
  worker's load was counted).

The share is computed from the process's own clock and CPU times, so any number of
readers (a scrape, a worker's report to its master) see the same value.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Iterator

import psutil
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

CPU_SECONDS = "retrystorm_client_generator_cpu_seconds"
SATURATED = "retrystorm_client_generator_saturated"
ATTEMPTS_STARTED = "retrystorm_client_generator_attempts_started"
#: Share of one core at or above which a load-generator process counts as saturated.
SATURATED_SHARE = 0.9
#: The shortest span over which the saturated gauge is judged.
WINDOW_S = 1.0


def _own_cpu_s() -> float:
    times = psutil.Process(os.getpid()).cpu_times()
    return float(times.user + times.system)


class GeneratorCpu(Collector):
    """This process's CPU seconds and whether it was saturated over its last window (module docstring)."""

    def __init__(
        self,
        cpu_s: Callable[[], float] = _own_cpu_s,
        clock: Callable[[], float] = time.monotonic,
        name: str = "",
        attempts_started: Callable[[], float] | None = None,
    ) -> None:
        self.cpu_s = cpu_s
        self.attempts_started = attempts_started
        self.clock = clock
        self.name = name or f"{socket.gethostname()} pid {os.getpid()}"
        self._mark = (clock(), cpu_s())
        self._share: float | None = None

    def share(self) -> float | None:
        """The share of a core over the last window of at least :data:`WINDOW_S`; ``None`` before the first."""
        now, used = self.clock(), self.cpu_s()
        then, before = self._mark
        if now - then >= WINDOW_S:
            self._share = max(0.0, used - before) / (now - then)
            self._mark = (now, used)
        return self._share

    def collect(self) -> Iterator[Metric]:
        share = self.share()
        seconds = CounterMetricFamily(
            CPU_SECONDS, "CPU seconds (user + system) this load-generator process used.", labels=["process"]
        )
        seconds.add_metric([self.name], self.cpu_s())
        yield seconds
        saturated = GaugeMetricFamily(
            SATURATED,
            f"1 while this load-generator process used at least {SATURATED_SHARE:.0%} of a core over its last "
            "second or more: its figures then measure the generator, not the service.",
            labels=["process"],
        )
        saturated.add_metric([self.name], 1.0 if share is not None and share >= SATURATED_SHARE else 0.0)
        yield saturated
        if self.attempts_started is not None:
            attempts = CounterMetricFamily(
                ATTEMPTS_STARTED, "Attempts this load-generator process sent (every strategy).", labels=["process"]
            )
            attempts.add_metric([self.name], self.attempts_started())
            yield attempts
