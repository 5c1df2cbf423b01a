"""The web UI's start form runs the gRPC user in either mode, grpcio's own retries or their emulation, and the
Retry storm tab says which.

One web Locust (``loadgen/grpc_locustfile.py``) against the built-in target's gRPC front on loopback, whose fault
rule fails the first two attempts of every call: a call succeeds only when something retries it, in both modes.
42 s on 2 cores at a load average of 14, most of it starting Locust with grpcio.
"""

from __future__ import annotations

import json

import pytest

from .conftest import get_text
from .test_live_grpc import GRPC_LOCUSTFILE, GrpcTarget

pytestmark = [pytest.mark.live, pytest.mark.slow]  # grpcio's start-up: 42 s at a load average of 14 on 2 cores

FORM = {"user_count": "2", "spawn_rate": "10", "think_time": "constant:200ms", "retry_strategy": "grpc-retry"}
SAID = {
    "real": "grpcio's own retries (the service config)",
    "emulated": "retrystorm's emulation over grpcio (the strategy retries)",
}


def succeeded(web) -> float:
    return web.metrics().get("retrystorm_client_requests_total", strategy="grpc-retry", outcome="ok")


def test_the_start_form_runs_either_grpc_mode_and_the_storm_tab_says_which(processes, web_locust, wait):
    target = GrpcTarget(processes)
    target.fail(status=503, first_attempts=2)
    web = web_locust(target.grpc, locustfile=GRPC_LOCUSTFILE)
    assert "grpc_mode" in web.get_index()
    for mode, said in SAID.items():
        before = succeeded(web)
        answer = web.swarm(**FORM, grpc_mode=mode)
        assert answer["success"] is True, answer
        wait(lambda before=before: succeeded(web) >= before + 3, 60, f"calls retried to success in {mode} mode")
        assert json.loads(get_text(web.url + "/storm/series"))["client"] == said
        assert web.stop()["success"] is True
        wait(lambda: web.stats()["state"] == "stopped", 30, "the run to stop")
    assert "Traceback" not in web.log.read_text()
