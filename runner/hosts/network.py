"""Faults in the network across hosts, played by the chaos agents (``POST``/``DELETE /network`` on each).

- ``delay``, ``loss``, ``hang`` and ``reset`` are toxics on the fault proxy the target host's agent names in
  ``hosts.agents.<host>.proxy`` (``chaos serve --proxy NAME=LISTEN,UPSTREAM``). The load is sent to the proxy's
  address (:class:`AgentProxiedTarget`); the runner's own reads (``/metrics``, ``/healthz``, the admin API) go to
  ``target.url``. :class:`AgentNetwork` sets and clears each toxic through the agent, with the timeline rules of
  :class:`~retrystorm.runner.network_triggers.NetworkPlayer`; each is asked for the length of its level and a
  grace, which the proxy enforces by itself if the runner dies.
- ``partition: NAME@HOST`` (a bare name: the target's host) cuts that host off from the peers its agent
  registered (``chaos serve --peer``): one partition per merged window, healed by the runner at its end, or by the
  agent's watchdog at its deadline if the runner (or the agent) is gone.

Checked before anything starts (:func:`check_network`, also on ``--dry-run``), each one line, exit 2: a proxy the
agent did not register, a partition on an agent with no peer registered.
"""

from __future__ import annotations

import time
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any

from retrystorm.chaos.backends.base import BackendError
from retrystorm.chaos.client import ChaosApiError, ChaosClient
from retrystorm.chaos.network.toxics import Toxic
from retrystorm.durations import format_duration
from retrystorm.errors import UserError
from retrystorm.experiment.scenario import Scenario
from retrystorm.experiment.scenario.hosts import Hosts
from retrystorm.experiment.scenario.network import NETWORK_KINDS, PROXY_KINDS
from retrystorm.runner.fault_proxy import NETWORK_TARGET, LoadElsewhere, through
from retrystorm.runner.interfaces import TargetHandle
from retrystorm.runner.runtime import Runtime

#: Addresses a proxy may listen on that name no host: the load then goes to the target's host at its port.
WILDCARDS = frozenset({"0.0.0.0", "::", ""})  # noqa: S104 - read, never bound


class AgentNetwork:
    """One agent's network faults, as the runner's network player sets and clears them (blocking calls)."""

    def __init__(self, host: str, client: ChaosClient, proxy: str | None) -> None:
        self.host, self.client, self.proxy = host, client, proxy
        #: The runner's toxic id -> the agent's fault id.
        self._ids: dict[str, str] = {}

    def _call(self, what: str, body: dict[str, Any] | None = None, fault_id: str = "") -> dict[str, Any]:
        try:
            return self.client.network(body) if body is not None else self.client.end_network(fault_id)
        except ChaosApiError as error:
            raise BackendError(f"the agent of {self.host} ({self.client.base_url}) {what}: {error.message}") from None

    def set(self, toxic_id: str, toxic: Toxic, until_monotonic: float) -> None:
        """``POST /network`` the toxic on the registered proxy, held until ``until_monotonic`` (local clock)."""
        settings = toxic.settings()
        hold = self._hold(until_monotonic - time.monotonic())  # this host's clock; the agent counts on its own
        body: dict[str, Any] = {"kind": toxic.kind, "target": self.proxy or "", "duration": hold}
        if toxic.kind == "delay":
            body |= {"latency": settings["latency_s"], "jitter": settings["jitter_s"]}
        elif "probability" in settings:
            body["probability"] = settings["probability"]
        self._ids[toxic_id] = str(self._call(f"did not start a {toxic.kind}", body)["id"])

    def clear(self, toxic_id: str) -> bool:
        """``DELETE /network/ID``: end it now; whether it was known."""
        fault_id = self._ids.pop(toxic_id, None)
        if fault_id is None:
            return False
        self._call("did not end it", fault_id=fault_id)
        return True

    def start_partition(self, target: str, hold_s: float) -> str:
        """``POST /network`` a partition from every peer the agent registered, for at most ``hold_s``."""
        body = {"kind": "partition", "duration": self._hold(hold_s)}
        return str(self._call(f"did not cut {target!r} off", body)["id"])

    def end_partition(self, fault_id: str) -> None:
        """``DELETE /network/ID``: heal it now."""
        self._call("did not heal it", fault_id=fault_id)

    @staticmethod
    def _hold(seconds: float) -> str:
        return format_duration(max(0.001, round(seconds, 3)))


class AgentPartitions:
    """The partitions of a run, each on the agent of the host its target names."""

    def __init__(self, networks: Mapping[str, AgentNetwork], hosts: Hosts, target_host: str | None) -> None:
        self.networks, self.hosts, self.target_host = networks, hosts, target_host
        self._made: dict[str, str] = {}

    def start_partition(self, target: str, hold_s: float) -> str:
        """Cut the host of ``target`` off; the id, as ``HOST/ID``."""
        host = self.hosts.locate(target, self.target_host)[0]
        return f"{host}/{self.networks[host].start_partition(target, hold_s)}"

    def end_partition(self, fault_id: str) -> None:
        """Heal partition ``HOST/ID``."""
        host, _, agent_id = fault_id.partition("/")
        self.networks[host].end_partition(agent_id)


