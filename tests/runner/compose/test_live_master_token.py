"""The runner drives a Locust master that asks for a token: the compose stack's, bound beyond loopback."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from retrystorm.runner.compose import ComposeEndpoints
from retrystorm.runner.errors import RunFailedError
from retrystorm.runner.locust_master import MasterApi
from tests.loadgen.conftest import Processes, free_port, get_text, locust_argv, wait_until

pytestmark = pytest.mark.live

TOKEN = "master-test-token"


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[Processes]:
    started = Processes(tmp_path)
    try:
        yield started
    finally:
        started.stop_all()


def test_the_runner_sends_the_masters_token_which_defaults_to_the_chaos_token():
    assert ComposeEndpoints(chaos_token="c").master_token == "c"  # the master takes the chaos token too
    assert ComposeEndpoints(chaos_token="c", web_token="w").master_token == "w"
    assert ComposeEndpoints().master_token == ""


def test_a_guarded_master_answers_the_runner_with_its_token_only(processes: Processes):
    port = free_port()
    argv = locust_argv("--master", "--master-bind-host", "127.0.0.1", "--master-bind-port", str(free_port()))
    argv += ["--host", "http://127.0.0.1:9", "--web-port", str(port), "--web-token", TOKEN]
    _, log = processes.start("locust-master", argv, {"RETRYSTORM_CHAOS_TOKEN": "", "RETRYSTORM_WEB_TOKEN": ""})
    url = f"http://127.0.0.1:{port}"
    wait_until(lambda: get_text(url + "/metrics"), 60, f"the master (log: {log})")

    async def ask(token: str) -> int:
        api = MasterApi(url, "the Locust master", token=token)
        try:
            return await api.worker_count()
        finally:
            await api.close()

    assert asyncio.run(ask(TOKEN)) == 0
    with pytest.raises(RunFailedError, match=r"answered GET /worker-count with 401: .*missing or wrong bearer token"):
        asyncio.run(ask(""))
