"""``retrystorm init --example``, then ``init --command``: the Get started page's steps with a real gunicorn.

init starts the command, probes it once, stops everything it started, and writes a scenario whose plan runs; a
command that cannot start is one line (the first line of its own error) and nothing written. A few seconds each.
"""

from __future__ import annotations

import re
import socket

import pytest

from retrystorm.experiment.scenario import load_scenario
from tests.support.ports import free_port

from .test_cli import error_line, retrystorm

pytestmark = [pytest.mark.live]


def refused(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


def test_init_example_then_init_with_the_command_writes_a_scenario_that_plans_and_leaves_nothing_running(tmp_path):
    journal = tmp_path / "j.jsonl"
    example = retrystorm("init", "--example", cwd=tmp_path, journal=journal)
    assert example.returncode == 0, example.stderr
    assert "HANDLER_S = 0.05" in (tmp_path / "app.py").read_text()
    port = free_port()
    command = f"gunicorn -w 2 -b 127.0.0.1:{port} app:app"
    done = retrystorm("init", f"http://127.0.0.1:{port}", "--command", command, cwd=tmp_path, journal=journal)
    assert done.returncode == 0, done.stderr
    assert re.search(r"probe: GET /: 200 in [0-9]+ms", done.stdout), done.stdout
    assert refused(port)  # the service init started is stopped
    scenario = load_scenario(tmp_path / "scenario.yaml")
    assert scenario.target is not None and scenario.target.command == command
    assert scenario.load.users >= 10
    plan = retrystorm("run", "scenario.yaml", "--dry-run", cwd=tmp_path, journal=journal)
    assert plan.returncode == 0, plan.stderr


def test_a_command_that_cannot_start_is_one_line_with_the_first_line_of_its_error(tmp_path):
    (tmp_path / "app.py").write_text("")
    port = free_port()
    done = retrystorm(
        "init", f"http://127.0.0.1:{port}", "--command", f"gunicorn -w 2 -b 127.0.0.1:{port} nosuchapp:app",
        cwd=tmp_path, journal=tmp_path / "j.jsonl",
    )  # fmt: skip
    line = error_line(done)
    assert re.search(r"--command exited with status [0-9]+ before the service answered: ModuleNotFoundError", line)
    assert not (tmp_path / "scenario.yaml").exists()
