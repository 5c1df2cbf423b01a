"""``retrystorm run --otel-endpoint``: a real run (target, Locust, SIGSTOP) exported over OTLP gRPC and HTTP to a real
OTLP receiver (:mod:`tests.support.otlp`); each strategy's exported totals equal its results.json totals, which come
from the Prometheus readings of the same run, and the pause is a span with its start and end."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.support.otlp import GrpcReceiver, HttpReceiver

pytestmark = [pytest.mark.live, pytest.mark.signals]

SCENARIO = textwrap.dedent(
    """\
    name: exported
    model: exponential
    load: {users: 40, think_time: exponential:1s, attempt_timeout: 1s, duration: 20s}
    strategies: [fixed:100ms, smira]
    faults: [{at: 6s, for: 4s}]
    """
)
#: OTel counter -> (its outcome attribute or None, results.json field)
TOTALS = [
    ("retrystorm.client.attempts_started", None, "attempts"),
    ("retrystorm.client.requests", "ok", "succeeded"),
    ("retrystorm.client.requests", "gave_up", "gave_up"),
    ("retrystorm.client.retries", None, "retries"),
    ("retrystorm.client.attempts", "timeout", "timeouts"),
]


@pytest.mark.parametrize(("receiver_type", "protocol"), [(GrpcReceiver, "grpc"), (HttpReceiver, "http/protobuf")])
def test_a_runs_exported_totals_equal_its_prometheus_readings(tmp_path, receiver_type, protocol):
    (tmp_path / "s.yaml").write_text(SCENARIO)
    receiver = receiver_type()
    try:
        env = {**os.environ, "RETRYSTORM_CHAOS_JOURNAL": str(tmp_path / "j.jsonl"), "COLUMNS": "200"}
        done = subprocess.run(
            [sys.executable, "-m", "retrystorm", "run", tmp_path / "s.yaml", "--out", tmp_path / "run",
             "--otel-endpoint", receiver.endpoint, "--otel-protocol", protocol, "--allow-saturated"],
            capture_output=True, text=True, env=env, timeout=300, check=False,
        )  # fmt: skip
    finally:
        receiver.stop()
    assert done.returncode == 0, done.stdout + done.stderr
    document = json.loads((tmp_path / "run" / "results.json").read_text())
    received = receiver.received
    for row in document["results"]:
        label = row["strategy"]
        for name, outcome, field in TOTALS:
            key = (
                (("retrystorm.outcome", outcome), ("retrystorm.strategy", label))
                if outcome
                else (("retrystorm.strategy", label),)
            )
            assert received.last_values(name).get(key, 0.0) == row[field], (label, name, outcome)
        assert row["attempts"] > 0
    spans = [span for span in received.spans() if span.name == "chaos.pause"]
    assert len(spans) == 2
    for span in spans:
        seconds = (span.end_time_unix_nano - span.start_time_unix_nano) / 1e9
        assert 3.5 < seconds < 5.5
    attributes = {a.key: a.value.string_value for a in spans[0].attributes}
    assert attributes["retrystorm.kind"] == "pause" and attributes["retrystorm.strategy"] == "fixed:100ms"


def test_an_unreachable_collector_is_a_warning_and_the_run_goes_on(tmp_path):
    from tests.loadgen.conftest import free_port

    (tmp_path / "s.yaml").write_text(
        SCENARIO.replace("duration: 20s", "duration: 8s").replace("{at: 6s, for: 4s}", "{at: 2s, for: 2s}")
    )
    env = {**os.environ, "RETRYSTORM_CHAOS_JOURNAL": str(tmp_path / "j.jsonl"), "COLUMNS": "200"}
    endpoint = f"http://127.0.0.1:{free_port()}"
    done = subprocess.run(
        [sys.executable, "-m", "retrystorm", "run", tmp_path / "s.yaml", "--out", tmp_path / "run",
         "--strategy", "smira", "--otel-endpoint", endpoint, "--allow-saturated"],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"retrystorm run: warning: the OpenTelemetry collector at {endpoint} does not answer" in done.stderr
    assert "Traceback" not in done.stderr
    assert (tmp_path / "run" / "results.json").is_file()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--otel-endpoint", "localhost:4317"], "--otel-endpoint: 'localhost:4317' is not a collector's URL"),
        (["--otel-endpoint", "http://127.0.0.1:4317", "--otel-protocol", "udp"], "--otel-protocol"),
    ],
)
def test_a_bad_endpoint_is_one_line_and_exit_2(tmp_path, args, expected):
    done = subprocess.run(
        [sys.executable, "-m", "retrystorm", "run", "smira-laptop", "--out", tmp_path / "run", *args],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert expected in line
    assert not (tmp_path / "run").exists()
