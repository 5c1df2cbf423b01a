"""Pods on this node, frozen and cut through their containers' cgroups: the chaos agent's Kubernetes mode.

``retrystorm chaos serve --backend kubernetes --pod-selector app=web --node NODE`` (the DaemonSet ``retrystorm k8s
render`` writes) can fault the pods **on its own node whose labels match the selector**, and nothing else: the
registered-targets rule, as a selector. A target is ``NAMESPACE/POD``. Each pause or cut lists the pods again
(:class:`~retrystorm.chaos.kubernetes.api.KubeApi`: the selector and the node as the API's own filters, then
checked again here), so a pod restarted since is found by its new containers, and a pod that stopped matching is
refused.

Each running container of the pod is one cgroup target of a :class:`~retrystorm.chaos.backends.cgroup.CgroupBackend`,
at the path the kubelet gives it (:func:`~retrystorm.chaos.freezer.kubelet_cgroup`: the pod's UID and QoS class,
the container's runtime and ID, the cgroup driver and ``--cgroup-root``). With driver ``auto`` the systemd layout is
tried first, then cgroupfs. So a pause freezes every container of the pod (v2 ``cgroup.freeze``, v1 freezer), a
CPU cut lowers each container's own quota, and both carry the cgroup backend's refusals (this agent's own cgroup, pid
1, a watchdog), its journal records and its dead-man switch: the refs are ``cgroup`` refs, which the watchdog and
start-up recovery thaw and restore from their checked paths alone.
"""

from __future__ import annotations

from typing import Any

from retrystorm.chaos.backends.base import (
    BackendError,
    CpuCut,
    FaultBackend,
    TargetRef,
    TargetRefusedError,
    TargetState,
    UnknownTargetError,
)
from retrystorm.chaos.backends.cgroup import CgroupBackend
from retrystorm.chaos.cgroupfs import Mount
from retrystorm.chaos.freezer import kubelet_cgroup
from retrystorm.chaos.kubernetes.api import KubeApi
from retrystorm.chaos.kubernetes.pods import LabelSelector, Pod

DRIVERS = ("auto", "systemd", "cgroupfs")


class KubernetesBackend(FaultBackend):
    """The pods on ``node`` that match ``selector`` (module docstring)."""

    name = "kubernetes"

    def __init__(
        self,
        api: KubeApi,
        selector: LabelSelector,
        node: str,
        *,
        driver: str = "auto",
        cgroup_root: str = "/",
        known: list[Mount] | None = None,
    ) -> None:
        if driver not in DRIVERS:
            raise ValueError(f"cgroup driver {driver!r}: expected one of {', '.join(DRIVERS)}")
        self.api, self.selector, self.node = api, selector, node
        self.driver, self.cgroup_root = driver, cgroup_root
        self.cgroups = CgroupBackend(known)
        self._containers: dict[str, list[str]] = {}

    def targets(self) -> list[str]:
        """``NAMESPACE/POD`` of every pod open to chaos now with a running container (a pending pod has none)."""
        return [pod.key for pod in self._pods() if pod.containers]

    def resolve(self, target: str) -> list[TargetRef]:
        """The cgroups of ``target``'s running containers, each registered (and checked) as a cgroup target."""
        pods = self._pods()
        pod = next((pod for pod in pods if pod.key == target), None)
        if pod is None:
            open_ = ", ".join(found.key for found in pods[:20]) or "none"
            raise UnknownTargetError(
                f"no pod {target!r} on node {self.node} matches {self.selector.text()} (those that do: {open_}); "
                "a target is NAMESPACE/POD"
            )
        if not pod.containers:
            raise TargetRefusedError(f"pod {target!r} has no running container to freeze")
        names, refs = [], []
        for container in pod.containers:
            name = f"{target}/{container.name}"
            refs += self._register(name, pod, container.runtime, container.id)
            names.append(name)
        self._containers[target] = names
        return refs

    def _pods(self) -> list[Pod]:
        """The API's pods, each checked again against the selector and the node (an API that ignored a filter)."""
        return [pod for pod in self.api.pods(self.selector, self.node)
                if pod.node == self.node and self.selector.matches(pod.labels)]  # fmt: skip

    def _register(self, name: str, pod: Pod, runtime: str, container_id: str) -> list[TargetRef]:
        drivers = ("systemd", "cgroupfs") if self.driver == "auto" else (self.driver,)
        tried = []
        for driver in drivers:
            try:
                path = kubelet_cgroup(pod.uid, pod.qos, driver=driver, container_id=container_id, runtime=runtime,
                                      cgroup_root=self.cgroup_root)  # fmt: skip
            except ValueError as error:
                raise TargetRefusedError(f"pod {pod.key}: {error}") from None
            try:
                self.cgroups.register(name, path)
            except UnknownTargetError:
                tried.append(path)
                continue
            return self.cgroups.resolve(name)
        raise BackendError(f"container {name}: no cgroup at {' or '.join(tried)} (check --cgroup-driver and "
                           "--cgroup-root, and that the host's cgroupfs is mounted)")  # fmt: skip

    def pause(self, ref: TargetRef) -> None:
        self.cgroups.pause(ref)

    def confirm_paused(self, target: str, refs: list[TargetRef]) -> None:
        self.cgroups.confirm_paused(target, refs)

    def resume(self, ref: TargetRef) -> None:
        self.cgroups.resume(ref)

    def state(self, ref: TargetRef) -> TargetState:
        return self.cgroups.state(ref)

    def plan_cpu_cut(self, target: str, refs: list[TargetRef], capacity: float, tag: str) -> list[CpuCut]:
        """Each container's own quota cut to ``capacity`` of its allowance."""
        cuts: list[CpuCut] = []
        for index, name in enumerate(self._containers.get(target, [])):
            cuts += self.cgroups.plan_cpu_cut(name, [], capacity, f"{tag}-{index}")
        return cuts

    def restore_cpu(self, ref: TargetRef, undo: dict[str, Any]) -> str:
        return self.cgroups.restore_cpu(ref, undo)
