"""The chaos HTTP API as a real server process on loopback, pausing a real process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from .conftest import call, is_stopped

pytestmark = [pytest.mark.live, pytest.mark.signals]


def test_outage_lifecycle_over_http(chaos_api, victim):
    base, _ = chaos_api
    status, targets = call(base, "GET", "/targets")
    assert (status, targets) == (200, [{"backend": "process", "target": "target", "state": "running"}])
    status, outage = call(base, "POST", "/outages", {"target": "target", "duration": "10m"})
    assert status == 201
    assert outage["clamped"] is True
    assert outage["duration_s"] == 120
    assert is_stopped(victim.pid)
    assert call(base, "GET", "/targets")[1][0]["state"] == "paused"
    text = call(base, "GET", "/metrics")[1]
    assert 'retrystorm_chaos_outage_active{target="target"} 1.0' in text
    assert 'retrystorm_chaos_outages_total{target="target"} 1.0' in text
    status, ended = call(base, "DELETE", f"/outages/{outage['id']}")
    assert status == 200
    assert ended["status"] == "resumed"
    assert ended["end_reason"] == "early"
    assert not is_stopped(victim.pid)
    assert 'retrystorm_chaos_outage_active{target="target"} 0.0' in call(base, "GET", "/metrics")[1]
    assert [o["id"] for o in call(base, "GET", "/outages")[1]] == [outage["id"]]


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        (b"not json", 400, "not valid JSON"),
        ([1, 2], 400, "expected a JSON object"),
        ({"target": "target"}, 400, "duration: required"),
        ({"target": "target", "duration": "soon"}, 400, "duration: got 'soon'"),
        ({"target": "target", "duration": "0"}, 400, "duration: got '0', expected a finite duration > 0"),
        ({"target": "target", "duration": "1s", "colour": "red"}, 400, "unknown field 'colour'"),
        ({"target": "nope", "duration": "1s"}, 404, "no target 'nope'; targets: process:target"),
        ({"target": "pid:1", "duration": "1s"}, 403, "raw pids are not accepted"),
        ({"target": "target", "duration": "1s", "backend": "docker"}, 400, "backend: got 'docker'"),
    ],
)
def test_bad_requests_are_4xx_with_a_message_and_change_nothing(chaos_api, victim, body, status, message):
    base, _ = chaos_api
    got_status, got = call(base, "POST", "/outages", body, {"Content-Type": "application/json"})
    assert got_status == status
    assert message in got["error"]
    assert not is_stopped(victim.pid)
    assert call(base, "GET", "/outages") == (200, [])
    assert call(base, "GET", "/outages/o99")[0] == 404


def test_sigterm_resumes_an_active_outage_before_exit(chaos_api, victim):
    base, process = chaos_api
    assert call(base, "POST", "/outages", {"target": "target", "duration": "1m"})[0] == 201
    assert is_stopped(victim.pid)
    os.kill(process.pid, signal.SIGTERM)
    process.wait(timeout=20)
    assert not is_stopped(victim.pid)


def test_non_loopback_bind_requires_a_token(journal_path):
    result = subprocess.run(
        [sys.executable, "-m", "retrystorm", "chaos", "serve", "--host", "0.0.0.0", "--port", "0"],  # noqa: S104
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert "set --token or RETRYSTORM_CHAOS_TOKEN" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
