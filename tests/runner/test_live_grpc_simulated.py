"""``retrystorm run --simulate`` with a gRPC load: the simulator's verdicts agree with the live run's.

grpcio's own A6 retries (``real``) against the built-in target's gRPC front through a freeze and an
``UNAVAILABLE`` burst, 7 s after each to recover, live; and the same scenario in the simulator, which runs
``real`` through its preset (docs/guides/grpc.md). Whether the server and the users recovered after each fault
must agree, and the amplification stay within :data:`AMPLIFICATION_TOLERANCE` of the live one. About 45 s
(one run of 20 s, its start, and the simulation).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from retrystorm.chaos.journal import Journal

pytestmark = [pytest.mark.live, pytest.mark.signals, pytest.mark.slow]

SCENARIO = """\
name: grpc-simulated
seed: 1
model: exponential:base_delay=100ms,limit=30,factor=1.05,k=15,tick=50ms
grpc: {mode: real}
load: {users: 40, think_time: 'exponential:500ms', attempt_timeout: 2s, duration: 20s}
strategies: [{label: real, strategy: grpc-retry}]
faults:
  - {pause: target, at: 3s, for: 2s}
  - {errors: target, at: 11s, for: 2s, status: 503}
"""
#: Relative difference allowed between the simulated amplification and the live one.
AMPLIFICATION_TOLERANCE = 0.15


def test_the_simulated_verdicts_of_a_grpc_scenario_agree_with_the_live_ones(tmp_path):
    scenario = tmp_path / "grpc.yaml"
    scenario.write_text(SCENARIO)
    env = {**os.environ, "RETRYSTORM_CHAOS_JOURNAL": str(tmp_path / "journal.jsonl"), "COLUMNS": "200"}
    done = subprocess.run(
        [sys.executable, "-m", "retrystorm", "run", str(scenario), "--simulate", "--out", str(tmp_path / "run")],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    document = json.loads((tmp_path / "run" / "results.json").read_text())
    [live] = document["results"]
    assert document["valid"] is True and live["grpc"]["mode"] == "real"
    [simulated] = document["simulated"]["results"]
    shown = ("amplification", "server_recovery_s", "client_recovery_s")
    print("live:", {key: live[key] for key in shown}, "simulated:", {key: simulated[key] for key in shown})  # noqa: T201 - the figures, with pytest -s
    for key in ("server_recovery_s", "client_recovery_s"):
        assert [value is None for value in live[key]] == [value is None for value in simulated[key]], key
    assert simulated["amplification"] == pytest.approx(live["amplification"], rel=AMPLIFICATION_TOLERANCE)
    assert any("simulated through its preset" in note for note in document["simulated"]["notes"])
    assert not Journal(tmp_path / "journal.jsonl").pending()
