"""A load session: one strategy's Locust load against a running service, read once a second, judged on demand.

The load is the runner's own: :class:`~retrystorm.runner.local.locust.LocustDriver` starts a headless Locust process
with the strategy's options (its ``--run-time`` bounds it even if this process vanished), and
:class:`~retrystorm.runner.scrape.HttpMetricsSource` reads the load generator's and the service's ``/metrics``
every second, as ``retrystorm run`` does. The pauses come from the chaos API (``GET /outages``): their start and end as
the chaos controller recorded them, so recovery is judged from the real pause. The verdict and its figures are the
runner's analysis (:func:`retrystorm.runner.record.analyse`) of the readings so far
(:mod:`retrystorm.integrations.chaostoolkit.verdict`).

Chaos Toolkit calls activities from its own threads: a session runs its asyncio loop in a thread of its own, which
starts Locust (so the kernel's parent-death signal, tied to the starting thread, stops Locust only when the session
ends) and lives until the session is stopped. Sessions are kept by name for the process's life; every one still
running is stopped when the process exits.
"""

from __future__ import annotations

import asyncio
import atexit
import dataclasses
import datetime
import logging
import math
import threading
import time
from collections.abc import Coroutine, Mapping
from typing import Any, TypeVar

from retrystorm.chaos.client import ChaosApiError
from retrystorm.chaos.journal import utc_now
from retrystorm.chaos.targets import FaultTarget
from retrystorm.errors import UserError
from retrystorm.experiment.analysis import RunResult, default_steady_window, steady_levels
from retrystorm.integrations.chaostoolkit.settings import LoadSettings
from retrystorm.integrations.chaostoolkit.verdict import NOT_STARTED, Judgement, Pause, as_windows, judge
from retrystorm.loadgen.readings import Reading
from retrystorm.runner.interfaces import GrpcEndpoint
from retrystorm.runner.local.locust import LocustDriver, LocustLoad
from retrystorm.runner.record import StrategyRecord, analyse
from retrystorm.runner.scrape import HttpMetricsSource
from retrystorm.runner.series import build_series

log = logging.getLogger(__name__)

T = TypeVar("T")
#: Deadline of one reading, as the runner's.
READ_TIMEOUT_S = 0.8
#: How long starting the load may take (Locust's start, its users spawning).
START_TIMEOUT_S = 120.0


class _Target:
    """The running service, as the load driver and the metrics source take it (a service of one's own: nothing to
    pause through it, no controls)."""

    controls = None
    cpu_target = None
    grpc: GrpcEndpoint | None = None  # an HTTP service

    def __init__(self, base_url: str, metrics_url: str | None) -> None:
        self.base_url = base_url
        self.metrics_url = metrics_url
        self.faults: Mapping[str, FaultTarget] = {}

    async def stop(self) -> None:
        """Not this process's to stop."""

    def describe(self) -> str:
        return f"the service at {self.base_url}"

    def check(self) -> None:
        """A service of one's own is not this process's child: nothing to check."""


