"""A scenario across hosts refuses, before anything starts, what its agents cannot play: faults in the network."""

from __future__ import annotations

import pytest

from retrystorm.errors import UserError
from retrystorm.experiment.scenario import parse_scenario
from retrystorm.runner.cli import prepare
from retrystorm.runner.hosts import hosts_stack
from retrystorm.runner.hosts.targets import NETWORK_THROUGH_AGENTS

SCENARIO = """
name: across
model: fixed
hosts: {{master: "127.0.0.1:5557", workers: 1, agents: {{app: "http://127.0.0.1:1"}}}}
target: {{url: "http://127.0.0.1:2", host: app, model_server: true}}
load: {{users: 1, duration: 30s}}
strategies: [fixed:100ms]
faults: [{fault}]
"""


@pytest.mark.parametrize(
    "fault",
    [
        "{delay: target, latency: 200ms, at: 5s, for: 1s}",
        "{reset: target, at: 5s, for: 1s}",
        "{partition: target, at: 5s, for: 1s}",
    ],
)
def test_faults_in_the_network_are_refused_across_hosts_before_any_agent_is_asked(tmp_path, fault):
    scenario = parse_scenario(SCENARIO.format(fault=fault), source="s.yaml")
    stack = hosts_stack(scenario, tmp_path / "logs")
    with pytest.raises(UserError) as caught:
        prepare(scenario, (), stack)  # the agent at 127.0.0.1:1 cannot answer: the refusal comes first
    assert NETWORK_THROUGH_AGENTS in str(caught.value)
    assert "\n" not in str(caught.value)
