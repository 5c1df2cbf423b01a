"""Run a plan: for each strategy a fresh target, its load, the fault timeline, a reading every second.

Backend-agnostic: it talks to a :class:`Stack` of protocols (:mod:`retrystorm.runner.interfaces`)
and pauses targets only through an :class:`~retrystorm.chaos.controller.OutageController`, whose
guarantees it relies on: every pause journaled before it happens, resumed when its time
is up, when the strategy's run ends for any reason, on SIGINT/SIGTERM, and at the next
start if this process was killed. The slow and errors triggers are played on the
target's controls (:mod:`retrystorm.runner.live_triggers`), a slow of a service of one's own as
the controller's CPU throttle of what a pause freezes (:mod:`retrystorm.runner.throttle_controls`),
the ``delay``, ``loss``, ``hang`` and ``reset`` windows as toxics on a fault proxy in front of the target
(:mod:`retrystorm.runner.network_triggers`, where the stack has one: :mod:`retrystorm.runner.fault_proxy`),
and undone, exactly, in the same ``finally``. After the targets are resumed and restored, the load and then the target
are stopped, also on errors and interruptions.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import math
import signal
from collections.abc import Mapping, Sequence
from typing import Any

from retrystorm.chaos.annotations import GrafanaAnnotations, annotations_from_env, trigger_annotation
from retrystorm.chaos.controller import MAX_OUTAGE_CEILING_S, Outage, OutageController
from retrystorm.chaos.deadman import WatchdogSwitch
from retrystorm.chaos.journal import Journal, utc_now
from retrystorm.durations import format_duration
from retrystorm.experiment.scenario import OutageWindow, SlowWindow, SpikeWindow, TriggerWindow
from retrystorm.experiment.scenario.network import NETWORK_KINDS, PROXY_KINDS
from retrystorm.loadgen.readings import Reading
from retrystorm.runner.errors import RunFailedError, SteadyStateError
from retrystorm.runner.fault_proxy import NetworkFaultsProvider, control_of, partitions_of
from retrystorm.runner.fresh_probe import FreshProbe, probe_for
from retrystorm.runner.interfaces import (
    LoadDriver,
    LoadHandle,
    MetricsSource,
    TargetControls,
    TargetHandle,
    TargetProvider,
)
from retrystorm.runner.live_triggers import LiveTriggers
from retrystorm.runner.network_triggers import NetworkPlayer
from retrystorm.runner.plan import OVERHEAD_S, Plan, StrategyPlan, phase_at
from retrystorm.runner.progress import Display, Status
from retrystorm.runner.record import StrategyRecord
from retrystorm.runner.runtime import Runtime
from retrystorm.runner.slo import SloGuard
from retrystorm.runner.steady import judge_readings, request_names, steady_ticks
from retrystorm.runner.throttle_controls import LEVEL_MARGIN_S, ThrottleControls

#: Deadline of one reading: a second's reading must not delay the next.
READ_TIMEOUT_S = 0.8
#: The controller's maximum outage is the longest planned one plus this.
OUTAGE_MARGIN_S = 5.0


@dataclasses.dataclass(frozen=True, slots=True)
class Stack:
    """Where targets and load come from, and how they are read."""

    name: str
    targets: TargetProvider
    load: LoadDriver
    metrics: MetricsSource
    #: What plays the network windows: a fault proxy per strategy in front of the target, or the chaos agents'
    #: proxies and partitions across hosts (``None``: refused).
    network: NetworkFaultsProvider | None = None
    #: Whether the runner sends fresh requests to the target (:mod:`retrystorm.runner.fresh_probe`): where it
    #: reaches the address the load is sent to.
    fresh_requests: bool = False

    def trigger_refusal(self, kind: str) -> str | None:
        """Why a trigger of ``kind`` cannot be played live on this stack, and what would; ``None``: it can."""
        if kind == "spike":
            return self.load.spike_refusal()
        if kind in NETWORK_KINDS and self.network is not None:
            return self.network.refusal(kind)
        return self.targets.trigger_refusal(kind)

    def fault_target_names(self, kind: str) -> list[str]:
        """What a window of ``kind`` may name (a network window: what the load is sent to, where a proxy plays it)."""
        if kind in PROXY_KINDS and self.network is not None:
            return self.network.target_names()
        return self.targets.fault_target_names()


class RunInterruptedError(Exception):
    """SIGINT or SIGTERM stopped the run (every target was resumed, every process stopped)."""


class StrategyRun:
    """One strategy's run against a started target and load."""

    def __init__(
        self,
        plan: StrategyPlan,
        outages: Sequence[OutageWindow],
        controller: OutageController,
        display: Display,
        position: tuple[int, int, float],
        *,
        runtime: Runtime,
        plan_window: tuple[float, float] | None = None,
    ) -> None:
        self.plan = plan
        self.outages = list(outages)
        self.controller = controller
        self.display = display
        self.index, self.total, self.later_s = position
        self.runtime = runtime
        self.clock = runtime.clock
        self.paused: list[Outage] = []
        self.readings: list[Reading] = []
        #: The other triggers' windows (slow, spike, errors), for the display.
        self.triggers: list[TriggerWindow] = []
        #: Tasks running beside the readings (the triggers): one that failed fails the run at the next reading.
        self.watched: list[asyncio.Task[None]] = []
        #: The scenario's stop conditions: a breach ends the readings early (:mod:`retrystorm.runner.slo`).
        self.slo: SloGuard | None = None
        #: The whole seconds the steady window is judged over before any trigger (``None``: after the run).
        self.steady_ticks = steady_ticks(plan_window, plan.spec.duration_s) if plan_window is not None else None
        #: Set once the steady window has been judged and found working (at once without a window to judge):
        #: the faults and the triggers wait for it at their time, so none is spent on a run that is not valid.
        self.steady_passed = asyncio.Event()
        if self.steady_ticks is None:
            self.steady_passed.set()

    def check_steady(self, tick: int) -> None:
        """At the last whole second of the steady window: judge it; a run that is not valid stops here."""
        if self.steady_ticks is None or tick != self.steady_ticks[1]:
            return
        found = judge_readings(self.readings, self.steady_ticks, request_names(self.plan.spec))
        if not found.valid:
            raise SteadyStateError(f"not valid: {self.plan.spec.label}: {found.problem} (stopped before any trigger)")
        self.steady_passed.set()

    async def play_faults(self, target: TargetHandle, t0: float) -> None:
        """Pause each outage's target at its time; the controller resumes it after its duration."""
        for outage in self.outages:
            await self.runtime.sleep_until(t0 + outage.start_s)
            await self.steady_passed.wait()
            handle = await self.controller.pause(target.faults[outage.target], outage.duration_s)
            self.paused.append(handle)

    def actual_outages(self, t0: float) -> list[OutageWindow]:
        """The outages as they happened, relative to ``t0``: from when the target was frozen (every effect in
        force and confirmed) to when it was resumed. The journal and arming the watchdog come before the freeze
        and take up to seconds on a loaded machine; counted in, they would make a 3 s freeze read 3.7 s."""
        now = self.clock()
        return [
            OutageWindow(
                (handle.in_force_monotonic if handle.in_force_monotonic is not None else handle.started_monotonic) - t0,
                (handle.reverted_monotonic if handle.reverted_monotonic is not None else now) - t0,
                handle.target,
            )
            for handle in self.paused
        ]

    async def sample(self, target: TargetHandle, load: LoadHandle, source: MetricsSource, t0: float) -> None:
        """A reading at time 0 and then every second until the run's duration."""
        ticks = math.ceil(self.plan.spec.duration_s - 1e-9)
        for tick in range(ticks + 1):
            await self.runtime.sleep_until(t0 + tick)
            target.check()
            load.check()
            self.check_outages()
            self.check_watched()
            taken = self.clock() - t0
            target_part, client_part = await source.read(target, load, timeout_s=READ_TIMEOUT_S)
            cpu = await load.generator_cpu()
            self.readings.append(Reading(tick, taken, target_part, client_part, cpu))
            self.display.update(dataclasses.replace(self.status(tick), server_read=target.metrics_url is not None))
            self.check_steady(tick)
            if self.slo is not None and self.slo.observe(self.plan.spec.label, float(tick), self.readings):
                return

    def check_watched(self) -> None:
        """Raise what a watched task raised (a trigger the target refused: the run cannot go on as planned)."""
        for task in self.watched:
            if task.done() and not task.cancelled() and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]

    def check_outages(self) -> None:
        """Fail the run if a pause or a resume failed: the target may still be frozen (its watchdog resumes it)."""
        for outage in self.controller.failed():
            raise RunFailedError(
                f"the outage of {outage.target!r} failed: {outage.error}; a paused target is resumed by its "
                "watchdog at the outage's deadline, or by `retrystorm chaos recover`"
            )

    def status(self, tick: int) -> Status:
        """The display's view after the reading of ``tick``."""
        spec = self.plan.spec
        last = self.readings[-1]
        before = self.readings[-2] if len(self.readings) >= 2 else None
        goodput = attempts = None
        if before is not None and before.client is not None and last.client is not None:
            span = max(1e-3, last.time_s - before.time_s)
            goodput = (last.client.requests_ok - before.client.requests_ok) / span
            attempts = (last.client.attempts_started - before.client.attempts_started) / span
        return Status(
            label=spec.label,
            index=self.index,
            total=self.total,
            phase=phase_at(float(tick), [*self.outages, *self.triggers]),
            elapsed_s=float(tick),
            duration_s=spec.duration_s,
            remaining_total_s=spec.duration_s - tick + self.later_s,
            outage=self.outage_state(float(tick)),
            goodput=goodput,
            attempts=attempts,
            in_flight=last.target.in_flight if last.target is not None else None,
            in_backoff=last.client.users_in_backoff if last.client is not None else None,
        )

    def outage_state(self, now_s: float) -> str:
        """``paused target, 12s left``, ``next outage in 5s`` or ``no more outages``; with other triggers,
        ``slow target to 0.2x its capacity, 5s left``, ``next trigger in 5s``, ``no more triggers``."""
        for outage in self.outages:
            if outage.start_s <= now_s < outage.end_s:
                return f"{outage.target} paused, {format_duration(round(outage.end_s - now_s))} left"
        for window in self.triggers:
            if window.start_s <= now_s < window.end_s:
                return f"{window.effect()}, {format_duration(round(window.end_s - now_s))} left"
        word = "trigger" if self.triggers else "outage"
        upcoming = [window.start_s for window in [*self.outages, *self.triggers] if window.start_s > now_s]
        if upcoming:
            return f"next {word} in {format_duration(round(min(upcoming) - now_s))}"
        return "no outage planned" if not self.outages and not self.triggers else f"no more {word}s"


