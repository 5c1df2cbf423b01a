"""Bearer-token enforcement of the chaos API (in-process app on a real loopback server)."""

from __future__ import annotations

import asyncio

import pytest
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client import CollectorRegistry

from chaos.api import create_app
from chaos.backends import ProcessBackend
from chaos.controller import OutageController
from chaos.journal import Journal

pytestmark = pytest.mark.live


def test_token_guards_everything_but_health_and_metrics(tmp_path, victim):
    async def scenario():
        controller = OutageController({"process": ProcessBackend({"target": victim.pid})}, Journal(tmp_path / "j"))
        app = create_app(controller, registry=CollectorRegistry(), token="s3cret")
        async with TestClient(TestServer(app, host="127.0.0.1")) as client:
            assert (await client.get("/healthz")).status == 200
            assert (await client.get("/metrics")).status == 200
            denied = await client.get("/outages")
            assert denied.status == 401
            assert "bearer token" in (await denied.json())["error"]
            wrong = await client.get("/targets", headers={"Authorization": "Bearer nope"})
            assert wrong.status == 401
            allowed = await client.get("/outages", headers={"Authorization": "Bearer s3cret"})
            assert allowed.status == 200

    asyncio.run(scenario())
