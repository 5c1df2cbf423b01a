"""A headless Locust process per strategy, with the strategy's options and ``--metrics-port``.

:class:`LocustDriver` starts ``locust -f loadgen/locustfile.py --headless`` and returns
once users are being spawned. Locust always runs in its own process: nothing here
imports it. Its options are :func:`~runner.locust_args.locust_options` as flags. It binds
and talks to 127.0.0.1 only; its ``--run-time`` bounds its run even if the runner vanished
(:data:`~runner.locust_args.LOCUST_RUN_MARGIN_S`), and it is stopped by its pid. A
scenario's spikes go to it as :data:`~loadgen.spikes.SPIKES_ENV`: its load shape
(:mod:`loadgen.shape`) adds ``users * (factor - 1)`` users while each lasts.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Sequence
from pathlib import Path

import aiohttp

import loadgen
from experiment.scenario import RunSpec, SpikeWindow
from loadgen.options import FLAG_DESTS
from loadgen.spikes import SPIKES_ENV, Spike, format_spikes
from retrystorm.polling import poll_until
from runner.errors import RunFailedError
from runner.interfaces import TargetHandle
from runner.live_triggers import spike_users
from runner.local.processes import ManagedProcess
from runner.locust_args import check_options, describe_load, locust_options
from runner.paths import slug
from runner.readings import parse_client

LOCUSTFILE = Path(loadgen.__file__).with_name("locustfile.py")
LOAD_START_S = 90.0


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (for Locust, which cannot report the one it took)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class LocustLoad:
    """A headless Locust child process and its ``/metrics`` port."""

    def __init__(self, process: ManagedProcess, metrics_port: int, spec: RunSpec) -> None:
        self.process = process
        self.metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
        self.spec = spec

    def describe(self) -> str:
        return f"headless Locust (pid {self.process.pid}), metrics on {self.metrics_url}"

    def check(self) -> None:
        if not self.process.running:
            raise self.process.failure("stopped during the run")

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
        await self.process.stop()


class LocustDriver:
    """Starts one headless Locust process per strategy."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir

    def describe(self, spec: RunSpec) -> str:
        check_options(spec)  # the load generator's own check: a UserError names the flag
        return f"locust -f {LOCUSTFILE} --headless: {describe_load(spec)}"

    def argv(self, base_url: str, spec: RunSpec, metrics_port: int) -> list[str]:
        """The Locust command line for ``spec`` against ``base_url``: its options as ``--name=value``, flags bare."""
        argv = [
            sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless", "--host", base_url,
            "--web-host", "127.0.0.1", "--metrics-port", str(metrics_port),
            "--exit-code-on-error", "0", "--only-summary",
        ]  # fmt: skip
        for name, value in locust_options(spec).items():
            flag = "--" + name.replace("_", "-")
            if name == "request":  # repeatable: one flag per request, none for the default
                argv += [f"{flag}={line}" for line in value.splitlines()]
            elif name not in FLAG_DESTS:
                argv.append(f"{flag}={value}")
            elif value == "true":
                argv.append(flag)
        return argv

    def spike_refusal(self) -> str | None:
        return None  # played by the locustfile's load shape (loadgen.shape)

    async def start(self, target: TargetHandle, spec: RunSpec, spikes: Sequence[SpikeWindow] = ()) -> LocustLoad:
        port = free_port()
        log_path = self.log_dir / f"{slug(spec.label)}-locust.log"
        argv = self.argv(target.base_url, spec, port)
        schedule = [Spike(*entry) for entry in spike_users(spec.users, spikes)]
        env = {SPIKES_ENV: format_spikes(schedule)} if schedule else None
        process = ManagedProcess(f"Locust for {spec.label}", argv, log_path, env=env)
        load = LocustLoad(process, port, spec)
        try:
            await load.wait_spawning(LOAD_START_S)
        except BaseException:
            await process.stop()
            raise
        return load
