"""A partition's watchdog order: every field checked before it is armed, and healed only in its own namespace."""

from __future__ import annotations

import time

import pytest

from retrystorm.chaos.network.routes import network_namespace
from retrystorm.chaos.watchdog import WatchdogOrder
from retrystorm.chaos.watchdog.network_guards import CutGuard
from retrystorm.chaos.watchdog.supervisor import guard_for


def order(backend: str = "route", ident: str = "10.77.0.2", undo: object = None) -> WatchdogOrder:
    undo = {"netns": network_namespace()} if undo is None else undo
    return WatchdogOrder(
        backend=backend, ident=ident, target="peer", outage="p1", deadline_monotonic=time.monotonic() + 5,
        journal=None, fault="partition", undo=undo,  # type: ignore[arg-type]
    )  # fmt: skip


def test_a_route_or_link_cut_in_this_namespace_is_guarded_by_a_cut_guard():
    assert order().problem() is None
    assert order("link", "eth0").problem() is None
    guard = guard_for(order())
    assert isinstance(guard, CutGuard)
    assert (guard.backend, guard.ident, guard.gone()) == ("route", "10.77.0.2", False)


@pytest.mark.parametrize(
    ("backend", "ident", "undo", "says"),
    [
        ("route", "10.77.0.0/24", None, "does not appear to be an IPv4 or IPv6 address"),
        ("route", "peer; reboot", None, "does not appear"),
        ("link", "eth0 down", None, "expected an interface name"),
        ("link", "a-name-far-too-long", None, "expected an interface name"),
        ("route", "10.77.0.2", {}, "expected the netns the cut was made in"),
        ("route", "10.77.0.2", {"netns": 4}, "expected the netns the cut was made in"),
        ("process", "10.77.0.2", None, "expected route or link for a partition"),
    ],
)
def test_a_malformed_partition_order_is_refused_before_it_is_armed(backend, ident, undo, says):
    problem = order(backend, ident, undo).problem()
    assert problem is not None
    assert says in problem


def test_a_cut_made_in_another_network_namespace_is_refused_rather_than_healed_here():
    with pytest.raises(ValueError, match=r"made in network namespace net:\[1\].*cannot heal it"):
        guard_for(order(undo={"netns": "net:[1]"}))
