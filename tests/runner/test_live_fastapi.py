"""``retrystorm run`` against a service nobody on the project wrote: a FastAPI app under uvicorn, started by the run.

The app (``tests/runner/fastapi_service/app.py``) answers ``GET /orders/{id}`` from a plain synchronous endpoint
in two worker threads, 40 ms each: about 50 requests/s. A request whose client gave up still waits for a thread
and is served, so abandoned work piles up behind the threads, as in a real service whose endpoint holds a
database connection. The answer is known:

* 48 users thinking 6 s on average (about 8 requests/s, a sixth of the capacity), attempts timing out after
  500 ms, the whole uvicorn frozen for 3 s. Fixed 100 ms retries offer about 48 / 0.6 s = 80 attempts/s once the
  users are stuck, above the capacity: every attempt waits behind abandoned ones and times out, and the service
  never comes back (measured: 64-66 attempts/s after the resume, no fresh request answered in time).
  Exponential backoff with full jitter lowers the attempts below the capacity and the backlog drains (measured:
  the server back 7.9 s and the clients 3.9 s after the resume, the bound here 14 s).
* A POST to the GET-only route is answered 405 in the steady state: the run is NOT VALID (exit 3) in one line
  naming the request and the status, before the pause.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from retrystorm.chaos.journal import Journal
from tests.support.ports import free_port
from tests.support.procfs import processes_with

pytestmark = [pytest.mark.live, pytest.mark.signals, pytest.mark.slow]

APP_DIR = Path(__file__).resolve().parent / "fastapi_service"

SCENARIO = """\
name: fastapi
seed: 1
target:
  url: http://127.0.0.1:{port}
  command: uvicorn --app-dir {app_dir} --host 127.0.0.1 --port {port} --no-access-log app:app
  ready: /healthz
requests:
  - {request}
load: {{users: 48, think_time: exponential:6s, attempt_timeout: 500ms, duration: {duration}}}
strategies:
{strategies}
faults:
  - {{pause: target, at: 6s, for: 3s}}
{assertions}
"""
STORM_AND_RECOVERY = {
    "request": "{method: GET, path: /orders/1}",
    "duration": "26s",
    "strategies": "  - fixed:100ms\n"
    '  - {label: backoff, strategy: "exponential:base=100ms,factor=2,max=30s,jitter=full"}',
    "assertions": "assertions:\n"
    "  fixed:100ms: {server_recovers_within: never, client_recovers_within: never}\n"
    "  backoff: {server_recovers_within: 14s, client_recovers_within: 14s}",
}


def scenario(folder: Path, port: int, **fields: str) -> Path:
    """A scenario for the app on ``port`` (the fields of :data:`SCENARIO` other than the port and the folder)."""
    path = folder / "scenario.yaml"
    path.write_text(SCENARIO.format(port=port, app_dir=APP_DIR, **fields))
    return path


def run(path: Path, tmp_path: Path, timeout_s: float) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RETRYSTORM_CHAOS_JOURNAL": str(tmp_path / "journal.jsonl"), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "retrystorm", "run", str(path), "--out", str(tmp_path / "run")],
        capture_output=True, text=True, env=env, timeout=timeout_s, check=False,
    )  # fmt: skip


def test_fastapi_fixed_retries_never_recover_and_backoff_does(tmp_path):
    port = free_port()
    done = run(scenario(tmp_path, port, **STORM_AND_RECOVERY), tmp_path, timeout_s=300)
    assert done.returncode == 0, done.stdout + done.stderr
    document = json.loads((tmp_path / "run" / "results.json").read_text())
    assert document["valid"] is True
    rows = {row["strategy"]: row for row in document["results"]}
    fixed, backoff = rows["fixed:100ms"], rows["backoff"]
    assert fixed["server_recovery_s"] is None and fixed["client_recovery_s"] is None
    assert backoff["server_recovery_s"] is not None and backoff["client_recovery_s"] is not None
    # the storm is the retries': fixed's users offered far more attempts per request than backoff's
    assert fixed["amplification"] > 2 * backoff["amplification"]
    assert fixed["fresh_requests"]["answered_in_time"] < backoff["fresh_requests"]["answered_in_time"]
    for row in rows.values():
        assert row["steady_state"]["valid"] is True
        assert row["outages"] and row["outages"][0][1] - row["outages"][0][0] >= 3
    assert "fixed:100ms never came back" in done.stdout and "backoff came back" in done.stdout
    assert not Journal(tmp_path / "journal.jsonl").pending()
    assert processes_with(f"--port {port} ") == []  # uvicorn stopped


def test_fastapi_a_post_to_a_get_only_route_is_not_valid_naming_405(tmp_path):
    port = free_port()
    misfit = {
        **STORM_AND_RECOVERY,
        "request": "{method: POST, path: /orders/1, body: '{\"qty\": 1}', headers: {Content-Type: application/json}}",
        "strategies": "  - fixed:100ms",
        "assertions": "",
    }
    done = run(scenario(tmp_path, port, **misfit), tmp_path, timeout_s=180)
    assert done.returncode == 3, done.stdout + done.stderr
    line = next(line for line in done.stderr.splitlines() if line.startswith("retrystorm run:"))
    assert "POST /orders/1 answered 405 on 100% of its attempts" in line, line
    assert "check requests:" in line, line
    assert line.endswith("(stopped before any trigger)"), line
    assert "wins" not in done.stdout
    assert Journal(tmp_path / "journal.jsonl").records() == []  # no pause was played
    assert processes_with(f"--port {port} ") == []
