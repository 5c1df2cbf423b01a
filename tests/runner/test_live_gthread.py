"""``retrystorm run`` against a thread-pool server whose in-flight gauge saturates below its recovery threshold.

gunicorn's ``gthread`` worker, two threads, 50 ms a request (``tests/runner/gthread_service/app.py``): about
40 requests/s; its in-flight gauge counts the requests the threads hold, so it never reads above 2, and its
``/metrics`` is served beside the app on a port of its own, so every reading after the resume arrives. The
steady state holds well under one request (48 users thinking 6 s: about 8 requests/s of 50 ms), so the recovery
threshold is at least 5 (the noise floor), above the gauge's ceiling: the gauge reads "back" whatever the
server holds. The answer is known, as in the FastAPI test: fixed 100 ms retries with a 500 ms attempt timeout
offer about 48 / 0.6 s = 80 attempts/s once the users are stuck, twice the capacity, and the queue of abandoned
connections never drains; exponential backoff with full jitter lets it drain.

* fixed: the verdict is "never" with every gauge reading in (none missing, so it does not rest on missing
  readings), the gauge is named as not used, and the why line says so instead of quoting it;
* backoff: the server is not called back before its fresh requests were answered in time (an early dip of the
  gauge, which reads "back" from the first reading after the resume, does not decide).
"""

from __future__ import annotations

import csv
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

APP_DIR = Path(__file__).resolve().parent / "gthread_service"

SCENARIO = """\
name: gthread
seed: 1
target:
  url: http://127.0.0.1:{port}
  command: >-
    gunicorn --chdir {app_dir} -k gthread -w 1 --threads 2 -b 127.0.0.1:{port} --backlog 2048
    -e APP_METRICS_PORT={metrics_port} app:app
  ready: /healthz
  metrics: {{url: "http://127.0.0.1:{metrics_port}/metrics", in_flight: app_requests_in_progress}}
requests:
  - {{method: GET, path: /orders/1}}
load: {{users: 48, think_time: exponential:6s, attempt_timeout: 500ms, duration: 26s}}
strategies:
  - fixed:100ms
  - {{label: backoff, strategy: "exponential:base=100ms,factor=2,max=30s,jitter=full"}}
faults:
  - {{pause: target, at: 6s, for: 3s}}
assertions:
  fixed:100ms: {{server_recovers_within: never, client_recovers_within: never}}
"""


def run(path: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RETRYSTORM_CHAOS_JOURNAL": str(tmp_path / "journal.jsonl"), "COLUMNS": "200"}
    return subprocess.run(
        # --allow-saturated: the exit status is the assertions' even where a loaded machine makes the generator
        # lag (the finding is still recorded); what this test judges is the server's verdict
        [sys.executable, "-m", "retrystorm", "run", str(path), "--out", str(tmp_path / "run"), "--allow-saturated"],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip


def fresh_back_s(rows: list[dict[str, str]], strategy: str, resume_s: float) -> float | None:
    """Seconds from ``resume_s`` to the end of the first second after it from which every second's fresh request,
    for 5 s, was answered in time (``None``: never): the earliest a recovery may be called."""
    seconds = [row for row in rows if row["strategy"] == strategy and float(row["t_s"]) > resume_s + 1]
    in_time = [row["fresh_in_time"] != "0" for row in seconds]  # empty: none sent, no objection
    for index in range(len(seconds) - 4):
        if all(in_time[index : index + 5]):
            return float(seconds[index]["t_s"]) - resume_s
    return None


def test_a_thread_pool_whose_gauge_cannot_show_the_storm_is_judged_by_its_clients_and_fresh_requests(tmp_path):
    port, metrics_port = free_port(), free_port()
    path = tmp_path / "scenario.yaml"
    path.write_text(SCENARIO.format(port=port, metrics_port=metrics_port, app_dir=APP_DIR))
    done = run(path, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    document = json.loads((tmp_path / "run" / "results.json").read_text())
    rows = {row["strategy"]: row for row in document["results"]}
    fixed, backoff = rows["fixed:100ms"], rows["backoff"]
    for row in rows.values():
        assert row["steady_state"]["valid"] is True
        assert row["peak_in_flight"] is not None and row["peak_in_flight"] <= 2  # the pool's ceiling
    # fixed: never, from a gauge read all along, named as not used
    assert fixed["server_recovery_s"] is None and fixed["client_recovery_s"] is None
    [after] = fixed["after_resume"]
    assert after["in_flight_readings"] >= 10 and after["in_flight_missed"] <= 1, after  # /metrics beside the app
    assert after["rests_on_missed"] is False
    signals = fixed["server_recovery_signals"]
    assert "in-flight gauge not used: its largest reading, 2, is at or below its recovery threshold" in signals
    assert "a ceiling at or below its recovery threshold (a thread pool's), so it was not used" in done.stdout
    # backoff: not back before its fresh requests were served, though the gauge read "back" from the resume
    with (tmp_path / "run" / "timeseries.csv").open() as table:
        series = list(csv.DictReader(table))
    resume_s = backoff["outages"][0][1]
    earliest = fresh_back_s(series, "backoff", resume_s)
    assert backoff["server_recovery_s"] is None or (
        earliest is not None and backoff["server_recovery_s"] >= earliest - 1.0
    ), (backoff["server_recovery_s"], earliest)
    assert fixed["fresh_requests"]["answered_in_time"] < backoff["fresh_requests"]["answered_in_time"]
    assert not Journal(tmp_path / "journal.jsonl").pending()
    assert processes_with(f"127.0.0.1:{port}") == []  # gunicorn's master and worker stopped
