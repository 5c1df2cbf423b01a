"""A run across hosts checks every agent before anything starts: unreachable, wrong token, unregistered target."""

from __future__ import annotations

import subprocess
import sys

import pytest

from retrystorm.errors import UserError
from retrystorm.experiment.scenario import parse_scenario
from retrystorm.runner.cli import prepare
from retrystorm.runner.hosts import hosts_stack
from retrystorm.runner.locust_args import free_port
from tests.chaos.conftest import wait_for

pytestmark = pytest.mark.live

SCENARIO = """
name: across
model: fixed
hosts:
  master: "127.0.0.1:{master}"
  workers: 1
  agents: {{app: {{url: "http://127.0.0.1:{port}", token_env: APP_TOKEN}}}}
target: {{url: "http://127.0.0.1:1", host: app, model_server: true}}
load: {{users: 1, duration: 30s}}
strategies: [fixed:100ms]
faults: [{{pause: {name}, at: 5s, for: 1s}}]
"""


@pytest.fixture
def agent(tmp_path, victim):
    """A real chaos agent on loopback with a token, the victim registered as ``victim``."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "retrystorm", "chaos", "serve", "--port", str(port), "--token", "s3cret",
         "--target", f"victim={victim.pid}", "--journal", str(tmp_path / "agent.jsonl")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_for(lambda: _answers(port), 30, "the agent to answer")
        yield port
    finally:
        process.terminate()
        process.wait(timeout=20)


def _answers(port: int) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1):
            return True
    except OSError:
        return False


def check(tmp_path, port: int, name: str, monkeypatch, token: str | None) -> list[str]:
    if token is None:
        monkeypatch.delenv("APP_TOKEN", raising=False)
    else:
        monkeypatch.setenv("APP_TOKEN", token)
    scenario = parse_scenario(SCENARIO.format(master=free_port(), port=port, name=name), source="s.yaml")
    stack = hosts_stack(scenario, tmp_path / "logs")
    prepare(scenario, (), stack)
    return stack.targets.fault_target_names()


def test_a_registered_target_on_a_reachable_agent_with_its_token_passes(tmp_path, agent, monkeypatch):
    assert check(tmp_path, agent, "victim", monkeypatch, "s3cret") == ["victim"]


def test_an_unregistered_target_is_refused_naming_what_its_agent_registered(tmp_path, agent, monkeypatch):
    with pytest.raises(UserError) as caught:
        check(tmp_path, agent, "ghost", monkeypatch, "s3cret")
    message = str(caught.value)
    assert message.startswith("faults[0]: pause: ghost: the agent of app (http://127.0.0.1:")
    assert "has no target 'ghost'; it registered: victim" in message
    assert "\n" not in message


def test_a_wrong_token_is_refused_naming_the_variable_to_set(tmp_path, agent, monkeypatch):
    with pytest.raises(UserError) as caught:
        check(tmp_path, agent, "victim", monkeypatch, "wrong")
    assert str(caught.value).startswith("hosts.agents.app: the chaos API refused the token")
    assert "set APP_TOKEN" in str(caught.value)


def test_an_unreachable_agent_is_refused_in_one_line(tmp_path, monkeypatch):
    with pytest.raises(UserError) as caught:
        check(tmp_path, free_port(), "victim", monkeypatch, "s3cret")
    assert str(caught.value).startswith("hosts.agents.app: cannot reach the chaos API at http://127.0.0.1:")
    assert "\n" not in str(caught.value)


def test_the_command_line_exits_2_before_anything_starts(tmp_path, monkeypatch):
    path = tmp_path / "s.yaml"
    path.write_text(
        SCENARIO.format(master=free_port(), port=free_port(), name="victim").replace("127.0.0.1", "10.9.9.9")
    )
    monkeypatch.delenv("APP_TOKEN", raising=False)
    done = subprocess.run(
        [sys.executable, "-m", "retrystorm", "run", str(path), "--dry-run", "--journal", str(tmp_path / "j.jsonl")],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "retrystorm: error: hosts.agents.app: http://10.9.9.9:"
        + done.stderr.split("http://10.9.9.9:")[1].split(" ")[0]
        + " is beyond loopback and needs a token: set APP_TOKEN to the token its `retrystorm chaos serve --token` uses"
    )
