"""``retrystorm run`` against a PostgreSQL-backed service whose database is frozen whole, through its cgroup.

Debian's PostgreSQL runs as the ``postgres`` user in a cluster of the test's own, in cgroups of its own, as systemd
runs ``postgresql@15-main.service`` (:mod:`tests.support.postgres`). Every backend calls ``setsid()``, so the
postmaster's process group is not the database; its cgroup is, whoever forked what. (A ``pid:`` or ``tree:``
target of it is refused to a runner as root: the process backend pauses only its own user's processes.) The app
(``tests/runner/postgres_service/app.py``, FastAPI under uvicorn, started by the run) serves each request with one
query on a psycopg pool of 2 connections, 40 ms each: about 50 requests/s. The scenario pauses ``cgroup: PATH``
for 3 s under the FastAPI test's load (48 users, 6 s think, 500 ms attempt timeout):

* the verdicts: fixed 100 ms retries never bring it back (abandoned requests wait for the pool and run their
  queries), exponential backoff with full jitter does (measured: server 5.9 s, clients 1.9 s after the resume);
* the freeze as measured from inside the database: a process in the cgroup (a backend's ``COPY ... TO PROGRAM``)
  writes ``time.monotonic()`` every 10 ms; its two long gaps (one freeze per strategy) are each within 0.2 s of
  the 3 s asked (measured 3.018 and 3.022 s), and the outage the run recorded is within 0.2 s of its gap
  (measured 3.034 s; 3.735 s for the first before the recorded outage started at the freeze).
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
from tests.support.postgres import gaps, heartbeat, postgres_server, tree_members
from tests.support.procfs import is_stopped, processes_with

pytestmark = [pytest.mark.live, pytest.mark.signals, pytest.mark.slow]

APP_DIR = Path(__file__).resolve().parent / "postgres_service"
FREEZE_S = 3.0

SCENARIO = """\
name: postgres
seed: 1
target:
  url: http://127.0.0.1:{port}
  command: uvicorn --app-dir {app_dir} --host 127.0.0.1 --port {port} --no-access-log app:app
  cgroup: {cgroup}
  ready: /healthz
requests:
  - {{method: GET, path: /orders/1}}
load: {{users: 48, think_time: exponential:6s, attempt_timeout: 500ms, duration: 26s}}
strategies:
  - fixed:100ms
  - {{label: backoff, strategy: "exponential:base=100ms,factor=2,max=30s,jitter=full"}}
faults:
  - {{pause: target, at: 6s, for: {freeze_s:g}s}}
assertions:
  fixed:100ms: {{server_recovers_within: never, client_recovers_within: never}}
  backoff: {{server_recovers_within: 14s, client_recovers_within: 14s}}
"""


def test_a_postgres_backed_service_frozen_whole_through_its_cgroup(tmp_path):
    with postgres_server() as database:
        port = free_port()
        scenario = tmp_path / "scenario.yaml"
        scenario.write_text(SCENARIO.format(port=port, app_dir=APP_DIR, cgroup=database.cgroup, freeze_s=FREEZE_S))
        env = {
            **os.environ,
            "RETRYSTORM_TEST_PG_DSN": database.dsn,
            "RETRYSTORM_CHAOS_JOURNAL": str(tmp_path / "journal.jsonl"),
            "COLUMNS": "200",
        }
        with heartbeat(database) as beats:
            members = tree_members(database.pid)
            assert len(members) >= 6  # the postmaster, its helpers, the heartbeat's backend and the heartbeat
            done = subprocess.run(
                [sys.executable, "-m", "retrystorm", "run", str(scenario), "--out", str(tmp_path / "run")],
                capture_output=True, text=True, env=env, timeout=300, check=False,
            )  # fmt: skip
        assert not any(is_stopped(pid) for pid in tree_members(database.pid))
        frozen = gaps(beats, longer_than_s=0.5)  # each strategy froze the database once: two long gaps
    assert done.returncode == 0, done.stdout + done.stderr
    document = json.loads((tmp_path / "run" / "results.json").read_text())
    rows = {row["strategy"]: row for row in document["results"]}
    fixed, backoff = rows["fixed:100ms"], rows["backoff"]
    assert fixed["server_recovery_s"] is None and fixed["client_recovery_s"] is None
    assert backoff["server_recovery_s"] is not None and backoff["client_recovery_s"] is not None
    assert fixed["amplification"] > 2 * backoff["amplification"]
    assert len(frozen) == 2, frozen
    recorded = [row["outages"][0][1] - row["outages"][0][0] for row in (fixed, backoff)]
    for gap_s, outage_s in zip(frozen, recorded, strict=True):
        assert abs(gap_s - FREEZE_S) <= 0.2, (frozen, recorded)
        assert abs(outage_s - gap_s) <= 0.2, (frozen, recorded)
    assert not Journal(tmp_path / "journal.jsonl").pending()
    assert processes_with(f"--port {port} ") == []
