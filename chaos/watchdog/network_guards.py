"""What the watchdog does at a partition's deadline: remove its blackhole route, or set its interface up.

An order with ``fault="partition"`` guards one cut of a partition
(:class:`retrystorm.chaos.network.faults.PartitionKind`): backend ``route`` (ident: the peer's address) deletes
the blackhole route retrystorm added to it (``proto 218``), backend ``link`` (ident: the interface) sets the
interface up. The supervisor runs in the network namespace of the controller that started it (a child inherits
it); the order's undo names the namespace its cut was made in, and an order from another namespace is refused
when it is armed (the fault is then refused too), so a watchdog never heals, or misses, the wrong namespace's
routes. A route already gone, or an interface gone, was healed: nothing to do. Toxics on a fault proxy need no
watchdog: the proxy ends each at its own deadline.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from retrystorm.chaos.network import routes


def check_cut(backend: str, ident: str, undo: dict[str, Any] | None) -> None:
    """A ``ValueError`` unless ``ident`` is what a ``backend`` cut names (an address, an interface name) and
    ``undo`` names a network namespace."""
    if backend == "route":
        ipaddress.ip_address(ident)  # ValueError for anything but one address
    elif not routes.INTERFACE.fullmatch(ident):
        raise ValueError(f"interface {ident[:40]!r}: expected an interface name")
    namespace = (undo or {}).get("netns")
    if not isinstance(namespace, str) or not namespace.startswith("net:["):
        raise ValueError(f"undo {str(undo)[:80]}: expected the netns the cut was made in, as net:[INODE]")


class CutGuard:
    """Heal one cut of a partition at the deadline (see the module docstring)."""

    prepare_s = 0.0
    watch_fd: int | None = None

    def __init__(self, backend: str, ident: str, undo: dict[str, Any] | None) -> None:
        check_cut(backend, ident, undo)
        here = routes.network_namespace()
        if (undo or {}).get("netns") != here:
            raise ValueError(
                f"the cut was made in network namespace {(undo or {}).get('netns')}, and this watchdog runs in "
                f"{here}: it cannot heal it (give each network namespace's agent a journal of its own)"
            )
        self.backend, self.ident = backend, ident

    def close(self) -> None:
        """Nothing held."""

    def gone(self) -> bool:
        """Not watched before the deadline: asked then (a route already removed is healed)."""
        return False

    def prepare(self) -> None:
        """Nothing to prepare."""

    def resume(self) -> str:
        """Remove the route or set the link up: ``"resumed"``, or ``"gone"`` when it was healed already."""
        done = routes.set_link(self.ident, up=True) if self.backend == "link" else routes.delete_blackhole(self.ident)
        return "resumed" if done == "restored" else "gone"
