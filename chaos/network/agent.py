"""Faults in the network on a chaos agent: what ``retrystorm chaos serve`` registers and plays.

What may be faulted is fixed when the agent starts (the registered-targets rule, as for pauses):

* ``--proxy NAME=LISTEN,UPSTREAM``: a fault proxy (:mod:`.proxy`) listening on ``LISTEN`` in front of the
  service at ``UPSTREAM``; clients send to ``LISTEN``. The agent starts it as a process of its own, or adopts
  the one a killed agent left (its toxics ended first); a graceful stop of the agent stops it.
* ``--peer NAME=ADDRESS``: a host a partition may cut this one off from (a blackhole route to ``ADDRESS``);
  ``--interface IFACE``: an interface a partition may set down.

:class:`NetworkFaults` plays them through the agent's controller, as kinds of the one fault lifecycle
(:mod:`.faults`): journaled, each ended by its deadline even if the agent is SIGKILLed (a proxy's own timer,
a route's or link's watchdog order), recovered at the next start. :class:`NetworkRequest` is ``POST /network``;
every number in it has a ceiling: a latency or jitter at most :data:`~.toxics.MAX_LATENCY_S`, a probability at
most 1, at most :data:`MAX_PEERS` peers, a duration clamped to the agent's maximum outage.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, Strict, ValidationError, model_validator

from retrystorm.addresses import host_port
from retrystorm.bodies import Body, duration, explained, first_problem
from retrystorm.chaos.backends.base import FaultBackend, TargetRef, TargetState, UnknownTargetError
from retrystorm.chaos.controller import OutageController
from retrystorm.chaos.lifecycle import FaultKeeper
from retrystorm.chaos.network import routes
from retrystorm.chaos.network.faults import NetworkFault, PartitionKind, ToxicKind, make_network_fault
from retrystorm.chaos.network.process import ProxyProcess, adopt, start_proxy
from retrystorm.chaos.network.toxics import MAX_LATENCY_S, TOXIC_TYPES, Delay, Hang, Loss, Reset, Toxic
from retrystorm.chaos.targets import FaultTarget
from retrystorm.durations import ACCEPTED
from retrystorm.errors import UserError

_EXAMPLE = 'a JSON object like {"kind": "delay", "target": "web", "latency": "200ms", "duration": "10s"}'
_DURATION_CHARS = 64
#: The most peers one partition names.
MAX_PEERS = 100
#: The most proxies, and the most peers, one agent registers.
MAX_REGISTERED = 100
#: What a partition's fault target is called: the agent's own host.
HOST = "host"


@dataclasses.dataclass(frozen=True, slots=True)
class ProxySpec:
    """A proxy to register: its name, where clients connect, the service it forwards to."""

    name: str
    listen: tuple[str, int]
    upstream: tuple[str, int]

    @classmethod
    def parse(cls, text: str) -> ProxySpec:
        """``NAME=LISTEN,UPSTREAM`` (each ``HOST:PORT``); a :class:`UserError` naming ``--proxy`` otherwise."""
        name, eq, rest = text.partition("=")
        listen, comma, upstream = rest.partition(",")
        if not eq or not comma or not routes.PEER_NAME.fullmatch(name):
            raise UserError(
                f"--proxy: got {text[:80]!r}, expected NAME=LISTEN,UPSTREAM, e.g. web=10.0.0.4:8000,127.0.0.1:8070"
            )
        return cls(name, host_port(listen, "--proxy LISTEN"), host_port(upstream, "--proxy UPSTREAM"))


class _Registered(FaultBackend):
    """What stands behind a network fault's target: a name this agent registered; nothing to pause."""

    name = "network"

    def __init__(self, names: list[str]) -> None:
        self.names = names

    def resolve(self, target: str) -> list[TargetRef]:
        if target not in self.names:
            raise UnknownTargetError(f"no {target!r} here")
        return [TargetRef(self.name, target, target)]

    def targets(self) -> list[str]:
        return list(self.names)

    def pause(self, ref: TargetRef) -> None:
        raise UnknownTargetError(f"{ref.target!r} is a network fault's target, not something to pause")

    def resume(self, ref: TargetRef) -> None:
        """Nothing was paused."""

    def state(self, ref: TargetRef) -> TargetState:
        return TargetState.RUNNING


