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

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.netns import Lab, namespaces, unavailable

pytestmark = [
    pytest.mark.live,
    pytest.mark.slow,
    pytest.mark.skipif(unavailable() is not None, reason=str(unavailable())),
]

TOKEN = "lab-token"
ADMIN = "lab-admin"
WORKERS = ("w1", "w2")
HOSTS = ("runner", *WORKERS, "app")
#: Ports inside the lab's own namespaces: nothing else listens there.
MASTER_PORT, TARGET_PORT, AGENT_PORT = 5557, 8070, 8071
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


def _start(lab: Lab, host: str, log: Path, argv: list[str]) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return lab[host].popen([sys.executable, "-m", "retrystorm", *argv], stdout=out, stderr=subprocess.STDOUT)


@pytest.fixture
def hosts(tmp_path):
    """The four hosts: the target and its agent on ``app``, a worker on ``w1`` and on ``w2``; all removed after."""
    started: list[subprocess.Popen[bytes]] = []
    lab = Lab(HOSTS)
    try:
        with lab:
            app = lab["app"].address
            target = _start(lab, "app", tmp_path / "target.log", [
                "target", "--model", "fixed", "--host", app, "--port", str(TARGET_PORT), "--admin-token", ADMIN,
            ])  # fmt: skip
            started.append(target)
            started.append(_start(lab, "app", tmp_path / "agent.log", [
                "chaos", "serve", "--host", app, "--port", str(AGENT_PORT), "--token", TOKEN,
                "--target", f"target={target.pid}", "--journal", str(tmp_path / "agent.jsonl"),
            ]))  # fmt: skip
            assert lab["runner"].wait_listening(app, AGENT_PORT), "the agent never listened"  # asked first thing
            master = f"{lab['runner'].address}:{MASTER_PORT}"
            started += [_start(lab, host, tmp_path / f"{host}.log", ["worker", "--master", master]) for host in WORKERS]
            yield lab
    finally:
        for process in started:  # the lab's removal killed every process inside its namespaces: reap ours
            process.wait(timeout=30)
        assert not [name for name in namespaces() if name.startswith(lab.tag)], "the lab's namespaces remain"


def test_a_scenario_across_four_hosts_pauses_through_the_agent_and_counts_every_worker(tmp_path, hosts):
    scenario = tmp_path / "across.yaml"
    addresses = {"runner": hosts["runner"].address, "app": hosts["app"].address}
    ports = {"master_port": MASTER_PORT, "target_port": TARGET_PORT, "agent_port": AGENT_PORT}
    scenario.write_text(SCENARIO.format(**addresses, **ports))
    env = {**os.environ, "RETRYSTORM_CHAOS_TOKEN": TOKEN, "RETRYSTORM_ADMIN_TOKEN": ADMIN}
    run = subprocess.run(
        hosts["runner"].argv(
            sys.executable, "-m", "retrystorm", "run", str(scenario), "--out", str(tmp_path / "run"),
            "--journal", str(tmp_path / "runner.jsonl"),
        ),
        capture_output=True, text=True, timeout=180, env=env, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    document = json.loads((tmp_path / "run" / "results.json").read_text())
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
