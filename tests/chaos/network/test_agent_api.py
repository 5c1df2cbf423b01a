"""The chaos API's network faults: a toxic on a registered proxy played and ended, and every refusal in one line.

An in-process app on a real loopback server with a real fault proxy (:class:`~retrystorm.chaos.network.proxy.Proxy`
and its real control socket) in the same event loop, and a recording dead-man switch. A partition is not played
here: it changes routes, which only a test inside network namespaces may do (``test_agent_live.py``); its refusals
come before any route is touched, and are checked here.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from aiohttp import ClientSession

from retrystorm.chaos.deadman import GUARDED_BACKENDS
from retrystorm.chaos.journal import Journal
from retrystorm.chaos.network.agent import MAX_PEERS
from tests.support.chaos_agent import agent_in_process

TOKEN = "s3cret"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
MAX_OUTAGE_S = 60.0


def serve(tmp_path, check, *, token=TOKEN):
    """The agent with proxy ``web``, peer ``db`` and interface ``eth9`` registered; run ``check(client, control,
    switch)``; afterwards nothing may be in force, on the API or on the proxy."""
    monkeypatch = pytest.MonkeyPatch()

    async def scenario():
        async with agent_in_process(tmp_path, monkeypatch, peers=["db=10.77.9.9"], interfaces=["eth9"],
                                    token=token, max_outage_s=MAX_OUTAGE_S) as agent:  # fmt: skip
            async with ClientSession(agent.base_url) as session:
                await check(session, agent.control, agent.switch)
            assert agent.network.active() == [], "nothing may stay in force"
        assert agent.proxy.toxics() == [], "nothing may stay on the proxy"

    try:
        asyncio.run(scenario())
    finally:
        monkeypatch.undo()


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
