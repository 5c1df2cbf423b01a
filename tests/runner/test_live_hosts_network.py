"""A partition across hosts, for real: the target's host cut off from the worker's by its chaos agent, then healed.

Three network namespaces (tests/support/netns.py): the runner and its Locust master in ``runner``, one worker in
``w1``, the target and its agent in ``app``, the agent registering ``w1`` as the peer a partition cuts it off from.
One strategy, a 3 s ``partition: target`` in a 14 s run. The test checks the run's verdict, the partition as it was
played, the agent's own record (healed early by the runner, not by its watchdog), and that no blackhole route is
left. The namespaces, and every process inside them, are removed on every exit path.
"""

from __future__ import annotations

import json

import pytest

from tests.support.hosts_lab import AGENT_PORT, TOKEN, hosts_lab, run_scenario
from tests.support.netns import unavailable

pytestmark = [
    pytest.mark.live,
    pytest.mark.slow,
    pytest.mark.skipif(unavailable() is not None, reason=str(unavailable())),
]

SCENARIO = """
name: partition-across-hosts
model: fixed:base_delay=200ms
hosts:
  master: "{runner}:{master_port}"
  workers: 1
  agents: {{app: "http://{app}:{agent_port}"}}
target: {{url: "http://{app}:{target_port}", host: app, model_server: true}}
load: {{users: 10, think_time: exponential:1s, attempt_timeout: 1s, duration: 14s}}
strategies: [exponential]
faults: [{{partition: target, at: 4s, for: 3s}}]
"""


@pytest.fixture
def hosts(tmp_path):
    """The target and its agent on ``app`` (peer: ``w1``), a worker on ``w1``; all removed after."""
    with hosts_lab(tmp_path, ["w1"], lambda lab, _pid: ["--peer", f"w1={lab['w1'].address}"]) as lab:
        yield lab


def test_a_partition_across_hosts_is_played_by_the_agent_and_healed_on_time(tmp_path, hosts):
    document = run_scenario(hosts, tmp_path, SCENARIO)
    (row,) = document["results"]
    assert row["validity"]["valid"] is True
    agent = hosts["runner"].run(
        "curl", "-sS", "-H", f"Authorization: Bearer {TOKEN}", f"http://{hosts['app'].address}:{AGENT_PORT}/network"
    )
    (fault,) = json.loads(agent.stdout)  # the agent's own record of the partition it held
    assert (fault["kind"], fault["instances"]) == ("partition", [hosts["w1"].address])
    assert (fault["status"], fault["end_reason"]) == ("restored", "early")  # healed by the runner on time
    (played,) = row["triggers"]  # the partition as the run played it: in force once the agent answered
    assert (played["kind"], played["target"]) == ("partition", "target")
    assert 4.0 <= played["start_s"] < played["end_s"]
    assert 7.0 <= played["end_s"] < 8.0  # healed at its planned end
    assert fault["in_force_s"] == pytest.approx(played["end_s"] - played["start_s"], abs=0.5)  # one story
    assert hosts["app"].run("ip", "-j", "route", "show", "type", "blackhole").stdout.strip() in ("", "[]")
