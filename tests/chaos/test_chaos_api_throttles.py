"""``POST /throttles`` on a live chaos API with a registered process, in a real cgroup v1 group."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from .conftest import call

CPU = Path("/sys/fs/cgroup/cpu")
pytestmark = [
    pytest.mark.signals,
    pytest.mark.skipif(not os.access(CPU, os.W_OK), reason="needs a writable cgroup v1 cpu hierarchy (root)"),
]


def cpu_group(pid: int) -> str:
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "cpu" in controllers.split(","):
            return path
    raise AssertionError(f"pid {pid} has no cpu cgroup")


def test_a_throttle_over_the_api_cuts_shows_and_restores(chaos_api, victim):
    base, _ = chaos_api
    original = cpu_group(victim.pid)
    status, throttle = call(base, "POST", "/throttles", {"target": "target", "capacity": 0.4, "duration": "1m"})
    assert status == 201, throttle
    (group,) = throttle["instances"]
    assert cpu_group(victim.pid).rsplit("/", 1)[-1] == Path(group).name
    assert (throttle["status"], throttle["capacity"], throttle["cpus_during"]) == ("active", 0.4, [0.4 * len(
        os.sched_getaffinity(victim.pid))])  # fmt: skip
    text = call(base, "GET", "/metrics")[1]
    assert 'retrystorm_chaos_throttle_capacity_ratio{target="target"} 0.4' in text
    assert call(base, "GET", f"/throttles/{throttle['id']}")[1]["status"] == "active"
    status, ended = call(base, "DELETE", f"/throttles/{throttle['id']}")
    assert (status, ended["status"], ended["end_reason"]) == (200, "restored", "early")
    assert cpu_group(victim.pid) == original
    assert not Path(group).exists()


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"target": "target", "duration": "1s"}, 400, "capacity: required"),
        ({"target": "target", "capacity": 0, "duration": "1s"}, 400, "capacity: got 0, expected a fraction"),
        ({"target": "target", "capacity": 1.5, "duration": "1s"}, 400, "capacity: got 1.5"),
        ({"target": "target", "capacity": "0.4", "duration": "1s"}, 400, "capacity: got '0.4'"),
        ({"target": "target", "capacity": 0.4, "duration": "0"}, 400, "duration: got '0'"),
        ({"target": "nope", "capacity": 0.4, "duration": "1s"}, 404, "no target 'nope'"),
        ({"target": "pid:1", "capacity": 0.4, "duration": "1s"}, 403, "raw pids are not accepted"),
    ],
)
def test_bad_throttle_requests_are_4xx_in_one_line_and_cut_nothing(chaos_api, victim, body, status, message):
    base, _ = chaos_api
    original = cpu_group(victim.pid)
    got_status, got = call(base, "POST", "/throttles", body)
    assert (got_status, "\n" in got["error"]) == (status, False)
    assert message in got["error"]
    assert cpu_group(victim.pid) == original
    assert call(base, "GET", "/throttles") == (200, [])


def test_a_cross_site_throttle_is_refused(chaos_api, victim):
    base, _ = chaos_api
    headers = {"Content-Type": "application/json", "Origin": "https://evil.example"}
    status, got = call(base, "POST", "/throttles", {"target": "target", "capacity": 0.4, "duration": "1s"}, headers)
    assert status == 403
    assert "not for other sites' pages" in got["error"]


def test_sigterm_restores_an_active_throttle_before_exit(chaos_api, victim):
    base, process = chaos_api
    original = cpu_group(victim.pid)
    assert call(base, "POST", "/throttles", {"target": "target", "capacity": 0.5, "duration": "1m"})[0] == 201
    assert cpu_group(victim.pid) != original
    os.kill(process.pid, signal.SIGTERM)
    process.wait(timeout=20)
    assert cpu_group(victim.pid) == original


def test_a_throttle_through_the_chaos_api_backend_and_its_recovery(chaos_api, victim, tmp_path):
    """What a runner against a compose stack does: cut through the stack's chaos API; a new controller recovers."""
    import asyncio

    from retrystorm.chaos.backends.api import ChaosApiBackend
    from retrystorm.chaos.cli import make_controller
    from retrystorm.chaos.client import ChaosClient
    from retrystorm.chaos.targets import FaultTarget

    base, _ = chaos_api
    original = cpu_group(victim.pid)
    backend = ChaosApiBackend(ChaosClient(base), hold_s=60)
    journal = tmp_path / "runner-journal.jsonl"

    async def scenario() -> None:
        first = make_controller({"chaos-api": backend}, journal)
        throttle = await first.throttle(FaultTarget("target", backend), 0.5, 30)
        (cut,) = throttle.cuts
        assert cut.cpus_during == 0.5 * len(os.sched_getaffinity(victim.pid))
        assert cpu_group(victim.pid) != original
        await throttle.end()
        assert cpu_group(victim.pid) == original
        await first.throttle(FaultTarget("target", backend), 0.5, 30)  # left in place, as by a killed runner
        assert cpu_group(victim.pid) != original
        second = make_controller({"chaos-api": backend}, journal)
        assert [ref.target for ref in await second.recover()] == ["target"]
        assert cpu_group(victim.pid) == original

    asyncio.run(scenario())
