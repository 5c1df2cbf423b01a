"""A long-lived target service (a compose stack's ``target``), reset through its admin API per strategy.

Each strategy's run gets the same target process, brought back to a fresh state:
once ``GET /healthz`` answers, ``PUT /admin/model`` sets the scenario's model,
``DELETE /admin/faults`` disarms any fault rule and ``POST /admin/reset
{"release_in_flight": true}`` answers everything still in flight and zeroes the
counters. Outages pause it through a fault backend, made on first use so a dry run
connects to nothing: the docker backend by default, the chaos API backend in a compose
stack whose chaos service should see the outages, or the process backend for a target
that runs as a local process.

Two addresses: the runner's (admin API, health checks, ``/metrics``) and the one the
load generator's workers send to (in a compose stack both are ``http://target:8070``).
During a run the target is watched every second: it fails the run when it is gone, or
when it has not answered ``/healthz`` for ``unhealthy_after_s`` while not paused (a
paused target cannot answer; the backend says whether it is paused). ``stop()`` leaves
it resumed and reset.

A *foreign* target (a scenario's own service, ``target:``) has no admin API: nothing is
set or reset, it is only resumed; it must answer its ``ready`` path before each strategy,
and during a run it need only exist (a service drowning in a retry storm does not answer,
and that is what is measured). Its ``slow`` cuts its containers' CPU through the chaos
controller's throttle (``docker update``, or the chaos API's ``POST /throttles``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping

from retrystorm.chaos.backends.base import BackendError, FaultBackend, TargetRef, TargetState
from retrystorm.chaos.targets import FaultTarget
from retrystorm.experiment.scenario.service import ServiceTarget as OwnService
from retrystorm.polling import poll_until
from retrystorm.runner.errors import RunFailedError
from retrystorm.runner.interfaces import GrpcEndpoint
from retrystorm.runner.lazy import LazyBackend, docker_backend
from retrystorm.runner.live_triggers import builtin_refusal, foreign_refusal
from retrystorm.runner.readiness import probe as readiness_probe
from retrystorm.runner.target_controls import AdminControls
from retrystorm.runner.watch import Watch
from retrystorm.runner.webapi import WebApi
from retrystorm.target.models import OverloadModel

log = logging.getLogger(__name__)

FAULT_TARGET = "target"
#: How long :meth:`ServiceTargets.start` waits for ``/healthz``.
READY_TIMEOUT_S = 60.0
#: A target not paused that has not answered ``/healthz`` for this long fails the run.
UNHEALTHY_AFTER_S = 20.0
HEALTH_TIMEOUT_S = 2.0
RESET_BODY = {"release_in_flight": True}


async def backend_states(backend: FaultBackend, refs: list[TargetRef]) -> list[TargetState]:
    """The state of each ref; a backend that cannot tell fails the run."""
    try:
        return [await asyncio.to_thread(backend.state, ref) for ref in refs]
    except BackendError as error:
        raise RunFailedError(f"cannot tell whether the target is paused: {error}") from error


class ServiceTarget:
    """The target service during one strategy's run (a :class:`~retrystorm.runner.interfaces.TargetHandle`)."""

    def __init__(
        self,
        api: WebApi,
        load_url: str,
        backend: FaultBackend,
        refs: list[TargetRef],
        *,
        unhealthy_after_s: float = UNHEALTHY_AFTER_S,
        foreign: OwnService | None = None,
    ) -> None:
        self.foreign = foreign
        self.api = api
        #: The compose stack's target takes HTTP only (a gRPC scenario is refused before it starts).
        self.grpc: GrpcEndpoint | None = None
        self.controls = AdminControls(api) if foreign is None else None
        self.base_url = load_url
        self.metrics_url: str | None = api.base_url + "/metrics"
        self.faults: Mapping[str, FaultTarget] = {refs[0].target: FaultTarget(refs[0].target, backend)}
        #: A foreign service's slow cuts what a pause freezes through the controller's throttle (its containers'
        #: docker update, or the chaos API's POST /throttles); the built-in target's scales its model.
        self.cpu_target = self.faults[refs[0].target] if foreign is not None else None
        self.backend = backend
        self.refs = refs
        self.watch = Watch(f"the target at {api.base_url}", self.probe, allowed_s=unhealthy_after_s)

    def describe(self) -> str:
        paused = ", ".join(ref.describe() for ref in self.refs)
        return f"target service {self.api.base_url} (load sent to {self.base_url}; paused as {paused})"

    async def probe(self) -> str | None:
        """``None`` when ``/healthz`` answers or the target is paused; why not otherwise.

        A foreign service is only required to exist: one that does not answer during a
        run may be drowning in a retry storm, which is what is measured, not a failure.
        """
        if self.foreign is not None:
            await self._exists()
            return None
        try:
            await self.api.call("GET", "/healthz", timeout_s=HEALTH_TIMEOUT_S)
        except RunFailedError as error:
            states = await self._exists()
            return None if TargetState.PAUSED in states else str(error)
        return None

    async def _exists(self) -> list[TargetState]:
        """The refs' states; :class:`RunFailedError` when one is gone."""
        states = await backend_states(self.backend, self.refs)
        if TargetState.GONE in states:
            raise RunFailedError(f"the target ({self.refs[0].describe()}) is gone")
        return states

    def check(self) -> None:
        self.watch.check()

    async def stop(self) -> None:
        """Resume it if it is still paused, then reset it (best effort: a failure is logged)."""
        await self.watch.stop()
        try:
            for ref in self.refs:
                await asyncio.to_thread(self.backend.resume, ref)
            if self.foreign is None:  # a foreign service has no admin API: nothing to reset
                await self.api.call_json("POST", "/admin/reset", json_body=RESET_BODY)
        except (BackendError, RunFailedError) as error:
            log.warning("could not leave the target resumed and reset: %s", error)
        finally:
            await self.api.close()


