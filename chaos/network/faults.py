"""Faults in the network as kinds of the one fault lifecycle (:mod:`retrystorm.chaos.lifecycle`).

* :class:`ToxicKind` -- a toxic (delay, loss, hang, reset) on a registered fault proxy. Its effect names the
  proxy's control socket; injecting sets the toxic with the CLOCK_MONOTONIC deadline the proxy itself enforces
  (the fault's duration plus :data:`PROXY_GRACE_S`, so the controller's on-time end normally wins). That deadline
  is the dead-man switch: it lives in the proxy, a process of its own that outlives the controller, and a proxy
  that is gone carries no traffic to delay. So no watchdog is armed for a toxic
  (:data:`~retrystorm.chaos.deadman.GUARDED_BACKENDS` leaves ``proxy`` out); the journal records it, and
  recovery clears it through the control socket.
* :class:`PartitionKind` -- the host cut off from registered peers: a blackhole route per peer (``route``) or
  a registered interface down (``link``), through :mod:`.routes`. Each effect is guarded by a watchdog that
  removes the route or sets the link up at the deadline (:mod:`retrystorm.chaos.watchdog.network_guards`), and
  start-up recovery removes the routes of a killed controller (journaled, or found by their ``proto 218`` mark).

They are journaled as ``toxic``/``detox`` and ``partition``/``heal`` records, with their undo. A cut's undo names the
network namespace it was made in (:func:`~retrystorm.chaos.network.routes.network_namespace`): the watchdog that heals
it refuses an order from another namespace rather than heal the wrong one. netem (``tc qdisc ... netem``) is not
used: the proxy works for any TCP service on any kernel, without root, and is the path tested here.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from retrystorm.chaos.backends.base import BackendError, FaultHadNoEffectError, TargetRef, TargetRefusedError
from retrystorm.chaos.journal import register_fault_ops
from retrystorm.chaos.lifecycle import Fault, FaultKind, FaultStatus
from retrystorm.chaos.network import routes
from retrystorm.chaos.network.control import ProxyControl
from retrystorm.chaos.network.toxics import Toxic
from retrystorm.chaos.targets import FaultTarget

#: A proxy ends a toxic by itself this long after the fault's own end: the controller's revert normally wins.
PROXY_GRACE_S = 0.5
register_fault_ops("toxic", "detox")
register_fault_ops("partition", "heal")


@dataclasses.dataclass(slots=True, kw_only=True)
class NetworkFault(Fault):
    """One fault in the network: a toxic on a proxy, or a partition."""

    kind: str
    settings: dict[str, Any] = dataclasses.field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The fault as the chaos API shows it."""
        return {**self.timing_json(), "kind": self.kind, "settings": dict(self.settings)}


def make_network_fault(**fields: Any) -> NetworkFault:
    """A :class:`NetworkFault` from a keeper's fields, the kind's own params (a toxic, peers) left out."""
    known = {field.name for field in dataclasses.fields(NetworkFault)}
    return NetworkFault(**{name: value for name, value in fields.items() if name in known})


@dataclasses.dataclass(frozen=True, slots=True)
class ToxicEffect:
    """A toxic on one proxy: ``ref`` (backend ``proxy``, ident the control socket), the toxic and its hold."""

    ref: TargetRef
    toxic: Toxic
    toxic_id: str
    hold_s: float

    def undo(self) -> dict[str, Any]:
        """Clear toxic ``toxic_id`` through the control socket."""
        return {"control": self.ref.ident, "toxic_id": self.toxic_id}


class ToxicKind(FaultKind[ToxicEffect]):
    """A toxic on a registered proxy (see the module docstring); params: ``toxic`` and ``hold_s``."""

    start_op, end_op, in_force_word, shares = "toxic", "detox", "degraded", False
    ended_status = FaultStatus.RESTORED

    def __init__(self, proxies: Mapping[str, Path]) -> None:
        #: Registered proxy name -> its control socket.
        self.proxies = proxies

    def plan(self, target: FaultTarget, fault_id: str, params: Mapping[str, Any]) -> list[ToxicEffect]:
        name = target.name.rpartition(":")[0] or target.name  # PROXY:KIND: one fault of each kind at once
        control = self.proxies.get(name)
        if control is None:
            raise BackendError(f"no fault proxy {name!r} here")
        toxic, hold_s = params["toxic"], float(params["hold_s"])
        return [ToxicEffect(TargetRef("proxy", name, str(control)), toxic, fault_id, hold_s)]

    def prepare(self, effect: ToxicEffect) -> None:
        """Nothing to make: the proxy runs."""

    def inject(self, target: FaultTarget, effects: list[ToxicEffect]) -> list[ToxicEffect]:
        for effect in effects:
            until = time.monotonic() + effect.hold_s + PROXY_GRACE_S
            ProxyControl(Path(effect.ref.ident)).set(effect.toxic_id, effect.toxic, until)
        return []

    def confirm(self, target: FaultTarget, effects: list[ToxicEffect]) -> None:
        for effect in effects:
            toxics = ProxyControl(Path(effect.ref.ident)).status().get("toxics", [])
            if not any(row.get("id") == effect.toxic_id for row in toxics):
                raise FaultHadNoEffectError(f"the fault proxy {effect.ref.target!r} shows no toxic {effect.toxic_id}")

    def revert(self, effect: ToxicEffect) -> str:
        return self.recover(effect.ref, effect.undo())

    def recover(self, ref: TargetRef, undo: dict[str, Any]) -> str:
        control = ProxyControl(Path(str(undo.get("control", ref.ident))), timeout_s=2.0)
        if not control.reachable():
            return "gone"  # no proxy, no toxic: a proxy's toxics die with it
        return "restored" if control.clear(str(undo["toxic_id"])) else "gone"

    def strays(self) -> list[TargetRef]:
        return []  # a proxy adopted at start-up has its toxics cleared (retrystorm.chaos.network.process.adopt)


