"""``retrystorm run`` with a gRPC load: the built-in target's gRPC front, grpcio's own A6 retries beside its emulation.

One scenario, two strategies: gRFC A6's example policy (4 attempts, 0.1 s x2 up to 1 s, ``UNAVAILABLE``) run by
grpcio itself (``real``) and by the ``grpc-retry`` preset over grpcio (``emulated``). 50 users thinking
exp(0.5 s), 2 s of ``UNAVAILABLE`` answers (the retries), then a 2 s freeze (SIGSTOP of the target process).
Through the same analysis, verdicts and report as an HTTP run, the emulation must stay within the documented
tolerance of the real library (docs/guides/grpc.md): amplification within :data:`AMPLIFICATION_TOLERANCE`, the
same recovery verdicts after the freeze, within :data:`RECOVERY_TOLERANCE_S` of each other. About 60 s (two
runs of 20 s, and starting them). grpcio's ``retryThrottling`` against its emulation is checked without the
runner, in tests/loadgen/test_live_grpc.py; examples/grpc/builtin-a6.yaml is the long form of this scenario.
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
name: grpc-a6-short
seed: 1
model: exponential:base_delay=100ms,limit=30,factor=1.05,k=15,tick=50ms
grpc: {mode: real}
load: {users: 50, think_time: 'exponential:500ms', attempt_timeout: 2s, duration: 20s}
strategies:
  - {label: real, strategy: grpc-retry}
  - {label: emulated, strategy: grpc-retry, grpc_mode: emulated}
faults:
  - {errors: target, at: 4s, for: 2s, status: 503}
  - {pause: target, at: 9s, for: 2s}
"""
#: Relative difference allowed between the real library's amplification and its emulation's.
AMPLIFICATION_TOLERANCE = 0.10
#: Seconds allowed between their recoveries after the freeze (readings are a second apart).
RECOVERY_TOLERANCE_S = 3.0


def test_a_grpc_scenario_runs_through_the_same_analysis_and_its_emulation_stays_within_tolerance(tmp_path):
    scenario = tmp_path / "a6.yaml"
    scenario.write_text(SCENARIO)
    env = {**os.environ, "RETRYSTORM_CHAOS_JOURNAL": str(tmp_path / "journal.jsonl"), "COLUMNS": "200"}
    done = subprocess.run(
        [sys.executable, "-m", "retrystorm", "run", str(scenario), "--out", str(tmp_path / "run")],
        capture_output=True, text=True, env=env, timeout=400, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    document = json.loads((tmp_path / "run" / "results.json").read_text())
    rows = {row["strategy"]: row for row in document["results"]}
    assert document["valid"] is True and set(rows) == {"real", "emulated"}
    for label, row in rows.items():
        assert row["grpc"]["mode"] == label
        assert row["grpc"]["method"] == "/retrystorm.target.v1.Target/Echo"
        assert row["grpc"]["channels"] == 1  # one Locust process: one channel, one throttle
        # counted at the client (channelz, or as sent) and at the target: calls whose deadline passed
        # during the freeze were cancelled before the target's handler saw them; the two are read once a
        # second each, from two processes, so their last readings may be up to a second of attempts apart
        one_second = row["attempts"] / 20
        assert 0.8 * row["attempts"] <= row["grpc"]["attempts_at_target"] <= row["attempts"] + one_second, row
        assert row["steady_state"]["ok_share_by_request"] == {"/retrystorm.target.v1.Target/Echo": 1.0}
        assert row["validity"]["valid"] is True
        assert row["amplification"] > 1.05, row  # the UNAVAILABLE answers were retried
    real, emulated = rows["real"], rows["emulated"]
    assert emulated["amplification"] == pytest.approx(real["amplification"], rel=AMPLIFICATION_TOLERANCE)
    for key in ("server_recovery_s", "client_recovery_s"):
        after_freeze = real[key][1], emulated[key][1]
        assert None not in after_freeze, (key, after_freeze)
        assert abs(after_freeze[0] - after_freeze[1]) <= RECOVERY_TOLERANCE_S, (key, after_freeze)
    assert "gRPC calls of /retrystorm.target.v1.Target/Echo" in done.stderr  # the plan
    assert (tmp_path / "run" / "report.html").exists()
    assert not Journal(tmp_path / "journal.jsonl").pending()
