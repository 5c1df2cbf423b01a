"""A partition across hosts, for real: the target's host cut off from the worker's by its chaos agent, then healed.

Three network namespaces (tests/support/netns.py): the runner and its Locust master in ``runner``, one worker in
``w1``, the target and its agent in ``app``, the agent registering ``w1`` as the peer a partition cuts it off from.
One strategy, a 3 s ``partition: target`` in a 14 s run. The test checks the run's verdict, the partition as it was
played, the agent's own record (healed early by the runner, not by its watchdog), and that no blackhole route is
left. The namespaces, and every process inside them, are removed on every exit path.
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
#: Ports inside the lab's own namespaces: nothing else listens there.
MASTER_PORT, TARGET_PORT, AGENT_PORT = 5557, 8070, 8071
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


def _start(lab: Lab, host: str, log: Path, argv: list[str]) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return lab[host].popen([sys.executable, "-m", "retrystorm", *argv], stdout=out, stderr=subprocess.STDOUT)


@pytest.fixture
def hosts(tmp_path):
    """The target and its agent on ``app`` (peer: ``w1``), a worker on ``w1``; all removed after."""
    started: list[subprocess.Popen[bytes]] = []
    lab = Lab(["runner", "w1", "app"])
    try:
        with lab:
            app = lab["app"].address
            target = _start(lab, "app", tmp_path / "target.log", [
                "target", "--model", "fixed", "--host", app, "--port", str(TARGET_PORT), "--admin-token", ADMIN,
            ])  # fmt: skip
            started.append(target)
            started.append(_start(lab, "app", tmp_path / "agent.log", [
                "chaos", "serve", "--host", app, "--port", str(AGENT_PORT), "--token", TOKEN,
                "--peer", f"w1={lab['w1'].address}", "--journal", str(tmp_path / "agent.jsonl"),
            ]))  # fmt: skip
            assert lab["runner"].wait_listening(app, AGENT_PORT), "the agent never listened"
            master = f"{lab['runner'].address}:{MASTER_PORT}"
            started.append(_start(lab, "w1", tmp_path / "w1.log", ["worker", "--master", master]))
            yield lab
    finally:
        for process in started:  # the lab's removal killed every process inside its namespaces: reap ours
            process.wait(timeout=30)
        assert not [name for name in namespaces() if name.startswith(lab.tag)], "the lab's namespaces remain"


def test_a_partition_across_hosts_is_played_by_the_agent_and_healed_on_time(tmp_path, hosts):
    scenario = tmp_path / "partition.yaml"
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
    assert row["validity"]["valid"] is True
    agent = hosts["runner"].run(
        "curl", "-sS", "-H", f"Authorization: Bearer {TOKEN}", f"http://{addresses['app']}:{AGENT_PORT}/network"
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
