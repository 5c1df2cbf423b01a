"""Partitions between hosts: blackhole routes to registered peers, or a registered interface set down.

Two ways to cut a host off, both through iproute2's ``ip`` in the network namespace of the calling process
(root or CAP_NET_ADMIN):

* **route** (the default): ``ip route add blackhole PEER/32 proto 218`` for each peer. Packets this host
  sends to the peer are dropped, its own connects fail at once (``EINVAL``), and the peer's connects time
  out (its SYNs arrive; the SYN-ACKs are dropped here): both directions of TCP stop, and the agent's own API
  stays reachable from hosts that are not peers. Reverted with ``ip route del`` of exactly that route.
* **link**: ``ip link set IFACE down``, reverted with ``up``. Everything through the interface stops, the
  chaos agent's API included if it is reached through it: then only the dead-man watchdog, at the deadline,
  brings it back.

Safety: only peers and interfaces registered when the agent started can be cut (:class:`Peers`); a route that
exists already for a peer (one the machine had, or another fault's) is refused, never taken over, so a revert
removes only what retrystorm added. Routes retrystorm adds carry the protocol number :data:`ROUTE_PROTO` (shown
by ``ip route`` as ``proto 218``), by which start-up recovery finds what a killed agent left (:func:`stray_routes`).
An interface already down is refused.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from retrystorm.chaos.backends.base import BackendError, TargetRefusedError, UnknownTargetError
from retrystorm.errors import UserError

#: The routing protocol number that marks a blackhole route retrystorm added (free in iproute2's rt_protos).
ROUTE_PROTO = 218
#: Linux interface names: at most 15 characters (IFNAMSIZ - 1), no slash, no blank.
INTERFACE = re.compile(r"[A-Za-z0-9_.:@-]{1,15}")
#: Peer names, as scenarios and the agent's command line write them.
PEER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")
IP_TIMEOUT_S = 10.0


def _ip(*args: str) -> subprocess.CompletedProcess[str]:
    executable = shutil.which("ip")
    if executable is None:
        raise BackendError("iproute2's ip is not installed: a partition needs it (apt-get install iproute2)")
    try:
        return subprocess.run(  # noqa: S603 - ip with fixed verbs and checked addresses, no shell
            [executable, *args], capture_output=True, text=True, timeout=IP_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        raise BackendError(f"ip {' '.join(args)}: no answer within {IP_TIMEOUT_S:g} s") from None


def _failed(done: subprocess.CompletedProcess[str], what: str) -> BackendError:
    reason = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit status {done.returncode}"
    hint = "; it needs root (CAP_NET_ADMIN)" if "permitted" in reason else ""
    return BackendError(f"{what}: {reason}{hint}")


def host_prefix(address: str) -> str:
    """``ADDRESS/32`` (``/128`` for IPv6) of a peer address; a :class:`UserError` for anything but one address."""
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        raise UserError(f"peer address: got {address[:60]!r}, expected one IPv4 or IPv6 address") from None
    return f"{parsed}/{parsed.max_prefixlen}"


@dataclasses.dataclass(frozen=True, slots=True)
class Peers:
    """What a host's agent may cut: peers by name (an address each) and interfaces by name."""

    peers: Mapping[str, str] = dataclasses.field(default_factory=dict)
    interfaces: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, peers: Sequence[str], interfaces: Sequence[str]) -> Peers:
        """From ``NAME=ADDRESS`` and ``IFACE`` options; a :class:`UserError` naming the bad one."""
        found: dict[str, str] = {}
        for value in peers:
            name, eq, address = value.partition("=")
            if not eq or not PEER_NAME.fullmatch(name):
                raise UserError(f"--peer: got {value[:80]!r}, expected NAME=ADDRESS, e.g. worker1=10.0.0.7")
            host_prefix(address)
            found[name] = str(ipaddress.ip_address(address))
        for interface in interfaces:
            if not INTERFACE.fullmatch(interface):
                raise UserError(f"--interface: got {interface[:40]!r}, expected an interface name like eth0")
        return cls(found, frozenset(interfaces))

    def addresses(self, names: Sequence[str] = ()) -> dict[str, str]:
        """The peers named (all when none is), ``name -> address``; unknown names are refused."""
        if not names:
            if not self.peers:
                raise TargetRefusedError(
                    "no peer is registered here: start the agent with --peer NAME=ADDRESS for each host to cut off"
                )
            return dict(self.peers)
        unknown = [name for name in names if name not in self.peers]
        if unknown:
            known = ", ".join(self.peers) or "none"
            raise UnknownTargetError(f"peer {unknown[0]!r} is not registered here; peers: {known}")
        return {name: self.peers[name] for name in names}

    def interface(self, name: str) -> str:
        """``name`` if it is registered; refused otherwise."""
        if name not in self.interfaces:
            known = ", ".join(sorted(self.interfaces)) or "none"
            raise UnknownTargetError(
                f"interface {name[:40]!r} is not registered here (--interface IFACE); registered: {known}"
            )
        return name