class AgentProxiedTarget(LoadElsewhere):
    """A target whose load goes through its agent's fault proxy (when one is named), and whose network faults the
    agents play; :meth:`stop` leaves the proxy alone: it is the agent's."""

    def __init__(
        self, target: TargetHandle, base_url: str, toxics: AgentNetwork | None, partitions: AgentPartitions
    ) -> None:
        super().__init__(target, base_url)
        self.toxics = toxics
        self.partitions = partitions

    def describe(self) -> str:
        proxy = self.toxics.proxy if self.toxics is not None else None
        proxied = f"; load through the fault proxy {proxy} of its agent on {self.base_url}" if proxy else ""
        return f"{self.target.describe()}{proxied}"


class AgentFaultsInTheNetwork:
    """The hosts stack's player of network windows (:class:`~retrystorm.runner.fault_proxy.NetworkFaultsProvider`)."""

    def __init__(self, scenario: Scenario, clients: Mapping[str, ChaosClient]) -> None:
        if scenario.hosts is None or scenario.target is None:
            raise ValueError("a scenario across hosts has hosts: and target:")
        self.hosts, self.target_host = scenario.hosts, scenario.target.host
        self.clients = dict(clients)
        self.proxy_host = self.target_host or (next(iter(self.hosts.agents)) if len(self.hosts.agents) == 1 else None)
        #: What asks every agent before anything starts (the hosts' targets set it: their own preflight, which
        #: calls :meth:`check`).
        self.preflight: Callable[[], object] | None = None

    def _proxy(self) -> str | None:
        agent = self.hosts.agents.get(self.proxy_host or "")
        return agent.proxy if agent is not None else None

    def refusal(self, kind: str) -> str | None:
        """A proxied kind needs ``proxy:`` on the target host's agent; a partition is played by its host's agent."""
        if kind in PROXY_KINDS and self._proxy() is None:
            host = self.proxy_host or "HOST"
            return (
                f"across hosts, a {kind} is played by a fault proxy of the target host's agent: name it in "
                f"hosts.agents.{host}.proxy (chaos serve --proxy NAME=LISTEN,UPSTREAM registers one)"
            )
        return None if kind in NETWORK_KINDS else f"{kind}: not a fault in the network"

    def target_names(self) -> list[str]:
        """What a proxied window may name: what the load is sent to; once every agent answered (the preflight)."""
        if self.preflight is not None:
            self.preflight()
        return [NETWORK_TARGET]

    def check(self, kinds: set[str], partitioned: list[str]) -> None:
        """Refuse, in one line, a proxy the agent did not register, or a partition by an agent with no peer."""
        if kinds & PROXY_KINDS and self.proxy_host is not None:
            self._listen(self.proxy_host)
        for name in partitioned:
            host = self.hosts.locate(name, self.target_host)[0]
            if not self._registered(host)["peers"]:
                raise UserError(
                    f"partition: {name}: the agent of {host} registered no peer to cut it off from; start its "
                    "chaos serve with --peer NAME=ADDRESS for each host that sends it load"
                )

    def _registered(self, host: str) -> dict[str, Any]:
        client = self.clients[host]
        try:
            return client.network_targets()
        except ChaosApiError as error:
            raise UserError(f"hosts.agents.{host}: {error.message}") from None

    def _listen(self, host: str) -> tuple[str, str]:
        """``(host, port)`` the proxy named for ``host`` listens on, as its agent registered it."""
        name = self._proxy() or ""
        proxies = self._registered(host)["proxies"]
        if name not in proxies:
            known = ", ".join(proxies) or "none"
            raise UserError(
                f"hosts.agents.{host}.proxy: the agent ({self.clients[host].base_url}) registered no fault proxy "
                f"{name!r}; it registered: {known} (chaos serve --proxy NAME=LISTEN,UPSTREAM)"
            )
        listen_host, _, port = str(proxies[name]["listen"]).rpartition(":")
        return listen_host.strip("[]"), port

    async def wrap(
        self, target: TargetHandle, label: str, *, life_s: float, seed: int, runtime: Runtime
    ) -> AgentProxiedTarget:
        """``target`` with its load sent to the agent's proxy (when one is named) and its partitions through the
        agents."""
        networks = {host: AgentNetwork(host, client, self._proxy()) for host, client in self.clients.items()}
        base_url, toxics = target.base_url, None
        if self._proxy() is not None and self.proxy_host is not None:
            listen_host, port = await runtime.run_blocking(self._listen, self.proxy_host)
            if listen_host in WILDCARDS:
                listen_host = urllib.parse.urlsplit(target.base_url).hostname or listen_host
            base_url, toxics = through(target.base_url, (listen_host, int(port))), networks[self.proxy_host]
        partitions = AgentPartitions(networks, self.hosts, self.target_host)
        return AgentProxiedTarget(target, base_url, toxics, partitions)
