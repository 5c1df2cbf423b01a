"""Fixtures for the live load-generator tests: real servers and real Locust processes.

Every process is started here and stopped here, by its pid, even when a test fails.
Ports are ephemeral: servers bind port 0 and print theirs; Locust's own ports come
from :func:`free_port`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support import waiting
from tests.support.http import get_text, post_form
from tests.support.ports import free_port
from tests.support.processes import Processes

ROOT = Path(__file__).resolve().parents[2]
LOCUSTFILE = ROOT / "loadgen" / "locustfile.py"
RECORDING_LOCUSTFILE = Path(__file__).with_name("recording_locustfile.py")
LOCUST = str(Path(sys.executable).with_name("locust"))
LINGER_MARK = "keeping /metrics up"


class Metrics:
    """A scrape of a Prometheus endpoint, queried by name and labels."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.samples = [
            (sample.name, sample.labels, sample.value)
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        ]

    def get(self, name: str, **labels: str) -> float:
        """The sum of the samples called ``name`` whose labels include ``labels``."""
        return sum(
            value
            for sample_name, sample_labels, value in self.samples
            if sample_name == name and all(sample_labels.get(k) == v for k, v in labels.items())
        )

    def series(self, name: str) -> list[tuple[dict[str, str], float]]:
        return [(labels, value) for sample_name, labels, value in self.samples if sample_name == name]


def scrape(port: int) -> Metrics:
    return Metrics(get_text(f"http://127.0.0.1:{port}/metrics"))


def wait_until(condition: Callable[[], Any], timeout_s: float, what: str, interval_s: float = 0.1) -> Any:
    """Poll ``condition`` until it returns something true (a server not up yet: ``OSError``); fail naming ``what``."""
    return waiting.wait_until(
        condition, timeout_s=timeout_s, what=what, every_s=interval_s, ignore=(OSError, ValueError)
    )


@pytest.fixture
def wait() -> Callable[..., Any]:
    """:func:`wait_until` as a fixture: ``wait(condition, timeout_s, what)``."""
    return wait_until


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[Processes]:
    started = Processes(tmp_path)
    try:
        yield started
    finally:
        started.stop_all()


@pytest.fixture(scope="module")
def module_processes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Processes]:
    """Processes shared by a module's tests (runs started once, checked by several tests)."""
    started = Processes(tmp_path_factory.mktemp("processes"))
    try:
        yield started
    finally:
        started.stop_all()


@dataclasses.dataclass
class Target:
    """A real ``retrystorm target`` process on loopback."""

    process: subprocess.Popen[bytes]
    url: str

    def metrics(self) -> Metrics:
        return Metrics(get_text(self.url + "/metrics"))

    def freeze(self) -> None:
        """SIGSTOP, as the seed's outage (the fixture resumes it at teardown if needed)."""
        os.kill(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.process.pid, signal.SIGCONT)

    def fail(self, **rule: Any) -> dict[str, Any]:
        """Arm the target's fault rule (``PUT /admin/faults``), e.g. ``fail(first_attempts=2)``."""
        request = urllib.request.Request(
            self.url + "/admin/faults",
            data=json.dumps(rule).encode(),
            method="PUT",
            headers={"Content-Type": "application/json"},  # urllib's default is a form's type, refused (415)
        )
        with urllib.request.urlopen(request, timeout=5) as response:
            return dict(json.loads(response.read()))

    def judged(self) -> list[dict[str, Any]]:
        """The attempts the fault rule judged: ``at_seconds``, ``attempt``, ``status`` (``None``: passed)."""
        return list(json.loads(get_text(self.url + "/admin/faults"))["recent"])

    def requests(self) -> list[list[float]]:
        """Arrival times of the attempts of each logical request, in order (one user)."""
        grouped: list[list[float]] = []
        for entry in self.judged():
            if entry["attempt"] == 1:
                grouped.append([])
            if grouped:
                grouped[-1].append(entry["at_seconds"])
        return grouped


