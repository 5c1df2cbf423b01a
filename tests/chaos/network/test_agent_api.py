"""The chaos API's network faults: a toxic on a registered proxy played and ended, and every refusal in one line.

An in-process app on a real loopback server with a real fault proxy (:class:`~retrystorm.chaos.network.proxy.Proxy`
and its real control socket) in the same event loop, and a recording dead-man switch. A partition is not played
here: it changes routes, which only a test inside network namespaces may do (``test_agent_live.py``); its refusals
come before any route is touched, and are checked here.
"""

from __future__ import annotations

import asyncio
import os
import random
import time

import pytest
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client import CollectorRegistry

from retrystorm.chaos.api import create_app
from retrystorm.chaos.controller import OutageController
from retrystorm.chaos.deadman import GUARDED_BACKENDS
from retrystorm.chaos.journal import Journal
from retrystorm.chaos.network import routes
from retrystorm.chaos.network.agent import MAX_PEERS, NetworkFaults
from retrystorm.chaos.network.control import ProxyControl, serve_control
from retrystorm.chaos.network.process import ProxyProcess
from retrystorm.chaos.network.proxy import Proxy
from retrystorm.chaos.network.routes import Peers
from retrystorm.chaos.targets import TargetRegistry
from tests.chaos.conftest import RecordingSwitch

TOKEN = "s3cret"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
MAX_OUTAGE_S = 60.0


@pytest.fixture(autouse=True)
def _no_routes_read(monkeypatch):
    """Start-up recovery looks for blackhole routes a killed agent left (``ip route``): none here, and no process."""
    monkeypatch.setattr(routes, "blackholes", list)


def serve(tmp_path, check, *, token=TOKEN):
    """The API with proxy ``web`` (real, in-process), peer ``db`` and interface ``eth9`` registered; run
    ``check(client, control, switch)``; afterwards nothing may be in force, on the API or on the proxy."""
    switch = RecordingSwitch()

    async def scenario():
        controller = OutageController(Journal(tmp_path / "j.jsonl"), dead_man=switch, max_outage_s=MAX_OUTAGE_S)
        proxy = Proxy(("127.0.0.1", 9), rng=random.Random(1))
        listen = await proxy.start("127.0.0.1", 0)
        folder = tmp_path / "proxies"
        folder.mkdir(mode=0o700)
        control_path = folder / "web.sock"
        server = await serve_control(proxy, control_path, listen)
        registered = ProxyProcess(os.getpid(), listen[0], listen[1], control_path)
        network = NetworkFaults(controller, {"web": registered}, Peers.parse(["db=10.77.9.9"], ["eth9"]))
        app = create_app(controller, TargetRegistry([]), registry=CollectorRegistry(), token=token, network=network)
        try:
            async with TestClient(TestServer(app, host="127.0.0.1")) as client:
                await check(client, ProxyControl(control_path), switch)
                assert network.active() == [], "nothing may stay in force"
            assert proxy.toxics() == [], "nothing may stay on the proxy"
        finally:
            server.close()
            await proxy.close()

    asyncio.run(scenario())
    return switch


def test_a_delay_is_set_on_the_registered_proxy_with_its_own_deadline_and_cleared_early(tmp_path):
    async def check(client, control, switch):
        before = time.monotonic()
        body = {"kind": "delay", "target": "web", "latency": "200ms", "jitter": "20ms", "duration": "10s"}
        created = await client.post("/network", json=body, headers=AUTH)
        assert created.status == 201, await created.text()
        fault = await created.json()
        assert (fault["kind"], fault["status"], fault["settings"]["latency_s"]) == ("delay", "active", 0.2)
        toxics = (await asyncio.to_thread(control.status))["toxics"]
        assert [toxic["id"] for toxic in toxics] == [fault["id"]]
        assert toxics[0]["toxic"] == {"kind": "delay", "latency_s": 0.2, "jitter_s": 0.02, "direction": "downstream"}
        # the proxy's own deadline is the dead-man switch: the fault's 10 s and a grace; no watchdog guards it
        assert 10 < toxics[0]["left_s"] <= 10.5 + (time.monotonic() - before)
        assert [ident for ident, _, _ in switch.armed] == [str(control.path)]
        assert "proxy" not in GUARDED_BACKENDS
        listed = await (await client.get(f"/network/{fault['id']}", headers=AUTH)).json()
        assert listed["status"] == "active"
        ended = await client.delete(f"/network/{fault['id']}", headers=AUTH)
        assert (await ended.json())["status"] == "restored"
        assert (await asyncio.to_thread(control.status))["toxics"] == []
        journaled = [(r["op"], r["backend"], r.get("undo")) for r in Journal(tmp_path / "j.jsonl").records()]
        undo = {"control": str(control.path), "toxic_id": fault["id"]}
        assert journaled == [("toxic", "proxy", undo), ("detox", "proxy", None)]

    serve(tmp_path, check)


