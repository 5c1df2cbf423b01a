"""Pause targets on several hosts, each through the chaos agent of its own host (``retrystorm chaos serve``).

A target is named as a scenario writes it: ``NAME@HOST``, or a bare ``NAME`` that ``locate`` places on a host
(the target's own, :meth:`retrystorm.experiment.scenario.hosts.Hosts.locate`). Each pause is an outage on that
host's agent through its :class:`~retrystorm.chaos.backends.api.ChaosApiBackend`: the agent journals it, arms its
own dead-man watchdog for ``hold_s`` (one deadline per pause, on the agent that holds it), and resumes it when
this process ends it on time, or by itself at the deadline if this process is gone. Nothing is armed here:
the agent that froze a target is the one that guarantees its resume (:data:`~retrystorm.chaos.deadman.GUARDED_BACKENDS`
leaves ``agents`` out).

A ref's ident is ``NAME@HOST``, which is all a later runner needs to end what the journal shows left pending.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from retrystorm.chaos.backends.api import ChaosApiBackend
from retrystorm.chaos.backends.base import (
    BackendError,
    CpuCut,
    FaultBackend,
    TargetRef,
    TargetState,
    UnknownTargetError,
)
from retrystorm.chaos.client import ChaosApiError, ChaosClient
from retrystorm.durations import format_duration

Locate = Callable[[str], tuple[str, str]]


class AgentsBackend(FaultBackend):
    """The targets of several hosts' chaos agents (see the module docstring)."""

    name = "agents"

    def __init__(self, clients: Mapping[str, ChaosClient], *, hold_s: float, locate: Locate) -> None:
        self.hosts = {host: ChaosApiBackend(client, hold_s=hold_s) for host, client in clients.items()}
        self.locate = locate
        #: ``(host, outage id)`` of each pause made since the last :meth:`take_outages`.
        self.made: list[tuple[str, str]] = []

    def _on(self, ref: TargetRef) -> tuple[ChaosApiBackend, TargetRef]:
        name, _, host = ref.ident.rpartition("@")
        backend = self.hosts.get(host)
        if backend is None:
            raise BackendError(f"{ref.describe()}: no agent for host {host!r} in this run")
        return backend, TargetRef(backend.name, name, name)

    def targets(self) -> list[str]:
        """Every target of every agent, as ``NAME@HOST``."""
        return sorted(f"{name}@{host}" for host, backend in self.hosts.items() for name in backend.targets())

    def resolve(self, target: str) -> list[TargetRef]:
        host, name = self.locate(target)
        backend = self.hosts.get(host)
        if backend is None:
            raise UnknownTargetError(f"{target!r}: no agent for host {host!r}; hosts: {', '.join(self.hosts)}")
        backend.resolve(name)  # the agent's own refusal names what it registered
        return [TargetRef(self.name, target, f"{name}@{host}")]

    def pause(self, ref: TargetRef) -> None:
        backend, on_host = self._on(ref)
        hold = format_duration(backend.hold_s)
        try:
            outage = backend.client.pause(on_host.target, hold)
        except ChaosApiError as error:
            raise BackendError(f"the agent of {ref.ident} did not pause it: {error.message}") from error
        self.made.append((ref.ident.rpartition("@")[2], str(outage.get("id"))))

    def resume(self, ref: TargetRef) -> None:
        backend, on_host = self._on(ref)
        backend.resume(on_host)

    def state(self, ref: TargetRef) -> TargetState:
        backend, on_host = self._on(ref)
        return backend.state(on_host)

    def plan_cpu_cut(self, target: str, refs: list[TargetRef], capacity: float, tag: str) -> list[CpuCut]:
        """A CPU cut by the agent of each ref's host (``POST /throttles`` there)."""
        cuts: list[CpuCut] = []
        for ref in refs:
            backend, on_host = self._on(ref)
            cuts.extend(backend.plan_cpu_cut(on_host.target, [on_host], capacity, tag))
        return cuts

    def restore_cpu(self, ref: TargetRef, undo: dict[str, object]) -> str:
        backend, on_host = self._on(ref)
        return backend.restore_cpu(on_host, dict(undo))

    def take_outages(self) -> dict[str, list[dict[str, object]]]:
        """The outages this backend made since the last call, as each agent recorded them (``GET /outages``), by
        host: what a run's results gather. An agent that cannot be read says why instead."""
        made, self.made = self.made, []
        found: dict[str, list[dict[str, object]]] = {}
        for host in dict.fromkeys(host for host, _ in made):
            ids = {outage_id for where, outage_id in made if where == host}
            try:
                found[host] = [row for row in self.hosts[host].client.outages() if row.get("id") in ids]
            except ChaosApiError as error:  # one agent gone must not hide the others' readings
                found[host] = [{"error": error.message}]
        return found
