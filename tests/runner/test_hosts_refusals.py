"""A scenario across hosts refuses, before anything starts, the faults in the network its agents cannot play."""

from __future__ import annotations

import pytest

from retrystorm.errors import UserError
from retrystorm.experiment.scenario import parse_scenario
from retrystorm.runner.cli import prepare
from retrystorm.runner.hosts import hosts_stack

SCENARIO = """
name: across
model: fixed
hosts: {{master: "127.0.0.1:5557", workers: 1, agents: {{app: {agent}}}}}
target: {{url: "http://127.0.0.1:2", host: app, model_server: true}}
load: {{users: 1, duration: 30s}}
strategies: [fixed:100ms]
faults: [{fault}]
"""


@pytest.mark.parametrize(
    "fault", ["{delay: target, latency: 200ms, at: 5s, for: 1s}", "{reset: target, at: 5s, for: 1s}"]
)
def test_a_proxied_fault_without_the_agents_proxy_is_refused_before_any_agent_is_asked(tmp_path, fault):
    scenario = parse_scenario(SCENARIO.format(agent='"http://127.0.0.1:1"', fault=fault), source="s.yaml")
    with pytest.raises(UserError) as caught:
        prepare(scenario, (), hosts_stack(scenario, tmp_path / "logs"))  # the agent at 127.0.0.1:1 cannot answer
    assert "name it in hosts.agents.app.proxy (chaos serve --proxy NAME=LISTEN,UPSTREAM registers one)" in str(
        caught.value
    )
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("agent", "fault"),
    [
        ('{url: "http://127.0.0.1:1", proxy: web}', "{delay: target, latency: 200ms, at: 5s, for: 1s}"),
        ('"http://127.0.0.1:1"', "{partition: target, at: 5s, for: 1s}"),
    ],
)
def test_faults_in_the_network_across_hosts_first_ask_the_agent_which_cannot_be_reached(tmp_path, agent, fault):
    scenario = parse_scenario(SCENARIO.format(agent=agent, fault=fault), source="s.yaml")
    with pytest.raises(UserError) as caught:
        prepare(scenario, (), hosts_stack(scenario, tmp_path / "logs"))
    assert str(caught.value).startswith("hosts.agents.app: ")
    assert "\n" not in str(caught.value)
