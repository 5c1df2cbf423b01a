"""A chaos agent's network faults end by their deadlines after the agent is SIGKILLed: a real partition (a blackhole
route inside a network namespace) healed by the watchdog, and a real delay on the agent's fault proxy ended by
the proxy itself, each checked 1 s after the fault's deadline.

Two hosts in network namespaces (:mod:`tests.support.netns`): ``app`` runs ``retrystorm chaos serve`` with a fault
proxy and ``peer`` registered; ``peer`` runs a listener. Requests to the agent go from inside ``app`` (curl on its
loopback); the proxy's control socket is a file, read from here. The lab, and everything run inside it, is removed
on every exit path.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from retrystorm.chaos.network.control import ProxyControl
from tests.support.netns import Lab, namespaces, unavailable

pytestmark = [pytest.mark.live, pytest.mark.signals, pytest.mark.skipif(unavailable() is not None,
                                                                        reason=str(unavailable()))]  # fmt: skip

AGENT_PORT, PROXY_PORT, UPSTREAM_PORT, PEER_PORT = 8071, 8080, 8000, 8001
HOLD_S = 3.0
LISTEN = "import socket, time; s = socket.create_server(('0.0.0.0', {port})); time.sleep(120)"


def post(lab: Lab, body: dict[str, object]) -> dict[str, object]:
    """``POST /network`` to the agent, from inside ``app``."""
    done = lab["app"].run(
        "curl", "-sS", "-X", "POST", "-H", "Content-Type: application/json", "-d", json.dumps(body),
        f"http://127.0.0.1:{AGENT_PORT}/network",
    )  # fmt: skip
    answer = json.loads(done.stdout or "{}")
    assert isinstance(answer, dict) and answer.get("status") == "active", (done.stdout, done.stderr)
    return answer


def blackholes(lab: Lab) -> list[object]:
    done = lab["app"].run("ip", "-j", "route", "show", "type", "blackhole")
    return list(json.loads(done.stdout or "[]"))


def reaches_peer(lab: Lab) -> bool:
    """Whether ``app`` can connect to the listener on ``peer`` (a blackhole route fails the connect at once)."""
    return lab["app"].wait_listening(lab["peer"].address, PEER_PORT, timeout_s=0.5)


@pytest.fixture
def lab(tmp_path):
    started: list[subprocess.Popen[bytes]] = []
    made = Lab(["app", "peer"])
    try:
        with made:
            peer = made["peer"]
            started.append(peer.popen([sys.executable, "-c", LISTEN.format(port=PEER_PORT)]))
            with (tmp_path / "agent.log").open("wb") as log:
                started.append(made["app"].popen([
                    sys.executable, "-m", "retrystorm", "chaos", "serve", "--port", str(AGENT_PORT),
                    "--proxy", f"web=127.0.0.1:{PROXY_PORT},127.0.0.1:{UPSTREAM_PORT}",
                    "--peer", f"peer={peer.address}", "--journal", str(tmp_path / "agent.jsonl"),
                ], stdout=log, stderr=subprocess.STDOUT))  # fmt: skip
            assert made["app"].wait_listening("127.0.0.1", AGENT_PORT), (tmp_path / "agent.log").read_text()
            assert made["app"].wait_listening(peer.address, PEER_PORT), "the peer never listened"
            yield made, started[1]
    finally:
        for process in started:  # the lab's removal killed everything inside it: the proxy, the watchdog, these
            process.wait(timeout=30)
        assert not [name for name in namespaces() if name.startswith(made.tag)], "the lab's namespaces remain"


def test_a_partition_and_a_delay_end_by_their_deadlines_after_a_sigkill_of_the_agent(tmp_path, lab):
    hosts, agent = lab
    peer = hosts["peer"].address
    assert reaches_peer(hosts)
    cut = post(hosts, {"kind": "partition", "peers": ["peer"], "duration": HOLD_S})
    delay = post(hosts, {"kind": "delay", "target": "web", "latency": "200ms", "duration": HOLD_S})
    in_force_by = time.monotonic()  # both answered: both in force, each deadline at most HOLD_S from now
    assert (cut["instances"], delay["settings"]["latency_s"]) == ([peer], 0.2)
    proxy = ProxyControl(tmp_path / "agent.proxies" / "web.sock")
    assert [toxic["id"] for toxic in proxy.status()["toxics"]] == [delay["id"]]
    assert [row["dst"] for row in blackholes(hosts)] == [peer]  # type: ignore[index]
    assert not reaches_peer(hosts)

    agent.send_signal(signal.SIGKILL)
    agent.wait(timeout=10)
    time.sleep(max(0.0, in_force_by + HOLD_S + 1.0 - time.monotonic()))  # 1 s after the deadline

    assert blackholes(hosts) == [], "the partition outlived its deadline"
    status = proxy.status()
    assert status["toxics"] == [], "the delay outlived its deadline"
    assert status["stats"].get("toxics_expired") == 1  # the proxy ended it itself: nobody else was left to
    assert reaches_peer(hosts)
    records = [json.loads(line) for line in Path(tmp_path / "agent.jsonl").read_text().splitlines()]
    healed = [r for r in records if r["op"] == "heal"]
    assert [(r["ident"], r["reason"], r["status"]) for r in healed] == [(peer, "watchdog", "ok")]
    assert [r["op"] for r in records].count("toxic") == 1  # journaled before it took effect, for recovery
