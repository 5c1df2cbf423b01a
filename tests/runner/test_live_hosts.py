"""A whole scenario across hosts, for real: network namespaces joined by veth pairs stand in for the hosts.

The runner and its Locust master in one namespace, a worker in each of two others, the target
(``retrystorm target``) and its chaos agent in a fourth, each host with its own address on a private /24
(tests/support/netns.py; nothing leaves the machine, no traffic goes anywhere but those addresses and
loopback). One strategy, a short timeline: steady load from both workers, the target paused for 3 s through
its agent, then back. The test checks the verdict, that each worker's load was counted (the shares summing to
the attempts), and the agent's own record of the pause it held. The namespaces, and every process inside them,
are removed on every exit path (the lab's context manager), and a SIGKILLed test's are swept by the next lab.
"""

from __future__ import annotations

import pytest

from tests.support.hosts_lab import hosts_lab, run_scenario
from tests.support.netns import unavailable

pytestmark = [
    pytest.mark.live,
    pytest.mark.slow,
    pytest.mark.skipif(unavailable() is not None, reason=str(unavailable())),
]

WORKERS = ("w1", "w2")
#: The server holds about 3 requests in its steady state (16 a second for 200 ms): its two steady readings are then
#: never both 0, which would leave the recovery rule's noise room at one request (a 50 ms delay held 0.8, and a run
#: whose steady readings were both 0 read 2 in flight after the resume and "never recovered").
SCENARIO = """
name: across-hosts
model: fixed:base_delay=200ms
hosts:
  master: "{runner}:{master_port}"
  workers: 2
  agents: {{app: "http://{app}:{agent_port}"}}
target: {{url: "http://{app}:{target_port}", host: app, model_server: true}}
load: {{users: 20, think_time: exponential:1s, attempt_timeout: 1s, duration: 16s}}
strategies: [exponential]
faults: [{{pause: target, at: 4s, for: 3s}}]
assertions:
  exponential: {{server_recovers_within: 6s}}
"""


@pytest.fixture
def hosts(tmp_path):
    """The four hosts: the target and its agent on ``app``, a worker on ``w1`` and on ``w2``; all removed after."""
    with hosts_lab(tmp_path, WORKERS, lambda _lab, target_pid: ["--target", f"target={target_pid}"]) as lab:
        yield lab


def test_a_scenario_across_four_hosts_pauses_through_the_agent_and_counts_every_worker(tmp_path, hosts):
    document = run_scenario(hosts, tmp_path, SCENARIO)
    (row,) = document["results"]
    assert row["strategy"] == "exponential"
    assert row["validity"]["valid"] is True
    assert row["passed"] is True
    ((check,),) = [row["assertions"]]
    assert check["check"] == "server_recovers_within"
    assert check["passed"] is True
    assert check["measured"] is not None  # back after the pause, within the assertion's 6 s
    assert row["server_recovery_s"] == pytest.approx(check["measured"], abs=1e-5)
    fresh = row["fresh_requests"]  # the runner's own requests, from its namespace to the target's host
    assert fresh["sent"] >= 12, fresh
    assert fresh["answered_in_time"] < fresh["sent"], fresh  # those of the pause were not answered in time
    ((paused_s, resumed_s),) = row["outages"]  # the one pause, as it happened
    assert 3.0 <= resumed_s - paused_s < 6.0
    details = document["run"]["strategies"]["exponential"]
    workers = {process: sent for process, sent in details["generators"].items() if sent > 0}
    assert len(workers) == 2, details["generators"]  # both workers sent load, each counted apart
    assert sum(workers.values()) == row["attempts"]
    (outage,) = details["agents"]["app"]  # the agent's own record of the pause it held
    assert outage["target"] == "target"
    assert outage["status"] == "resumed"
    assert outage["end_reason"] == "early"  # ended on time by the runner, not by the agent's deadline
