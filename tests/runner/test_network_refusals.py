"""Faults in the network on a backend that cannot play them: refused before anything starts, in one line."""

from __future__ import annotations

import pytest

from retrystorm.errors import UserError
from retrystorm.experiment.scenario import load_scenario
from retrystorm.runner.cli import prepare
from retrystorm.runner.local import local_stack

SCENARIO = """
name: net
model: exponential
load: {{users: 10, duration: 60s}}
strategies: [fixed:100ms]
faults: [{fault}]
"""


@pytest.mark.parametrize(
    "fault",
    [
        "{delay: target, latency: 200ms, at: 10s, for: 5s}",
        "{loss: target, probability: 0.1, at: 10s, for: 5s}",
        "{hang: target, at: 10s, for: 5s}",
        "{reset: target, at: 10s, for: 5s}",
        "{partition: target, at: 10s, for: 5s}",
    ],
)
def test_the_local_backend_refuses_network_faults_it_does_not_play(tmp_path, fault):
    path = tmp_path / "net.yaml"
    path.write_text(SCENARIO.format(fault=fault))
    kind = fault[1:].partition(":")[0]
    with pytest.raises(UserError, match=rf"^faults\[0\]: {kind}: target: faults in the network are played live") as e:
        prepare(load_scenario(path), (), local_stack(tmp_path / "logs"))
    assert "retrystorm sim run SCENARIO simulates them" in str(e.value)