def target_starter(processes: Processes) -> Callable[..., Target]:
    """A function that starts ``retrystorm target --port 0 FLAGS`` and returns once it listens."""

    def start(*flags: str) -> Target:
        argv = [str(Path(sys.executable).with_name("retrystorm")), "target", "--port", "0", "--report-interval", "0"]
        process, log = processes.start("target", [*argv, *flags])
        found = wait_until(
            lambda: re.search(r"listening on (http://127\.0\.0\.1:\d+)", log.read_text()), 30, "the target to listen"
        )
        return Target(process, found.group(1))

    return start


@pytest.fixture
def target_server(processes: Processes) -> Callable[..., Target]:
    return target_starter(processes)


def failing_target_starter(processes: Processes) -> Callable[..., Target]:
    """A function that starts a target answering at once, whose fault rule fails attempts 1..N."""
    start_target = target_starter(processes)

    def start(*, fail_first: int, status: int = 503, retry_after: int | None = None) -> Target:
        target = start_target("--model", "fixed", "--base-delay", "0")
        target.fail(first_attempts=fail_first, status=status, retry_after=retry_after)
        return target

    return start


@pytest.fixture
def failing_target(processes: Processes) -> Callable[..., Target]:
    return failing_target_starter(processes)


@dataclasses.dataclass
class LocustRun:
    """A finished headless Locust run: its exit code, output, final metrics and stats."""

    returncode: int
    output: str
    metrics: Metrics
    stats: list[dict[str, Any]]
    events: list[dict[str, Any]]

    def stat(self, name: str) -> dict[str, Any]:
        """Locust's own totals for one request name (``/api``, ``/api (logical)``)."""
        return next(entry for entry in self.stats if entry["name"] == name)


@dataclasses.dataclass
class PendingRun:
    """A headless Locust run under way; :meth:`finish` waits for it and scrapes its metrics."""

    process: subprocess.Popen[bytes]
    log: Path
    metrics_port: int
    stats_prefix: Path

    def scrape(self) -> Metrics:
        """The run's metrics now."""
        return scrape(self.metrics_port)

    def finish(self, timeout_s: float = 120) -> LocustRun:
        wait_until(lambda: LINGER_MARK in self.log.read_text(), timeout_s, "the end of the Locust run")
        try:
            metrics = scrape(self.metrics_port)
        except OSError as error:
            pytest.fail(f"cannot scrape port {self.metrics_port}: {error}\n{self.log.read_text()}")
        self.process.send_signal(signal.SIGTERM)  # ends the linger
        returncode = self.process.wait(timeout=60)
        stats = json.loads(self.stats_prefix.with_suffix(".json").read_text())
        events_file = self.stats_prefix.with_suffix(".events")
        events = [json.loads(line) for line in events_file.read_text().splitlines()] if events_file.exists() else []
        return LocustRun(returncode, self.log.read_text(), metrics, stats, events)


def locust_argv(*options: str, locustfile: Path = LOCUSTFILE) -> list[str]:
    return [LOCUST, "-f", str(locustfile), *options]


def locust_starter(processes: Processes) -> Callable[..., PendingRun]:
    """A function that starts a headless Locust with the retrystorm user.

    ``/metrics`` is served on a free port and stays up after the run (until SIGTERM), long enough
    for :meth:`PendingRun.finish` to scrape the final values.
    """

    def start(
        host: str,
        *options: str,
        users: int = 1,
        run_time: str = "3s",
        spawn_rate: int = 100,
        locustfile: Path = LOCUSTFILE,
    ) -> PendingRun:
        port = free_port()
        stats_prefix = processes.log_dir / f"stats-{port}"
        argv = locust_argv(
            "--headless", "--host", host, "-u", str(users), "-r", str(spawn_rate), "-t", run_time,
            "--metrics-port", str(port), "--metrics-linger", "30s",
            "--exit-code-on-error", "0", "--only-summary", "--json-file", str(stats_prefix),
            *options,
            locustfile=locustfile,
        )  # fmt: skip
        env = {"RETRYSTORM_EVENT_LOG": str(stats_prefix.with_suffix(".events"))}
        process, log = processes.start("locust", argv, env)
        return PendingRun(process, log, port, stats_prefix)

    return start


