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
from pathlib import Path

import pytest

from retrystorm.chaos.journal import Journal
from tests.support.procfs import process_state_letter
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.live, pytest.mark.signals]


def env_with(journal):
    return {**os.environ, "RETRYSTORM_CHAOS_JOURNAL": str(journal), "COLUMNS": "200"}


def test_laptop_scenario_fixed_never_recovers_and_backoff_does(tmp_path):
    folder = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "retrystorm", "run", "smira-laptop", "--allow-saturated", "--out", folder, "--simulate"],
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
    """The runner's children, without the watchdogs it started (they outlive it on purpose)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                command = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid and b"retrystorm.chaos.watchdog" not in command:
                found.append(int(entry.name))
    return found


def wait_for(predicate, timeout_s, what):
    return wait_until(predicate, timeout_s=timeout_s, what=what, every_s=0.1)


def test_sigint_mid_outage_resumes_the_target_and_stops_every_child(tmp_path):
    """The fakes test the orchestration (tests/runner/test_execute.py); this checks the real children."""
    signum = signal.SIGINT
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


SHORT = textwrap.dedent(
    """\
    name: short
    model: exponential
    load: {users: 20, think_time: exponential:1s, attempt_timeout: 2s, duration: 40s}
    strategies: [fixed:100ms]
    faults: [{at: 2s, for: 3s}]
    """
)


def test_after_sigkill_of_the_runner_mid_outage_the_watchdog_resumes_the_target(tmp_path):
    """Nothing survives the runner to resume the target but its watchdog, which does so at the deadline."""
    (tmp_path / "short.yaml").write_text(SHORT)
    journal = Journal(tmp_path / "journal.jsonl")
    runner = subprocess.Popen(
        [sys.executable, "-m", "retrystorm", "run", tmp_path / "short.yaml", "--out", tmp_path / "run"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env_with(journal.path), start_new_session=True,
    )  # fmt: skip
    target_pid = None
    try:
        pending = wait_for(journal.pending, 90, "the target's pause in the journal")
        target_pid = int(pending[0].ref.ident.split("@")[0])
        wait_for(lambda: process_state_letter(target_pid) in ("T", "t"), 10, "the target to be stopped")
        os.killpg(runner.pid, signal.SIGKILL)  # the runner and its process group: no handler runs
        runner.wait(timeout=20)
        # The outage is 3 s: the watchdog resumes it 0.5 s after; the target then gets the SIGTERM
        # its parent's death sent it (PR_SET_PDEATHSIG) and exits.
        wait_for(lambda: process_state_letter(target_pid) not in ("T", "t"), 15, "the watchdog to resume the target")
        wait_for(lambda: process_state_letter(target_pid) in (None, "Z"), 30, "the orphaned target to exit")
    finally:
        if runner.poll() is None:
            os.killpg(runner.pid, signal.SIGKILL)
            runner.wait()
        if target_pid is not None and process_state_letter(target_pid) not in (None, "Z"):
            os.kill(target_pid, signal.SIGCONT)
            os.kill(target_pid, signal.SIGKILL)
    assert any('"watchdog"' in line for line in journal.path.read_text().splitlines())
