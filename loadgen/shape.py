"""The live ``spike`` trigger in the Locust process: a load shape that adds users while each spike lasts.

:mod:`loadgen.locustfile` defines :class:`SpikeShape` only when the runner set
:data:`~loadgen.spikes.SPIKES_ENV` (a shape takes over the user count, so without
spikes Locust runs as always). The shape reads ``--users``, ``--spawn-rate`` and
``--run-time`` (``use_common_options``): from its start, the users of
:class:`~loadgen.spikes.SpikeSchedule` at each moment, spawned at ``--spawn-rate`` until
the first spike, then fast enough to start a spike's users within a second; after
``--run-time`` it ends the run. Locust asks a shape once a second, so a spike starts and
ends within a second of its time. At a spike's end Locust stops that many users, with
the requests they have in flight (the simulator lets them finish theirs). At each tick the
shape serves the factor in force (:meth:`~loadgen.spikes.SpikeSchedule.factor_at`) as
``retrystorm_client_load_factor{strategy}``; only the process that plays the shape (the
single process, or the master) has that series, so a master's sum of its workers is it.
"""

from __future__ import annotations

import os

from locust import LoadTestShape

from loadgen.plugin import runtime_of
from loadgen.spikes import SPIKES_ENV, SpikeSchedule, parse_spikes


class SpikeShape(LoadTestShape):
    """The run's users, more during each spike (see the module docstring)."""

    abstract = False
    use_common_options = True

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # Locust's own class, untyped
        self.spikes = tuple(parse_spikes(os.environ.get(SPIKES_ENV, "")))

    def tick(self) -> tuple[int, float] | None:
        """``(users, spawn rate)`` now, or ``None`` after ``--run-time``: the run ends."""
        if self.runner is None:
            return None
        options = self.runner.environment.parsed_options
        if options is None:
            return None
        now = float(self.get_run_time())  # type: ignore[no-untyped-call]
        run_time = getattr(options, "run_time", None)
        if run_time and now >= run_time:
            return None
        schedule = SpikeSchedule(int(options.num_users or 1), self.spikes)
        rate = float(options.spawn_rate or 1)
        if self.spikes and now >= min(spike.start_s for spike in self.spikes):
            rate = max(rate, float(max(spike.extra for spike in self.spikes)))
        self._show_factor(schedule.factor_at(now))
        return schedule.users_at(now), rate

    def _show_factor(self, factor: float) -> None:
        """Serve the factor in force as ``retrystorm_client_load_factor`` (the dashboard's spike band)."""
        if self.runner is None:
            return
        runtime = runtime_of(self.runner.environment)
        if runtime.run is not None:  # the test has started: its strategy labels the series
            runtime.metrics.show_load_factor(runtime.run.options.strategy_name, factor)
