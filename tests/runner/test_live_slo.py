"""Stop conditions end to end.

A real target frozen with SIGSTOP under real Locust with fixed 100 ms retries (the shipped smira-laptop's sizing,
where fixed never recovers) is stopped early by its ``slo:``, every fault reverted, exit 4; a real Prometheus
refusing a malformed PromQL query is exit 2 before anything starts.
"""

import json
import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET

import pytest

from retrystorm.chaos.journal import Journal
from tests.dashboards.test_live_prometheus import start_prometheus
from tests.loadgen.conftest import Processes

pytestmark = [pytest.mark.live, pytest.mark.signals]

STORM = textwrap.dedent(
    """\
    name: storm-stop
    model: exponential:base_delay=100ms,limit=30,factor=1.05,k=15,tick=50ms
    load: {users: 300, think_time: exponential:3s, attempt_timeout: 2s, duration: 70s}
    strategies: [fixed:100ms, smira]
    faults: [{at: 15s, for: 15s}]
    slo:
      - {name: retry storm, series: in_flight, above: 500, for: 3s}
    """
)


def run(tmp_path, scenario, *extra):
    (tmp_path / "s.yaml").write_text(scenario)
    env = {**os.environ, "RETRYSTORM_CHAOS_JOURNAL": str(tmp_path / "journal.jsonl"), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "retrystorm", "run", tmp_path / "s.yaml", "--out", tmp_path / "run", *extra],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip


def test_a_storming_strategy_is_stopped_early_with_every_fault_reverted(tmp_path):
    done = run(tmp_path, STORM, "--junit", tmp_path / "junit.xml")
    assert done.returncode == 4, done.stdout + done.stderr
    assert "retrystorm run: stopped early: retry storm above 500 for 3s:" in done.stderr
    assert "every fault was reverted; not run: smira" in done.stderr
    document = json.loads((tmp_path / "run" / "results.json").read_text())
    breach = document["slo"]["breached"]
    assert breach["strategy"] == "fixed:100ms" and breach["value"] > 500
    assert 30 < breach["at_s"] < 60  # the storm after the resume, long before the run's planned end
    assert document["results"][0]["server_recovery_s"] is None
    assert document["slo"]["skipped"] == ["smira"]
    journal = Journal(tmp_path / "journal.jsonl")
    assert not journal.pending() and not journal.pending_throttles()
    suites = ET.parse(tmp_path / "junit.xml").getroot()  # noqa: S314 (the XML the run wrote)
    assert [case.get("name") for case in suites.iter("testcase") if case.find("failure") is not None] == ["slo"]


def test_a_malformed_promql_query_is_refused_by_prometheus_before_the_run(tmp_path):
    processes = Processes(tmp_path)
    try:
        url = start_prometheus(processes, tmp_path, {})
        bad = STORM.replace("series: in_flight", f"promql: 'sum(rate(x[5s]', prometheus: '{url}'")
        done = run(tmp_path, bad)
        good = run(
            tmp_path,
            STORM.replace("series: in_flight", f"promql: 'vector(0)', prometheus: '{url}'"),
            "--dry-run",
        )
    finally:
        processes.stop_all()
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"retrystorm: error: slo[0].promql: {url} refused the query: ")
    assert "parse error" in line
    assert not (tmp_path / "run").exists()
    assert good.returncode == 0, good.stderr