class LoadSession:
    """One strategy's load (see the module docstring)."""

    def __init__(self, settings: LoadSettings, *, stop_when_known: bool = False) -> None:
        self.settings = settings
        #: End the load as soon as the verdict is known (the control sets it).
        self.stop_when_known = stop_when_known
        metrics = settings.metrics
        self.target = _Target(settings.target_url, metrics[0] if metrics else None)
        self.source = HttpMetricsSource(metrics[1]) if metrics else HttpMetricsSource()
        self.readings: list[Reading] = []
        self.pauses: list[Pause] = []
        self.chaos_error: str | None = None
        self.started_utc = utc_now()
        self.ended_utc: str | None = None
        self.t0 = 0.0
        self.wall_t0 = 0.0
        self.ended_s: float | None = None
        self.end_reason: str | None = None
        self.load: LocustLoad | None = None
        self.lock = threading.Lock()
        self.done = threading.Event()
        #: Set at the load's time 0, once its users spawn.
        self.started = threading.Event()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name=f"retrystorm {settings.name}", daemon=True)
        self.sampler: asyncio.Task[None] | None = None

    def _call(self, coroutine: Coroutine[Any, Any, T], timeout_s: float) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout_s)

    def start(self) -> None:
        """Start Locust and the readings; return once its users spawn (the session's time 0)."""
        self.thread.start()
        try:
            self._call(self._start(), START_TIMEOUT_S)
        except BaseException:
            self.end_reason = "its start failed"
            self.done.set()
            self._close_loop()
            raise

    async def _start(self) -> None:
        driver = LocustDriver(self.settings.log_dir, workers=1)
        self.load = await driver.start(self.target, self.settings.spec)
        self.t0 = time.monotonic()
        self.wall_t0 = time.time()
        self.started.set()
        self.sampler = asyncio.create_task(self._sample(), name=f"readings of {self.settings.name}")

    async def _sample(self) -> None:
        """A reading at time 0 and then every second, until the load's duration or a known verdict."""
        load = self.load
        if load is None:
            return
        ticks = math.ceil(self.settings.spec.duration_s - 1e-9)
        reason = "its duration"
        try:
            for tick in range(ticks + 1):
                await asyncio.sleep(max(0.0, self.t0 + tick - time.monotonic()))
                load.check()
                taken = time.monotonic() - self.t0
                target, client = await self.source.read(self.target, load, timeout_s=READ_TIMEOUT_S)
                cpu = await load.generator_cpu()
                pauses = await asyncio.to_thread(self._fetch_pauses)
                with self.lock:
                    self.readings.append(Reading(tick, taken, target, client, cpu))
                    self.pauses = pauses
                if self.stop_when_known and self.judgement().known:
                    reason = "a known verdict"
                    break
        except Exception as error:  # a load generator that died: the session ends, the verdict says why
            log.warning("%s: the load stopped: %s", self.settings.name, error)
            reason = str(error)
        finally:
            await self._stop_load(reason)

    async def _stop_load(self, reason: str) -> None:
        if self.ended_s is None:
            self.ended_s = time.monotonic() - self.t0
            self.ended_utc = utc_now()
            self.end_reason = reason
        if self.load is not None:
            await self.load.stop()
        await self.source.close()
        self.done.set()

    def _fetch_pauses(self) -> list[Pause]:
        """The chaos API's pauses that overlap the load, in seconds after its start (the last known on an error)."""
        try:
            outages = self.settings.chaos.outages()
        except ChaosApiError as error:
            self.chaos_error = error.message
            return self.pauses
        self.chaos_error = None
        return pauses_of(outages, self.wall_t0, self.settings.chaos_target)

    @property
    def running(self) -> bool:
        """Whether the load still runs."""
        return not self.done.is_set()

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until the load ends (its duration, a known verdict under the control, or :meth:`stop`)."""
        return self.done.wait(timeout_s)

    def stop(self, reason: str = "stopped") -> None:
        """End the load now (idempotent) and the session's thread."""
        if self.thread.is_alive():
            if self.sampler is not None and not self.sampler.done():
                self.loop.call_soon_threadsafe(self.sampler.cancel)
            self.done.wait(60.0)
            if not self.done.is_set():  # the sampler never ran (its start failed)
                self._call(self._stop_load(reason), 60.0)
            if self.end_reason == "its duration" and reason != "stopped":
                self.end_reason = reason
        self._close_loop()

    def _close_loop(self) -> None:
        if self.thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10.0)
        if not self.thread.is_alive() and not self.loop.is_closed():
            self.loop.close()

    def now_s(self) -> float:
        """Seconds of load so far (until it ended)."""
        return self.ended_s if self.ended_s is not None else time.monotonic() - self.t0

    def result(self) -> RunResult | None:
        """The runner's analysis of the readings so far; ``None`` before two readings."""
        with self.lock:
            readings, pauses = list(self.readings), list(self.pauses)
        if len([reading for reading in readings if reading.client is not None]) < 2:
            return None
        last_tick = max(1, readings[-1].tick)
        windows = as_windows(pauses, float(last_tick))
        record = StrategyRecord(
            spec=dataclasses.replace(self.settings.spec, duration_s=float(last_tick)),
            readings=readings,
            outages=windows,
            planned_outages=windows,  # the steady window is judged before the real first pause
            started_utc=self.started_utc,
            ended_utc=self.ended_utc or utc_now(),
            target=self.target.describe(),
            load=self.load.describe() if self.load is not None else "",
            wall_t0=self.wall_t0,
        )
        return analyse(record, self.settings.assertions)

    def judgement(self, result: RunResult | None = None) -> Judgement:
        """The verdict as it stands."""
        with self.lock:
            pauses = list(self.pauses)
        found = result if result is not None else self.result()
        return judge(found, pauses, elapsed_s=self.now_s(), running=self.running, assertions=self.settings.assertions)

    def report(self) -> dict[str, Any]:
        """The verdict, why, and the figures: recovery, amplification, goodput, validity (JSON)."""
        if self.running:  # the latest pauses, not those of the last reading
            fresh = self._fetch_pauses()
            with self.lock:
                self.pauses = fresh
        result = self.result()
        judgement = self.judgement(result)
        figures = result.to_json() if result is not None else {}
        return {
            "verdict": judgement.verdict,
            "reason": judgement.reason,
            "session": self.settings.name,
            "strategy": self.settings.spec.label,
            "running": self.running,
            "elapsed_s": round(self.now_s(), 3),
            "ended": self.end_reason,
            "pauses": [dataclasses.asdict(pause) for pause in self.pauses],
            "goodput_per_s": self.goodput(),
            "chaos_api_error": self.chaos_error,
            "figures": figures,
        }

    def goodput(self) -> dict[str, float | None]:
        """Goodput (succeeded logical requests per second): steady before the first pause, and over the last 5 s."""
        with self.lock:
            readings, pauses = list(self.readings), list(self.pauses)
        if len(readings) < 2:
            return {"steady": None, "last_5s": None}
        samples = build_series(readings, float(max(1, readings[-1].tick))).samples()
        window = default_steady_window(as_windows(pauses, self.now_s()))
        levels = steady_levels(samples, window) if window else None
        last = samples.goodput[-5:]
        return {
            "steady": round(levels.goodput, 3) if levels is not None else None,
            "last_5s": round(math.fsum(last) / len(last), 3) if last else None,
        }


