"""The compose backend without Docker: a real target, Locust master and workers, and Prometheus, on 127.0.0.1.

The same long-lived services a compose stack runs, as local processes: ``retrystorm
target``, a Locust master with two workers, and Debian's Prometheus scraping the target
and the master every second. A tiny scenario runs through the compose backend's classes
(the target reset over its admin API, the swarm over the master's API, readings from
Prometheus' API) with the process backend pausing the target, as the docker backend
pauses its container. ``RETRYSTORM_REQUIRE_PROMETHEUS=1`` turns a missing Prometheus
from a skip into a failure.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import os
import shutil
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from retrystorm.chaos.backends import ProcessBackend
from retrystorm.chaos.journal import Journal
from retrystorm.experiment.scenario import RunSpec, parse_scenario
from retrystorm.loadgen.readings import ClientReading, TargetReading
from retrystorm.runner.cli import RunOptions, run_plan
from retrystorm.runner.compose import ComposeEndpoints, compose_stack
from retrystorm.runner.errors import RunFailedError
from retrystorm.runner.locust_master import LocustMaster
from retrystorm.runner.plan import make_plan
from tests.support.procfs import process_state_letter

from ...loadgen.conftest import (  # noqa: TID252 - the live tests' process helpers live there
    Processes,
    Target,
    free_port,
    get_text,
    locust_argv,
    target_starter,
    wait_until,
)

pytestmark = [pytest.mark.live, pytest.mark.signals]

# About 4 requests in flight, read once a second: the steady window (5-10 s) holds five
# readings and the 15 s after the resume ten 5 s windows, so that the noise of so small a
# count neither sets the steady levels nor hides a recovery (with 2.5 s and 10 s, one CI
# run in about ten read "never" for smira).

TINY = """\
name: tiny-compose
model: exponential:limit=30
load: {users: 30, think_time: exponential:1s, attempt_timeout: 2s, duration: 30s}
strategies: [fixed:100ms, smira]
faults: [{at: 10s, for: 5s}]
assertions:
  fixed:100ms: {max_amplification: 1000}
  smira: {server_recovers_within: 8s, min_success_ratio: 0.5}
"""

PROMETHEUS_CONFIG = """\
global: {{scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}}
scrape_configs:
  - job_name: target
    static_configs: [{{targets: ["127.0.0.1:{target}"]}}]
  - job_name: locust
    static_configs: [{{targets: ["127.0.0.1:{locust}"]}}]
"""


def prometheus_binary() -> str:
    """Debian's Prometheus; skip without it, or fail when ``RETRYSTORM_REQUIRE_PROMETHEUS=1``."""
    found = shutil.which("prometheus") or ("/usr/bin/prometheus" if Path("/usr/bin/prometheus").exists() else None)
    if found is None:
        message = "no prometheus binary (/usr/bin/prometheus): apt-get install prometheus"
        if os.environ.get("RETRYSTORM_REQUIRE_PROMETHEUS") == "1":
            pytest.fail(f"{message} (RETRYSTORM_REQUIRE_PROMETHEUS=1 requires it)")
        pytest.skip(message)
    return found


@dataclasses.dataclass
class LocalStack:
    """The stack's services as local processes."""

    target: Target
    master_url: str
    prometheus_url: str


def start_master(processes: Processes, host: str, workers: int) -> str:
    """A Locust master (web API on a free port) and ``workers`` workers; returns once they are connected."""
    web, bind = free_port(), free_port()
    processes.start(
        "locust-master",
        locust_argv("--master", "--master-bind-host", "127.0.0.1", "--master-bind-port", str(bind),
                    "--web-host", "127.0.0.1", "--web-port", str(web), "--host", host),
    )  # fmt: skip
    worker_argv = locust_argv("--worker", "--master-host", "127.0.0.1", "--master-port", str(bind))
    for _ in range(workers):
        processes.start("locust-worker", worker_argv)
    url = f"http://127.0.0.1:{web}"
    wait_until(lambda: json.loads(get_text(url + "/worker-count"))["worker_count"] == workers, 60, "the workers")
    return url


