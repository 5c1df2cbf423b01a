"""Partitions by route and by link, for real, inside network namespaces a test makes and removes."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from retrystorm.chaos.backends.base import TargetRefusedError, UnknownTargetError
from retrystorm.chaos.network.routes import Peers
from retrystorm.errors import UserError
from tests.support.netns import Lab, unavailable

NEEDS_ROOT = pytest.mark.skipif(unavailable() is not None, reason=str(unavailable()))


def test_peers_and_interfaces_are_checked_when_registered():
    peers = Peers.parse(["web=10.0.0.2", "db=fd00::5"], ["eth0"])
    assert peers.addresses() == {"web": "10.0.0.2", "db": "fd00::5"}
    assert peers.addresses(["db"]) == {"db": "fd00::5"}
    assert peers.interface("eth0") == "eth0"
    with pytest.raises(UnknownTargetError, match="peer 'cache' is not registered here; peers: web, db"):
        peers.addresses(["cache"])
    with pytest.raises(UnknownTargetError, match=r"interface 'eth1' is not registered here \(--interface IFACE\)"):
        peers.interface("eth1")
    with pytest.raises(TargetRefusedError, match="no peer is registered here"):
        Peers.parse([], []).addresses()
    for bad, message in (
        (["web"], "--peer: got 'web', expected NAME=ADDRESS"),
        (["web=10.0.0.0/24"], "peer address: got '10.0.0.0/24', expected one IPv4 or IPv6 address"),
        (["../x=10.0.0.1"], "--peer: got '../x=10.0.0.1'"),
    ):
        with pytest.raises(UserError, match=message):
            Peers.parse(bad, [])
    with pytest.raises(UserError, match="--interface: got 'eth0 up'"):
        Peers.parse([], ["eth0 up"])


PROBE = textwrap.dedent(
    """
    import json, socket, sys
    from retrystorm.chaos.backends.base import TargetRefusedError
    from retrystorm.chaos.network import routes
    peer = sys.argv[1]
    def connect():
        try:
            socket.create_connection((peer, 8000), timeout=1.5).close()
            return "connected"
        except OSError as error:
            return type(error).__name__
    found = {"before": connect()}
    routes.add_blackhole(peer)
    found["blackholed"] = routes.is_blackholed(peer)
    found["strays"] = routes.stray_routes()
    found["during"] = connect()
    try:
        routes.add_blackhole(peer)
    except TargetRefusedError as error:
        found["again"] = str(error)
    found["deleted"] = routes.delete_blackhole(peer)
    found["deleted_again"] = routes.delete_blackhole(peer)
    found["after"] = connect()
    import subprocess
    subprocess.run(["ip", "route", "add", "blackhole", peer + "/32"], check=True)  # not ours
    try:
        routes.add_blackhole(peer)
    except TargetRefusedError as error:
        found["foreign"] = str(error)
    found["foreign_kept"] = routes.delete_blackhole(peer) == "gone"
    found["link_up"] = routes.link_is_up("eth0")
    routes.set_link("eth0", up=False)
    found["link_down"] = routes.link_is_up("eth0")
    found["link_connect"] = connect()
    found["link_restored"] = routes.set_link("eth0", up=True)
    found["link_gone"] = routes.set_link("nosuch0", up=True)
    print(json.dumps(found))
    """
)


@NEEDS_ROOT
@pytest.mark.live
def test_a_blackhole_route_and_a_link_down_cut_a_peer_off_and_revert_exactly():
    with Lab(["a", "b"]) as lab:
        serve = f"import http.server as h; h.HTTPServer(('{lab['b'].address}', 8000), h.BaseHTTPRequestHandler)"
        server = lab["b"].popen(
            [sys.executable, "-c", serve + ".serve_forever()"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            for _ in range(200):
                probe = PROBE.split("found = ")[0] + "print(connect())"
                if "connected" in lab["a"].run(sys.executable, "-c", probe, lab["b"].address).stdout:
                    break
            done = lab["a"].run(sys.executable, "-c", PROBE, lab["b"].address, timeout_s=60)
        finally:
            server.kill()
            server.wait()
        assert done.returncode == 0, done.stderr
        found = json.loads(done.stdout)
    assert found["before"] == "connected"
    assert found["blackholed"] is True
    assert found["strays"] == [lab["b"].address]
    assert found["during"] == "OSError"  # a local blackhole route: the connect fails at once (EINVAL)
    assert "exists already, not made by this fault" in found["again"]
    assert (found["deleted"], found["deleted_again"]) == ("restored", "gone")
    assert found["after"] == "connected"
    assert "exists already" in found["foreign"]
    assert found["foreign_kept"] is True  # a route retrystorm did not add is never removed
    assert (found["link_up"], found["link_down"]) == (True, False)
    assert found["link_connect"] in ("OSError", "TimeoutError")
    assert (found["link_restored"], found["link_gone"]) == ("restored", "gone")