def pauses_of(outages: list[dict[str, Any]], wall_t0: float, target: str | None) -> list[Pause]:
    """The outages of ``GET /outages`` that overlap the load (of ``target`` only, if given), relative to ``wall_t0``.

    An outage whose pause failed is left out (nothing was paused); one still active has no end.
    """
    found = []
    for outage in outages:
        if outage.get("status") == "failed" or (target is not None and outage.get("target") != target):
            continue
        start = _seconds(outage.get("started_utc")) - wall_t0
        ended = outage.get("ended_utc")
        end = _seconds(ended) - wall_t0 if ended else None
        if end is not None and end <= 0:
            continue  # over before the load started
        found.append(Pause(round(start, 3), None if end is None else round(end, 3), str(outage.get("target"))))
    return sorted(found, key=lambda pause: pause.start_s)


def _seconds(utc: object) -> float:
    return datetime.datetime.fromisoformat(str(utc)).timestamp()


class Sessions:
    """The sessions of this process, by name."""

    def __init__(self) -> None:
        self.by_name: dict[str, LoadSession] = {}
        #: Why the latest load of a name did not start (its arguments, or Locust), by name.
        self.failures: dict[str, str] = {}
        #: Sessions started from now on end their load once their verdict is known (the control sets it).
        self.stop_when_known = False
        self.lock = threading.Lock()

    def start(self, settings: LoadSettings) -> LoadSession:
        """A new session's load, started; a session of that name still running is refused."""
        with self.lock:
            current = self.by_name.get(settings.name)
            if current is not None and current.running:
                raise UserError(
                    f"start_load: a load named {settings.name!r} is running already: stop it first, or name another"
                )
            session = LoadSession(settings, stop_when_known=self.stop_when_known)
            self.by_name[settings.name] = session
            self.failures.pop(settings.name, None)
        session.start()
        return session

    def failed(self, name: str, reason: str) -> None:
        """Remember that the load ``name`` did not start, and why (its verdict says so)."""
        with self.lock:
            self.failures[name] = reason

    def failure(self, name: str) -> str | None:
        """Why the latest load ``name`` did not start; ``None``: it started, or none was tried."""
        with self.lock:
            session = self.by_name.get(name)
            if session is not None and session.end_reason == "its start failed":
                return self.failures.get(name, "its start failed")
            return self.failures.get(name)

    def get(self, name: str) -> LoadSession | None:
        """The session named ``name`` (the latest of that name), if one ran."""
        with self.lock:
            return self.by_name.get(name)

    def stop_all(self) -> None:
        """Stop every session still running."""
        with self.lock:
            running = list(self.by_name.values())
        for session in running:
            session.stop()


SESSIONS = Sessions()
atexit.register(SESSIONS.stop_all)

__all__ = ["NOT_STARTED", "SESSIONS", "LoadSession", "Sessions", "pauses_of"]