def blackholes() -> list[dict[str, object]]:
    """Every blackhole route of this network namespace, as ``ip -j route show type blackhole`` lists them."""
    found: list[dict[str, object]] = []
    for family in ("-4", "-6"):
        done = _ip("-j", family, "route", "show", "type", "blackhole")
        if done.returncode != 0:
            raise _failed(done, "ip route show")
        rows = json.loads(done.stdout or "[]")
        found.extend(row for row in rows if isinstance(row, dict))
    return found


def _destination(row: Mapping[str, object]) -> str:
    dst = str(row.get("dst", ""))
    return dst if "/" in dst else host_prefix(dst) if dst and dst != "default" else dst


def has_blackhole(address: str) -> bool:
    """Whether any blackhole route to ``address`` is in force (retrystorm's or not)."""
    prefix = host_prefix(address)
    return any(_destination(row) == prefix for row in blackholes())


def network_namespace() -> str:
    """The network namespace this process runs in, as the kernel names it (``net:[4026531840]``)."""
    return str(Path("/proc/self/ns/net").readlink())


def add_blackhole(address: str) -> None:
    """Drop every packet to ``address``; refused if a blackhole route for it exists already."""
    prefix = host_prefix(address)
    if has_blackhole(address):
        raise TargetRefusedError(
            f"a blackhole route to {prefix} exists already, not made by this fault: not taken over"
        )
    done = _ip("route", "add", "blackhole", prefix, "proto", str(ROUTE_PROTO))
    if done.returncode != 0:
        raise _failed(done, f"ip route add blackhole {prefix}")


def delete_blackhole(address: str) -> str:
    """Remove the blackhole route to ``address`` that retrystorm added: ``"restored"``, or ``"gone"`` if none."""
    prefix = host_prefix(address)
    done = _ip("route", "del", "blackhole", prefix, "proto", str(ROUTE_PROTO))
    if done.returncode == 0:
        return "restored"
    if "No such process" in done.stderr or "No such file" in done.stderr:
        return "gone"
    raise _failed(done, f"ip route del blackhole {prefix}")


def is_blackholed(address: str) -> bool:
    """Whether a blackhole route retrystorm added to ``address`` is in force."""
    prefix = host_prefix(address)
    return any(_destination(row) == prefix and row.get("protocol") in (ROUTE_PROTO, str(ROUTE_PROTO))
               for row in blackholes())  # fmt: skip


def stray_routes() -> list[str]:
    """The addresses of the blackhole routes retrystorm added that are in force (for start-up recovery)."""
    return [
        _destination(row).partition("/")[0]
        for row in blackholes()
        if row.get("protocol") in (ROUTE_PROTO, str(ROUTE_PROTO))
    ]


def link_is_up(interface: str) -> bool:
    """Whether ``interface`` is administratively up."""
    done = _ip("-j", "link", "show", "dev", interface)
    if done.returncode != 0:
        raise _failed(done, f"ip link show {interface}")
    rows = json.loads(done.stdout or "[]")
    return bool(rows) and "UP" in rows[0].get("flags", [])


def set_link(interface: str, *, up: bool) -> str:
    """Set ``interface`` up or down: ``"restored"`` (or ``"gone"`` if the interface no longer exists)."""
    done = _ip("link", "set", "dev", interface, "up" if up else "down")
    if done.returncode == 0:
        return "restored"
    if "Cannot find device" in done.stderr:
        return "gone"
    raise _failed(done, f"ip link set {interface} {'up' if up else 'down'}")
