"""``retrystorm run`` against a service of one's own: real gunicorn, real Locust, real SIGSTOP of a process group.

The worked example (``examples/gunicorn``) must show what was measured by hand: under
fixed 100 ms retries gunicorn, frozen 10 s, never comes back (it serves abandoned requests
from its listen backlog, attempts stay above its capacity); with exponential backoff and
full jitter it does. No server readings: the verdicts come from the clients' signals.
Sized with margin (65 s per strategy): the backoff's recoveries came 14-19 s after the
resume against bounds of 35 s, and fixed's attempts stayed at a 1 s latency (every one
timed out) for all 40 s after it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from retrystorm.chaos.journal import Journal
from tests.support.procfs import processes_with

pytestmark = [pytest.mark.live, pytest.mark.signals]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "gunicorn"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run(scenario: Path, tmp_path: Path, *extra: str, timeout_s: float = 420) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RETRYSTORM_CHAOS_JOURNAL": str(tmp_path / "journal.jsonl"), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "retrystorm", "run", str(scenario), "--allow-saturated", *extra],
        capture_output=True, text=True, env=env, timeout=timeout_s, check=False,
    )  # fmt: skip


@pytest.fixture
def example(tmp_path: Path) -> tuple[Path, int]:
    """The example copied with a port of its own."""
    port = free_port()
    folder = tmp_path / "gunicorn"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("__pycache__"))
    scenario = folder / "scenario.yaml"
    scenario.write_text(scenario.read_text().replace("18500", str(port)))
    return scenario, port


def test_gunicorn_fixed_retries_never_recover_and_backoff_with_jitter_does(example, tmp_path):
    scenario, port = example
    done = run(scenario, tmp_path, "--out", str(tmp_path / "run"))
    assert done.returncode == 0, done.stdout + done.stderr
    document = json.loads((tmp_path / "run" / "results.json").read_text())
    rows = {row["strategy"]: row for row in document["results"]}
    fixed, backoff = rows["fixed:100ms"], rows["backoff"]
    assert fixed["server_recovery_s"] is None and fixed["client_recovery_s"] is None
    assert backoff["server_recovery_s"] is not None and backoff["client_recovery_s"] is not None
    assert fixed["amplification"] > 2 * backoff["amplification"]
    assert {row["server_recovery_signals"] for row in rows.values()} == {
        "client side (attempt latency, timeout rate) and fresh requests answered within the attempt timeout"
    }
    for row in rows.values():  # one fresh request a second, the last one possibly cut by the run's end
        assert row["fresh_requests"]["sent"] >= 60, row["fresh_requests"]
    # fixed retries keep the server drowning: fresh requests go unanswered long after the freeze, unlike backoff's
    assert fixed["fresh_requests"]["answered_in_time"] < backoff["fresh_requests"]["answered_in_time"]
    assert any("judged from the clients" in choice for choice in document["choices"])
    assert fixed["peak_in_flight"] is None  # no server readings were taken
    assert not Journal(tmp_path / "journal.jsonl").pending()
    assert processes_with(f"127.0.0.1:{port}") == []  # gunicorn's master and workers all stopped


def test_a_command_that_fails_stops_the_run_before_any_load_with_its_last_lines(example, tmp_path):
    scenario, _ = example
    text = scenario.read_text().replace("command: gunicorn", "command: python -c 'print(\"boom\"); exit(4)' gunicorn")
    scenario.write_text(text)
    done = run(scenario, tmp_path, "--out", str(tmp_path / "run"), timeout_s=120)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "exited before the service was ready: exited with status 4" in done.stderr
    assert "boom" in done.stderr
    assert not (tmp_path / "run" / "logs" / "fixed-100ms-locust.log").exists()  # no load was started


def test_a_command_whose_app_is_missing_shows_the_first_line_of_its_error(example, tmp_path):
    scenario, _ = example
    scenario.write_text(scenario.read_text().replace(" app:app", " nosuchapp:app"))
    done = run(scenario, tmp_path, "--out", str(tmp_path / "run"), timeout_s=120)
    assert done.returncode == 3, done.stdout + done.stderr
    line = next(line for line in done.stderr.splitlines() if line.startswith("retrystorm run:"))
    # gunicorn's own status varies: 3 (a worker failed to boot), or 1 where gunicorn 27 with two workers raises
    # its HaltServer a second time while it stops. The line names whichever, then the first line of the error.
    assert re.search(
        r"exited before the service was ready: exited with status [0-9]+: ModuleNotFoundError: No module named ", line
    ), line
    assert "Traceback" not in done.stderr and "Worker failed to boot" not in done.stderr


def test_an_unreachable_url_stops_the_run_before_any_load(tmp_path):
    port = free_port()  # nothing listens there
    scenario = tmp_path / "unreachable.yaml"
    scenario.write_text(
        f"target: {{url: http://127.0.0.1:{port}}}\nload: {{users: 1, duration: 5s}}\nstrategies: [fixed:100ms]\n"
    )
    done = run(scenario, tmp_path, "--out", str(tmp_path / "run"), timeout_s=120)
    assert done.returncode == 3, done.stdout + done.stderr
    assert f"the service of target: at http://127.0.0.1:{port} is not ready after 5 s" in done.stderr
    assert not (tmp_path / "run" / "logs" / "fixed-100ms-locust.log").exists()
