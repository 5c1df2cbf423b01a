"""Load from a Locust master that is already running (a compose stack's ``locust-master``).

Driven over the master's HTTP API, the calls its web UI makes:

* before each strategy: ``GET /worker-count`` (a master without workers fails the run,
  saying how to start some), and any swarm still running is stopped first (a swarm
  posted on a running test changes the user count but not the users' options);
* ``POST /swarm`` with the strategy's form (:func:`swarm_form`): the options of
  :func:`~retrystorm.runner.locust_args.locust_options`, every retrystorm option and flag given
  explicitly, because the master keeps form values from the previous swarm, and
  ``run_time`` = duration + margin, so the load stops by itself even if the runner is
  gone. The run's spikes are its ``load_spikes``: the master plays them
  (:mod:`retrystorm.loadgen.spike_player`), raising and lowering the user count it dispatches to its
  workers, so they end with the swarm even without the runner. A refusal
  (``{"success": false, "message": ...}``, e.g. from the load generator's own check of
  the form) fails the run naming the message;
* time 0 is when the master's ``/metrics`` counts active users (the workers' sum);
* during the run, ``GET /worker-count`` every second: an unreachable master, or one
  without workers for ``lost_after_s``, fails the run;
* ``POST /stop``, then wait until the master is stopped and counts no users.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from retrystorm.experiment.scenario import RunSpec, SpikeWindow
from retrystorm.loadgen.exposition import parse_client
from retrystorm.polling import poll_until
from retrystorm.runner.errors import RunFailedError
from retrystorm.runner.interfaces import TargetHandle
from retrystorm.runner.locust_args import LOCUST_RUN_MARGIN_S, check_options, describe_load, locust_options
from retrystorm.runner.watch import Watch
from retrystorm.runner.webapi import WebApi

log = logging.getLogger(__name__)

WORKERS_HINT = "start some: docker compose up --scale locust-worker=2"
#: Master states with no test running (Locust's ``STATE_INIT`` is ``ready``).
IDLE_STATES = frozenset({"ready", "stopped"})
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 60.0
#: A master unreachable or without workers for this long fails the run.
LOST_AFTER_S = 5.0


def swarm_form(
    spec: RunSpec, host: str, run_margin_s: float = LOCUST_RUN_MARGIN_S, spikes: Sequence[SpikeWindow] = ()
) -> dict[str, str]:
    """The ``POST /swarm`` form of ``spec`` against ``host``: its Locust options (with ``spikes``) and the host.

    The web form calls the user count ``user_count`` (the flag is ``--users``).
    """
    options = locust_options(spec, run_margin_s=run_margin_s, spikes=spikes)
    return {"user_count" if name == "users" else name: value for name, value in options.items()} | {"host": host}


def swarm_refusal(answer: Any) -> str | None:
    """``None`` when a ``POST /swarm`` answer says it started; the master's message otherwise."""
    if isinstance(answer, dict) and answer.get("success") is True:
        return None
    message = answer.get("message") if isinstance(answer, dict) else None
    return str(message) if message else f"unexpected answer {answer!r}"


class MasterApi(WebApi):
    """The calls the runner makes to a Locust master's web API."""

    async def worker_count(self) -> int:
        """Workers connected and not missing (``GET /worker-count``, never cached)."""
        answer = await self.call_json("GET", "/worker-count")
        try:
            return int(answer["worker_count"])
        except (KeyError, TypeError, ValueError):
            raise RunFailedError(f"{self.what} at {self.base_url}: no worker_count in {answer!r}") from None

    async def active_users(self) -> float:
        """``retrystorm_client_active_users`` summed over the workers, from the master's ``/metrics``."""
        text = await self.call("GET", "/metrics")
        try:
            return parse_client(text).active_users
        except ValueError as error:
            raise RunFailedError(f"{self.what} at {self.base_url}: /metrics is not Prometheus text: {error}") from None

    async def idle(self) -> bool:
        """No test running and no user left (``/stats/requests``, cached by Locust for 2 s, and ``/metrics``)."""
        stats = await self.call_json("GET", "/stats/requests")
        if not isinstance(stats, dict) or stats.get("state") not in IDLE_STATES or stats.get("user_count"):
            return False
        return await self.active_users() == 0

    async def stop_users(self, timeout_s: float) -> None:
        """``POST /stop``; return once the master is idle."""
        await self.call_json("POST", "/stop")

        async def idle() -> bool | None:
            return True if await self.idle() else None

        def late() -> RunFailedError:
            return RunFailedError(f"{self.what} at {self.base_url} still runs users {timeout_s:.0f} s after /stop")

        await poll_until(idle, timeout_s=timeout_s, every_s=0.2, on_timeout=late)


