"""Faults in the network before anything starts: what the local backend plays through its fault proxy, and what a
backend refuses in one line."""

from __future__ import annotations

import pytest

from retrystorm.chaos.backends import ProcessBackend
from retrystorm.errors import UserError
from retrystorm.experiment.scenario import load_scenario
from retrystorm.runner.cli import prepare
from retrystorm.runner.compose import ComposeEndpoints, compose_stack
from retrystorm.runner.local import local_stack

SCENARIO = """
name: net
{target}
load: {{users: 10, duration: 60s}}
strategies: [fixed:100ms]
faults: [{fault}]
"""
BUILT_IN = "model: exponential"
OWN = 'target: {url: "http://127.0.0.1:9"}'  # a service of one's own, with nothing a pause could freeze
PROXIED = [
    "{delay: target, latency: 200ms, at: 10s, for: 5s}",
    "{loss: target, probability: 0.1, at: 10s, for: 5s}",
    "{hang: target, at: 10s, for: 5s}",
    "{reset: target, at: 10s, for: 5s}",
]


def scenario(tmp_path, fault, target=BUILT_IN):
    path = tmp_path / "net.yaml"
    path.write_text(SCENARIO.format(fault=fault, target=target))
    return load_scenario(path)


@pytest.mark.parametrize("target", [BUILT_IN, OWN])
@pytest.mark.parametrize("fault", PROXIED)
def test_the_local_backend_plays_delay_loss_hang_and_reset_through_its_fault_proxy(tmp_path, fault, target):
    plan, _ = prepare(scenario(tmp_path, fault, target), (), local_stack(tmp_path / "logs"))
    [window] = plan.triggers
    assert window.kind == fault[1:].partition(":")[0]


def test_the_local_backend_refuses_a_partition_and_a_proxy_fault_on_another_name(tmp_path):
    with pytest.raises(UserError, match=r"^faults\[0\]: partition: target: a partition cuts a host off") as e:
        prepare(scenario(tmp_path, "{partition: target, at: 10s, for: 5s}"), (), local_stack(tmp_path / "logs"))
    assert "retrystorm sim run SCENARIO simulates it" in str(e.value)
    with pytest.raises(UserError, match=r"^faults: delay: 'db' is not a target of the .*; accepted: target$"):
        prepare(scenario(tmp_path, "{delay: db, latency: 1s, at: 10s, for: 5s}"), (), local_stack(tmp_path / "x"))


@pytest.mark.parametrize("fault", [*PROXIED, "{partition: target, at: 10s, for: 5s}"])
def test_the_compose_backend_refuses_network_faults_in_one_line(tmp_path, fault):
    stack = compose_stack(ComposeEndpoints(), backend=ProcessBackend({}))
    kind = fault[1:].partition(":")[0]
    with pytest.raises(UserError, match=rf"^faults\[0\]: {kind}: target: faults in the network are played live"):
        prepare(scenario(tmp_path, fault), (), stack)


def test_a_grpc_load_is_refused_network_faults_in_one_line(tmp_path):
    text = "name: net\nmodel: exponential\ngrpc: {mode: real}\nload: {users: 10, duration: 60s}\n"
    text += "strategies: [grpc-retry]\nfaults: [{delay: target, latency: 1s, at: 10s, for: 5s}]\n"
    (tmp_path / "net.yaml").write_text(text)
    loaded = load_scenario(tmp_path / "net.yaml")
    stack = local_stack(tmp_path / "logs", grpc=loaded.grpc)
    with pytest.raises(UserError, match=r"^faults\[0\]: delay: target: the fault proxy is put in front of the target"):
        prepare(loaded, (), stack)
