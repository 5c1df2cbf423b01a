"""The embedded stack: a ``retrystorm target`` process and a headless Locust process per strategy.

* :class:`LocalTargets` starts ``retrystorm target`` on a free loopback port (the
  target picks it: ``--port 0``) and registers its pid as fault target ``target`` in a
  :class:`~chaos.backends.ProcessBackend`, so outages are ``SIGSTOP`` / ``SIGCONT``
  of that very process (pid and start time).
* :class:`LocustDriver` starts ``locust -f loadgen/locustfile.py --headless`` with the
  strategy's options and ``--metrics-port``, and returns once users are being
  spawned. Locust always runs in its own process: nothing here imports it.

Both bind and talk to 127.0.0.1 only; Locust's ``-t`` bounds its run even if the
runner vanished, and every process is stopped by its pid.
"""

from __future__ import annotations

import asyncio
import math
import re
import socket
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import aiohttp

import loadgen
from chaos.backends import FaultBackend, ProcessBackend
from chaos.runner.interfaces import TargetHandle
from chaos.runner.processes import ManagedProcess
from chaos.runner.readings import parse_client
from chaos.runner.settings import LoadSettings
from loadgen.options import load_options
from target.models import OverloadModel

LOCUSTFILE = Path(loadgen.__file__).with_name("locustfile.py")
FAULT_TARGET = "target"
#: Locust's own time limit is the run's duration plus this: a bound if the runner is gone.
LOCUST_RUN_MARGIN_S = 30.0
TARGET_START_S = 30.0
LOAD_START_S = 90.0


def slug(label: str) -> str:
    """A file-name-safe form of a strategy label: ``fixed-100ms``."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", label).strip("-") or "strategy"


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (for Locust, which cannot report the one it took)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class LocalTarget:
    """A ``retrystorm target`` child process."""

    def __init__(self, process: ManagedProcess, base_url: str) -> None:
        self.process = process
        self.base_url = base_url
        self.metrics_url = base_url + "/metrics"
        self.fault_targets: Mapping[str, str] = {FAULT_TARGET: ProcessBackend.name}

    def describe(self) -> str:
        return f"retrystorm target on {self.base_url} (pid {self.process.pid})"

    def check(self) -> None:
        if not self.process.running:
            raise self.process.failure("died during the run")

    async def stop(self) -> None:
        await self.process.stop()


class LocalTargets:
    """Fresh ``retrystorm target`` processes, paused by the process backend."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.process_backend = ProcessBackend()
        self.backends: Mapping[str, FaultBackend] = {ProcessBackend.name: self.process_backend}

    def fault_target_names(self) -> list[str]:
        return [FAULT_TARGET]

    def describe(self, model: OverloadModel) -> str:
        return f"retrystorm target --model {model.spec()}, a fresh process on 127.0.0.1 (SIGSTOP/SIGCONT)"

    async def start(self, label: str, model: OverloadModel, seed: int) -> LocalTarget:
        argv = [
            sys.executable, "-m", "retrystorm", "target", "--model", model.spec(),
            "--host", "127.0.0.1", "--port", "0", "--report-interval", "0", "--seed", str(seed),
        ]  # fmt: skip
        process = ManagedProcess(f"target of {label}", argv, self.log_dir / f"{slug(label)}-target.log")
        try:
            found = await process.wait_for_log(r"listening on (http://127\.0\.0\.1:\d+)", TARGET_START_S)
        except BaseException:
            await process.stop()
            raise
        self.process_backend.register(FAULT_TARGET, process.pid)
        return LocalTarget(process, found.group(1))


class LocustLoad:
    """A headless Locust child process and its ``/metrics`` port."""

    def __init__(self, process: ManagedProcess, metrics_port: int, settings: LoadSettings) -> None:
        self.process = process
        self.metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
        self.settings = settings

    def describe(self) -> str:
        return f"headless Locust (pid {self.process.pid}), metrics on {self.metrics_url}"

    def check(self) -> None:
        if not self.process.running:
            raise self.process.failure("stopped during the run")

    async def wait_spawning(self, timeout_s: float) -> None:
        """Return once Locust counts active users (it spawns them at the start of its run)."""
        deadline = time.monotonic() + timeout_s
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=2.0)) as session:
            while True:
                try:
                    async with session.get(self.metrics_url) as response:
                        if parse_client(await response.text()).active_users > 0:
                            return
                except (aiohttp.ClientError, TimeoutError, ValueError):
                    pass
                self.check()
                if time.monotonic() > deadline:
                    raise self.process.failure(f"spawned no users within {timeout_s:.0f} s")
                await asyncio.sleep(0.05)

    async def stop(self) -> None:
        await self.process.stop()


class LocustDriver:
    """Starts one headless Locust process per strategy."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir

    def describe(self, settings: LoadSettings) -> str:
        load_options(settings.options())  # the load generator's own check: a UserError names the flag
        return f"locust -f {LOCUSTFILE} --headless: {settings.describe()}"

    def argv(self, base_url: str, settings: LoadSettings, metrics_port: int) -> list[str]:
        """The Locust command line for ``settings`` against ``base_url``."""
        run_time = math.ceil(settings.duration_s + LOCUST_RUN_MARGIN_S)
        argv = [
            sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless", "--host", base_url,
            "--users", str(settings.users), "--spawn-rate", f"{settings.spawn_rate:g}", "--run-time", f"{run_time}s",
            "--web-host", "127.0.0.1", "--metrics-port", str(metrics_port),
            "--exit-code-on-error", "0", "--only-summary",
        ]  # fmt: skip
        argv += [f"--{name.replace('_', '-')}={value}" for name, value in settings.options().items()]
        if not settings.reset_after_success:
            argv.append("--keep-backoff")
        return argv

    async def start(self, target: TargetHandle, settings: LoadSettings) -> LocustLoad:
        port = free_port()
        log_path = self.log_dir / f"{slug(settings.label)}-locust.log"
        process = ManagedProcess(f"Locust for {settings.label}", self.argv(target.base_url, settings, port), log_path)
        load = LocustLoad(process, port, settings)
        try:
            await load.wait_spawning(LOAD_START_S)
        except BaseException:
            await process.stop()
            raise
        return load