def controls_of(target: TargetHandle, controller: OutageController) -> TargetControls | None:
    """The target's controls; a slow of a ``cpu_target`` through the controller's CPU throttle."""
    if target.cpu_target is not None:
        return ThrottleControls(controller, target.cpu_target, target.controls)
    return target.controls


def annotate_triggers(
    annotations: GrafanaAnnotations, windows: Sequence[TriggerWindow], wall_t0: float, plan: Plan, label: str
) -> None:
    """Post one Grafana annotation per ended ``slow``, ``spike`` and ``errors`` window (outages: the
    controller's listener), at ``wall_t0`` (Unix seconds at the run's time 0) plus its times; never blocks."""
    for window in windows:
        if isinstance(window, OutageWindow):
            continue
        annotations.submit(
            trigger_annotation(
                window.kind,
                wall_t0 + window.start_s,
                wall_t0 + window.end_s,
                window.effect(),
                target=None if isinstance(window, SpikeWindow) else window.target,
                scenario=plan.scenario.name,
                strategy=label,
            )
        )


def strategy_run(
    plan: Plan,
    which: tuple[int, int],
    controller: OutageController,
    *,
    display: Display,
    runtime: Runtime,
    slo: SloGuard | None,
) -> StrategyRun:
    """The run of strategy ``which[0]`` (from 1) of ``plan``, its run number ``which[1]`` (``--repeat``)."""
    index, repeat = which
    done = (repeat - 1) * len(plan.strategies) + index
    later_s = (plan.runs - done) * (plan.scenario.load.duration + OVERHEAD_S)
    position = (done, plan.runs, later_s)
    run = StrategyRun(
        plan.strategies[index - 1], plan.outages, controller, display, position, runtime=runtime,
        plan_window=plan.steady_window,
    )  # fmt: skip
    run.triggers = list(plan.triggers)
    run.slo = slo
    return run