class MasterLoad:
    """One strategy's swarm on the master (a :class:`~retrystorm.runner.interfaces.LoadHandle`)."""

    def __init__(self, api: MasterApi, host: str, workers: int, stop_timeout_s: float) -> None:
        self.api = api
        self.metrics_url = api.base_url + "/metrics"
        self.host = host
        self.workers = workers
        self.stop_timeout_s = stop_timeout_s
        self.watch = Watch(f"the Locust master at {api.base_url}", self.probe, allowed_s=LOST_AFTER_S)

    @property
    def user_processes(self) -> int:
        """The workers run the users: one process each."""
        return self.workers

    def describe(self) -> str:
        return f"Locust master {self.api.base_url} with {self.workers} workers, users sending to {self.host}"

    async def probe(self) -> str | None:
        """``None`` while the master answers and has workers; why not otherwise."""
        try:
            count = await self.api.worker_count()
        except RunFailedError as error:
            return str(error)
        return None if count > 0 else f"no Locust worker connected to {self.api.base_url}"

    def check(self) -> None:
        self.watch.check()

    async def generator_cpu(self) -> Mapping[str, float] | None:
        """Each worker's CPU share as the master last heard it (``None`` when it cannot say).

        Locust's workers measure their own CPU every 10 s (``CPU_MONITOR_INTERVAL``)
        and report it; the master's ``/stats/requests`` lists it per worker, in percent.
        So here a saturated second is one within a 10-s average of at least the limit.
        """
        try:
            stats = await self.api.call_json("GET", "/stats/requests", timeout_s=0.5)
        except RunFailedError:
            return None
        workers = stats.get("workers") if isinstance(stats, dict) else None
        if not isinstance(workers, list):
            return None
        shares = {
            f"worker {worker.get('id', index)}": float(worker["cpu_usage"]) / 100
            for index, worker in enumerate(workers, start=1)
            if isinstance(worker, dict) and isinstance(worker.get("cpu_usage"), int | float)
        }
        return shares or None

    async def stop(self) -> None:
        """Stop the users (best effort: the next start stops a swarm left running)."""
        await self.watch.stop()
        try:
            await self.api.stop_users(self.stop_timeout_s)
        except RunFailedError as error:
            log.warning("could not stop the swarm: %s", error)
        finally:
            await self.api.close()


class LocustMaster:
    """Swarms on the running Locust master at ``url`` (a :class:`~retrystorm.runner.interfaces.LoadDriver`).

    ``token``: sent as ``Authorization: Bearer``, which a master bound beyond loopback requires
    (:mod:`retrystorm.loadgen.web_guard`).
    """

    def __init__(
        self,
        url: str,
        *,
        token: str = "",
        run_margin_s: float = LOCUST_RUN_MARGIN_S,
        start_timeout_s: float = START_TIMEOUT_S,
        stop_timeout_s: float = STOP_TIMEOUT_S,
    ) -> None:
        self.url = url.rstrip("/")
        self._token = token
        self.run_margin_s = run_margin_s
        self.start_timeout_s = start_timeout_s
        self.stop_timeout_s = stop_timeout_s

    def describe(self, spec: RunSpec) -> str:
        check_options(spec)  # the load generator's own check: a UserError names the flag
        return f"POST {self.url}/swarm (the master's workers): {describe_load(spec)}"

    async def _wait_spawning(self, api: MasterApi) -> None:
        async def spawning() -> bool | None:
            return True if await api.active_users() > 0 else None

        def late() -> RunFailedError:
            waited = f"{self.start_timeout_s:.0f} s"
            return RunFailedError(f"the Locust master at {self.url} started no users within {waited}")

        await poll_until(spawning, timeout_s=self.start_timeout_s, every_s=0.05, on_timeout=late)

    async def _swarm(self, api: MasterApi, target: TargetHandle, spec: RunSpec, spikes: Sequence[SpikeWindow]) -> int:
        workers = await api.worker_count()
        if workers == 0:
            raise RunFailedError(f"no Locust worker connected to {self.url}; {WORKERS_HINT}")
        if not await api.idle():
            log.warning("a swarm is running on the Locust master at %s: stopping it first", self.url)
            await api.stop_users(self.stop_timeout_s)
        form = swarm_form(spec, target.base_url, self.run_margin_s, spikes)
        answer = await api.call_json("POST", "/swarm", form=form)
        refusal = swarm_refusal(answer)
        if refusal is not None:
            raise RunFailedError(f"the Locust master at {self.url} refused to start {spec.label}: {refusal}")
        return workers

    def spike_refusal(self) -> str | None:
        return None  # played by the master (retrystorm.loadgen.spike_player), from the swarm's load_spikes

    async def start(self, target: TargetHandle, spec: RunSpec, spikes: Sequence[SpikeWindow] = ()) -> MasterLoad:
        """Start the swarm with ``spikes``; return once the master counts active users."""
        api = MasterApi(self.url, "the Locust master", token=self._token)
        try:
            workers = await self._swarm(api, target, spec, spikes)
            load = MasterLoad(api, target.base_url, workers, self.stop_timeout_s)
            try:
                await self._wait_spawning(api)
            except BaseException:
                await load.stop()
                raise
        except BaseException:
            await api.close()
            raise
        load.watch.start()
        return load
