"""``retrystorm run`` with real Locust: users spread over worker processes, and a saturated generator caught.

One short run each, no outage, on 127.0.0.1 only, bounded by the scenario's duration.
"""

import json
import os
import subprocess
import sys
import textwrap

import psutil
import pytest

pytestmark = [pytest.mark.live]


def run(tmp_path, text, *args):
    (tmp_path / "s.yaml").write_text(text)
    env = {**os.environ, "RETRYSTORM_CHAOS_JOURNAL": str(tmp_path / "journal.jsonl"), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "retrystorm", "run", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "run"), *args],
        capture_output=True, text=True, env=env, timeout=240, check=False,
    )  # fmt: skip


EASY = textwrap.dedent(
    """\
    name: easy
    model: "exponential:base_delay=10ms"
    load: {users: 100, think_time: exponential:500ms, attempt_timeout: 2s, duration: 8s}
    strategies: [fixed:100ms]
    """
)


def test_two_workers_share_the_users_and_each_process_is_measured(tmp_path):
    done = run(tmp_path, EASY, "--workers", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    row = json.loads((tmp_path / "run" / "results.json").read_text())["results"][0]
    names = sorted(row["validity"]["cpu_peak"])
    assert [name.split(" (pid")[0] for name in names] == ["master", "worker 1", "worker 2"]
    assert row["validity"]["valid"] is True
    assert row["requests"] > 500 and row["succeeded"] > 0.95 * row["requests"]  # ~200/s for 8 s
    logs = {path.name for path in (tmp_path / "run" / "logs").iterdir()}
    assert {
        "fixed-100ms-locust-master.log",
        "fixed-100ms-locust-worker-1.log",
        "fixed-100ms-locust-worker-2.log",
    } <= logs
    pids = [int(name.split("pid ")[1].rstrip(")")) for name in names]
    assert not [pid for pid in pids if psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"]
    assert "a master and 2 workers" in (done.stdout + done.stderr).replace("\n", " ")


#: 400 users that think 10 ms demand up to 40,000 requests/s: no single Locust process sends that.
GREEDY = EASY.replace("name: easy", "name: greedy").replace(
    "users: 100, think_time: exponential:500ms", "users: 400, think_time: constant:10ms"
)


def test_a_generator_that_cannot_send_what_its_users_demand_is_not_valid_and_exits_3(tmp_path):
    done = run(tmp_path, GREEDY, "--workers", "1")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "retrystorm run: not valid: the load generator was saturated during fixed:100ms" in done.stderr
    document = json.loads((tmp_path / "run" / "results.json").read_text())
    validity = document["results"][0]["validity"]
    assert validity["valid"] is False and validity["saturated_share"] > 0.05
    assert document["valid"] is False
    assert "NOT VALID" in done.stdout
