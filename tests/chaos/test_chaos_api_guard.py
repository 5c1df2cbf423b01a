"""What the chaos API refuses: tokens, other sites' pages, non-JSON bodies, raw pids, malformed fields; slow clients.

An in-process app on a real loopback server (aiohttp's test server) with a recording fake backend: a
refused request must leave no outage and no call to pause. A real pause of a real process through the
API is the live end-to-end test in ``test_chaos_api.py``.
"""

from __future__ import annotations

import asyncio
import base64

import pytest
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client import CollectorRegistry

from retrystorm.chaos import api
from retrystorm.chaos.api import create_app
from retrystorm.chaos.backends.base import FaultBackend, TargetRef, TargetState, UnknownTargetError
from retrystorm.chaos.controller import OutageController
from retrystorm.chaos.journal import Journal
from retrystorm.chaos.targets import TargetRegistry

from .conftest import RecordingSwitch

TOKEN = "s3cret"


class RecordingBackend(FaultBackend):
    """One target, ``target``, whose pauses and resumes are recorded instead of sent."""

    name = "process"

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.paused = False

    def resolve(self, target: str) -> list[TargetRef]:
        if target != "target":
            raise UnknownTargetError(f"no target {target!r}")
        return [TargetRef(self.name, target, "pid 4242")]

    def targets(self) -> list[str]:
        return ["target"]

    def pause(self, ref: TargetRef) -> None:
        self.calls.append("pause")
        self.paused = True

    def resume(self, ref: TargetRef) -> None:
        self.calls.append("resume")
        self.paused = False

    def state(self, ref: TargetRef) -> TargetState:
        return TargetState.PAUSED if self.paused else TargetState.RUNNING


def run(tmp_path, check, token=""):
    """Serve the API over a fresh fake backend, run ``check(client, backend)``; nothing may stay paused."""
    backend = RecordingBackend()

    async def scenario():
        controller = OutageController(Journal(tmp_path / "j"), dead_man=RecordingSwitch(), max_outage_s=60)
        app = create_app(controller, TargetRegistry([backend]), registry=CollectorRegistry(), token=token)
        async with TestClient(TestServer(app, host="127.0.0.1")) as client:
            await check(client, backend)
            assert controller.active() == [], "a refused request must not leave an outage"

    asyncio.run(scenario())
    assert not backend.paused
    return backend


def test_token_guards_everything_but_health_metrics_and_the_document(tmp_path):
    async def check(client, _backend):
        assert (await client.get("/healthz")).status == 200
        assert (await client.get("/metrics")).status == 200
        assert (await client.get("/openapi.json")).status == 200
        denied = await client.get("/outages")
        assert denied.status == 401
        assert "bearer token" in (await denied.json())["error"]
        assert denied.headers.getall("WWW-Authenticate") == ['Bearer realm="retrystorm: the chaos API"']
        for wrong in ("Bearer nope", f"Basic {TOKEN}", TOKEN, "Bearer", f"Bearer {TOKEN}x"):
            assert (await client.get("/targets", headers={"Authorization": wrong})).status == 401, wrong
        assert (await client.get("/outages", headers={"Authorization": f"Bearer {TOKEN}"})).status == 200

    run(tmp_path, check, token=TOKEN)


@pytest.mark.parametrize("scheme", ["bearer", "BEARER", "bEaReR"])
def test_the_bearer_scheme_is_case_insensitive(tmp_path, scheme):
    """RFC 7235 section 2.1: the scheme is case-insensitive (the target took ``bearer``; the chaos API did not)."""

    async def check(client, _backend):
        answer = await client.get("/outages", headers={"Authorization": f"{scheme} {TOKEN}"})
        assert answer.status == 200, await answer.text()

    run(tmp_path, check, token=TOKEN)


BODY = '{"target": "target", "duration": "30s"}'