def _latency(what: str) -> Any:
    return duration(
        accepted=f'a duration {what} and at most {MAX_LATENCY_S:g} s, such as "200ms"',
        above=0 if what == "> 0" else None,
        at_most=MAX_LATENCY_S,
        max_chars=_DURATION_CHARS,
    )


class NetworkRequest(Body):
    """``POST /network``: a fault in the network for ``duration`` (clamped to the agent's maximum outage)."""

    model_config = ConfigDict(populate_by_name=True)

    kind: Literal["delay", "loss", "hang", "reset", "partition"] = Field(description="the kind of fault")
    target: str = Field(
        default="", max_length=200, description="a registered proxy (delay, loss, hang, reset); unused by a partition"
    )
    duration_s: duration(  # type: ignore[valid-type]
        accepted=f'a finite duration > 0 such as "10s" ({ACCEPTED}) or a number of seconds',
        above=0,
        max_chars=_DURATION_CHARS,
    ) = Field(alias="duration", description='how long, e.g. "10s"; clamped to the maximum outage')
    latency_s: _latency("> 0") = Field(  # type: ignore[valid-type]
        default=0.0, alias="latency", description=f"delay: the time added to each answer (at most {MAX_LATENCY_S:g} s)"
    )
    jitter_s: _latency("from 0") = Field(  # type: ignore[valid-type]
        default=0.0, alias="jitter", description="delay: each answer's added time varies by up to this"
    )
    probability: Annotated[
        float, Strict(), Field(gt=0, le=1, allow_inf_nan=False), explained("a probability in (0, 1]")
    ] = Field(default=1.0, description="loss: of each segment, in (0, 1); hang, reset: of each connection")
    peers: list[Annotated[str, Field(max_length=63)]] = Field(
        default=[], max_length=MAX_PEERS, description="partition: the registered peers cut off (default: all)"
    )
    method: Literal["route", "link"] = Field(
        default="route", description="partition: blackhole routes to the peers, or a registered interface down"
    )
    interface: str = Field(default="", max_length=15, description="partition by link: the registered interface")

    @model_validator(mode="after")
    def _fields_of_the_kind(self) -> NetworkRequest:
        if self.kind in TOXIC_TYPES and not self.target:
            raise ValueError(f"target: a {self.kind} needs the name of a registered proxy")
        if self.kind == "delay" and not self.latency_s > 0:
            raise ValueError(f"latency: a delay needs a latency > 0 and at most {MAX_LATENCY_S:g} s")
        if self.kind == "loss" and self.probability >= 1:
            raise ValueError("probability: expected a probability in (0, 1) for a loss")
        if self.kind == "partition" and self.method == "link" and not self.interface:
            raise ValueError("interface: a partition by link needs a registered interface")
        return self

    def toxic(self) -> Toxic:
        """The proxy toxic this request asks for."""
        if self.kind == "delay":
            return Delay(latency_s=self.latency_s, jitter_s=self.jitter_s)
        if self.kind == "loss":
            return Loss(probability=self.probability)
        return Hang(probability=self.probability) if self.kind == "hang" else Reset(probability=self.probability)


def network_problem(error: ValidationError) -> str:
    """The first problem of a refused ``POST /network`` body, as one line."""
    return first_problem(error, example=_EXAMPLE)


