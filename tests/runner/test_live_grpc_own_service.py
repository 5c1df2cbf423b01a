"""``retrystorm run`` against a gRPC service of one's own: a small grpcio server the runner starts, paused and resumed.

The service (``grpc_service/greeter.py``, not the built-in target) is given as ``target: {url: grpc://...,
command: ...}``; the scenario's request is JSON, encoded with the proto its server reflection sends. One strategy,
grpcio's own A6 retries, 50 users for 16 s with a 2 s freeze (SIGSTOP of the command's process group). About 30 s.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from retrystorm.chaos.journal import Journal
from tests.support.ports import free_port

pytestmark = [pytest.mark.live, pytest.mark.signals, pytest.mark.slow]

GREETER = Path(__file__).resolve().parent / "grpc_service" / "greeter.py"
SCENARIO = """\
name: own-grpc
seed: 1
target: {{url: 'grpc://127.0.0.1:{port}', command: '{python} {greeter} {port}'}}
grpc: {{mode: real, method: /demo.v1.Greeter/SayHello, request: {{name: storm}}}}
load: {{users: 50, think_time: 'exponential:500ms', attempt_timeout: 1s, duration: 16s}}
strategies: [grpc-retry]
faults: [{{pause: target, at: 4s, for: 2s}}]
"""


def test_a_grpc_service_of_one_s_own_is_stormed_paused_and_resumed_through_run(tmp_path):
    port = free_port()
    scenario = tmp_path / "own.yaml"
    scenario.write_text(SCENARIO.format(port=port, python=sys.executable, greeter=GREETER))
    env = {**os.environ, "RETRYSTORM_CHAOS_JOURNAL": str(tmp_path / "journal.jsonl"), "COLUMNS": "200"}
    done = subprocess.run(
        [sys.executable, "-m", "retrystorm", "run", str(scenario), "--out", str(tmp_path / "run")],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    row = json.loads((tmp_path / "run" / "results.json").read_text())["results"][0]
    assert row["grpc"] == {"mode": "real", "method": "/demo.v1.Greeter/SayHello", "channels": 1,
                           "attempts_at_target": None}  # fmt: skip
    assert row["steady_state"]["valid"] is True
    assert row["steady_state"]["ok_share_by_request"] == {"/demo.v1.Greeter/SayHello": 1.0}
    assert len(row["outages"]) == 1 and row["timeouts"] > 0  # the freeze happened, and calls timed out in it
    assert row["client_recovery_s"] is not None and row["server_recovery_s"] is not None  # one outage: one figure each
    log = (tmp_path / "run" / "logs" / "grpc-retry-service.log").read_text()
    answered = re.search(r"answered (\d+) calls, (\d+) naming storm", log)
    assert answered is not None, log  # stopped by SIGTERM, after the run
    # every call carried the JSON request encoded with the reflected proto, and the server answered them
    assert int(answered.group(1)) == int(answered.group(2)) >= row["succeeded"] > 0
    assert not Journal(tmp_path / "journal.jsonl").pending()