class ServiceTargets:
    """A long-lived target service, reset per strategy (a :class:`~retrystorm.runner.interfaces.TargetProvider`).

    ``target_url``: where the runner reaches it; ``load_target_url``: where the load
    generator's workers do (default: ``target_url``). ``backend``: the fault backend that
    pauses fault target ``fault_target``, or a :class:`LazyBackend` that makes it when
    the run starts (default: the docker backend, any compose project). ``admin_token``: the
    bearer token of its admin API (the target's ``--admin-token``; empty: none).
    """

    def __init__(
        self,
        target_url: str,
        *,
        load_target_url: str | None = None,
        backend: FaultBackend | LazyBackend | None = None,
        fault_target: str = FAULT_TARGET,
        ready_timeout_s: float = READY_TIMEOUT_S,
        unhealthy_after_s: float = UNHEALTHY_AFTER_S,
        admin_token: str = "",
        foreign: OwnService | None = None,
    ) -> None:
        self.foreign = foreign
        self.target_url = target_url.rstrip("/")
        self.admin_token = admin_token
        self.load_target_url = (load_target_url or target_url).rstrip("/")
        self.fault_target = fault_target
        self.ready_timeout_s = ready_timeout_s
        self.unhealthy_after_s = unhealthy_after_s
        if backend is None:
            backend = docker_backend(None)
        self.lazy = backend if isinstance(backend, LazyBackend) else LazyBackend.of(backend)

    def recovery_backends(self) -> list[FaultBackend]:
        return [self.lazy.backend()]

    def fault_target_names(self) -> list[str]:
        return [self.fault_target]

    def trigger_refusal(self, kind: str) -> str | None:
        if (
            self.foreign is not None and kind != "slow"
        ):  # a slow cuts its containers' CPU (retrystorm.runner.throttle_controls)
            return foreign_refusal(kind)
        return builtin_refusal(kind)

    def describe(self, model: OverloadModel | None) -> str:
        if self.foreign is not None or model is None:
            ready = self.foreign.ready if self.foreign is not None and self.foreign.ready else None
            return (
                f"your service at {self.target_url} (load sent to {self.load_target_url}); no admin API: nothing is "
                f"reset between strategies (no model set, no counters zeroed, nothing released), only resumed; "
                f"ready: {f'GET {ready} answering 2xx' if ready else 'the URL answering'}; outages pause "
                f"{self.fault_target!r}{self._alias()} through {self.lazy.what} (each of its containers paused)"
            )
        return (
            f"the target service at {self.target_url} (load sent to {self.load_target_url}), reset per strategy "
            f"and set to --model {model.spec()}; outages pause {self.fault_target!r} through {self.lazy.what}"
        )

    def _alias(self) -> str:
        """`` (compose service web)`` when a foreign target names what ``target`` stands for."""
        if self.foreign is not None and self.foreign.service:
            return f" (compose service {self.foreign.service})"
        if self.foreign is not None and self.foreign.container:
            return f" (container {self.foreign.container})"
        return ""

    async def _health(self, api: WebApi) -> None:
        """``/healthz`` of the built-in target, or a foreign service's readiness; ``RunFailedError`` when not."""
        if self.foreign is None:
            await api.call("GET", "/healthz", timeout_s=HEALTH_TIMEOUT_S)
        elif (problem := await readiness_probe(api.base_url, self.foreign.ready)) is not None:
            raise RunFailedError(problem)

    async def _wait_healthy(self, api: WebApi, backend: FaultBackend, refs: list[TargetRef]) -> None:
        last_error: list[str] = []

        async def healthy() -> bool | None:
            states = await backend_states(backend, refs)
            if TargetState.PAUSED in states:
                raise RunFailedError(
                    f"the target ({refs[0].describe()}) is paused by something else; resume it "
                    "(retrystorm chaos recover, or the Chaos tab) and run again"
                )
            try:
                await self._health(api)
            except RunFailedError as error:
                last_error[:] = [str(error)]
                return None
            return True

        def late() -> RunFailedError:
            waited = f"{self.ready_timeout_s:.0f} s"
            return RunFailedError(f"the target is not ready after {waited}: {last_error[0] if last_error else ''}")

        await poll_until(healthy, timeout_s=self.ready_timeout_s, every_s=0.2, on_timeout=late)

    async def start(self, label: str, model: OverloadModel | None, seed: int) -> ServiceTarget:
        """The target, healthy, serving ``model``, its faults disarmed and its state reset.

        ``seed`` is not applied: a long-lived target keeps the seed it was started with.
        """
        try:
            backend = self.lazy.backend()
            refs = await asyncio.to_thread(backend.resolve, self.fault_target)
        except BackendError as error:
            raise RunFailedError(f"the {self.lazy.name} backend cannot find the target: {error}") from error
        api = WebApi(self.target_url, "the target", token=self.admin_token)
        try:
            await self._wait_healthy(api, backend, refs)
            if self.foreign is None and model is not None:  # the built-in target: its admin API resets it
                await api.call_json("PUT", "/admin/model", json_body={"spec": model.spec()})
                await api.call_json("DELETE", "/admin/faults")
                await api.call_json("POST", "/admin/reset", json_body=RESET_BODY)
                log.info("target %s reset for %s (model %s)", self.target_url, label, model.spec())
        except BaseException:
            await api.close()
            raise
        handle = ServiceTarget(
            api, self.load_target_url, backend, refs, unhealthy_after_s=self.unhealthy_after_s, foreign=self.foreign
        )
        handle.watch.start()
        return handle
