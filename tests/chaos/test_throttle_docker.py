"""CPU capacity cuts of real containers (``docker update``), restored to the container's own settings.

Needs a Docker engine and the offline base image: skipped without them, unless CI demands Docker
(``RETRYSTORM_REQUIRE_DOCKER=1``). Containers use host networking, are labelled
``retrystorm.chaos=allow`` in a compose project of their own, and are removed at the end. The
quota the kernel enforces is read from the container's cgroup (v1, cgroupfs driver) independently
of the code under test.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import wait_for

pytestmark = [pytest.mark.docker, pytest.mark.signals]

BASE_IMAGE = os.environ.get("RETRYSTORM_BASE_IMAGE", "retrystorm-base:bookworm")


@pytest.fixture
def client() -> Iterator[Any]:
    try:
        from retrystorm.chaos.backends.docker import connect

        engine = connect()
        engine.images.get(BASE_IMAGE)
    except Exception as error:
        if os.environ.get("RETRYSTORM_REQUIRE_DOCKER") == "1":
            pytest.fail(f"Docker is required here but unusable: {error}")
        pytest.skip(f"no Docker engine or no {BASE_IMAGE} image: {error}")
    yield engine
    engine.close()


@pytest.fixture
def start(client) -> Iterator[Any]:
    """Start a labelled container of service ``web`` in a fresh compose project; all removed at the end."""
    started = []

    def run(**cpu: int) -> tuple[Any, str]:
        project = f"rsthrottle{uuid.uuid4().hex[:8]}"
        labels = {"com.docker.compose.project": project, "com.docker.compose.service": "web",
                  "retrystorm.chaos": "allow"}  # fmt: skip
        container = client.containers.run(
            BASE_IMAGE, ["sleep", "600"], detach=True, labels=labels, network_mode="host", name=f"{project}-web", **cpu
        )
        started.append(container)
        return container, project

    yield run
    for container in started:
        container.remove(force=True)


def settings(container: Any) -> tuple[int, int, int]:
    container.reload()
    host = container.attrs["HostConfig"]
    return host["NanoCpus"], host["CpuQuota"], host["CpuPeriod"]


def kernel_quota(container: Any) -> tuple[int, int]:
    """``cpu.cfs_quota_us`` and ``cpu.cfs_period_us`` of the container's cgroup, as the kernel has them."""
    group = Path("/sys/fs/cgroup/cpu/docker") / container.id
    return int((group / "cpu.cfs_quota_us").read_text()), int((group / "cpu.cfs_period_us").read_text())


@pytest.mark.parametrize(
    ("cpu", "quota_during"),
    [({}, None), ({"nano_cpus": 1_500_000_000}, 60_000), ({"cpu_quota": 50_000, "cpu_period": 100_000}, 20_000)],
    ids=["unlimited", "cpus 1.5", "quota 0.5"],
)
def test_a_container_is_cut_to_capacity_of_its_own_limit_and_gets_exactly_it_back(start, client, tmp_path, cpu,
                                                                                  quota_during):  # fmt: skip
    from retrystorm.chaos.backends.docker import DockerBackend
    from retrystorm.chaos.cli import make_controller
    from retrystorm.chaos.targets import FaultTarget

    container, project = start(**cpu)
    before, kernel_before = settings(container), kernel_quota(container)
    expected = quota_during if quota_during is not None else int(0.4 * client.info()["NCPU"] * 100_000)

    async def scenario() -> None:
        backend = DockerBackend(client, project=project)
        async with make_controller({"docker": backend}, tmp_path / "journal.jsonl") as controller:
            throttle = await controller.throttle(FaultTarget("web", backend), 0.4, 60)
            assert kernel_quota(container) == (expected, 100_000)
            (cut,) = throttle.cuts
            assert cut.cpus_during == pytest.approx(expected / 100_000)
            await throttle.end()
            assert throttle.status == "restored"

    asyncio.run(scenario())
    assert kernel_quota(container) == kernel_before
    if cpu:
        assert settings(container) == before  # exactly the container's own settings
    # the engine ignores CpuQuota 0 in an update: -1 is its "no quota" (retrystorm.chaos.cpu_quota.container_restore)
    else:
        assert settings(container) == (0, -1, 0)


def test_sigkill_of_the_throttling_process_leaves_the_restore_to_its_watchdog(start, tmp_path):
    container, project = start(nano_cpus=1_500_000_000)
    before, kernel_before = settings(container), kernel_quota(container)
    journal = tmp_path / "journal.jsonl"
    controller = subprocess.Popen(
        [sys.executable, "-m", "retrystorm", "chaos", "throttle", "web", "--backend", "docker", "--project", project,
         "--capacity", "0.5", "--for", "3s", "--journal", str(journal)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        wait_for(lambda: kernel_quota(container) == (75_000, 100_000), timeout_s=60, what="the cut")
    finally:
        os.killpg(controller.pid, signal.SIGKILL)  # the controller and its whole process group
        controller.communicate(timeout=20)
    wait_for(lambda: kernel_quota(container) == kernel_before, timeout_s=60, what="the watchdog to restore")
    assert settings(container) == before

    def restores() -> list[dict]:
        lines = journal.read_text().splitlines() if journal.exists() else []
        return [record for line in lines if (record := json.loads(line))["op"] == "restore"]

    wait_for(lambda: len(restores()) == 1, what="the restore record (written after the update)")
    (record,) = restores()
    assert (record["reason"], record["backend"], record["ident"]) == ("watchdog", "docker", container.id)
