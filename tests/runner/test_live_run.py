"""``retrystorm run`` end to end with a real target process, real Locust and real SIGSTOP/SIGCONT.

The laptop-sized seed outage must show the seed's headline: fixed 100 ms retries never
come back, the seed's exponential backoff (smira) brings the server back. The scenario
is sized with a wide margin (see the shipped scenario smira-laptop): ~6,000 requests in flight
for fixed against a few hundred for smira.
"""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from chaos.backends.process import process_state_letter
from chaos.journal import Journal

pytestmark = [pytest.mark.live, pytest.mark.signals]


def env_with(journal):
    return {**os.environ, "RETRYSTORM_CHAOS_JOURNAL": str(journal), "COLUMNS": "200"}


def test_laptop_scenario_fixed_never_recovers_and_backoff_does(tmp_path):
    folder = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "retrystorm", "run", "smira-laptop", "--out", folder, "--simulate"],
        capture_output=True, text=True, env=env_with(tmp_path / "journal.jsonl"), timeout=420, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    document = json.loads((folder / "results.json").read_text())
    rows = {row["strategy"]: row for row in document["results"]}
    fixed, smira = rows["fixed:100ms"], rows["smira"]
    assert fixed["server_recovery_s"] is None and fixed["client_recovery_s"] is None
    assert smira["server_recovery_s"] is not None and smira["server_recovery_s"] <= 20
    assert fixed["peak_in_flight"] > 5 * smira["peak_in_flight"]
    assert fixed["amplification"] > smira["amplification"]
    assert document["ok"] is True
    assert all(verdict["passed"] for row in rows.values() for verdict in row["assertions"])
    assert set(document["simulated"]["compared"]) == {"fixed:100ms", "smira"}
    assert (folder / "timeseries.csv").read_text().count("\nsmira,") == 70
    report = (folder / "report.html").read_text(encoding="utf-8")
    assert "fixed:100ms" in report and "smira" in report
    assert str(folder / "report.html") in done.stdout.replace("\n", "")
    assert not Journal(tmp_path / "journal.jsonl").pending()


FROZEN = textwrap.dedent(
    """\
    name: frozen
    model: exponential
    load: {users: 50, think_time: exponential:1s, attempt_timeout: 2s, duration: 60s}
    strategies: [fixed:100ms]
    faults: [{at: 3s, for: 40s}]
    """
)


def children_of(pid):
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def wait_for(predicate, timeout_s, what):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_mid_outage_resumes_the_target_and_stops_everything(tmp_path, signum):
    (tmp_path / "frozen.yaml").write_text(FROZEN)
    journal = Journal(tmp_path / "journal.jsonl")
    runner = subprocess.Popen(
        [sys.executable, "-m", "retrystorm", "run", tmp_path / "frozen.yaml", "--out", tmp_path / "run"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env_with(journal.path),
    )  # fmt: skip
    children: list[int] = []
    try:
        pending = wait_for(journal.pending, 90, "the target's pause in the journal")
        target_pid = int(pending[0].ref.ident.split("@")[0])
        wait_for(lambda: process_state_letter(target_pid) in ("T", "t"), 10, "the target to be stopped")
        children = children_of(runner.pid)
        assert target_pid in children and len(children) == 2  # the target and Locust
        runner.send_signal(signum)
        stdout, stderr = runner.communicate(timeout=60)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
        for pid in children:  # only if the runner failed to: resume and stop what it started
            if process_state_letter(pid) not in (None, "Z"):
                os.kill(pid, signal.SIGCONT)
                os.kill(pid, signal.SIGKILL)
    assert runner.returncode == 130, stdout + stderr
    assert "every target was resumed and every process stopped" in stderr
    assert not journal.pending()  # the resume was journaled
    assert [process_state_letter(pid) for pid in children] == [None, None]
    assert not (tmp_path / "run" / "results.json").exists()


BUSY = textwrap.dedent(
    """\
    name: busy
    model: exponential
    load: {users: 20, think_time: constant:0s, attempt_timeout: 2s, duration: 6s}
    strategies: [fixed:100ms]
    assertions:
      fixed:100ms: {max_peak_in_flight: 0, max_amplification: 1.5}
    """
)


def test_a_failed_assertion_exits_1_and_names_the_measured_value_and_bound(tmp_path):
    (tmp_path / "busy.yaml").write_text(BUSY)
    done = subprocess.run(
        [sys.executable, "-m", "retrystorm", "run", tmp_path / "busy.yaml", "--out", tmp_path / "run"],
        capture_output=True, text=True, env=env_with(tmp_path / "journal.jsonl"), timeout=180, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    failed = [line for line in done.stderr.splitlines() if line.startswith("assertion failed:")]
    assert len(failed) == 1
    assert failed[0].startswith("assertion failed: fixed:100ms: max_peak_in_flight 0: measured ")
    assert failed[0].endswith("(FAIL)")
    document = json.loads((tmp_path / "run" / "results.json").read_text())
    assert document["ok"] is False
    assert [v["passed"] for v in document["results"][0]["assertions"]] == [True, False]