@dataclasses.dataclass(frozen=True, slots=True)
class CutEffect:
    """One cut of a partition: a blackhole route to a peer (backend ``route``, ident its address) or an
    interface down (backend ``link``, ident its name)."""

    ref: TargetRef
    #: The network namespace it is made in (``net:[INODE]``), so the watchdog heals it there or refuses.
    namespace: str

    def undo(self) -> dict[str, Any]:
        """Remove the route to the ref's address, or set the ref's link up, in ``namespace``."""
        return {"netns": self.namespace}


class PartitionKind(FaultKind[CutEffect]):
    """The host cut off from its registered peers (see the module docstring); params: ``method``, ``peers``,
    ``interface``."""

    start_op, end_op, in_force_word, shares = "partition", "heal", "partitioned", False
    ended_status = FaultStatus.RESTORED

    def __init__(self, peers: routes.Peers) -> None:
        self.peers = peers

    def plan(self, target: FaultTarget, fault_id: str, params: Mapping[str, Any]) -> list[CutEffect]:
        namespace = routes.network_namespace()
        if params.get("method", "route") == "link":
            interface = self.peers.interface(str(params.get("interface", "")))
            return [CutEffect(TargetRef("link", target.name, interface), namespace)]
        chosen = self.peers.addresses(list(params.get("peers") or []))
        return [CutEffect(TargetRef("route", name, address), namespace) for name, address in chosen.items()]

    def prepare(self, effect: CutEffect) -> None:
        """Refuse a cut that would take over what the machine had: a route there already, a link down already."""
        if effect.ref.backend == "link" and not routes.link_is_up(effect.ref.ident):
            raise TargetRefusedError(f"interface {effect.ref.ident} is down already: not taken over")
        if effect.ref.backend == "route" and routes.has_blackhole(effect.ref.ident):
            raise TargetRefusedError(f"a blackhole route to {effect.ref.ident} exists already: not taken over")

    def inject(self, target: FaultTarget, effects: list[CutEffect]) -> list[CutEffect]:
        for effect in effects:
            if effect.ref.backend == "link":
                routes.set_link(effect.ref.ident, up=False)
            else:
                routes.add_blackhole(effect.ref.ident)
        return []

    def confirm(self, target: FaultTarget, effects: list[CutEffect]) -> None:
        for effect in effects:
            ident = effect.ref.ident
            cut = not routes.link_is_up(ident) if effect.ref.backend == "link" else routes.is_blackholed(ident)
            if not cut:
                raise FaultHadNoEffectError(f"{effect.ref.describe()}: not cut after the partition")

    def revert(self, effect: CutEffect) -> str:
        return self.recover(effect.ref, effect.undo())

    def recover(self, ref: TargetRef, undo: dict[str, Any]) -> str:
        made_in, here = undo.get("netns"), routes.network_namespace()
        if made_in is not None and made_in != here:
            raise BackendError(f"{ref.describe()}: cut in network namespace {made_in}, not in this one ({here})")
        if ref.backend == "link":
            return routes.set_link(ref.ident, up=True)
        return routes.delete_blackhole(ref.ident)

    def strays(self) -> list[TargetRef]:
        """Routes marked ``proto 218`` that no journal names, when this controller registered peers (each cut is
        journaled before it is made, so only a journal lost leaves one; a controller without peers reads none)."""
        if not self.peers.peers:
            return []
        try:
            return [TargetRef("route", "stray", address) for address in routes.stray_routes()]
        except BackendError:
            return []  # no ip here: nothing can have been cut
