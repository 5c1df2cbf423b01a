"""``retrystorm init`` probes the service before it writes: a real HTTP server on loopback, in this process."""

from __future__ import annotations

import http.server
from collections.abc import Iterator

import pytest

from retrystorm.experiment.scenario import load_scenario
from retrystorm.experiment.scenario.starter import suggest_load
from tests.support.http import serving
from tests.support.ports import refused_port

from .test_cli import error_line, retrystorm


class _Handler(http.server.BaseHTTPRequestHandler):
    """``/orders`` answers 200 (GET and POST); anything else 404, as a service without ``/`` does."""

    def _answer(self) -> None:
        status = 200 if self.path == "/api/orders" else 404
        self.send_response(status)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    do_GET = do_POST = _answer  # noqa: N815 - the names http.server calls

    def log_message(self, *_: object) -> None:
        """Quiet."""


@pytest.fixture
def service() -> Iterator[str]:
    with serving(_Handler) as url:
        yield url + "/api"


def test_a_scenario_whose_requests_all_fail_is_refused_in_one_line_and_not_written(tmp_path, service):
    done = retrystorm("init", service, "--request", "POST /nothing", cwd=tmp_path, journal=tmp_path / "j.jsonl")
    line = error_line(done)
    assert "every request failed (GET / answered 404)" in line or "(POST /nothing answered 404)" in line
    assert "nothing was written" in line
    assert "probe: POST /nothing: 404 in " in done.stdout
    assert not (tmp_path / "scenario.yaml").exists()


def test_the_default_request_to_a_service_without_a_root_is_refused(tmp_path, service):
    done = retrystorm("init", service, cwd=tmp_path, journal=tmp_path / "j.jsonl")
    assert "every request failed (GET / answered 404)" in error_line(done)
    assert not (tmp_path / "scenario.yaml").exists()


def test_working_requests_are_written_with_a_load_from_the_latency_measured_and_the_plan_runs(tmp_path, service):
    journal = tmp_path / "j.jsonl"
    done = retrystorm(
        "init", service, "--request", "GET /orders", "--request", "POST /nothing", "--pid", "4000000",
        "-o", tmp_path / "mine.yaml", cwd=tmp_path, journal=journal,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "probe: GET /orders: 200 in " in done.stdout
    assert "probe: POST /nothing: 404 in " in done.stdout and "every attempt of it would fail" in done.stdout
    assert "`retrystorm map" in done.stdout
    scenario = load_scenario(tmp_path / "mine.yaml")
    mix = [(entry.method, entry.path) for entry in scenario.requests or []]
    assert mix == [("GET", "/orders"), ("POST", "/nothing")]
    assert scenario.load.users >= 10 and scenario.load.think_time is not None
    text = (tmp_path / "mine.yaml").read_text()
    assert "a request init measured" in text and "retrystorm map mine.yaml --vary load.users" in text


def test_a_service_that_does_not_answer_is_exit_2_naming_what_to_do(tmp_path):
    sock, port = refused_port()
    with sock:
        done = retrystorm("init", f"http://127.0.0.1:{port}", cwd=tmp_path, journal=tmp_path / "j.jsonl")
    line = error_line(done)
    assert f"your service at http://127.0.0.1:{port} is not ready" in line
    assert "start it first, or give --command to have init start it" in line
    assert not (tmp_path / "scenario.yaml").exists()


def test_no_probe_writes_the_modest_load_without_sending_anything(tmp_path):
    sock, port = refused_port()
    with sock:
        done = retrystorm("init", f"http://127.0.0.1:{port}", "--no-probe", cwd=tmp_path, journal=tmp_path / "j.jsonl")
    assert done.returncode == 0, done.stderr
    assert load_scenario(tmp_path / "scenario.yaml").load.users == 20


@pytest.mark.parametrize(
    ("given", "expected"),
    [("FETCH /x", "--request: got 'FETCH /x'"), ("GET orders", "--request: got 'GET orders'")],
)
def test_a_request_that_is_not_method_and_path_is_exit_2(tmp_path, given, expected):
    done = retrystorm("init", "http://127.0.0.1:9", "--request", given, cwd=tmp_path, journal=tmp_path / "j.jsonl")
    line = error_line(done)
    assert expected in line and "expected 'METHOD PATH'" in line


@pytest.mark.parametrize(
    ("latency_s", "users", "timeout_s"),
    [(0.05, 61, 1.0), (0.052, 59, 1.1), (0.001, 600, 1.0), (0.0001, 600, 1.0), (0.5, 10, 10.0), (40.0, 10, 80.0)],
)
def test_the_suggested_load_is_one_workers_pace_within_bounds(latency_s, users, timeout_s):
    load = suggest_load(latency_s)
    assert (load.users, load.attempt_timeout_s) == (users, timeout_s)
    assert load.think_s == 3.0 and load.latency_s == max(latency_s, 0.001)


def test_a_command_to_start_where_a_service_already_answers_is_refused_before_starting_it(tmp_path, service):
    marker = tmp_path / "started"
    done = retrystorm(
        "init", service, "--request", "GET /orders", "--command", f"touch {marker}", cwd=tmp_path,
        journal=tmp_path / "j.jsonl",
    )  # fmt: skip
    assert f"something already answers at {service}: stop it" in error_line(done)
    assert not marker.exists() and not (tmp_path / "scenario.yaml").exists()
