"""The docker backend against real containers (labelled like compose labels them)."""

from __future__ import annotations

import asyncio
import os
import uuid

import pytest

from retrystorm.chaos.backends import TargetRefusedError, TargetState, UnknownTargetError
from retrystorm.chaos.controller import OutageController
from retrystorm.chaos.journal import Journal
from retrystorm.chaos.targets import FaultTarget

from .conftest import RecordingSwitch

pytestmark = pytest.mark.docker

BASE_IMAGE = os.environ.get("RETRYSTORM_BASE_IMAGE", "retrystorm-base:bookworm")


@pytest.fixture(scope="module")
def client():
    """A Docker client; missing engine or image skips, unless CI demands Docker."""
    try:
        from retrystorm.chaos.backends.docker import connect

        docker_client = connect()
        docker_client.images.get(BASE_IMAGE)
    except Exception as error:
        if os.environ.get("RETRYSTORM_REQUIRE_DOCKER") == "1":
            pytest.fail(f"Docker is required here but unusable: {error}")
        pytest.skip(f"no Docker engine or no {BASE_IMAGE} image: {error}")
    yield docker_client
    docker_client.close()  # its pooled connections to the engine


@pytest.fixture
def project(client):
    """A unique compose project name; its containers are removed by id afterwards."""
    name = f"rstest{uuid.uuid4().hex[:8]}"
    started = []

    def run(service: str, *, opted_in: bool = True):
        labels = {"com.docker.compose.project": name, "com.docker.compose.service": service}
        if opted_in:
            labels["retrystorm.chaos"] = "allow"
        container = client.containers.run(
            BASE_IMAGE, ["sleep", "600"], detach=True, labels=labels, network_mode="host", name=f"{name}-{service}"
        )
        started.append(container)
        return container

    yield name, run
    for container in started:
        container.reload()
        if container.status == "paused":
            container.unpause()
        container.remove(force=True)


def status(container) -> str:
    container.reload()
    return container.status


def test_pause_and_resume_a_labelled_container(client, project):
    from retrystorm.chaos.backends.docker import DockerBackend

    name, run = project
    container = run("target")
    backend = DockerBackend(client, project=name)
    assert backend.targets() == ["target"]
    (ref,) = backend.resolve("target")
    assert ref.ident == container.id
    backend.pause(ref)
    assert status(container) == "paused"
    assert backend.state(ref) is TargetState.PAUSED
    backend.resume(ref)
    assert status(container) == "running"


def test_a_container_without_the_label_is_refused_with_the_reason(client, project):
    from retrystorm.chaos.backends.docker import DockerBackend

    name, run = project
    container = run("database", opted_in=False)
    backend = DockerBackend(client, project=name)
    with pytest.raises(TargetRefusedError, match=r"lacks the label retrystorm\.chaos=allow"):
        backend.resolve("database")
    assert status(container) == "running"
    with pytest.raises(UnknownTargetError, match="no container of service 'ghost'"):
        backend.resolve("ghost")


def test_start_up_resumes_labelled_containers_left_paused(client, project, tmp_path):
    from retrystorm.chaos.backends.docker import DockerBackend

    name, run = project
    container = run("target")
    container.pause()  # as if a controller had been killed mid-outage

    async def start():
        backend = DockerBackend(client, project=name)
        controller = OutageController(Journal(tmp_path / "j"), dead_man=RecordingSwitch(), recovery_backends=[backend])
        return await controller.recover()

    resumed = asyncio.run(start())
    assert [ref.ident for ref in resumed] == [container.id]
    assert status(container) == "running"


def test_controller_outage_on_a_container(client, project, tmp_path):
    from retrystorm.chaos.backends.docker import DockerBackend

    name, run = project
    container = run("target")

    async def outage():
        backend = DockerBackend(client, project=name)
        journal = Journal(tmp_path / "j")
        async with OutageController(journal, dead_man=RecordingSwitch(), max_outage_s=0.5) as controller:
            await controller.pause(FaultTarget("target", backend), 60)
            assert status(container) == "paused"
            while controller.active():
                await asyncio.sleep(0.05)

    asyncio.run(outage())
    assert status(container) == "running"
