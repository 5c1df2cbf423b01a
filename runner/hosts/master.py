"""Load across hosts on Locust's own distributed mode: the runner starts the master, workers on any host join it.

:class:`HostsLoad` starts one Locust master for the whole run, listening for workers on the scenario's
``hosts.master`` address (``--master-bind-host``/``--master-bind-port``) and serving its web API on a free
loopback port only (the runner drives it over that API, as the compose backend drives its master:
:class:`~retrystorm.runner.locust_master.LocustMaster`). Before the first strategy it waits until
``hosts.workers`` workers have joined (``retrystorm worker --master HOST:PORT`` on each host, or Locust's own
``--worker``); the workers then stay for every strategy, each swarm spread over them by the master. A swarm
carries its own ``run_time``, so the load stops by itself if the runner is gone; the master is a child of the
runner (it gets SIGTERM when the runner dies) and tells its workers to quit when it stops.

The master's ``/metrics`` is the sum of its workers' series, each worker's attempts kept apart by process
(``retrystorm_client_generator_attempts_started_total``): a run checks that every worker's load was counted.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from retrystorm.experiment.scenario import RunSpec, SpikeWindow
from retrystorm.experiment.scenario.hosts import Hosts
from retrystorm.polling import poll_until
from retrystorm.runner.errors import RunFailedError
from retrystorm.runner.interfaces import TargetHandle
from retrystorm.runner.local.processes import ManagedProcess
from retrystorm.runner.locust_args import LOCUSTFILE, describe_load, free_port
from retrystorm.runner.locust_master import LocustMaster, MasterApi, MasterLoad

log = logging.getLogger(__name__)

#: How long the first strategy waits for the workers to join, and for the master's web API.
WORKERS_TIMEOUT_S = 120.0
MASTER_START_S = 60.0


def worker_hint(hosts: Hosts) -> str:
    """How to start a worker that joins this run's master."""
    return f"start them on their hosts: retrystorm worker --master {hosts.master}"


class HostsLoad:
    """A Locust master this runner starts; workers on any host join it (see the module docstring)."""

    def __init__(self, hosts: Hosts, log_dir: Path, *, workers_timeout_s: float = WORKERS_TIMEOUT_S) -> None:
        self.hosts = hosts
        self.log_dir = log_dir
        self.workers_timeout_s = workers_timeout_s
        self.process: ManagedProcess | None = None
        self.driver: LocustMaster | None = None

    def describe(self, spec: RunSpec) -> str:
        return (
            f"a Locust master listening for workers on {self.hosts.master}, {self.hosts.workers} worker(s) joined "
            f"({worker_hint(self.hosts)}): {describe_load(spec)}"
        )

    def spike_refusal(self) -> str | None:
        return None  # played by the master (retrystorm.loadgen.spike_player), from the swarm's load_spikes

    def argv(self, web_port: int) -> list[str]:
        """The master's command line: workers on ``hosts.master``, its web API on loopback only."""
        host, port = self.hosts.master_address()
        return [
            sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--master",
            "--master-bind-host", host, "--master-bind-port", str(port),
            "--web-host", "127.0.0.1", "--web-port", str(web_port),
        ]  # fmt: skip

    async def _start_master(self) -> LocustMaster:
        web_port = free_port()
        self.process = ManagedProcess("Locust master", self.argv(web_port), self.log_dir / "locust-master.log")
        url = f"http://127.0.0.1:{web_port}"
        api = MasterApi(url, "the Locust master")
        try:
            await self._wait_workers(api)
        finally:
            await api.close()
        return LocustMaster(url)

    async def _wait_workers(self, api: MasterApi) -> None:
        wanted, seen = self.hosts.workers, [0]

        async def joined() -> bool | None:
            if self.process is not None and not self.process.running:
                raise self.process.failure("stopped before its workers joined")
            try:
                seen[0] = await api.worker_count()
            except RunFailedError:
                return None  # its web API is not up yet
            return True if seen[0] >= wanted else None

        def late() -> RunFailedError:
            return RunFailedError(
                f"{seen[0]} of {wanted} Locust worker(s) joined the master on {self.hosts.master} within "
                f"{self.workers_timeout_s:.0f} s; {worker_hint(self.hosts)}"
            )

        await poll_until(joined, timeout_s=self.workers_timeout_s, every_s=0.2, on_timeout=late)
        log.info("%d Locust worker(s) joined the master on %s", seen[0], self.hosts.master)

    async def start(self, target: TargetHandle, spec: RunSpec, spikes: Sequence[SpikeWindow] = ()) -> MasterLoad:
        """Start the master and wait for the workers (the first time), then this strategy's swarm."""
        if self.driver is None:
            self.driver = await self._start_master()
        return await self.driver.start(target, spec, spikes)

    async def close(self) -> None:
        """Stop the master (it tells its workers to quit); the run is over."""
        if self.process is not None:
            await self.process.stop()
            self.process = None
            self.driver = None
