"""``retrystorm chaos serve --otel-endpoint``: each pause a span with its real start and end, sent over OTLP to a real
receiver (:mod:`tests.support.otlp`) while a real process is frozen with SIGSTOP; a bad endpoint is one line, exit 2."""

import os
import subprocess
import sys
import time

import pytest

from tests.support.otlp import GrpcReceiver, HttpReceiver

from .conftest import call, free_port, is_stopped, wait_for

pytestmark = [pytest.mark.live, pytest.mark.signals]


def _answers(base: str) -> bool:
    try:
        return call(base, "GET", "/healthz")[0] == 200
    except OSError:
        return False


@pytest.mark.parametrize(("receiver_type", "protocol"), [(GrpcReceiver, "grpc"), (HttpReceiver, "http/protobuf")])
def test_each_pause_is_a_span_of_its_real_length(victim, journal_path, receiver_type, protocol):
    receiver = receiver_type()
    port = free_port()
    env = {**os.environ, "OTEL_EXPORTER_OTLP_PROTOCOL": protocol}
    process = subprocess.Popen(
        [sys.executable, "-m", "retrystorm", "chaos", "serve", "--port", str(port),
         "--target", f"target={victim.pid}", "--otel-endpoint", receiver.endpoint],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _answers(base), what="the chaos API to answer")
        status, outage = call(base, "POST", "/outages", {"target": "target", "duration": "1500ms"})
        assert status == 201, outage
        assert is_stopped(victim.pid)
        wait_for(lambda: call(base, "GET", f"/outages/{outage['id']}")[1]["status"] == "resumed", what="the resume")
        time.sleep(0.2)
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=30)
        receiver.stop()
    assert not is_stopped(victim.pid)
    (span,) = [span for span in receiver.received.spans() if span.name == "chaos.pause"]
    seconds = (span.end_time_unix_nano - span.start_time_unix_nano) / 1e9
    assert 1.4 < seconds < 2.0, seconds
    attributes = {a.key: a.value for a in span.attributes}
    assert attributes["retrystorm.target"].string_value == "target"
    assert attributes["retrystorm.fault_id"].string_value == outage["id"]
    assert attributes["retrystorm.end_reason"].string_value == "scheduled"
    assert "Traceback" not in stderr


def test_a_bad_endpoint_is_one_line_and_exit_2():
    done = subprocess.run(
        [sys.executable, "-m", "retrystorm", "chaos", "serve", "--port", "0", "--otel-endpoint", "localhost:4317"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "--otel-endpoint: 'localhost:4317' is not a collector's URL" in line
