"""Faults in the network across hosts, through a real chaos agent (in this process, on a real loopback port):
the runner's player sets a delay on the agent's proxy and ends it on time, refuses in one line what the agent did
not register, and sends the load to the proxy while its own reads stay on the target's URL."""

from __future__ import annotations

import asyncio

import pytest

from retrystorm.chaos.client import ChaosClient
from retrystorm.errors import UserError
from retrystorm.experiment.scenario import parse_scenario
from retrystorm.experiment.scenario.network import DelayWindow, PartitionWindow
from retrystorm.runner.errors import RunFailedError
from retrystorm.runner.hosts.network import AgentFaultsInTheNetwork
from retrystorm.runner.network_triggers import NetworkPlayer
from retrystorm.runner.runtime import Runtime
from tests.support.chaos_agent import agent_in_process

from .fakes import VirtualTime

SCENARIO = """
name: across
model: fixed
hosts: {{master: "127.0.0.1:5557", workers: 1, agents: {{app: {{url: "{agent}", proxy: {proxy}}}}}}}
target: {{url: "http://127.0.0.1:8070", host: app, model_server: true}}
load: {{users: 1, duration: 30s}}
strategies: [fixed:100ms]
faults: [{{delay: target, latency: 200ms, at: 5s, for: 5s}}, {{partition: target, at: 12s, for: 2s}}]
"""


class Handle:
    """The least of a target handle the wrapper reads."""

    base_url = "http://127.0.0.1:8070"
    faults: dict[str, object] = {}  # noqa: RUF012 - read only


def network_of(base_url: str, proxy: str = "web") -> AgentFaultsInTheNetwork:
    scenario = parse_scenario(SCENARIO.format(agent=base_url, proxy=proxy), source="s.yaml")
    return AgentFaultsInTheNetwork(scenario, {"app": ChaosClient(base_url)})


def run_with_agent(tmp_path, check, **registered):
    monkeypatch = pytest.MonkeyPatch()

    async def scenario():
        async with agent_in_process(tmp_path, monkeypatch, **registered) as agent:
            await check(agent)
            assert agent.network.active() == []

    try:
        asyncio.run(scenario())
    finally:
        monkeypatch.undo()


def test_a_delay_window_is_played_on_the_agents_proxy_and_ended_by_the_runner_at_its_end(tmp_path):
    async def check(agent):
        network = network_of(agent.base_url)
        await asyncio.to_thread(network.check, {"delay", "partition"}, [])
        runtime = Runtime(clock=VirtualTime().clock, sleep=asyncio.sleep, run_blocking=asyncio.to_thread)
        target = await network.wrap(Handle(), "fixed", life_s=30, seed=1, runtime=runtime)  # type: ignore[arg-type]
        assert target.base_url == f"http://127.0.0.1:{agent.network.proxies['web'].port}"  # where the load goes
        assert target.target.base_url == "http://127.0.0.1:8070"  # where the runner's own reads go
        in_force = []
        toxics = target.toxics

        class Watching:
            def set(self, toxic_id, toxic, until):
                toxics.set(toxic_id, toxic, until)
                in_force.extend(row["toxic"] for row in agent.control.status()["toxics"])

            def clear(self, toxic_id):
                return toxics.clear(toxic_id)

        player = NetworkPlayer([DelayWindow(0, 0.2, latency_s=0.2, jitter_s=0.01)], Watching(), runtime)
        await player.play(runtime.clock())
        await player.restore()
        assert in_force == [{"kind": "delay", "latency_s": 0.2, "jitter_s": 0.01, "direction": "downstream"}]
        [fault] = await asyncio.to_thread(ChaosClient(agent.base_url).network_faults)
        assert (fault["kind"], fault["target"], fault["status"], fault["end_reason"]) == (
            "delay", "web:delay", "restored", "early",
        )  # fmt: skip
        assert (await asyncio.to_thread(agent.control.status))["toxics"] == []

    run_with_agent(tmp_path, check)


def test_a_proxy_the_agent_did_not_register_is_refused_in_one_line_naming_what_it_did(tmp_path):
    async def check(agent):
        with pytest.raises(UserError) as caught:
            await asyncio.to_thread(network_of(agent.base_url, proxy="api").check, {"delay"}, [])
        assert "hosts.agents.app.proxy: the agent" in str(caught.value)
        assert "registered no fault proxy 'api'; it registered: web" in str(caught.value)

    run_with_agent(tmp_path, check)


def test_a_partition_by_an_agent_with_no_peer_is_refused_before_anything_starts(tmp_path):
    async def check(agent):
        with pytest.raises(UserError, match="the agent of app registered no peer to cut it off from"):
            await asyncio.to_thread(network_of(agent.base_url).check, {"partition"}, ["target"])

    run_with_agent(tmp_path, check)


def test_a_partition_the_agent_refuses_fails_the_run_in_one_line(tmp_path):
    async def check(agent):
        network = network_of(agent.base_url)
        runtime = Runtime(clock=VirtualTime().clock, sleep=asyncio.sleep, run_blocking=asyncio.to_thread)
        target = await network.wrap(Handle(), "fixed", life_s=30, seed=1, runtime=runtime)  # type: ignore[arg-type]
        player = NetworkPlayer([PartitionWindow(0, 1)], target.toxics, runtime, partitions=target.partitions)
        with pytest.raises(RunFailedError, match=r"the chaos agent did not start partition .*no peer is registered"):
            await player.play(runtime.clock())
        await player.restore()

    run_with_agent(tmp_path, check)
