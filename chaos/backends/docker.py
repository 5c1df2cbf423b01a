"""Freeze containers with ``docker pause`` / ``unpause`` through the Docker SDK for Python.

Only containers that opted in with the label ``retrystorm.chaos=allow`` are touched.
Targets are compose service names, optionally restricted to one compose project, and
names given for single containers (``containers={"target": "myapp"}``: a scenario's
``target: {container: myapp}``), which resolve to that container by its name or id, or
for a compose service (``services={"target": "web"}``: ``target: {service: web}``).

The SDK is the optional extra ``docker``: importing this module without it raises
:class:`~retrystorm.chaos.backends.docker_sdk.DockerSdkMissingError` (one line, exit 2), which
names ``pip install 'retrystorm[docker]'``.

A *CPU cut* (:meth:`DockerBackend.plan_cpu_cut`) is ``docker update --cpus``: the container's own
``NanoCpus`` / ``CpuQuota`` / ``CpuPeriod`` are read first and written back at the end
(:func:`retrystorm.chaos.cpu_quota.container_cut` / :func:`~retrystorm.chaos.cpu_quota.container_restore` say how,
and the one
case the engine cannot put back byte for byte).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from retrystorm.chaos.backends.docker_sdk import DockerSdkMissingError

try:
    import docker
    import docker.errors
except ImportError:
    raise DockerSdkMissingError from None

from retrystorm.chaos.backends.base import (
    BackendError,
    CpuCut,
    FaultBackend,
    TargetRef,
    TargetRefusedError,
    TargetState,
    UnknownTargetError,
)
from retrystorm.chaos.backends.docker_cpu import container_cpus, read_cpu, update_cpu
from retrystorm.chaos.cpu_quota import DEFAULT_PERIOD_US, allowance_cpus, container_cut, container_restore

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

    def plan_cpu_cut(self, target: str, refs: list[TargetRef], capacity: float, tag: str) -> list[CpuCut]:
        """One ``docker update`` per container of ``refs``, each from the container's own settings read now."""
        cuts: list[CpuCut] = []
        for ref in refs:
            container = self._get(ref)
            if container is None:
                raise BackendError(f"{ref.describe()} is gone; nothing to throttle")
            before = read_cpu(container)
            cpus = container_cpus(self._client, container)
            limit = before.limit()
            cut = DockerCpuCut(
                ref=ref,
                client=self._client,
                cut=container_cut(before, capacity, cpus),
                restore_body=container_restore(before),
                cpus_before=allowance_cpus([limit] if limit else [], cpus),
                period_us=before.cpu_period or DEFAULT_PERIOD_US,
            )
            cuts.append(cut)
        return cuts

    def restore_cpu(self, ref: TargetRef, undo: dict[str, Any]) -> str:
        """Write back the journaled settings of a container; ``"gone"`` if it no longer exists."""
        body = undo.get("restore")
        if not isinstance(body, dict) or not set(body) <= {"NanoCpus", "CpuQuota", "CpuPeriod"}:
            raise BackendError(f"cannot restore {ref.describe()}: the journaled undo is not one ({undo!r:.80})")
        return _update(self._client, ref, body)

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


def _update(client: Any, ref: TargetRef, body: dict[str, int]) -> str:
    try:
        update_cpu(client, ref.ident, body)
    except docker.errors.NotFound:
        return "gone"
    except Exception as error:
        raise BackendError(f"cannot update the CPU of {ref.describe()}: {error}") from error
    return "restored"


@dataclasses.dataclass(slots=True, kw_only=True)
class DockerCpuCut:
    """A :class:`~retrystorm.chaos.backends.base.CpuCut` of one container: the update that cuts and the one that
    restores."""

    ref: TargetRef
    client: Any
    cut: dict[str, int]
    restore_body: dict[str, int]
    cpus_before: float
    period_us: int = DEFAULT_PERIOD_US

    @property
    def cpus_during(self) -> float:
        """The CPUs the cut leaves (from the body: NanoCpus, or CpuQuota per the default period)."""
        if "NanoCpus" in self.cut:
            return self.cut["NanoCpus"] / 1e9
        return self.cut["CpuQuota"] / self.period_us

    def undo(self) -> dict[str, Any]:
        """The container's original settings as the update body that restores them."""
        return {"kind": "docker", "restore": dict(self.restore_body), "cut": dict(self.cut)}

    def prepare(self) -> None:
        """Nothing to make: the container is what the watchdog guards."""

    def apply(self) -> None:
        """``docker update`` to the cut."""
        if _update(self.client, self.ref, self.cut) == "gone":
            raise BackendError(f"{self.ref.describe()} is gone; nothing was throttled")

    def restore(self) -> str:
        """``docker update`` back to the original settings."""
        return _update(self.client, self.ref, self.restore_body)
