"""The built-in target's model served over gRPC: a grpcio (``grpc.aio``) server beside the HTTP one.

``retrystorm target --grpc-port N`` adds it; grpcio is the optional extra ``grpc``
(``pip install 'retrystorm[grpc]'``). One :class:`GrpcFront` belongs to one
:class:`~retrystorm.target.service.app.TargetApp` and shares
everything with it: the model and its clock task, the fault rule, the capacity, the metrics and the
admin API (which stays on the HTTP port, behind the same guard). A call of
``/retrystorm.target.v1.Target/Echo`` is an attempt, exactly as ``GET /api`` is:

* its attempt number is ``grpc-previous-rpc-attempts`` + 1 (the metadata gRFC A6 has a client send
  on every retry), or ``retrystorm-attempt`` (the load generator's emulated retries); it is
  counted in ``retrystorm_target_grpc_attempts_total{attempt}`` and judged by the armed fault rule
  (:mod:`retrystorm.target.faults`) as the ``Retrystorm-Attempt`` header is;
* a failed attempt ends at once with the rule's status as a gRPC code (:func:`grpc_code`), and with
  the trailer ``grpc-retry-pushback-ms: 1000 x retry_after`` when the rule has a ``retry_after``;
* otherwise the call enters the model and is answered when the model releases it: the request's
  bytes echoed (see :mod:`.grpc_proto`), or ``UNAVAILABLE`` when the model rejects it;
* a call whose client gave up (deadline, cancel) keeps its place in the model, as an abandoned HTTP
  request does, unless the target runs with ``cancel_on_disconnect``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Protocol

import grpc
from grpc import aio

from retrystorm.errors import UserError
from retrystorm.target.faults import MAX_ATTEMPT, FaultInjector
from retrystorm.target.metrics import TargetMetrics
from retrystorm.target.service.driver import ModelDriver
from retrystorm.target.service.grpc_proto import FULL_METHOD, METHOD, SERVICE, descriptor_pool_with_target
from retrystorm.target.service.request import Request
from retrystorm.target.service.responses import Response

logger = logging.getLogger(__name__)

#: The metadata gRFC A6 has a client add to each retry: how many attempts came before.
PREVIOUS_ATTEMPTS = "grpc-previous-rpc-attempts"
#: The metadata the load generator numbers its emulated retries with (2, 3, ...), as ``Retrystorm-Attempt``.
ATTEMPT_METADATA = "retrystorm-attempt"
#: The trailer that tells a gRPC client how long to wait before its next retry (gRFC A6, "Pushback").
PUSHBACK = "grpc-retry-pushback-ms"
_GRPC_METHOD = b"GRPC"
_HTTP_OK = 200


def grpc_code(status: int) -> grpc.StatusCode:
    """The gRPC code for an HTTP status of the fault rule or the model.

    429 -> ``RESOURCE_EXHAUSTED`` (what a gRPC server says for "throttled"), 500 -> ``INTERNAL``,
    501 -> ``UNIMPLEMENTED``, every other 5xx (503 above all) -> ``UNAVAILABLE``.
    """
    if status == 429:
        return grpc.StatusCode.RESOURCE_EXHAUSTED
    if status == 500:
        return grpc.StatusCode.INTERNAL
    if status == 501:
        return grpc.StatusCode.UNIMPLEMENTED
    return grpc.StatusCode.UNAVAILABLE


def attempt_number(metadata: object) -> int:
    """The attempt a call is: ``retrystorm-attempt`` (the load generator's emulated retries), else
    1 + ``grpc-previous-rpc-attempts`` (grpcio's own), else 1. Raises :class:`UserError`."""
    found = dict(metadata or ())  # type: ignore[call-overload]
    for key, offset in ((ATTEMPT_METADATA, 0), (PREVIOUS_ATTEMPTS, 1)):
        value = found.get(key)
        if value is None:
            continue
        text = value.decode("latin-1") if isinstance(value, bytes) else str(value)
        if not text.isdigit() or len(text) > 9 or not 1 - offset <= int(text) < MAX_ATTEMPT:
            expected = "a whole number >= 1" if offset == 0 else "a whole number >= 0"
            raise UserError(f"{key}: got {text[:40]!r}, expected {expected}")
        return int(text) + offset
    return 1


class Host(Protocol):
    """What the gRPC front uses of its :class:`~retrystorm.target.service.app.TargetApp`."""

    driver: ModelDriver[Request]
    faults: FaultInjector
    metrics: TargetMetrics
    clock: Callable[[], float]

    @property
    def closing(self) -> bool:
        """True once the service is shutting down."""
        ...

    def bad_request(self, status: int) -> None:
        """Count a 4xx answer."""

    def disconnected(self, request: Request) -> None:
        """A client left while its request was in the model."""


class GrpcCall:
    """One call waiting in the model: the :class:`~retrystorm.target.service.request.Connection` its request has."""

    __slots__ = ("closed", "future")

    def __init__(self, future: asyncio.Future[Response]) -> None:
        self.future = future
        self.closed = False

    def respond(self, response: Response) -> bool:
        """Hand the model's answer to the waiting call; ``False`` if its client is gone."""
        if self.closed or self.future.done():
            return False
        self.future.set_result(response)
        return True


class GrpcFront:
    """The gRPC listener of one target (see the module docstring)."""

    def __init__(self, app: Host) -> None:
        self.app = app
        self.server: aio.Server | None = None
        self.port = 0
        self.attempts: dict[int, int] = {}

    async def start(self, host: str, port: int) -> int:
        """Listen on ``host:port`` (0: a free port); the port bound. Raises :class:`UserError` if it cannot."""
        server = aio.server(options=[("grpc.so_reuseport", 0)])
        handler = grpc.unary_unary_rpc_method_handler(self._echo)  # bytes in, bytes out: no (de)serialising
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, {METHOD: handler}),))
        _enable_reflection(server)
        address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        try:
            self.port = server.add_insecure_port(address)
        except RuntimeError as error:
            raise UserError(f"--grpc-port: cannot listen on {address}: {error}") from None
        await server.start()
        self.server = server
        return self.port

    async def stop(self, grace_s: float) -> None:
        """Stop accepting and end the calls still open after ``grace_s`` seconds."""
        if self.server is not None:
            await self.server.stop(grace_s)

    def count(self, attempt: int) -> None:
        """Count one arriving attempt by its number (5 and above together)."""
        key = min(attempt, 5)
        self.attempts[key] = self.attempts.get(key, 0) + 1

    async def _echo(self, request: bytes, context: aio.ServicerContext[bytes, bytes]) -> bytes:
        app = self.app
        if app.closing:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "the server is shutting down")
        try:
            attempt = attempt_number(context.invocation_metadata())
        except UserError as error:
            app.bad_request(400)
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(error))
        self.count(attempt)
        if app.faults.rule is not None:
            status = app.faults.judge(attempt, app.clock())
            if status is not None:
                app.metrics.traffic.injected_failure(status)
                await self._fail_on_purpose(status, context)
        call = GrpcCall(asyncio.get_running_loop().create_future())
        waiting = Request(call, _GRPC_METHOD, FULL_METHOD, True)
        context.add_done_callback(lambda _: self._ended(waiting, call))
        waiting.arrived_s = app.driver.admit(waiting)
        response = await call.future
        if response.status != _HTTP_OK:
            await context.abort(grpc_code(response.status), response.body.decode().strip())
        return request

    def _ended(self, waiting: Request, call: GrpcCall) -> None:
        """The call is over: if the model still holds it, its client went away (deadline, cancel, reset)."""
        future = call.future
        if future.done() and not future.cancelled():  # answered (awaiting it in a cancelled task cancels it)
            return
        call.closed = True
        future.cancel()
        self.app.disconnected(waiting)

    async def _fail_on_purpose(self, status: int, context: aio.ServicerContext[bytes, bytes]) -> None:
        rule = self.app.faults.rule
        if rule is not None and rule.retry_after_s is not None:
            context.set_trailing_metadata(((PUSHBACK, str(rule.retry_after_s * 1000)),))
        await context.abort(grpc_code(status), f"failed on purpose: fault rule of PUT /admin/faults ({status})")


def _enable_reflection(server: aio.Server) -> None:
    """Serve gRPC server reflection for ``Target`` (when grpcio-reflection is installed)."""
    try:
        from grpc_reflection.v1alpha import reflection  # noqa: PLC0415 - part of the grpc extra, optional here
    except ImportError:
        logger.info("grpcio-reflection is not installed: no server reflection")
        return
    names = (SERVICE, reflection.SERVICE_NAME)
    reflection.enable_server_reflection(names, server, pool=descriptor_pool_with_target())
