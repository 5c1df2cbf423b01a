"""A chaos agent in this process: the real chaos API app on a real loopback port, with a real fault proxy.

:func:`agent_in_process` serves :func:`retrystorm.chaos.api.create_app` on aiohttp's test server (a real socket on
127.0.0.1) with fault proxy ``web`` registered (:class:`~retrystorm.chaos.network.proxy.Proxy` and its real control
socket, in the same event loop) and the peers and interfaces given, a recording dead-man switch, and start-up
recovery's read of blackhole routes replaced by none (a test outside a network namespace must not touch routes).
No process is started: it serves the fast tier.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import random
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest
from aiohttp.test_utils import TestServer
from prometheus_client import CollectorRegistry

from retrystorm.chaos.api import create_app
from retrystorm.chaos.controller import OutageController
from retrystorm.chaos.journal import Journal
from retrystorm.chaos.network import routes
from retrystorm.chaos.network.agent import NetworkFaults
from retrystorm.chaos.network.control import ProxyControl, serve_control
from retrystorm.chaos.network.process import ProxyProcess
from retrystorm.chaos.network.proxy import Proxy
from retrystorm.chaos.targets import TargetRegistry
from tests.chaos.conftest import RecordingSwitch


@dataclasses.dataclass(frozen=True, slots=True)
class Agent:
    """The agent's address, its proxy's control socket and real proxy, its switch and network faults."""

    base_url: str
    control: ProxyControl
    proxy: Proxy
    switch: RecordingSwitch
    network: NetworkFaults
    journal: Journal


@contextlib.asynccontextmanager
async def agent_in_process(
    folder: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    peers: Sequence[str] = (),
    interfaces: Sequence[str] = (),
    token: str = "",
    max_outage_s: float = 60.0,
) -> AsyncIterator[Agent]:
    """Serve the agent (see the module docstring) until the block ends; its app's shutdown ends every fault."""
    monkeypatch.setattr(routes, "blackholes", list)
    switch = RecordingSwitch()
    journal = Journal(folder / "j.jsonl")
    controller = OutageController(journal, dead_man=switch, max_outage_s=max_outage_s)
    proxy = Proxy(("127.0.0.1", 9), rng=random.Random(1))
    listen = await proxy.start("127.0.0.1", 0)
    (folder / "proxies").mkdir(mode=0o700)
    control_path = folder / "proxies" / "web.sock"
    server = await serve_control(proxy, control_path, listen)
    registered = ProxyProcess(os.getpid(), listen[0], listen[1], control_path)
    network = NetworkFaults(controller, {"web": registered}, routes.Peers.parse(peers, interfaces))
    app = create_app(controller, TargetRegistry([]), registry=CollectorRegistry(), token=token, network=network)
    try:
        async with TestServer(app, host="127.0.0.1") as served:
            base = str(served.make_url("")).rstrip("/")
            yield Agent(base, ProxyControl(control_path), proxy, switch, network, journal)
    finally:
        server.close()
        await proxy.close()
