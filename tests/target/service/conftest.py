"""Fixtures for the target service: in-process apps on a manual clock, and real processes."""

from __future__ import annotations

import asyncio
import contextlib
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from retrystorm.target.probe import encode_request, fetch
from retrystorm.target.service import ServiceConfig, TargetApp, create_app
from tests.support.waiting import wait_until_async

#: No test scenario may run longer than this; it fails instead.
SCENARIO_TIMEOUT_S = 60.0


class ManualClock:
    """A clock the test moves by hand: the model sees only the times the test sets."""

    def __init__(self, now_s: float = 0.0) -> None:
        self.now_s = now_s

    def __call__(self) -> float:
        return self.now_s


Streams = list[tuple[asyncio.StreamReader, asyncio.StreamWriter]]


class Live:
    """In-process services on free ports, a manual clock, and helpers to drive them.

    ``live.run(scenario())`` runs a test's coroutine (failing it after
    SCENARIO_TIMEOUT_S); inside, ``async with live.serve(live.clock, model=...) as app``
    serves on a free port (real time when no clock is given).
    """

    def __init__(self) -> None:
        self.clock = ManualClock()

    @staticmethod
    def run(coroutine: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run(asyncio.wait_for(coroutine, SCENARIO_TIMEOUT_S))

    @staticmethod
    @contextlib.asynccontextmanager
    async def serve(clock: Callable[[], float] = time.monotonic, **config: Any) -> AsyncIterator[TargetApp]:
        app = create_app(ServiceConfig(port=0, **config), registry=CollectorRegistry(), clock=clock)
        await app.start()
        try:
            yield app
        finally:
            await app.stop()

    @staticmethod
    async def eventually(predicate: Callable[[], bool], timeout_s: float = 20.0) -> None:
        """Poll until ``predicate()``; fail after a generous timeout."""
        await wait_until_async(predicate, timeout_s=timeout_s, every_s=0.01)

    @staticmethod
    async def open_requests(port: int, count: int) -> Streams:
        """``count`` connections, each with one GET /api sent."""
        streams = [await asyncio.open_connection("127.0.0.1", port) for _ in range(count)]
        for _, writer in streams:
            writer.write(encode_request("GET", "/api"))
            await writer.drain()
        return streams

    async def hold(self, app: TargetApp, count: int) -> Streams:
        """Open ``count`` requests to /api and wait until the model holds them."""
        expected = app.driver.in_flight + count
        streams = await self.open_requests(app.port, count)
        await self.eventually(lambda: app.driver.in_flight == expected)
        return streams

    @staticmethod
    def metric(app: TargetApp, name: str, **labels: str) -> float:
        """A sample of an in-process app's registry (0 if absent)."""
        value = app.metrics.registry.get_sample_value(name, labels)
        return 0.0 if value is None else value


@pytest.fixture
def live() -> Live:
    return Live()


class TargetProcess:
    """A ``retrystorm target`` process on a free port; ``env`` is added to an environment
    without ``RETRYSTORM_ADMIN_TOKEN`` (a test that wants a token sets it)."""

    def __init__(self, args: list[str], env: dict[str, str] | None = None) -> None:
        environment = {key: value for key, value in os.environ.items() if key != "RETRYSTORM_ADMIN_TOKEN"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "retrystorm", "target", "--port", "0", "--report-interval", "0", *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**environment, **(env or {})},
        )
        self.port = self._read_port()

    def _read_port(self) -> int:
        assert self.proc.stderr is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self.proc.stderr, selectors.EVENT_READ)
            if not selector.select(timeout=30):
                raise AssertionError("the target did not start listening")
            line = self.proc.stderr.readline()
        self.first_line = line
        if "listening on http://127.0.0.1:" not in line:
            raise AssertionError(f"unexpected start-up output: {line!r}")
        return int(line.split("http://127.0.0.1:")[1].split()[0])

    async def metrics(self) -> dict[str, float]:
        """Every sample of ``/metrics``, keyed like ``name{label="value"}``."""
        text = (await fetch(self.port, "/metrics")).text
        samples = {}
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                labels = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
                samples[f"{s.name}{{{labels}}}" if labels else s.name] = s.value
        return samples

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
        self.proc.wait(timeout=30)
        if self.proc.stderr is not None:
            self.proc.stderr.close()


@pytest.fixture
def target_process() -> Iterator[Callable[..., TargetProcess]]:
    """Start real target processes; each is killed (by its pid) at the end of the test."""
    started: list[TargetProcess] = []

    def start(*args: str, env: dict[str, str] | None = None) -> TargetProcess:
        process = TargetProcess(list(args), env)
        started.append(process)
        return process

    yield start
    for process in started:
        process.stop()