async def run_strategy(
    plan: Plan,
    index: int,
    stack: Stack,
    controller: OutageController,
    *,
    display: Display,
    runtime: Runtime,
    annotations: GrafanaAnnotations | None = None,
    slo: SloGuard | None = None,
    repeat: int = 1,
) -> StrategyRecord:
    """Strategy ``index`` (from 1) of ``plan``, its run number ``repeat``: fresh target, load, timeline, readings;
    then all stopped."""
    scenario, spec = plan.scenario, plan.strategies[index - 1].spec
    run = strategy_run(plan, (index, repeat), controller, display=display, runtime=runtime, slo=slo)
    started_utc = utc_now()
    wall_t0: float | None = None
    probe: FreshProbe | None = None
    # each run of a repeated strategy writes logs of its own
    run_spec = spec if plan.repeat == 1 else dataclasses.replace(spec, label=f"{spec.label} run {repeat}")
    target = await stack.targets.start(run_spec.label, scenario.model, scenario.seed)
    try:
        target = await with_proxy(stack, target, plan, run_spec.label, runtime)
        triggers = LiveTriggers(plan.triggers, controls_of(target, controller), runtime)
        network = NetworkPlayer(plan.triggers, control_of(target), runtime, partitions=partitions_of(target))
        spikes = [window for window in plan.triggers if isinstance(window, SpikeWindow)]
        load = await stack.load.start(target, run_spec, spikes)
        try:
            t0 = run.clock()
            wall_t0 = runtime.wall()
            probe = probe_for(run_spec, target.base_url, runtime.clock) if stack.fresh_requests else None
            fresh = asyncio.create_task(probe.run(t0, spec.duration_s)) if probe is not None else None
            faults = asyncio.create_task(run.play_faults(target, t0), name=f"faults of {spec.label}")
            played = asyncio.create_task(triggers.play(t0, run.steady_passed), name=f"triggers of {spec.label}")
            in_network = asyncio.create_task(network.play(t0, run.steady_passed), name=f"network of {spec.label}")
            run.watched += [played, in_network]
            queries = watch_slo(slo, runtime, t0)
            try:
                await run.sample(target, load, stack.metrics, t0)
                if slo is None or slo.breach is None:  # a breach ends the run here: the rest is cancelled
                    await faults  # every pause has started by now; its errors surface here
                    await played
                    await in_network
            finally:
                for task in (faults, played, in_network, queries, fresh):
                    if task is not None:
                        task.cancel()
                await end_faults(controller, triggers, network, spec.label)
            actual = run.actual_outages(t0)
            # spikes as planned: the load generator plays them on its own clock, from its start
            played_windows = [*triggers.actual(t0), *network.actual(t0), *spikes]
            actual_triggers = sorted(played_windows, key=lambda w: (w.start_s, w.end_s))
            if annotations is not None:  # GRAFANA_URL set: every window has ended by now
                annotate_triggers(annotations, actual_triggers, wall_t0, plan, spec.label)
        finally:
            await load.stop()
    finally:
        await controller.resume_all(f"end of {spec.label}")
        await target.stop()
    agents = await agent_readings(stack, runtime)
    return StrategyRecord(
        spec=slo.ran(spec) if slo is not None else spec,
        readings=run.readings,
        outages=actual,
        planned_outages=list(plan.outages),
        triggers=actual_triggers,
        started_utc=started_utc,
        ended_utc=utc_now(),
        target=target.describe(),
        load=load.describe(),
        wall_t0=wall_t0,
        steady_ticks=run.steady_ticks,
        repeat=repeat,
        user_processes=load.user_processes,
        agents=agents,
        fresh=list(probe.answers) if probe is not None else None,
    )


