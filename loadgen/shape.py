"""The live ``spike`` trigger in the Locust process: a load shape that adds users while each spike lasts.

:mod:`loadgen.locustfile` defines :class:`SpikeShape` only when the runner set
:data:`~loadgen.spikes.SPIKES_ENV` (a shape takes over the user count, so without
spikes Locust runs as always). The shape reads ``--users``, ``--spawn-rate`` and
``--run-time`` (``use_common_options``): from its start, the users of
:class:`~loadgen.spikes.SpikeSchedule` at each moment, spawned at ``--spawn-rate`` until
the first spike, then fast enough to start a spike's users within a second; after
``--run-time`` it ends the run. Locust asks a shape once a second, so a spike starts and
ends within a second of its time. At a spike's end Locust stops that many users, with
the requests they have in flight (the simulator lets them finish theirs).
"""

from __future__ import annotations

import os

from locust import LoadTestShape

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
        return schedule.users_at(now), rate