class NetworkFaults:
    """This agent's proxies, peers and interfaces, and the faults it plays on them (see the module docstring)."""

    def __init__(self, controller: OutageController, proxies: dict[str, ProxyProcess], peers: routes.Peers) -> None:
        if len(proxies) > MAX_REGISTERED or len(peers.peers) > MAX_REGISTERED:
            raise UserError(f"--proxy, --peer: at most {MAX_REGISTERED} of each")
        self.proxies = proxies
        self.peers = peers
        self._max_s = controller.world.max_duration_s
        controls = {name: proxy.control for name, proxy in proxies.items()}
        self.toxics: FaultKeeper[Any, NetworkFault] = controller.keeper(ToxicKind(controls), make_network_fault, "n")
        self.partitions: FaultKeeper[Any, NetworkFault] = controller.keeper(
            PartitionKind(peers), make_network_fault, "p"
        )
        self._proxy_targets = _Registered([f"{name}:{kind}" for name in proxies for kind in TOXIC_TYPES])
        self._host = _Registered([HOST])

    @classmethod
    def start(
        cls, controller: OutageController, specs: list[ProxySpec], peers: routes.Peers, folder: Path
    ) -> NetworkFaults:
        """Start (or adopt) each registered proxy, with its control socket and log in ``folder`` (made 0700)."""
        if len(specs) > MAX_REGISTERED:
            raise UserError(f"--proxy: at most {MAX_REGISTERED}")
        proxies: dict[str, ProxyProcess] = {}
        if specs:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            for spec in specs:
                control = folder / f"{spec.name}.sock"
                found = adopt(control) or start_proxy(
                    spec.listen, spec.upstream, control, log_path=folder / f"{spec.name}.log"
                )
                proxies[spec.name] = found
            return cls(controller, proxies, peers)
        except BaseException:
            for proxy in proxies.values():
                proxy.stop()
            raise

    async def play(self, request: NetworkRequest) -> NetworkFault:
        """Start the fault ``request`` asks for; refusals are :class:`~retrystorm.errors.UserError`."""
        if request.kind == "partition":
            settings: dict[str, Any] = {"method": request.method, "peers": list(request.peers)}
            if request.method == "link":
                settings = {"method": "link", "interface": request.interface}
            target = FaultTarget(HOST, self._host)
            return await self.partitions.start(
                target, request.duration_s, kind="partition", settings=settings, **settings
            )
        if request.target not in self.proxies:
            known = ", ".join(self.proxies) or "none (chaos serve --proxy NAME=LISTEN,UPSTREAM registers one)"
            raise UnknownTargetError(f"target: no fault proxy {request.target[:60]!r} here; proxies: {known}")
        toxic = request.toxic()
        target = FaultTarget(f"{request.target}:{request.kind}", self._proxy_targets)
        return await self.toxics.start(
            target, request.duration_s, kind=request.kind, settings=toxic.settings(), toxic=toxic,
            hold_s=min(request.duration_s, self._max_s()),
        )  # fmt: skip

    def faults(self) -> list[NetworkFault]:
        """Every network fault of this agent, oldest first."""
        return sorted([*self.toxics.faults(), *self.partitions.faults()], key=lambda fault: fault.started_monotonic)

    def active(self) -> list[NetworkFault]:
        """The network faults in force."""
        return [*self.toxics.active(), *self.partitions.active()]

    def find(self, fault_id: str) -> NetworkFault:
        """One network fault by id (a 404 otherwise)."""
        for fault in self.faults():
            if fault.id == fault_id:
                return fault
        raise UnknownTargetError(f"no network fault {fault_id[:40]!r}")

    async def end(self, fault_id: str) -> NetworkFault:
        """End one network fault now."""
        fault = self.find(fault_id)
        keeper = self.partitions if fault.kind == "partition" else self.toxics
        return await keeper.end(fault_id, reason="early")

    def targets_json(self) -> dict[str, Any]:
        """``GET /network-targets``: the proxies, peers and interfaces registered."""
        return {
            "proxies": {
                name: {"listen": f"{proxy.host}:{proxy.port}", "pid": proxy.pid} for name, proxy in self.proxies.items()
            },
            "peers": dict(self.peers.peers),
            "interfaces": sorted(self.peers.interfaces),
        }

    def stop(self) -> None:
        """Stop the proxies this agent started or adopted (a graceful stop of the agent)."""
        for proxy in self.proxies.values():
            proxy.stop()
