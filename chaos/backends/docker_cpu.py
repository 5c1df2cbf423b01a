"""A container's CPU settings, read and changed through a Docker SDK client passed in (never imported here).

``docker update --cpus`` is the engine's ``POST /containers/ID/update`` with ``NanoCpus``, a field the
SDK's ``update_container`` does not take; :func:`update_cpu` posts the body itself through the SDK's
API client. The dead-man watchdog uses the same function to restore at its deadline.
"""

from __future__ import annotations

from typing import Any

from retrystorm.chaos.cpu_quota import ContainerCpu


def read_cpu(container: Any) -> ContainerCpu:
    """The container's own ``NanoCpus`` / ``CpuQuota`` / ``CpuPeriod`` (``HostConfig``), read now."""
    host = container.attrs.get("HostConfig") or {}
    return ContainerCpu(
        nano_cpus=int(host.get("NanoCpus") or 0),
        cpu_quota=int(host.get("CpuQuota") or 0),
        cpu_period=int(host.get("CpuPeriod") or 0),
    )


def cpuset_size(cpuset: str) -> int | None:
    """How many CPUs a cpuset such as ``0-1,3`` names; ``None`` for an empty or malformed one."""
    count = 0
    for part in filter(None, cpuset.split(",")):
        low, _, high = part.partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            return None
        count += int(high or low) - int(low) + 1
    return count or None


def container_cpus(client: Any, container: Any) -> int:
    """The CPUs the container may run on: its cpuset, else the engine's CPU count."""
    host = container.attrs.get("HostConfig") or {}
    return cpuset_size(host.get("CpusetCpus") or "") or int(client.info().get("NCPU") or 1)


def update_cpu(client: Any, ident: str, body: dict[str, int]) -> None:
    """``POST /containers/IDENT/update`` with ``body`` (engine field names); raises the SDK's errors."""
    api = client.api
    response = api._post_json(api._url("/containers/{0}/update", ident), data=body)
    api._raise_for_status(response)
