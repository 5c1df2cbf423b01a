"""What the chaos API refuses: tokens, other sites' pages, non-JSON bodies, raw pids, malformed fields.

An in-process app on a real loopback server (aiohttp's test server), pausing a real
process; every refused request leaves the target running and no outage behind.
"""

from __future__ import annotations

import asyncio

import pytest
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client import CollectorRegistry

from retrystorm.chaos.api import create_app
from retrystorm.chaos.controller import OutageController
from retrystorm.chaos.journal import Journal
from retrystorm.chaos.targets import TargetRegistry

from .conftest import RecordingSwitch, is_stopped, process_target

pytestmark = [pytest.mark.live, pytest.mark.signals]


def serve(victim, tmp_path, token=""):
    target = process_target(victim.pid)
    controller = OutageController(Journal(tmp_path / "j"), dead_man=RecordingSwitch(), max_outage_s=60)
    app = create_app(controller, TargetRegistry([target.backend]), registry=CollectorRegistry(), token=token)
    return TestClient(TestServer(app, host="127.0.0.1")), controller


def run(victim, tmp_path, check, token=""):
    async def scenario():
        client, controller = serve(victim, tmp_path, token)
        async with client:
            await check(client)
            assert controller.active() == [], "a refused request must not leave an outage"

    asyncio.run(scenario())
    assert not is_stopped(victim.pid)


def test_token_guards_everything_but_health_metrics_and_the_document(victim, tmp_path):
    async def check(client):
        assert (await client.get("/healthz")).status == 200
        assert (await client.get("/metrics")).status == 200
        assert (await client.get("/openapi.json")).status == 200
        denied = await client.get("/outages")
        assert denied.status == 401
        assert "bearer token" in (await denied.json())["error"]
        assert (await client.get("/targets", headers={"Authorization": "Bearer nope"})).status == 401
        assert (await client.get("/outages", headers={"Authorization": "Bearer s3cret"})).status == 200

    run(victim, tmp_path, check, token="s3cret")


BODY = '{"target": "target", "duration": "30s"}'


@pytest.mark.parametrize(
    ("headers", "status", "message"),
    [
        ({"Content-Type": "text/plain"}, 415, "Content-Type: got 'text/plain', expected application/json"),
        ({"Content-Type": "application/x-www-form-urlencoded"}, 415, "expected application/json"),
        ({}, 415, "expected application/json"),
        (
            {"Content-Type": "application/json", "Origin": "http://evil.example"},
            403,
            "refusing a request from origin http://evil.example",
        ),
        (
            {"Content-Type": "text/plain", "Origin": "http://evil.example"},
            403,
            "refusing a request from origin",
        ),
        ({"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"}, 403, "refusing a cross-site request"),
        ({"Content-Type": "application/json", "Sec-Fetch-Site": "same-site"}, 403, "refusing a same-site request"),
        ({"Content-Type": "application/json", "Host": "evil.example:8071"}, 403, "refusing Host 'evil.example:8071'"),
        ({"Content-Type": "application/json", "Host": "127.attacker.example"}, 403, "refusing Host"),
    ],
)
def test_what_a_web_page_could_send_is_refused(victim, tmp_path, headers, status, message):
    async def check(client):
        answer = await client.post("/outages", data=BODY, headers=headers, skip_auto_headers=["Content-Type"])
        assert answer.status == status
        assert message in (await answer.json())["error"]

    run(victim, tmp_path, check)


def test_same_origin_and_server_side_requests_are_served(victim, tmp_path):
    async def check(client):
        origin = f"http://127.0.0.1:{client.port}"
        for headers in ({}, {"Origin": origin, "Sec-Fetch-Site": "same-origin"}, {"Sec-Fetch-Site": "none"}):
            created = await client.post("/outages", data=BODY, headers={"Content-Type": "application/json", **headers})
            assert created.status == 201, await created.text()
            outage = await created.json()
            assert is_stopped(victim.pid)
            assert (await client.delete(f"/outages/{outage['id']}", headers=headers)).status == 200
            assert not is_stopped(victim.pid)

    run(victim, tmp_path, check)


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ('{"target": "pid:1", "duration": "1s"}', 403, "raw pids are not accepted; register a process"),
        ('{"target": "nope", "duration": "1s"}', 404, "no target 'nope'; targets: process:target"),
        ('{"target": "target", "duration": null}', 400, "duration: got None, expected a finite duration > 0"),
        ('{"target": "target", "duration": [1]}', 400, "duration: got [1], expected a finite duration > 0"),
        ('{"target": "target", "duration": "1e309s"}', 400, "duration:"),
        ('{"target": "target", "duration": "inf"}', 400, "duration: got 'inf', expected finite durations"),
        ('{"target": "target", "duration": -1}', 400, "duration:"),
        ('{"target": "target", "duration": ' + "9" * 5000 + "}", 400, "body:"),
        ('{"target": "target", "duration": "' + "9" * 5000 + 's"}', 400, "duration: got '999"),
        ('{"target": "' + "x" * 300 + '", "duration": "1s"}', 400, "target: got"),
        ('{"target": 5, "duration": "1s"}', 400, "target: got 5"),
        ('{"target": "target", "duration": "1s", "backend": "kubernetes"}', 400, "backend: got 'kubernetes'"),
        ('{"target": "target", "duration": "1s", "colour": "red"}', 400, "unknown field 'colour'"),
        ("not json", 400, "body: not valid JSON"),
        ("[1, 2]", 400, "body: expected a JSON object"),
        ("{" * 100_000, 413, "larger than 16384 bytes"),
    ],
)
def test_bad_bodies_are_one_line_4xx_and_change_nothing(victim, tmp_path, body, status, message):
    async def check(client):
        answer = await client.post("/outages", data=body, headers={"Content-Type": "application/json"})
        assert answer.status == status, await answer.text()
        error = (await answer.json())["error"]
        assert message in error
        assert "\n" not in error
        assert (await client.get("/outages")).status == 200

    run(victim, tmp_path, check)
