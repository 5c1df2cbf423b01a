"""The target across hosts: a long-lived service at its URL, faulted through the chaos agent of each host.

:class:`HostsTargets` is the compose backend's long-lived target
(:class:`~retrystorm.runner.service_target.ServiceTargets`: ready before each strategy, reset through its admin
API when it is ``retrystorm target``, never left paused) with every fault going through
:class:`~retrystorm.chaos.backends.agents.AgentsBackend`, one agent per host.

**Checked before anything starts** (:meth:`HostsTargets.fault_target_names`, also on ``--dry-run``), each a
one-line :class:`~retrystorm.errors.UserError` (exit 2): an agent that cannot be reached or refuses its token,
a fault whose target its agent did not register (with what it did register), and what the agents cannot play
of the network windows (:meth:`~retrystorm.runner.hosts.network.AgentFaultsInTheNetwork.check`). A token missing
for an agent beyond loopback is refused earlier still, when the stack is made.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from retrystorm.chaos.backends.agents import AgentsBackend
from retrystorm.chaos.backends.base import FaultBackend, TargetRef, TargetState
from retrystorm.chaos.client import ChaosApiError, ChaosClient
from retrystorm.chaos.targets import FaultTarget
from retrystorm.errors import UserError
from retrystorm.experiment.scenario import Scenario
from retrystorm.experiment.scenario.hosts import Hosts
from retrystorm.experiment.scenario.network import NETWORK_KINDS
from retrystorm.runner import server_metrics
from retrystorm.runner.hosts.network import AgentFaultsInTheNetwork
from retrystorm.runner.lazy import LazyBackend
from retrystorm.runner.live_triggers import builtin_refusal, foreign_refusal
from retrystorm.runner.service_target import ServiceTarget, ServiceTargets
from retrystorm.target.models import OverloadModel

#: The kinds a fault's target must be registered on its agent for.
REGISTERED_KINDS = frozenset({"pause", "slow"})


class _NeverPaused(FaultBackend):
    """What stands for the target when no fault pauses it: it exists, and is never paused."""

    name = "none"

    def resolve(self, target: str) -> list[TargetRef]:
        return [TargetRef(self.name, target, target)]

    def targets(self) -> list[str]:
        return []

    def pause(self, ref: TargetRef) -> None:
        raise UserError(f"{ref.target!r} cannot be paused here")

    def resume(self, ref: TargetRef) -> None:
        """Nothing was paused."""

    def state(self, ref: TargetRef) -> TargetState:
        return TargetState.RUNNING


class HostsTargets(ServiceTargets):
    """The scenario's target on its host, and every fault through its host's agent (see the module docstring)."""

    def __init__(
        self, scenario: Scenario, clients: Mapping[str, ChaosClient], *, hold_s: float, admin_token: str = ""
    ) -> None:
        target, hosts = scenario.target, scenario.hosts
        if target is None or hosts is None:
            raise ValueError("a scenario across hosts has target: and hosts: (its loader checks)")
        self.scenario = scenario
        self.hosts: Hosts = hosts
        self.clients = dict(clients)
        self.agents = AgentsBackend(clients, hold_s=hold_s, locate=lambda name: hosts.locate(name, target.host))
        self.network = AgentFaultsInTheNetwork(scenario, clients)
        self.network.preflight = self.fault_target_names
        on_target_host = [
            fault.target
            for fault in scenario.faults
            if fault.kind in REGISTERED_KINDS and hosts.locate(fault.target, target.host)[0] == target.host
        ]
        backend: FaultBackend = self.agents if on_target_host else _NeverPaused()
        super().__init__(
            target.url,
            backend=LazyBackend.of(backend),
            fault_target=on_target_host[0] if on_target_host else "target",
            admin_token=admin_token,
            foreign=None if target.model_server else target,
        )

    def recovery_backends(self) -> list[FaultBackend]:
        return [self.agents]

    def agent_outages(self) -> dict[str, list[dict[str, object]]]:
        """The outages of the strategy that just ran, as each agent recorded them (blocking)."""
        return self.agents.take_outages()

    def trigger_refusal(self, kind: str) -> str | None:
        if kind in NETWORK_KINDS:  # the stack asks its network player first (runner.hosts.network)
            return None
        if self.foreign is not None and kind != "slow":
            return foreign_refusal(kind)
        return builtin_refusal(kind)

    def describe(self, model: OverloadModel | None) -> str:
        agents = ", ".join(f"{host} ({agent.url})" for host, agent in self.hosts.agents.items()) or "none"
        return f"{super().describe(model)}; chaos agents: {agents}"

    def fault_target_names(self) -> list[str]:
        """Every fault's target as the scenario writes it, once each agent answered and registered it."""
        registered = {host: self._registered(host) for host in self.clients}
        target_host = self.scenario.target.host if self.scenario.target is not None else None
        names = []
        for index, fault in enumerate(self.scenario.faults):
            if fault.kind == "spike":
                continue
            host, name = self.hosts.locate(fault.target, target_host)
            if fault.kind in REGISTERED_KINDS and name not in registered[host]:
                known = ", ".join(registered[host]) or "nothing"
                raise UserError(
                    f"faults[{index}]: {fault.kind}: {fault.target}: the agent of {host} "
                    f"({self.clients[host].base_url}) has no target {name!r}; it registered: {known} "
                    "(retrystorm chaos serve --target NAME=PID registers one)"
                )
            names.append(fault.target)
        kinds = {fault.kind for fault in self.scenario.faults}
        self.network.check(kinds, [fault.target for fault in self.scenario.faults if fault.kind == "partition"])
        return names

    def _registered(self, host: str) -> list[str]:
        """The targets agent ``host`` registered; a :class:`UserError` when it cannot be reached or refuses."""
        client = self.clients[host]
        try:
            return [str(row["target"]) for row in client.overview()]
        except ChaosApiError as error:
            token_env = self.hosts.agents[host].token_env
            message = error.message.replace("set --chaos-token or RETRYSTORM_CHAOS_TOKEN", f"set {token_env}")
            raise UserError(f"hosts.agents.{host}: {message}") from None

    async def start(self, label: str, model: OverloadModel | None, seed: int) -> ServiceTarget:
        """The target, ready (and reset, for ``retrystorm target``), with every fault target of the scenario."""
        handle = await super().start(label, model, seed)
        names = await asyncio.to_thread(self.fault_target_names)
        handle.faults = {name: FaultTarget(name, self.agents) for name in names} | dict(handle.faults)
        if self.foreign is not None:  # a service of one's own: its own gauge, or no server readings
            found = server_metrics.endpoint(self.foreign.metrics)
            handle.metrics_url = found[0] if found is not None else None
        return handle
