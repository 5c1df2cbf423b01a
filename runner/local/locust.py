"""Local Locust processes per strategy: one headless process, or a master and N workers, all on 127.0.0.1.

:class:`LocustDriver` starts ``locust -f loadgen/locustfile.py --headless`` with the
strategy's options (:func:`~retrystorm.runner.locust_args.locust_options` as flags) and
``--metrics-port``, and returns once users are being spawned. With ``workers`` of 2 or
more it starts a headless *master* (``--master``, bound to 127.0.0.1 on a free port,
``--expect-workers N``) and N ``--worker`` processes, each a child of the runner with its
own log: the users are spread over the workers, the options go from the master to them,
and the master's ``/metrics`` serves the sum of their series (:mod:`retrystorm.loadgen.aggregate`).
One process of Locust is one event loop on one core; several let a bigger machine drive
more users without the generator becoming the bottleneck (:mod:`retrystorm.experiment.analysis.validity`).

A gRPC load (``spec.grpc``) runs ``loadgen/grpc_locustfile.py`` against the target's gRPC address
(:class:`~retrystorm.runner.interfaces.GrpcEndpoint`), with the request bytes the target encoded from the
scenario's JSON when it did. Each process that runs users has one channel, hence one gRPC retry throttle:
:attr:`LocustLoad.user_processes` says how many, and the results carry it.

A scenario's spikes go to Locust as ``--load-spikes`` (:func:`~retrystorm.runner.locust_args.load_spikes`):
the single process or the master (:mod:`retrystorm.loadgen.spike_player`) adds ``users * (factor - 1)``
users while each lasts.

Locust always runs in its own processes: nothing here imports it. It binds and talks to
127.0.0.1 only; its ``--run-time`` bounds its run even if the runner vanished
(:data:`~retrystorm.runner.locust_args.LOCUST_RUN_MARGIN_S`), and every process is stopped by its
pid. Each process's CPU is read from outside (:class:`~retrystorm.runner.local.cpu.CpuMeter`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import aiohttp

from retrystorm.experiment.scenario import RunSpec, SpikeWindow
from retrystorm.loadgen.exposition import parse_client
from retrystorm.polling import poll_until
from retrystorm.runner.errors import RunFailedError
from retrystorm.runner.interfaces import TargetHandle
from retrystorm.runner.local.cpu import CpuMeter
from retrystorm.runner.local.processes import ManagedProcess
from retrystorm.runner.locust_args import (
    attempt_timeout_s,
    check_options,
    describe_load,
    free_port,
    locust_flags,
    locust_options,
    locustfile,
    think_time,
)
from retrystorm.runner.paths import slug

LOAD_START_S = 90.0
#: Attempts per second one Locust worker is planned for: half of what one process sends at
#: saturation in a timeout storm here (about 2,000/s, ``bench/loadgen_workers.py``).
PLANNED_ATTEMPTS_PER_WORKER = 1000.0
#: The same for gRPC calls: a gRPC call costs the load generator about 2.8 times an HTTP request's CPU
#: (bench/grpc_costs.py: 1,448 against 3,973 calls per CPU-second, docs/guides/grpc.md).
PLANNED_GRPC_ATTEMPTS_PER_WORKER = 350.0


def peak_attempts_per_s(spec: RunSpec) -> float:
    """The most attempts per second the users can ask for: ``users / min(mean think, attempt timeout)``.

    A user sends at most one attempt per think time while answers are quick, and at most
    one per attempt timeout (plus its backoff) while none come: the larger of the two
    rates bounds the seed-style load in a steady state and in a storm alike.
    """
    cycle_s = min(think_time(spec).mean_s, attempt_timeout_s(spec))
    return spec.users / max(cycle_s, 0.01)


def default_workers(spec: RunSpec, cores: int | None = None) -> int:
    """Worker processes for ``spec``: enough for its peak load, at most one per core but one.

    ``ceil(peak attempts/s / PLANNED_ATTEMPTS_PER_WORKER)``, between 1 and ``cores - 1``
    (a core is left for the target and the runner); 1 means a single headless process.
    """
    cores = cores or os.cpu_count() or 1
    planned = PLANNED_GRPC_ATTEMPTS_PER_WORKER if spec.grpc is not None else PLANNED_ATTEMPTS_PER_WORKER
    wanted = math.ceil(peak_attempts_per_s(spec) / planned)
    return max(1, min(wanted, cores - 1))


def load_host(target: TargetHandle, spec: RunSpec) -> str:
    """Where ``spec``'s users send: the target's gRPC address for a gRPC load, else its base URL."""
    if spec.grpc is None:
        return target.base_url
    if target.grpc is None:
        raise RunFailedError(f"{spec.label}: a gRPC load, but the target serves no gRPC")
    return target.grpc.address


class LocustLoad:
    """The Locust child processes of one strategy (one, or a master and its workers) and the ``/metrics`` port."""

    def __init__(self, processes: list[ManagedProcess], metrics_port: int, spec: RunSpec) -> None:
        self.processes = processes
        self.metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
        self.spec = spec
        self.meter = CpuMeter()

    @property
    def process(self) -> ManagedProcess:
        """The process serving ``/metrics``: the only one, or the master."""
        return self.processes[0]

    @property
    def user_processes(self) -> int:
        """The processes running users: the only one, or the workers (a master runs none)."""
        return max(1, len(self.processes) - 1)

    def names(self) -> dict[str, int]:
        """``name -> pid`` of every process: ``locust (pid N)``, or ``master (pid N)`` and ``worker K (pid N)``."""
        if len(self.processes) == 1:
            return {f"locust (pid {self.process.pid})": self.process.pid}
        named = {f"master (pid {self.process.pid})": self.process.pid}
        named.update({f"worker {i} (pid {p.pid})": p.pid for i, p in enumerate(self.processes[1:], start=1)})
        return named

    def describe(self) -> str:
        if len(self.processes) == 1:
            return f"headless Locust (pid {self.process.pid}), metrics on {self.metrics_url}"
        workers = ", ".join(str(process.pid) for process in self.processes[1:])
        return (
            f"headless Locust master (pid {self.process.pid}) with {len(self.processes) - 1} workers "
            f"(pids {workers}), metrics on {self.metrics_url}"
        )

    def check(self) -> None:
        for process in self.processes:
            if not process.running:
                raise process.failure("stopped during the run")

    async def generator_cpu(self) -> Mapping[str, float] | None:
        return self.meter.read(self.names())

    async def wait_spawning(self, timeout_s: float) -> None:
        """Return once Locust counts active users (it spawns them at the start of its run)."""
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2.0)) as session:

            async def spawning() -> bool | None:
                try:
                    async with session.get(self.metrics_url) as response:
                        if parse_client(await response.text()).active_users > 0:
                            return True
                except (aiohttp.ClientError, TimeoutError, ValueError):
                    pass
                self.check()
                return None

            def late() -> RunFailedError:
                return self.process.failure(f"spawned no users within {timeout_s:.0f} s")

            await poll_until(spawning, timeout_s=timeout_s, every_s=0.05, on_timeout=late)

    async def stop(self) -> None:
        """The master (or the only process) first, which tells its workers to quit; then each worker by its pid."""
        await self.process.stop()
        await asyncio.gather(*(process.stop() for process in self.processes[1:]))


class LocustDriver:
    """Starts the Locust processes of each strategy: ``workers`` of them (``None``: :func:`default_workers`)."""

    def __init__(self, log_dir: Path, workers: int | None = None) -> None:
        self.log_dir = log_dir
        self.workers = workers

    def worker_count(self, spec: RunSpec) -> int:
        """How many Locust processes send ``spec``'s load."""
        return self.workers if self.workers is not None else default_workers(spec)

    def describe(self, spec: RunSpec) -> str:
        check_options(spec)  # the load generator's own check: a UserError names the flag
        count = self.worker_count(spec)
        chosen = "" if self.workers is not None else " (--workers auto: from the cores and the peak load)"
        how = "one process" if count == 1 else f"a master and {count} workers"
        if spec.grpc is not None:
            how += ", one gRPC channel (one retry throttle) per process running users"
        return f"locust -f {locustfile(spec)} --headless, {how}{chosen}: {describe_load(spec)}"

    def argv(
        self, base_url: str, spec: RunSpec, metrics_port: int, *role: str, spikes: Sequence[SpikeWindow] = ()
    ) -> list[str]:
        """The Locust command line for ``spec`` against ``base_url``: its options as ``--name=value``, flags bare.

        ``role``: extra flags, e.g. ``--master`` and its bind address; ``spikes``: the run's spike windows.
        """
        argv = [
            sys.executable, "-m", "locust", "-f", str(locustfile(spec)), "--headless", "--host", base_url,
            "--web-host", "127.0.0.1", "--metrics-port", str(metrics_port),
            "--exit-code-on-error", "0", "--only-summary", *role,
        ]  # fmt: skip
        return argv + locust_flags(locust_options(spec, spikes=spikes))

    def worker_argv(self, master_port: int, spec: RunSpec) -> list[str]:
        """A worker's command line: it takes its options from the master at 127.0.0.1:``master_port``."""
        return [
            sys.executable, "-m", "locust", "-f", str(locustfile(spec)), "--worker",
            "--master-host", "127.0.0.1", "--master-port", str(master_port),
        ]  # fmt: skip

    def spike_refusal(self) -> str | None:
        return None  # played by the single process or the master (retrystorm.loadgen.spike_player)

    def _processes(
        self, target: TargetHandle, spec: RunSpec, metrics_port: int, spikes: Sequence[SpikeWindow]
    ) -> list[ManagedProcess]:
        count = self.worker_count(spec)
        log = self.log_dir / f"{slug(spec.label)}-locust"
        host = load_host(target, spec)
        if count <= 1:
            argv = self.argv(host, spec, metrics_port, spikes=spikes)
            return [ManagedProcess(f"Locust for {spec.label}", argv, Path(f"{log}.log"))]
        master_port = free_port()
        role = ["--master", "--master-bind-host", "127.0.0.1", "--master-bind-port", str(master_port)]
        role += ["--expect-workers", str(count)]
        argv = self.argv(host, spec, metrics_port, *role, spikes=spikes)
        processes = [ManagedProcess(f"Locust master for {spec.label}", argv, Path(f"{log}-master.log"))]
        try:
            for index in range(1, count + 1):
                name = f"Locust worker {index} for {spec.label}"
                argv = self.worker_argv(master_port, spec)
                processes.append(ManagedProcess(name, argv, Path(f"{log}-worker-{index}.log")))
        except BaseException:
            for process in processes:
                process.popen.kill()
            raise
        return processes

    async def start(self, target: TargetHandle, spec: RunSpec, spikes: Sequence[SpikeWindow] = ()) -> LocustLoad:
        if spec.grpc is not None and target.grpc is not None and target.grpc.request is not None:
            spec = dataclasses.replace(spec, grpc=dataclasses.replace(spec.grpc, request=target.grpc.request))
        port = free_port()
        load = LocustLoad(self._processes(target, spec, port, spikes), port, spec)
        try:
            await load.wait_spawning(LOAD_START_S)
        except BaseException:
            await load.stop()
            raise
        await load.generator_cpu()  # the first reading: the next one measures from here
        return load
