"""The throttle's safety order and exits, with one-line fakes: journal, guard, cut; restore on every path."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import pytest

from retrystorm.chaos.backends.base import BackendError, FaultBackend, TargetRef, TargetState
from retrystorm.chaos.controller import OutageController
from retrystorm.chaos.journal import Journal
from retrystorm.chaos.targets import FaultTarget
from retrystorm.chaos.watchdog import WatchdogOrder, arm
from retrystorm.errors import UserError


@dataclasses.dataclass
class FakeCut:
    ref: TargetRef
    log: list[str]
    cpus_before: float = 2.0
    cpus_during: float = 0.8

    def undo(self) -> dict[str, Any]:
        return {"kind": "fake", "restore": {"CpuQuota": -1}}

    def prepare(self) -> None:
        self.log.append("prepare")

    def apply(self) -> None:
        self.log.append("apply")

    def restore(self) -> str:
        self.log.append("restore")
        return "restored"


class FakeBackend(FaultBackend):
    name = "docker"

    def __init__(self, log: list[str]) -> None:
        self.log = log

    def resolve(self, target: str) -> list[TargetRef]:
        return [TargetRef(self.name, target, "c0ffee")]

    def targets(self) -> list[str]:
        return ["web"]

    def pause(self, ref: TargetRef) -> None: ...

    def resume(self, ref: TargetRef) -> None: ...

    def state(self, ref: TargetRef) -> TargetState:
        return TargetState.RUNNING

    def plan_cpu_cut(self, target: str, refs: list[TargetRef], capacity: float, tag: str) -> list[Any]:
        return [FakeCut(ref, self.log) for ref in refs]

    def restore_cpu(self, ref: TargetRef, undo: dict[str, Any]) -> str:
        self.log.append(f"restore_cpu {ref.ident} {undo['restore']}")
        return "restored"


class Switch:
    def __init__(self, log: list[str], journal: Path, fail: bool = False) -> None:
        self.log, self.journal, self.fail = log, journal, fail

    def arm(self, ref: TargetRef, outage_id: str, hold_s: float, *, fault: str, undo: dict) -> Any:
        journaled = [json.loads(line)["op"] for line in self.journal.read_text().splitlines()]
        self.log.append(f"arm {hold_s:g} undo={bool(undo)} journaled={journaled}")
        if self.fail:
            raise BackendError("cannot arm")
        log = self.log

        class Armed:
            def disarm(self) -> None:
                log.append("disarm")

            def count_from(self, start_monotonic: float) -> None: ...

        return Armed()


def controller(tmp_path: Path, log: list[str], **kwargs: Any) -> tuple[OutageController, FaultTarget]:
    journal = Journal(tmp_path / "journal.jsonl")
    backend = FakeBackend(log)
    made = OutageController(
        journal,
        dead_man=Switch(log, journal.path, fail=kwargs.pop("fail", False)),
        recovery_backends=[backend],
        **kwargs,
    )
    return made, FaultTarget("web", backend)


def test_journal_then_guard_then_cut_and_restore_then_disarm(tmp_path):
    log: list[str] = []

    async def scenario() -> None:
        made, target = controller(tmp_path, log)
        throttle = await made.throttle(target, 0.4, 30)
        assert throttle.status == "active"
        await throttle.end()
        assert (throttle.status, throttle.end_reason) == ("restored", "early")

    asyncio.run(scenario())
    assert log == ["prepare", "arm 30 undo=True journaled=['throttle']", "apply", "restore", "disarm"]


def test_a_switch_that_cannot_be_armed_means_no_cut(tmp_path):
    log: list[str] = []

    async def scenario() -> None:
        made, target = controller(tmp_path, log, fail=True)
        with pytest.raises(BackendError, match="cannot arm"):
            await made.throttle(target, 0.4, 30)
        (throttle,) = made.throttles.throttles()
        assert throttle.status == "failed"

    asyncio.run(scenario())
    assert "apply" not in log
    assert log[-1] == "restore"


def test_the_cut_ends_by_itself_clamped_to_the_maximum_outage(tmp_path):
    log: list[str] = []
    # The expiry waits through the controller's sleep, which here returns at once.

    async def fast() -> None:
        made, target = controller(tmp_path, log, max_outage_s=5, sleep=lambda _s: asyncio.sleep(0))
        throttle = await made.throttle(target, 0.4, 30)
        while throttle.status == "active":
            await asyncio.sleep(0)
        assert (throttle.duration_s, throttle.end_reason, throttle.status) == (5, "max_outage", "restored")

    asyncio.run(fast())
    assert log[-2:] == ["restore", "disarm"]


def test_signals_and_shutdown_restore_every_throttle(tmp_path):
    log: list[str] = []

    async def scenario() -> None:
        made, target = controller(tmp_path, log)
        async with made:
            throttle = await made.throttle(target, 0.4, 30)
        assert (throttle.status, throttle.end_reason) == ("restored", "shutdown")

    asyncio.run(scenario())
    assert log[-2:] == ["restore", "disarm"]
    assert Journal(tmp_path / "journal.jsonl").records() == []  # compacted: nothing pending


def test_a_second_cut_of_a_throttled_target_is_refused(tmp_path):
    async def scenario() -> None:
        made, target = controller(tmp_path, [])
        async with made:
            first = await made.throttle(target, 0.4, 30)
            with pytest.raises(UserError, match=rf"a throttle is in force already \({first.id}\); end that one first"):
                await made.throttle(target, 0.5, 30)

    asyncio.run(scenario())


@pytest.mark.parametrize("capacity", [0, 1.5, float("nan")])
def test_a_capacity_out_of_range_is_refused_before_anything_happens(tmp_path, capacity):
    log: list[str] = []

    async def scenario() -> None:
        made, target = controller(tmp_path, log)
        with pytest.raises(UserError, match="capacity: got"):
            await made.throttle(target, capacity, 30)

    asyncio.run(scenario())
    assert log == []


def test_recovery_restores_a_dead_controller_s_throttle_from_its_journaled_undo(tmp_path):
    log: list[str] = []
    journal = Journal(tmp_path / "journal.jsonl")
    journal.controller = "999999999@1"  # a controller that no longer runs
    journal.append("throttle", TargetRef("docker", "web", "c0ffee"), "t1", undo={"restore": {"NanoCpus": 1500000000}})

    async def scenario() -> list[TargetRef]:
        made, _ = controller(tmp_path, log)
        return await made.recover()

    assert asyncio.run(scenario()) == [TargetRef("docker", "web", "c0ffee")]
    assert log == ["restore_cpu c0ffee {'NanoCpus': 1500000000}"]
    assert journal.pending_throttles() == []


def throttle_order(**changes: Any) -> WatchdogOrder:
    group = "/sys/fs/cgroup/cpu/retrystorm-throttle-1-t1-0"
    undo = {"version": 1, "group": group, "original": "/sys/fs/cgroup/cpu", "quota_us": 1000, "period_us": 100000}
    fields = {"backend": "cgroup", "ident": group, "target": "web", "outage": "t1", "journal": None,
              "deadline_monotonic": time.monotonic() + 10, "fault": "throttle", "undo": undo}  # fmt: skip
    return WatchdogOrder(**fields | changes)


@pytest.mark.parametrize(
    ("changes", "message"),
    [({"ident": "/sys/fs/cgroup/cpu/retrystorm-throttle-other"}, "not the undo's cgroup"),
     ({"undo": {"version": 1, "group": "/etc", "original": "/", "quota_us": 1, "period_us": 1}}, "an absolute"),
     ({"undo": None}, "a throttle order without undo"), ({"backend": "process"}, "expected cgroup or docker"),
     ({"backend": "docker", "ident": "c0ffee", "undo": {"restore": {"Memory": 1}}}, "expected a restore body"),
     ({"fault": "freeze"}, "fault 'freeze': expected pause, throttle, reap or partition")],
)  # fmt: skip
def test_a_throttle_order_that_names_anything_else_is_refused(changes, message):
    with pytest.raises(BackendError, match=message) as refused:
        arm(throttle_order(**changes))
    assert "\n" not in str(refused.value)


def test_the_chaos_metrics_show_a_throttle_while_it_is_in_force(tmp_path):
    from prometheus_client import CollectorRegistry

    from retrystorm.chaos.metrics import register_chaos_metrics

    registry = CollectorRegistry()

    def sample(name: str) -> float | None:
        return registry.get_sample_value(name, {"target": "web"})

    async def scenario() -> None:
        made, target = controller(tmp_path, [])
        register_chaos_metrics(registry, made, ["web"])
        assert (sample("retrystorm_chaos_throttle_active"), sample("retrystorm_chaos_throttle_capacity_ratio")) == (
            0,
            1,
        )
        throttle = await made.throttle(target, 0.4, 30)
        assert (sample("retrystorm_chaos_throttle_active"), sample("retrystorm_chaos_throttle_capacity_ratio")) == (
            1,
            0.4,
        )
        await throttle.end()
        assert (sample("retrystorm_chaos_throttle_active"), sample("retrystorm_chaos_throttle_capacity_ratio")) == (
            0,
            1,
        )
        assert sample("retrystorm_chaos_throttles_total") == 1

    asyncio.run(scenario())