async def with_proxy(stack: Stack, target: TargetHandle, plan: Plan, label: str, runtime: Runtime) -> TargetHandle:
    """``target`` behind a fault proxy when the stack has one and the run has network windows for it (a proxy
    that does not start fails the run; the caller stops the target)."""
    if stack.network is None or not any(window.kind in NETWORK_KINDS for window in plan.triggers):
        return target
    life_s = plan.scenario.load.duration + OVERHEAD_S
    return await stack.network.wrap(target, label, life_s=life_s, seed=plan.scenario.seed, runtime=runtime)


async def end_faults(controller: OutageController, triggers: LiveTriggers, network: NetworkPlayer, label: str) -> None:
    """End every fault of a strategy's run, each tried even if one before it failed: pauses and cuts, the
    target's levels, then the toxics in the network."""
    try:
        await controller.resume_all(f"end of {label}")
    finally:
        try:
            await triggers.restore()
        finally:
            await network.restore()


async def agent_readings(stack: Stack, runtime: Runtime) -> Mapping[str, Any] | None:
    """Each chaos agent's own record of its outages, by host, when the stack faults through agents on several
    hosts (a provider with ``agent_outages``); ``None`` otherwise."""
    read = getattr(stack.targets, "agent_outages", None)
    return None if read is None else dict(await runtime.run_blocking(read))


