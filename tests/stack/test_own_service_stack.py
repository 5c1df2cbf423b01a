"""The worked example's service as the compose stack's target: a real gunicorn container, real `docker pause`.

The stack comes up with ``examples/gunicorn/docker-compose.own-service.yml`` over the
loopback override (host networking, 127.0.0.1 only): the gunicorn image in place of the
built-in target, labelled for chaos. The runner, on the host, drives the stack's Locust
master and pauses the container through the docker backend; there is no admin API to
call and no server gauge to read, so the verdicts come from the clients. Fixed retries
must never recover, backoff with jitter must; nothing may be left paused.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from .compose import LOOPBACK_PORTS, ROOT
from .conftest import Stack, running_stack

pytestmark = [pytest.mark.docker, pytest.mark.live, pytest.mark.signals]

EXAMPLE = ROOT / "examples" / "gunicorn"
IMAGE = "retrystorm-gunicorn-example:local"
RUN_TIMEOUT_S = 600


@pytest.fixture(scope="module")
def own_stack(tmp_path_factory):
    found = subprocess.run(["docker", "image", "inspect", IMAGE], capture_output=True, timeout=30, check=False)
    if found.returncode != 0 and os.environ.get("RETRYSTORM_REQUIRE_DOCKER") != "1":
        pytest.skip(f"image {IMAGE} is missing: run scripts/offline-images")
    yield from running_stack(tmp_path_factory, (EXAMPLE / "docker-compose.own-service.yml",))


def test_the_gunicorn_container_frozen_by_docker_pause_storms_under_fixed_retries_only(own_stack: Stack, tmp_path):
    target = {row["Service"]: row for row in own_stack.containers()}["target"]
    assert target["Image"] == IMAGE
    urls = {name: f"http://127.0.0.1:{LOOPBACK_PORTS[name]}" for name in ("target", "locust-master", "prometheus")}
    done = subprocess.run(
        [
            sys.executable, "-m", "retrystorm", "run", str(EXAMPLE / "scenario-compose.yaml"), "--backend", "compose",
            "--allow-saturated",
            "--target-url", urls["target"], "--locust-url", urls["locust-master"],
            "--prometheus-url", urls["prometheus"], "--project", own_stack.project, "--out", str(tmp_path / "run"),
        ],
        capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False,
        env={**os.environ, "RETRYSTORM_CHAOS_JOURNAL": str(tmp_path / "journal.jsonl"), "COLUMNS": "200"},
    )  # fmt: skip
    (tmp_path / "runner.log").write_text(done.stdout + "\n" + done.stderr)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = {row["strategy"]: row for row in json.loads((tmp_path / "run" / "results.json").read_text())["results"]}
    assert rows["fixed:100ms"]["server_recovery_s"] is None and rows["fixed:100ms"]["client_recovery_s"] is None
    assert rows["backoff"]["server_recovery_s"] is not None
    assert rows["fixed:100ms"]["amplification"] > 2 * rows["backoff"]["amplification"]
    assert {row["server_recovery_signals"] for row in rows.values()} == {
        "client side (attempt latency, timeout rate) and fresh requests answered within the attempt timeout"
    }
    assert own_stack.status("target") == "running"  # resumed, not left paused
