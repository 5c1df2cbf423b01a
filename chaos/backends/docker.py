"""Freeze containers with ``docker pause`` / ``unpause`` through the Docker SDK for Python.

Only containers that opted in with the label ``retrystorm.chaos=allow`` are touched.
Targets are compose service names, optionally restricted to one compose project, and
names given for single containers (``containers={"target": "myapp"}``: a scenario's
``target: {container: myapp}``), which resolve to that container by its name or id, or
for a compose service (``services={"target": "web"}``: ``target: {service: web}``).

The SDK is the optional extra ``docker``: importing this module without it raises
:class:`~chaos.backends.docker_sdk.DockerSdkMissingError` (one line, exit 2), which
names ``pip install 'retrystorm[docker]'``.
"""

from __future__ import annotations

import logging
from typing import Any

from chaos.backends.docker_sdk import DockerSdkMissingError

try:
    import docker
    import docker.errors
except ImportError:
    raise DockerSdkMissingError from None

from chaos.backends.base import (
    BackendError,
    FaultBackend,
    TargetRef,
    TargetRefusedError,
    TargetState,
    UnknownTargetError,
)

log = logging.getLogger(__name__)

OPT_IN_LABEL = "retrystorm.chaos"
OPT_IN_VALUE = "allow"
SERVICE_LABEL = "com.docker.compose.service"
PROJECT_LABEL = "com.docker.compose.project"


class DockerBackend(FaultBackend):
    """Compose services whose containers carry ``retrystorm.chaos=allow``."""

    name = "docker"

    def __init__(
        self,
        client: Any | None = None,
        *,
        project: str | None = None,
        containers: dict[str, str] | None = None,
        services: dict[str, str] | None = None,
    ) -> None:
        if client is None:
            client = connect()
        self._client = client
        self.project = project
        self.containers = dict(containers or {})
        self.services = dict(services or {})

    def _containers(self, labels: list[str]) -> list[Any]:
        if self.project:
            labels = [*labels, f"{PROJECT_LABEL}={self.project}"]
        try:
            return list(self._client.containers.list(all=True, filters={"label": labels}))
        except Exception as error:  # the SDK raises requests and docker errors alike
            raise BackendError(f"cannot list containers: {error}") from error

    def targets(self) -> list[str]:
        services = {c.labels.get(SERVICE_LABEL) for c in self._containers([f"{OPT_IN_LABEL}={OPT_IN_VALUE}"])}
        return sorted({*(s for s in services if s), *self.containers, *self.services})

    def _named(self, target: str) -> list[Any]:
        name = self.containers[target]
        try:
            return [self._client.containers.get(name)]
        except docker.errors.NotFound:
            raise UnknownTargetError(f"no container named {name!r}; start it, or fix target: container:") from None
        except Exception as error:
            raise BackendError(f"cannot inspect container {name!r}: {error}") from error

    def resolve(self, target: str) -> list[TargetRef]:
        if target in self.containers:
            found = self._named(target)
            self._refuse_unlabelled(target, found)
            return [TargetRef(self.name, target, found[0].id)]
        service = self.services.get(target, target)
        found = self._containers([f"{SERVICE_LABEL}={service}"])
        if not found:
            scope = f" in compose project {self.project!r}" if self.project else ""
            known = ", ".join(self.targets()) or "none"
            raise UnknownTargetError(f"no container of service {service!r}{scope}; services open to chaos: {known}")
        self._refuse_unlabelled(target, found)
        return [TargetRef(self.name, target, c.id) for c in sorted(found, key=lambda c: c.name)]

    @staticmethod
    def _refuse_unlabelled(target: str, found: list[Any]) -> None:
        refused = [c for c in found if c.labels.get(OPT_IN_LABEL) != OPT_IN_VALUE]
        if refused:
            names = ", ".join(c.name for c in refused)
            raise TargetRefusedError(
                f"refusing to pause {names}: {target!r} lacks the label {OPT_IN_LABEL}={OPT_IN_VALUE}; "
                "add it (docker run --label retrystorm.chaos=allow, or under the service's labels: in "
                "docker-compose.yml) to allow chaos on it"
            )

    def pause(self, ref: TargetRef) -> None:
        container = self._get(ref)
        if container is None:
            raise BackendError(f"{ref.describe()} is gone")
        if container.status != "paused":
            self._act(ref, container.pause)

    def resume(self, ref: TargetRef) -> None:
        container = self._get(ref)
        if container is not None and container.status == "paused":
            self._act(ref, container.unpause)

    def state(self, ref: TargetRef) -> TargetState:
        container = self._get(ref)
        if container is None or container.status in ("exited", "dead", "removing"):
            return TargetState.GONE
        return TargetState.PAUSED if container.status == "paused" else TargetState.RUNNING

    def stray_paused(self) -> list[TargetRef]:
        paused = [c for c in self._containers([f"{OPT_IN_LABEL}={OPT_IN_VALUE}"]) if c.status == "paused"]
        return [TargetRef(self.name, c.labels.get(SERVICE_LABEL, c.name), c.id) for c in paused]

    def _get(self, ref: TargetRef) -> Any | None:
        try:
            return self._client.containers.get(ref.ident)
        except docker.errors.NotFound:
            return None
        except Exception as error:
            raise BackendError(f"cannot inspect {ref.describe()}: {error}") from error

    @staticmethod
    def _act(ref: TargetRef, action: Any) -> None:
        try:
            action()
        except Exception as error:
            raise BackendError(f"cannot change {ref.describe()}: {error}") from error


def connect() -> Any:
    """A Docker client from the environment (``DOCKER_HOST`` or the local socket)."""
    client = None
    try:
        client = docker.from_env()
        client.ping()
    except Exception as error:
        if client is not None:
            client.close()
        raise BackendError(f"cannot reach a Docker engine ({error}); start dockerd or set DOCKER_HOST") from error
    return client
