"""The target service: routes, the model behind ``/api``, metrics, admin API, lifecycle.

``GET /api`` admits the request into the model and answers when the model releases
it: 200 ``OK``, or 503 when the model rejects it. A request whose client went away
keeps its place in the model until released, as in the seed server (that is what
sustains a retry storm); with ``cancel_on_disconnect`` it leaves the model at once.
While a fault rule is armed (``PUT /admin/faults``, :mod:`retrystorm.target.faults`), the
attempts it picks are answered with its error at once instead. ``PUT /admin/capacity``
runs the model at a fraction of its capacity (:mod:`retrystorm.target.models.capacity`), until
``DELETE /admin/capacity`` or ``POST /admin/reset`` restores it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import time
from collections.abc import Callable
from importlib import resources
from typing import TYPE_CHECKING, Any

from prometheus_client import CONTENT_TYPE_PLAIN_0_0_4, CollectorRegistry, generate_latest

from retrystorm.console import out
from retrystorm.errors import UserError
from retrystorm.request_guard import Refusal
from retrystorm.target.faults import FaultInjector, FaultRule, parse_attempt
from retrystorm.target.metrics import build_metrics
from retrystorm.target.models import Completion, Outcome
from retrystorm.target.service.admin import (
    model_document,
    parse_capacity_body,
    parse_model_body,
    parse_reset_body,
    parse_rule_body,
)
from retrystorm.target.service.auth import (
    admin_guard,
    check_bound,
    check_exposure,
    is_admin_path,
    refused,
    request_facts,
)
from retrystorm.target.service.config import ServiceConfig
from retrystorm.target.service.driver import ModelDriver
from retrystorm.target.service.http import HttpServer, Request
from retrystorm.target.service.memory import MemoryReturn
from retrystorm.target.service.responses import Response

if TYPE_CHECKING:
    from retrystorm.target.service.grpc_front import GrpcFront

logger = logging.getLogger(__name__)

OK = Response(200, b"OK", shared=True)
REJECTED = Response.text(503, "rejected: the server is overloaded", shared=True)
SHUTTING_DOWN = Response.text(503, "the server is shutting down", shared=True)
RESET = Response.text(503, "released by POST /admin/reset", shared=True)
HEALTHY = Response.text(200, "OK", shared=True)
_OK = Outcome.OK
#: What installs the gRPC front's libraries (the optional extra ``grpc``).
GRPC_EXTRA = "pip install 'retrystorm[grpc]'"
#: Seconds ``stop`` waits for connections to flush before dropping them.
SHUTDOWN_GRACE_S = 2.0


def load_openapi() -> bytes:
    """The OpenAPI document shipped beside this package (``target/openapi.json``)."""
    return resources.files("retrystorm.target").joinpath("openapi.json").read_bytes()


def _json(status: int, document: dict[str, Any]) -> Response:
    return Response(status, json.dumps(document).encode() + b"\n", "application/json")


class TargetApp:
    """One target service: create with :func:`create_app`, then ``await start()``."""

    def __init__(self, config: ServiceConfig, *, registry: CollectorRegistry, clock: Callable[[], float]) -> None:
        self.config = config
        self.clock = clock
        self.metrics = build_metrics(registry)
        self._observe = self.metrics.traffic.observe  # bound once: called for every request
        self.driver: ModelDriver[Request] = ModelDriver(
            config.model, clock=clock, rng=random.Random(config.seed), release=self._release
        )
        self.faults = FaultInjector(random.Random(f"{config.seed}:faults" if config.seed is not None else None))
        self._fault_response = REJECTED
        self.http = HttpServer(self, config.limits)
        self.guard = admin_guard(config.admin_token)
        self.abandoned_in_flight = 0
        self.metrics.bind_state(
            in_flight=lambda: self.driver.in_flight,
            abandoned_in_flight=lambda: self.abandoned_in_flight,
            delay_s=lambda: self.driver.delay_s,
            connections=lambda: len(self.http.connections),
        )
        self.metrics.bind_triggers(
            capacity_ratio=lambda: self.driver.capacity,
            error_probability=lambda: self.faults.probability,
        )
        self.metrics.bind_connection_counters(lambda: self.http.refused, lambda: self.http.timed_out)
        self.metrics.show_model(config.model)
        self._openapi = Response(200, load_openapi(), "application/json", shared=True)
        self.routes: dict[str, dict[bytes, Callable[[Request], Response | None]]] = {
            "/api": {b"GET": self._api},
            "/healthz": {b"GET": lambda _: HEALTHY},
            "/metrics": {b"GET": self._scrape},
            "/openapi.json": {b"GET": lambda _: self._openapi},
            "/admin/model": {b"GET": self._get_model, b"PUT": self._put_model},
            "/admin/reset": {b"POST": self._reset},
            "/admin/faults": {b"GET": self._get_faults, b"PUT": self._put_faults, b"DELETE": self._delete_faults},
            "/admin/capacity": {
                b"GET": self._get_capacity,
                b"PUT": self._put_capacity,
                b"DELETE": self._delete_capacity,
            },
        }
        self._listener: asyncio.Server | None = None
        self._reporter: asyncio.Task[None] | None = None
        self.memory = MemoryReturn(lambda: self.driver.in_flight, lambda: len(self.http.connections))
        self._housekeeping: asyncio.TimerHandle | None = None
        self.grpc: GrpcFront | None = None

    # lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Listen on the configured address and start the clock task.

        Without an admin token, a host that is not loopback only is refused (a
        :class:`~retrystorm.errors.UserError`), before binding and again on the addresses bound.
        """
        config = self.config
        check_exposure(config.host, config.admin_token)
        loop = asyncio.get_running_loop()
        self._listener = await loop.create_server(
            self.http.protocol, config.host, config.port, backlog=config.backlog, reuse_address=True
        )
        try:
            check_bound(self._listener.sockets, config.admin_token)
        except UserError:
            self._listener.close()
            raise
        if config.grpc_port is not None:
            await self._start_grpc(config.grpc_port)
        self.driver.start()
        self.http.start()
        if self.config.report_interval_s > 0:
            self._reporter = loop.create_task(self._report(), name="report")
        self._every_second()

    async def _start_grpc(self, port: int) -> None:
        """Serve the model over gRPC too (:mod:`retrystorm.target.service.grpc_front`); on failure the HTTP
        listener closes again."""
        try:
            try:
                from retrystorm.target.service.grpc_front import GrpcFront  # noqa: PLC0415 - grpcio is optional
            except ImportError as error:
                raise UserError(f"--grpc-port needs grpcio and protobuf ({error}): {GRPC_EXTRA}") from None
            self.grpc = GrpcFront(self)
            await self.grpc.start(self.config.host, port)
        except BaseException:
            if self._listener is not None:
                self._listener.close()
            raise
        self.metrics.bind_grpc_attempts(lambda: self.grpc.attempts if self.grpc is not None else {})

    @property
    def closing(self) -> bool:
        """True once :meth:`stop` has begun."""
        return self.http.closing

    @property
    def grpc_port(self) -> int | None:
        """The gRPC port actually bound (``None``: no gRPC)."""
        return self.grpc.port if self.grpc is not None else None

    @property
    def port(self) -> int:
        """The port actually bound (useful with port 0)."""
        if self._listener is None:
            raise RuntimeError("the service is not started")
        port: int = self._listener.sockets[0].getsockname()[1]
        return port

    async def stop(self) -> None:
        """Stop accepting, answer everything in flight with 503, close every connection."""
        self.http.closing = True
        if self._listener is not None:
            self._listener.close()
        self._answer_all(SHUTTING_DOWN)
        if self.grpc is not None:
            await self.grpc.stop(SHUTDOWN_GRACE_S)
        await self.driver.stop()
        self.http.stop()
        if self._housekeeping is not None:
            self._housekeeping.cancel()
        if self._reporter is not None:
            self._reporter.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reporter
        self.http.close_idle()
        for _ in range(int(SHUTDOWN_GRACE_S / 0.05)):
            if not self.http.connections:
                break
            await asyncio.sleep(0.05)
        self.http.abort_all()

    def _every_second(self) -> None:
        """Housekeeping: return memory after a drained peak (:mod:`retrystorm.target.service.memory`)."""
        self.memory.check()
        self._housekeeping = asyncio.get_running_loop().call_later(1.0, self._every_second)

    async def _report(self) -> None:
        while True:
            await asyncio.sleep(self.config.report_interval_s)
            stamp = time.strftime("%b %d %H:%M:%S")
            line = f"concurrency: {self.driver.in_flight:4d}, last delay: {_format_delay(self.driver.delay_s)}"
            out.print(f"{stamp}: {line}", markup=False, soft_wrap=True)

    # HTTP ------------------------------------------------------------------------------

    def handle(self, request: Request) -> Response | None:
        """Route a request; ``None`` means the model will answer it later."""
        if request.path == "/api" and request.method == b"GET" and not self.http.closing:  # the hot path first
            if self.faults.rule is not None:
                return self._api(request)
            request.arrived_s = self.driver.admit(request)
            return None
        if self.http.closing:
            return SHUTTING_DOWN
        facts = request_facts(request) if is_admin_path(request.path) else None  # the guard judges the admin API
        if facts is not None and (refusal := self.guard.admit(facts)) is not None:
            return self._refused(refusal)
        methods = self.routes.get(request.path)
        if methods is None:
            return self._bad(404, f"no such path {request.path!r}; see /openapi.json")
        action = methods.get(request.method)
        if action is None:
            allowed = ", ".join(method.decode() for method in methods)
            method = request.method.decode("latin-1")
            return self._bad(405, f"{method} not allowed on {request.path}; use {allowed}", f"Allow: {allowed}\r\n")
        if facts is not None and (refusal := self.guard.unsupported_body(facts)) is not None:
            return self._refused(refusal)
        return action(request)

    def _refused(self, refusal: Refusal) -> Response:
        self.bad_request(refusal.status)
        return refused(refusal)

    def disconnected(self, request: Request) -> None:
        """A client left while its request was in the model."""
        if not self.config.cancel_on_disconnect:
            self.abandoned_in_flight += 1
        elif self.driver.withdraw(request):
            self.metrics.traffic.observe("abandoned", self.clock() - request.arrived_s)

    def bad_request(self, status: int) -> None:
        """Count a 4xx answer."""
        self.metrics.traffic.bad_request(status)

    def _bad(self, status: int, message: str, headers: str = "") -> Response:
        self.bad_request(status)
        return Response.text(status, message, headers)

    def _api(self, request: Request) -> Response | None:
        if self.faults.rule is not None:
            try:
                attempt = parse_attempt(request.attempt)
            except UserError as error:
                return self._bad(400, str(error))
            status = self.faults.judge(attempt, self.clock())
            if status is not None:
                self.metrics.traffic.injected_failure(status)
                return self._fault_response
        request.arrived_s = self.driver.admit(request)
        return None

    def _release(self, completions: list[Completion[Request]], now: float) -> None:
        observe = self._observe
        for request, outcome, admitted_s in completions:
            ok = outcome is _OK
            if request.connection.respond(OK if ok else REJECTED):
                observe("ok" if ok else "rejected", now - admitted_s)
            else:  # the client went away meanwhile
                self.abandoned_in_flight -= 1
                observe("abandoned", now - admitted_s)

    def _answer_all(self, response: Response) -> int:
        """Release everything in flight with ``response``; returns how many."""
        drained = self.driver.drain()
        for _, request in drained:
            if request.gone:
                self.abandoned_in_flight -= 1
            else:
                request.connection.respond(response)
        return len(drained)

    # metrics and admin -----------------------------------------------------------------

    def _scrape(self, request: Request) -> Response:
        return Response(200, generate_latest(self.metrics.registry), CONTENT_TYPE_PLAIN_0_0_4)

    def _model_document(self) -> Response:
        driver = self.driver
        return _json(200, model_document(driver.model, in_flight=driver.in_flight, delay_s=driver.delay_s))

    def _get_model(self, request: Request) -> Response:
        return self._model_document()

    def _put_model(self, request: Request) -> Response:
        try:
            model = parse_model_body(request.body)
        except UserError as error:
            return self._bad(400, str(error))
        self.driver.switch(model)
        self.metrics.show_model(model)
        logger.info("model changed to %s", model.spec())
        return self._model_document()

    def _reset(self, request: Request) -> Response:
        try:
            release = parse_reset_body(request.body)
        except UserError as error:
            return self._bad(400, str(error))
        released = self._answer_all(RESET) if release else 0
        self.metrics.traffic.reset()
        self.driver.set_capacity(1.0)
        return _json(200, {"reset": True, "released": released})

    def _capacity_document(self) -> Response:
        return _json(200, {"capacity": self.driver.capacity})

    def _get_capacity(self, request: Request) -> Response:
        return self._capacity_document()

    def _put_capacity(self, request: Request) -> Response:
        try:
            capacity = parse_capacity_body(request.body)
        except UserError as error:
            return self._bad(400, str(error))
        self.driver.set_capacity(capacity)
        logger.info("capacity set to %s", capacity)
        return self._capacity_document()

    def _delete_capacity(self, request: Request) -> Response:
        self.driver.set_capacity(1.0)
        logger.info("capacity restored")
        return self._capacity_document()

    def _faults_document(self) -> Response:
        return _json(200, self.faults.to_json())

    def _get_faults(self, request: Request) -> Response:
        return self._faults_document()

    def _put_faults(self, request: Request) -> Response:
        try:
            rule = parse_rule_body(request.body)
        except UserError as error:
            return self._bad(400, str(error))
        self._fault_response = _fault_response(rule)
        self.faults.arm(rule)
        logger.info("fault rule armed: %s", rule)
        return self._faults_document()

    def _delete_faults(self, request: Request) -> Response:
        self.faults.disarm()
        logger.info("fault rule disarmed")
        return self._faults_document()


def _fault_response(rule: FaultRule) -> Response:
    """The answer to every attempt ``rule`` fails (shared: encoded once per second)."""
    headers = "" if rule.retry_after_s is None else f"Retry-After: {rule.retry_after_s}\r\n"
    message = f"failed on purpose: fault rule of PUT /admin/faults ({rule.status})"
    return Response.text(rule.status, message, headers, shared=True)


def _format_delay(delay_s: float) -> str:
    """Like Go's ``time.Duration`` printing, to the millisecond: ``100ms``, ``1.234s``."""
    if delay_s < 1:
        return f"{delay_s * 1000:.0f}ms"
    return f"{delay_s:.3f}".rstrip("0").rstrip(".") + "s"


def create_app(config: ServiceConfig, *, registry: CollectorRegistry, clock: Callable[[], float]) -> TargetApp:
    """A target service for ``config`` whose metrics live in ``registry`` and whose
    model reads the time from ``clock`` (seconds, advancing with the event loop's clock)."""
    return TargetApp(config, registry=registry, clock=clock)
