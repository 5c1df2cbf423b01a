"""One-line fakes of everything a live run touches, and virtual time to run it in milliseconds.

:class:`VirtualTime` is the run's clock and sleep: when every task is waiting on a
sleep, time jumps to the earliest wake-up. Backends are called directly (no worker
threads), so "every task waiting" is exactly "nothing ready in the event loop". A
:class:`World` records what happened, in order and with the virtual time of each
event, for the tests to compare with the plan.
"""

from __future__ import annotations

import asyncio
import dataclasses
import heapq
import itertools
from collections.abc import Callable
from typing import Any

from retrystorm.chaos.backends.base import BackendError, FaultBackend, TargetRef, TargetState
from retrystorm.chaos.targets import FaultTarget
from retrystorm.loadgen.readings import ClientReading, TargetReading
from retrystorm.runner.errors import RunFailedError
from retrystorm.runner.live_triggers import builtin_refusal
from retrystorm.runner.orchestrate import Stack
from retrystorm.runner.runtime import Runtime

from .conftest import client, target


class VirtualTime:
    """A clock that stands still while anything can run, and jumps to the next wake-up when nothing can.

    The first sleep starts a driver task in the running loop: whenever nothing is ready to
    run, it moves time to the earliest wake-up and wakes that sleeper. Works under a plain
    ``asyncio.run``; the driver ends when nobody sleeps and starts again with the next sleep.
    """

    def __init__(self) -> None:
        self.now = 0.0
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()
        self._driver: asyncio.Task[None] | None = None

    def clock(self) -> float:
        return self.now

    async def sleep(self, delay: float) -> None:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        heapq.heappush(self._sleepers, (self.now + max(0.0, delay), next(self._order), future))
        if self._driver is None or self._driver.done():
            self._driver = loop.create_task(self._drive(), name="virtual time")
        await future

    async def _drive(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(0)
            if loop._ready:  # something can run now: let it
                continue
            while self._sleepers and self._sleepers[0][2].done():  # cancelled sleeps
                heapq.heappop(self._sleepers)
            if not self._sleepers:
                return
            wake, _, future = heapq.heappop(self._sleepers)
            self.now = max(self.now, wake)
            future.set_result(None)


async def direct(function: Callable[..., Any], *args: Any) -> Any:
    """Call a blocking function in the loop (fakes never block)."""
    return function(*args)


class World:
    """Everything that happened during a fake run, as ``(time_s, event)``."""

    def __init__(self, time: VirtualTime) -> None:
        self.time = time
        self.events: list[tuple[float, str]] = []
        #: ``(strategy label, time_s) -> what to do`` at that reading: "die", "lose load", a callable.
        self.at: dict[tuple[str, float], Any] = {}
        #: ``strategy label -> (virtual time -> the generator's share of a core)``; unset: 0.2 of a core.
        self.cpu_of: dict[str, Callable[[float], float | None]] = {}
        #: The number of the trigger change (from 1) the target's controls refuse; ``None``: none.
        self.fail_control_at: int | None = None
        #: A slow cuts the fault target's CPU through the controller's throttle (a service of one's own).
        self.cpu_cut = False
        #: ``strategy label -> HTTP status`` every attempt of ``GET /api`` gets (unset: 200 for all).
        self.status_of: dict[str, int] = {}

    def cpu(self, label: str, now: float) -> dict[str, float] | None:
        share = self.cpu_of.get(label, lambda _: 0.2)(now)
        return None if share is None else {"locust (pid 1)": share}

    def note(self, event: str) -> None:
        self.events.append((round(self.time.now, 6), event))

    def names(self) -> list[str]:
        return [event for _, event in self.events]


class FakeBackend(FaultBackend):
    """Freezes nothing; records pauses and resumes. ``fail_resume``: resumes raise :class:`BackendError`."""

    name = "fake"

    def __init__(self, world: World, *, fail_resume: bool = False) -> None:
        self.world = world
        self.fail_resume = fail_resume
        self.paused: set[str] = set()

    def targets(self) -> list[str]:
        return ["target"]

    def resolve(self, target: str) -> list[TargetRef]:
        return [TargetRef(self.name, target, f"{target}#1")]

    def pause(self, ref: TargetRef) -> None:
        self.paused.add(ref.ident)
        self.world.note(f"pause {ref.target}")

    def resume(self, ref: TargetRef) -> None:
        if self.fail_resume:
            self.world.note(f"resume {ref.target} failed")
            raise BackendError(f"cannot resume {ref.describe()}: the engine went away")
        if ref.ident in self.paused:
            self.paused.discard(ref.ident)
            self.world.note(f"resume {ref.target}")

    def state(self, ref: TargetRef) -> TargetState:
        return TargetState.PAUSED if ref.ident in self.paused else TargetState.RUNNING

    def plan_cpu_cut(self, target: str, refs: list[TargetRef], capacity: float, tag: str) -> list[Any]:
        return [FakeCpuCut(TargetRef(self.name, target, f"{target}#cpu"), self.world, capacity)]


@dataclasses.dataclass
class FakeCpuCut:
    """A CPU cut of 2 CPUs that records its cut and its restore."""

    ref: TargetRef
    world: World
    capacity: float
    cpus_before: float = 2.0

    @property
    def cpus_during(self) -> float:
        return self.cpus_before * self.capacity

    def undo(self) -> dict[str, Any]:
        return {"kind": "fake"}

    def prepare(self) -> None:
        pass

    def apply(self) -> None:
        self.world.note(f"cut {self.ref.target} {self.capacity:g}")

    def restore(self) -> str:
        self.world.note(f"uncut {self.ref.target}")
        return "restored"


class FakeControls:
    """Records each capacity and error change, and the restore; ``fail_at``: the change of that number raises."""

    def __init__(self, world: World, fail_at: int | None = None) -> None:
        self.world, self.fail_at, self.calls = world, fail_at, 0

    def _call(self, event: str) -> None:
        self.calls += 1
        if self.calls == self.fail_at:
            raise RunFailedError(f"the target refused: {event}")
        self.world.note(event)

    async def set_capacity(self, capacity: float, hold_s: float) -> None:
        self._call(f"capacity {capacity:g}")

    async def set_errors(self, status: int | None, probability: float) -> None:
        self._call(f"errors {status} {probability:g}" if status is not None else "errors off")

    async def restore(self) -> None:
        self.world.note("restore")


class FakeTarget:
    def __init__(self, world: World, label: str, backend: FakeBackend) -> None:
        self.world, self.label, self.backend = world, label, backend
        self.base_url = "http://127.0.0.1:1"
        self.grpc = None
        self.metrics_url = self.base_url + "/metrics"
        self.faults = {"target": FaultTarget("target", backend)}
        self.controls = FakeControls(world, world.fail_control_at)
        self.cpu_target = FaultTarget("target", backend) if world.cpu_cut else None
        self.dead = False

    def describe(self) -> str:
        return f"fake target of {self.label}"

    def check(self) -> None:
        if self.dead:
            raise RunFailedError(f"the target of {self.label} died during the run")

    async def stop(self) -> None:
        self.world.note(f"stop target {self.label}" + (" while paused" if self.backend.paused else ""))


class FakeTargets:
    def __init__(self, world: World, backend: FakeBackend) -> None:
        self.world, self.backend = world, backend
        self.started: list[FakeTarget] = []

    def recovery_backends(self) -> list[FaultBackend]:
        return [self.backend]

    def fault_target_names(self) -> list[str]:
        return ["target"]

    def trigger_refusal(self, kind: str) -> str | None:
        return builtin_refusal(kind)

    def describe(self, model: object) -> str:
        return "fake targets"

    async def start(self, label: str, model: object, seed: int) -> FakeTarget:
        self.world.note(f"start target {label}")
        handle = FakeTarget(self.world, label, self.backend)
        self.started.append(handle)
        return handle


class FakeLoad:
    def __init__(self, world: World, label: str) -> None:
        self.world, self.label = world, label
        self.metrics_url = "http://127.0.0.1:2/metrics"
        self.user_processes = 1

    def describe(self) -> str:
        return f"fake load of {self.label}"

    def check(self) -> None:
        pass

    async def generator_cpu(self) -> dict[str, float] | None:
        """The share of a core ``World.cpu`` says the generator used (``None``: not read)."""
        return self.world.cpu(self.label, self.world.time.now)

    async def stop(self) -> None:
        self.world.note(f"stop load {self.label}")


class FakeDriver:
    def __init__(self, world: World) -> None:
        self.world = world

    def describe(self, settings: object) -> str:
        return "fake load"

    def spike_refusal(self) -> str | None:
        return None

    async def start(self, target: FakeTarget, settings: Any, spikes: Any = ()) -> FakeLoad:
        self.world.note(f"start load {settings.label}")
        return FakeLoad(self.world, settings.label)


class FakeMetrics:
    """Readings of a steady 100 requests/s; the target part is ``None`` while it is paused.

    ``World.at[(label, t)]`` runs at the reading of second ``t``: ``"die"`` kills the target,
    a callable is called.
    """

    def __init__(self, world: World, backend: FakeBackend) -> None:
        self.world, self.backend = world, backend
        self.reads: list[tuple[float, bool]] = []

    async def read(
        self, target: FakeTarget, load: FakeLoad, *, timeout_s: float
    ) -> tuple[TargetReading | None, ClientReading | None]:
        second = round(self.world.time.now - self._t0(load), 6)
        action = self.world.at.get((load.label, second))
        if action == "die":
            target.dead = True
        elif callable(action):
            action()
        paused = bool(self.backend.paused)
        self.reads.append((second, paused))
        status = self.world.status_of.get(load.label, 200)
        if status >= 400:  # 100 attempts a second, every one refused
            return (None if paused else target_reading()), answered(0.0, 100.0 * second, status)
        ok = 100.0 * second
        return (None if paused else target_reading()), answered(ok, ok, status)

    def _t0(self, load: FakeLoad) -> float:
        starts = [time for time, event in self.world.events if event == f"start load {load.label}"]
        return starts[-1]

    async def close(self) -> None:
        self.world.note("close metrics")


def answered(ok: float, attempts: float, status: int) -> ClientReading:
    """A client reading whose attempts of ``GET /api`` got ``status`` (``ok`` of them succeeded)."""
    outcome = "ok" if status < 400 else "client_error" if status < 500 else "server_error"
    return dataclasses.replace(
        client(ok, attempts, started=attempts),
        attempts={outcome: attempts},
        outcomes_by_request={("/api", outcome): attempts},
        statuses_by_request={("/api", str(status)): attempts},
        requests_gave_up=attempts - ok,
    )


def target_reading() -> TargetReading:
    return target(10.0)


def fake_stack(world: World, *, fail_resume: bool = False) -> tuple[Stack, FakeBackend, FakeMetrics]:
    """A stack of fakes over one :class:`FakeBackend`."""
    backend = FakeBackend(world, fail_resume=fail_resume)
    metrics = FakeMetrics(world, backend)
    return Stack("fake stack", FakeTargets(world, backend), FakeDriver(world), metrics), backend, metrics


def fake_runtime(time: VirtualTime, switch: Any) -> Runtime:
    return Runtime(clock=time.clock, sleep=time.sleep, run_blocking=direct, dead_man=switch)