def test_a_delay_longer_than_the_maximum_is_clamped_on_the_proxy_too(tmp_path):
    async def check(client, control, _switch):
        body = {"kind": "hang", "target": "web", "duration": "2h"}
        fault = await (await client.post("/network", json=body, headers=AUTH)).json()
        assert (fault["duration_s"], fault["clamped"]) == (MAX_OUTAGE_S, True)
        toxics = (await asyncio.to_thread(control.status))["toxics"]
        assert toxics[0]["left_s"] <= MAX_OUTAGE_S + 0.5
        await client.delete(f"/network/{fault['id']}", headers=AUTH)

    serve(tmp_path, check)


REFUSED = [
    ({"kind": "partition", "peers": ["web1"], "duration": "5s"}, 404, "peer 'web1' is not registered here; peers: db"),
    (
        {"kind": "partition", "method": "link", "interface": "eth0", "duration": "5s"},
        404,
        "interface 'eth0' is not registered here (--interface IFACE); registered: eth9",
    ),
    ({"kind": "partition", "method": "link", "duration": "5s"}, 400, "interface: a partition by link needs"),
    ({"kind": "delay", "target": "db", "latency": "1s", "duration": "5s"}, 404, "no fault proxy 'db' here"),
    ({"kind": "delay", "target": "web", "duration": "5s"}, 400, "latency: a delay needs a latency > 0"),
    ({"kind": "delay", "target": "web", "latency": "61s", "duration": "5s"}, 400, "latency"),
    ({"kind": "delay", "target": "web", "latency": 1e9, "duration": "5s"}, 400, "latency"),
    ({"kind": "delay", "target": "web", "latency": "1s", "jitter": -1, "duration": "5s"}, 400, "jitter"),
    ({"kind": "delay", "target": "web", "latency": "1s", "jitter": "2m", "duration": "5s"}, 400, "jitter"),
    ({"kind": "loss", "target": "web", "probability": 1, "duration": "5s"}, 400, "probability in (0, 1) for a loss"),
    ({"kind": "reset", "target": "web", "probability": 1.5, "duration": "5s"}, 400, "probability"),
    ({"kind": "reset", "target": "web", "probability": float("nan"), "duration": "5s"}, 400, "probability"),
    ({"kind": "reset", "target": "web", "duration": "0s"}, 400, "duration"),
    ({"kind": "reset", "target": "web", "duration": "forever"}, 400, "duration"),
    ({"kind": "reset", "target": "web"}, 400, "duration"),
    ({"kind": "flood", "target": "web", "duration": "5s"}, 400, "kind"),
    ({"kind": "partition", "peers": ["db"] * (MAX_PEERS + 1), "duration": "5s"}, 400, "peers"),
    ({"kind": "partition", "duration": "5s", "pid": 1}, 400, "pid"),
]


@pytest.mark.parametrize(("body", "status", "says"), REFUSED, ids=[str(i) for i in range(len(REFUSED))])
def test_what_is_not_registered_or_out_of_bounds_is_refused_in_one_line_before_anything_changes(
    tmp_path, body, status, says
):
    async def check(client, control, switch):
        answer = await client.post("/network", json=body, headers=AUTH)
        text = (await answer.json())["error"]
        assert (answer.status, "\n" in text) == (status, False), text
        assert says in text
        assert switch.armed == []
        assert (await asyncio.to_thread(control.status))["toxics"] == []
        assert await (await client.get("/network", headers=AUTH)).json() == []

    serve(tmp_path, check)
    assert Journal(tmp_path / "j.jsonl").records() == []


def test_without_the_token_or_from_another_site_nothing_is_played(tmp_path):
    body = {"kind": "delay", "target": "web", "latency": "1s", "duration": "5s"}

    async def check(client, control, _switch):
        assert (await client.post("/network", json=body)).status == 401
        assert (await client.post("/network", json=body, headers={"Authorization": "Bearer nope"})).status == 401
        assert (await client.get("/network-targets")).status == 401
        cross = {**AUTH, "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}
        assert (await client.post("/network", json=body, headers=cross)).status == 403
        form = {**AUTH, "Content-Type": "application/x-www-form-urlencoded"}
        assert (await client.post("/network", data="kind=delay", headers=form)).status == 415
        assert (await asyncio.to_thread(control.status))["toxics"] == []

    serve(tmp_path, check)


def test_the_registered_proxies_peers_and_interfaces_are_listed(tmp_path):
    async def check(client, _control, _switch):
        found = await (await client.get("/network-targets", headers=AUTH)).json()
        assert found["peers"] == {"db": "10.77.9.9"}
        assert found["interfaces"] == ["eth9"]
        assert list(found["proxies"]) == ["web"]
        assert (await (await client.get("/network/n9", headers=AUTH)).json())["error"] == "no network fault 'n9'"
        health = await (await client.get("/healthz")).json()
        assert health["active_network"] == 0

    serve(tmp_path, check)