@pytest.mark.parametrize(
    ("headers", "status", "message"),
    [
        ({"Content-Type": "text/plain"}, 415, "Content-Type: got 'text/plain', expected application/json"),
        ({"Content-Type": "application/x-www-form-urlencoded"}, 415, "expected application/json"),
        ({"Content-Type": "multipart/form-data; boundary=x"}, 415, "expected application/json"),
        ({}, 415, "Content-Type: got none, expected application/json"),
        (
            {"Content-Type": "application/json", "Origin": "http://evil.example"},
            403,
            "refusing a request from origin http://evil.example",
        ),
        ({"Content-Type": "text/plain", "Origin": "http://evil.example"}, 403, "refusing a request from origin"),
        ({"Content-Type": "application/json", "Origin": "null"}, 403, "refusing a request from origin null"),
        ({"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"}, 403, "refusing a cross-site request"),
        ({"Content-Type": "application/json", "Sec-Fetch-Site": "same-site"}, 403, "refusing a same-site request"),
        ({"Content-Type": "application/json", "Host": "evil.example:8071"}, 403, "refusing Host 'evil.example:8071'"),
        (
            {"Content-Type": "application/json", "Host": "evil.example:8071", "Origin": "http://evil.example:8071"},
            403,
            "refusing Host 'evil.example:8071'",
        ),
        ({"Content-Type": "application/json", "Host": "127.attacker.example"}, 403, "refusing Host"),
    ],
)
def test_what_a_web_page_could_send_is_refused(tmp_path, headers, status, message):
    async def check(client, _backend):
        answer = await client.post("/outages", data=BODY, headers=headers, skip_auto_headers=["Content-Type"])
        assert answer.status == status
        assert message in (await answer.json())["error"]
        assert not any(name.lower().startswith("access-control-") for name in answer.headers)

    assert run(tmp_path, check).calls == []


def test_same_origin_and_server_side_requests_are_served(tmp_path):
    async def check(client, backend):
        origin = f"http://127.0.0.1:{client.port}"
        for headers in ({}, {"Origin": origin, "Sec-Fetch-Site": "same-origin"}, {"Sec-Fetch-Site": "none"}):
            created = await client.post("/outages", data=BODY, headers={"Content-Type": "application/json", **headers})
            assert created.status == 201, await created.text()
            outage = await created.json()
            assert backend.paused
            assert (await client.delete(f"/outages/{outage['id']}", headers=headers)).status == 200
            assert not backend.paused

    assert run(tmp_path, check).calls == ["pause", "resume"] * 3


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
def test_bad_bodies_are_one_line_4xx_and_change_nothing(tmp_path, body, status, message):
    async def check(client, _backend):
        answer = await client.post("/outages", data=body, headers={"Content-Type": "application/json"})
        assert answer.status == status, await answer.text()
        error = (await answer.json())["error"]
        assert message in error
        assert "\n" not in error
        assert (await client.get("/outages")).status == 200

    assert run(tmp_path, check).calls == []


def _slow_client_bounds(monkeypatch, seconds: float) -> None:
    monkeypatch.setattr(api, "BODY_TIMEOUT_S", seconds)
    monkeypatch.setattr(api, "HEAD_TIMEOUT_S", seconds)


def test_a_client_trickling_a_request_head_is_cut_off(tmp_path, monkeypatch):
    """Slowloris: a head that never ends was held about 76 s (aiohttp's default keep-alive of 75 s)."""
    _slow_client_bounds(monkeypatch, 0.5)

    async def check(client, _backend):
        reader, writer = await asyncio.open_connection("127.0.0.1", client.port)
        writer.write(b"POST /outages HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        for _ in range(100):  # one header line every 0.1 s: the head never ends
            await asyncio.sleep(0.1)
            if reader.at_eof():
                break
            writer.write(b"X-Slow: 1\r\n")
        assert await asyncio.wait_for(reader.read(), 5) == b""  # closed by the server, well before 10 s
        writer.close()
        await writer.wait_closed()

    run(tmp_path, check)


def test_a_client_trickling_a_body_gets_408(tmp_path, monkeypatch):
    _slow_client_bounds(monkeypatch, 0.5)

    async def check(client, _backend):
        reader, writer = await asyncio.open_connection("127.0.0.1", client.port)
        head = f"POST /outages HTTP/1.1\r\nHost: 127.0.0.1:{client.port}\r\nContent-Type: application/json\r\n"
        writer.write((head + f"Content-Length: {len(BODY)}\r\n\r\n").encode())
        writer.write(BODY[:5].encode())  # the rest never comes
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
        assert head.startswith(b"HTTP/1.1 408 "), head
        assert b"body: not sent within 0.5 s" in await asyncio.wait_for(reader.read(200), 5)
        writer.close()
        await writer.wait_closed()

    assert run(tmp_path, check).calls == []


def test_basic_credentials_are_not_a_token_here(tmp_path):
    """The chaos API is for tools: the browser's login (Basic) is not taken, only the bearer token."""

    async def check(client, _backend):
        basic = "Basic " + base64.b64encode(f"user:{TOKEN}".encode()).decode()
        assert (await client.get("/outages", headers={"Authorization": basic})).status == 401

    run(tmp_path, check, token=TOKEN)