def start_prometheus(processes: Processes, folder: Path, target_port: int, locust_port: int) -> str:
    """Prometheus scraping the target and the master every second; returns once it has scraped both."""
    binary = prometheus_binary()
    config = folder / "prometheus.yml"
    config.write_text(PROMETHEUS_CONFIG.format(target=target_port, locust=locust_port))
    port = free_port()
    processes.start(
        "prometheus",
        [binary, f"--config.file={config}", f"--storage.tsdb.path={folder / 'data'}",
         f"--web.listen-address=127.0.0.1:{port}"],
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"

    def both_up() -> bool:
        answer = json.loads(get_text(url + "/api/v1/query?query=up"))
        return {row["metric"]["job"]: row["value"][1] for row in answer["data"]["result"]} == {
            "target": "1",
            "locust": "1",
        }

    wait_until(both_up, 60, "Prometheus to scrape the target and the master")
    return url


@pytest.fixture(scope="module")
def stack(tmp_path_factory) -> Iterator[LocalStack]:
    prometheus_binary()  # skip before starting anything
    folder = tmp_path_factory.mktemp("stack")
    processes = Processes(folder)
    try:
        target = target_starter(processes)("--model", "fixed", "--base-delay", "10ms")
        master = start_master(processes, target.url, workers=2)
        target_port = int(target.url.rsplit(":", 1)[1])
        prometheus = start_prometheus(processes, folder, target_port, int(master.rsplit(":", 1)[1]))
        yield LocalStack(target, master, prometheus)
    finally:
        processes.stop_all()


@dataclasses.dataclass
class Read:
    paused: bool
    target: TargetReading | None
    client: ClientReading | None


class RecordingSource:
    """The Prometheus source, noting for each reading whether the target was paused just before it."""

    def __init__(self, inner, pid: int) -> None:
        self.inner = inner
        self.pid = pid
        self.reads: list[Read] = []

    async def read(self, target, load, *, timeout_s):
        paused = process_state_letter(self.pid) in ("T", "t")
        target_part, client_part = await self.inner.read(target, load, timeout_s=timeout_s)
        self.reads.append(Read(paused, target_part, client_part))
        return target_part, client_part

    async def close(self):
        await self.inner.close()


def test_a_refused_swarm_fails_the_run_naming_the_masters_message(stack):
    scenario = parse_scenario(TINY, source="tiny.yaml")
    # a timeout the scenario format refuses, so that only the load generator's own check can
    bad = dataclasses.replace(RunSpec.of(scenario, scenario.strategies[0]), attempt_timeout_s=math.inf)
    target = types.SimpleNamespace(base_url=stack.target.url)
    with pytest.raises(RunFailedError, match=r"refused to start fixed:100ms: --attempt-timeout"):
        asyncio.run(LocustMaster(stack.master_url).start(target, bad))


def test_a_master_without_workers_fails_the_run_saying_how_to_start_some(stack, tmp_path):
    processes = Processes(tmp_path)
    try:
        lonely = start_master(processes, stack.target.url, workers=0)
        scenario = parse_scenario(TINY, source="tiny.yaml")
        spec = RunSpec.of(scenario, scenario.strategies[0])
        target = types.SimpleNamespace(base_url=stack.target.url)
        expected = f"no Locust worker connected to {lonely}; start some: docker compose up --scale locust-worker=2"
        with pytest.raises(RunFailedError) as failed:
            asyncio.run(LocustMaster(lonely).start(target, spec))
        assert str(failed.value) == expected
    finally:
        processes.stop_all()


def test_a_tiny_scenario_runs_through_the_compose_backend(stack, tmp_path):
    scenario = parse_scenario(TINY, source="tiny.yaml")
    pid = stack.target.process.pid
    stack.target.fail(first_attempts=1)  # left armed by someone: the run must disarm it
    endpoints = ComposeEndpoints(
        target_url=stack.target.url, locust_url=stack.master_url, prometheus_url=stack.prometheus_url
    )
    compose = compose_stack(endpoints, backend=ProcessBackend({"target": pid}))
    recording = RecordingSource(compose.metrics, pid)
    journal = tmp_path / "journal.jsonl"
    plan = make_plan(scenario, scenario.strategies)
    run_stack = dataclasses.replace(compose, metrics=recording)
    status = run_plan(plan, run_stack, tmp_path / "run", RunOptions(journal=journal))

    document = json.loads((tmp_path / "run" / "results.json").read_text())
    verdicts = {row["strategy"]: [v["passed"] for v in row["assertions"]] for row in document["results"]}
    assert verdicts == {"fixed:100ms": [True], "smira": [True, True]}, document["results"]
    assert status == 0
    assert (tmp_path / "run" / "report.html").is_file()
    assert document["run"]["stack"].startswith("compose stack")
    assert all(row["succeeded"] > 0 for row in document["results"])

    # the readings came from Prometheus; the target's part is missing while it is paused
    paused = [read for read in recording.reads if read.paused]
    running = [read for read in recording.reads if not read.paused]
    assert len(paused) >= 8  # 5 s paused, twice
    assert sum(read.target is None for read in paused) >= len(paused) - 4  # Prometheus notices within a scrape
    assert sum(read.target is not None for read in running) >= 0.8 * len(running)
    assert sum(read.client is not None for read in recording.reads) >= 0.9 * len(recording.reads)
    assert max(read.client.active_users for read in recording.reads if read.client) == 30

    # left as found: running, the scenario's model, faults disarmed, no users, nothing paused
    assert process_state_letter(pid) not in ("T", "t")
    model = json.loads(get_text(stack.target.url + "/admin/model"))
    assert model["spec"] == scenario.model.spec()
    assert json.loads(get_text(stack.target.url + "/admin/faults"))["rule"] is None
    stats = json.loads(get_text(stack.master_url + "/stats/requests"))
    assert stats["user_count"] == 0 and stats["state"] == "stopped"
    assert not Journal(journal).pending()