@pytest.fixture
def recording_locustfile() -> Path:
    """A locustfile that also writes every request event to ``LocustRun.events``."""
    return RECORDING_LOCUSTFILE


@pytest.fixture
def start_locust(processes: Processes) -> Callable[..., PendingRun]:
    return locust_starter(processes)


@pytest.fixture(scope="module")
def module_start_locust(module_processes: Processes) -> Callable[..., PendingRun]:
    return locust_starter(module_processes)


@pytest.fixture(scope="module")
def module_failing_target(module_processes: Processes) -> Callable[..., Target]:
    return failing_target_starter(module_processes)


@pytest.fixture
def run_locust(start_locust: Callable[..., PendingRun]) -> Callable[..., LocustRun]:
    """Run a headless Locust to its end (see :func:`start_locust`)."""

    def run(host: str, *options: str, **kwargs: Any) -> LocustRun:
        return start_locust(host, *options, **kwargs).finish()

    return run


@dataclasses.dataclass
class WebLocust:
    """A Locust process with its web UI (standalone or master)."""

    process: subprocess.Popen[bytes]
    log: Path
    url: str

    def swarm(self, **form: str) -> dict[str, Any]:
        """``POST /swarm`` as the start form sends it."""
        return post_form(self.url + "/swarm", form)

    def stop(self) -> dict[str, Any]:
        return post_form(self.url + "/stop", {})

    def get_index(self) -> str:
        """The web UI's page, whose template carries the start form's fields."""
        return get_text(self.url + "/")

    def stats(self) -> dict[str, Any]:
        return dict(json.loads(get_text(self.url + "/stats/requests")))

    def metrics(self) -> Metrics:
        return Metrics(get_text(self.url + "/metrics"))


@pytest.fixture
def web_locust(processes: Processes) -> Callable[..., WebLocust]:
    """Start Locust with its web UI on a free port; returns once the UI answers."""

    def start(host: str, *options: str, name: str = "locust-web", locustfile: Path = LOCUSTFILE) -> WebLocust:
        port = free_port()
        argv = locust_argv(
            "--host", host, "--web-host", "127.0.0.1", "--web-port", str(port), *options, locustfile=locustfile
        )  # fmt: skip
        process, log = processes.start(name, argv)
        web = WebLocust(process, log, f"http://127.0.0.1:{port}")
        wait_until(lambda: get_text(web.url + "/"), 60, f"the web UI on port {port}")
        return web

    return start


@dataclasses.dataclass
class Cluster:
    """A Locust master (web UI) and its workers, each worker serving its own /metrics."""

    master: WebLocust
    worker_metrics_ports: list[int]
    worker_logs: list[Path]

    def worker_metrics(self) -> list[Metrics]:
        return [scrape(port) for port in self.worker_metrics_ports]


@pytest.fixture
def locust_cluster(processes: Processes, web_locust: Callable[..., WebLocust]) -> Callable[..., Cluster]:
    """Start a master with its web UI and ``workers`` worker processes; wait until all connect."""

    def start(host: str, *options: str, workers: int = 2) -> Cluster:
        bind_port = free_port()
        master = web_locust(
            host, "--master", "--master-bind-host", "127.0.0.1", "--master-bind-port", str(bind_port), *options,
            name="locust-master",
        )  # fmt: skip
        ports, logs = [], []
        for _ in range(workers):
            port = free_port()
            argv = locust_argv(
                "--worker", "--master-host", "127.0.0.1", "--master-port", str(bind_port), "--metrics-port", str(port)
            )
            _, log = processes.start("locust-worker", argv)
            ports.append(port)
            logs.append(log)
        wait_until(lambda: len(master.stats()["workers"]) == workers, 60, f"{workers} workers to connect")
        return Cluster(master, ports, logs)

    return start


#: The live tests import these from here.
__all__ = ["Processes", "free_port", "get_text", "post_form", "wait_until"]