def watch_slo(slo: SloGuard | None, runtime: Runtime, t0: float) -> asyncio.Task[None] | None:
    """Start a strategy's stop conditions: its readings forgotten, its Prometheus queries polled beside the run."""
    if slo is None:
        return None
    slo.start_strategy()
    return asyncio.create_task(slo.poll(runtime.sleep_until, t0), name="slo queries") if slo.has_queries else None


async def execute(
    plan: Plan,
    stack: Stack,
    display: Display,
    journal: Journal,
    runtime: Runtime | None = None,
    *,
    slo: SloGuard | None = None,
) -> list[StrategyRecord]:
    """Run every strategy of ``plan`` in turn; SIGINT/SIGTERM raise :class:`RunInterruptedError`.

    The controller first resumes whatever a killed run left paused or throttled (its journal),
    and resumes and restores everything again when it exits; no outage or CPU cut can outlast
    the longest planned one by more than :data:`OUTAGE_MARGIN_S`, and each arms a watchdog that
    ends it at that deadline even if this process is killed. A breach of ``slo`` ends the strategy's run early and
    runs no further one.
    """
    runtime = runtime or Runtime()
    slows = [
        window.end_s - window.start_s + LEVEL_MARGIN_S for window in plan.triggers if isinstance(window, SlowWindow)
    ]
    longest = max([outage.duration_s for outage in plan.outages] + slows, default=1.0)
    annotations = annotations_from_env(plan.scenario.name)  # GRAFANA_URL set: an annotation per trigger window
    controller = OutageController(
        journal,
        dead_man=runtime.dead_man or WatchdogSwitch(journal.path),
        clock=runtime.clock,
        sleep=runtime.sleep,
        run_blocking=runtime.run_blocking,
        recovery_backends=stack.targets.recovery_backends(),
        max_outage_s=min(longest + OUTAGE_MARGIN_S, MAX_OUTAGE_CEILING_S),
        listener=annotations,  # outages annotated by the controller when they end
    )
    main = asyncio.current_task()
    interrupted: list[bool] = []

    def stop() -> None:
        if not interrupted and main is not None:
            interrupted.append(True)
            main.cancel()

    records: list[StrategyRecord] = []
    count = len(plan.strategies)
    try:
        async with controller:
            controller.install_signal_handlers(stop)
            for repeat, (index, strategy) in itertools.product(
                range(1, plan.repeat + 1), enumerate(plan.strategies, start=1)
            ):
                done = (repeat - 1) * count + index
                label = strategy.spec.label + (f" (run {repeat} of {plan.repeat})" if plan.repeat > 1 else "")
                display.note(f"[{done}/{plan.runs}] {label}: starting a fresh target and the load ({stack.name})")
                record = await run_strategy(
                    plan, index, stack, controller, display=display, runtime=runtime, annotations=annotations,
                    slo=slo, repeat=repeat,
                )  # fmt: skip
                records.append(record)
                if slo is not None and slo.breach is not None:
                    display.note(f"[{done}/{plan.runs}] {label}: stopped early, {slo.breach.describe()}")
                    break
                display.note(f"[{done}/{plan.runs}] {label}: done")
    except asyncio.CancelledError:
        if interrupted:
            raise RunInterruptedError("interrupted: every target was resumed and every process stopped") from None
        raise
    finally:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
        await stack.metrics.close()
        close_load = getattr(stack.load, "close", None)  # a driver with processes for the whole run (hosts)
        if close_load is not None:
            await close_load()
        if slo is not None:
            await slo.close()
    if annotations is not None:
        await annotations.drain()  # the posts under way, each bounded by the Grafana client's timeout
    return records
