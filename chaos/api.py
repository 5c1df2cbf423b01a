"""The chaos HTTP API: outages on demand while a swarm runs.

``POST /outages`` ``{"target": "target", "duration": "30s"}``  -> 201 with the outage
``GET /outages``  every outage;  ``GET /outages/{id}``;  ``DELETE /outages/{id}`` resumes early
``POST /throttles`` ``{"target": "target", "capacity": 0.4, "duration": "10s"}`` -> 201 with the throttle
``GET /throttles``; ``GET /throttles/{id}``; ``DELETE /throttles/{id}`` restores early
``POST /network`` ``{"kind": "delay", "target": "web", "latency": "200ms", "duration": "10s"}`` -> 201: a fault in
the network (delay, loss, hang, reset on a registered fault proxy; a partition from registered peers or by a
registered interface, :mod:`retrystorm.chaos.network.agent`); ``GET /network``; ``GET /network-targets``;
``GET /network/{id}``; ``DELETE /network/{id}`` ends it early
``GET /targets``  targets this controller may pause, and whether each is paused
``GET /metrics``  Prometheus text;  ``GET /healthz``;  ``GET /openapi.json`` (:mod:`retrystorm.chaos.openapi`)

Only targets registered when the server started can be paused (:class:`~retrystorm.chaos.targets.TargetRegistry`);
a raw ``pid:N`` is refused. Every request passes :mod:`retrystorm.request_guard` first (:func:`guard`): with a
token, ``Authorization: Bearer TOKEN`` on every route but ``/healthz``, ``/metrics`` and ``/openapi.json``
(401); no request a page of another site made (``Origin``, ``Sec-Fetch-Site``), and without a token no
``Host`` but a loopback name (DNS rebinding) (403); a body only as ``application/json`` (415, so no HTML
form can post one). Bound to loopback it needs no token; ``chaos serve`` refuses any other address
without one. A body must arrive within :data:`BODY_TIMEOUT_S` (408). Every malformed field is a 400
with one line.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import web
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from pydantic import ValidationError

from retrystorm.chaos.backends.base import BackendError, TargetRefusedError, UnknownTargetError
from retrystorm.chaos.bodies import PauseRequest, ThrottleRequest, problem, throttle_problem
from retrystorm.chaos.controller import OutageController
from retrystorm.chaos.lifecycle import TooManyFaultsError
from retrystorm.chaos.network.agent import NetworkFaults, NetworkRequest, network_problem
from retrystorm.chaos.network.routes import Peers
from retrystorm.chaos.targets import TargetRegistry
from retrystorm.errors import UserError
from retrystorm.request_guard import Refusal, RequestFacts, RequestGuard

CONTROLLER = web.AppKey("controller", OutageController)
NETWORK = web.AppKey("network", NetworkFaults)
TARGETS = web.AppKey("targets", TargetRegistry)
REGISTRY = web.AppKey("registry", CollectorRegistry)
GUARD = web.AppKey("guard", RequestGuard)
#: Routes that need no token: liveness, Prometheus and the API's own description change nothing.
OPEN_PATHS = frozenset({"/healthz", "/metrics", "/openapi.json"})
#: The largest request body read, in bytes.
MAX_BODY_BYTES = 16 * 1024
#: Seconds a request's body may take to arrive once its head has (a client trickling it is cut off: 408).
BODY_TIMEOUT_S = 10.0
#: Seconds a connection may stay open without a whole request head: aiohttp's keep-alive timer, which
#: runs from the connection's start and again after each answer, closes it (a slowloris client's too).
#: Set on the app itself (``handler_args``), so it holds however the app is served.
HEAD_TIMEOUT_S = 10.0
OPENAPI = Path(__file__).with_name("openapi.json")
#: Where the token a client must send comes from, as messages name it.
TOKEN_HINT = "chaos serve's --token (RETRYSTORM_CHAOS_TOKEN)"  # noqa: S105 - where it is set, not a token

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _error(status: type[web.HTTPException], message: str) -> web.HTTPException:
    return status(text=json.dumps({"error": message}), content_type="application/json")


def _refused(refusal: Refusal) -> web.Response:
    response = web.json_response({"error": refusal.message}, status=refusal.status)
    for challenge in refusal.challenges:
        response.headers.add("WWW-Authenticate", challenge)
    return response


def request_facts(request: web.Request) -> RequestFacts:
    """What :class:`~retrystorm.request_guard.RequestGuard` reads of an aiohttp request."""
    headers = request.headers
    return RequestFacts(
        method=request.method,
        host=headers.get("Host"),
        origin=headers.get("Origin"),
        fetch_site=headers.get("Sec-Fetch-Site"),
        content_type=headers.get("Content-Type"),
        has_body=request.body_exists,
        authorization=headers.get("Authorization"),
    )


@web.middleware
async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
    """The request guard (token, other sites' pages, content type); user errors as 4xx JSON ``{"error": ...}``."""
    rules = request.app[GUARD]
    facts = request_facts(request)
    refusal = rules.admit(facts, open_path=request.path in OPEN_PATHS)
    if refusal is not None:
        return _refused(refusal)
    unrouted = request.match_info.http_exception
    if unrouted is not None:  # no such path (404) or method (405): say so before judging the body
        unrouted.text = json.dumps({"error": f"{request.method[:20]} {request.path[:100]}: {unrouted.reason}"})
        unrouted.content_type = "application/json"
        raise unrouted
    refusal = rules.unsupported_body(facts)
    if refusal is not None:
        return _refused(refusal)
    try:
        return await handler(request)
    except UnknownTargetError as error:
        raise _error(web.HTTPNotFound, str(error)) from error
    except TargetRefusedError as error:
        raise _error(web.HTTPForbidden, str(error)) from error
    except TooManyFaultsError as error:
        raise _error(web.HTTPTooManyRequests, str(error)) from error
    except UserError as error:
        raise _error(web.HTTPBadRequest, str(error)) from error
    except BackendError as error:
        raise _error(web.HTTPBadGateway, str(error)) from error


def _too_large(size: int) -> web.HTTPException:
    return web.HTTPRequestEntityTooLarge(
        max_size=MAX_BODY_BYTES,
        actual_size=size,
        text=json.dumps({"error": f"body: larger than {MAX_BODY_BYTES} bytes"}),
        content_type="application/json",
    )


async def _body(request: web.Request) -> bytes:
    if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
        raise _too_large(request.content_length)
    try:
        async with asyncio.timeout(BODY_TIMEOUT_S):
            return await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise _too_large(MAX_BODY_BYTES + 1) from None
    except TimeoutError:
        raise _error(web.HTTPRequestTimeout, f"body: not sent within {BODY_TIMEOUT_S:g} s") from None


async def _pause_request(request: web.Request) -> PauseRequest:
    raw = await _body(request)
    try:
        return PauseRequest.model_validate_json(raw)
    except ValidationError as error:
        raise UserError(problem(error)) from None


async def create_throttle(request: web.Request) -> web.Response:
    """``POST /throttles``: cut a registered target's CPU to a fraction of its allowance for a duration."""
    raw = await _body(request)
    try:
        body = ThrottleRequest.model_validate_json(raw)
    except ValidationError as error:
        raise UserError(throttle_problem(error)) from None
    target = request.app[TARGETS].find(body.target, body.backend)
    throttle = await request.app[CONTROLLER].throttle(target, body.capacity, body.duration_s)
    return web.json_response(throttle.to_json(), status=201)


async def list_throttles(request: web.Request) -> web.Response:
    """``GET /throttles``."""
    return web.json_response([t.to_json() for t in request.app[CONTROLLER].throttles.throttles()])


def _throttle(request: web.Request) -> Any:
    throttle_id = request.match_info["throttle_id"]
    for throttle in request.app[CONTROLLER].throttles.throttles():
        if throttle.id == throttle_id:
            return throttle
    raise _error(web.HTTPNotFound, f"no throttle {throttle_id[:40]!r}")


async def get_throttle(request: web.Request) -> web.Response:
    """``GET /throttles/{id}``."""
    return web.json_response(_throttle(request).to_json())


async def end_throttle(request: web.Request) -> web.Response:
    """``DELETE /throttles/{id}``: restore now."""
    throttle = await _throttle(request).end("early")
    return web.json_response(throttle.to_json())


async def create_network_fault(request: web.Request) -> web.Response:
    """``POST /network``: a fault in the network (a toxic on a registered proxy, or a partition) for a duration."""
    raw = await _body(request)
    try:
        body = NetworkRequest.model_validate_json(raw)
    except ValidationError as error:
        raise UserError(network_problem(error)) from None
    fault = await request.app[NETWORK].play(body)
    return web.json_response(fault.to_json(), status=201)


async def list_network_faults(request: web.Request) -> web.Response:
    """``GET /network``: every network fault, oldest first."""
    return web.json_response([fault.to_json() for fault in request.app[NETWORK].faults()])


async def network_targets(request: web.Request) -> web.Response:
    """``GET /network-targets``: the proxies, peers and interfaces registered."""
    return web.json_response(request.app[NETWORK].targets_json())


async def get_network_fault(request: web.Request) -> web.Response:
    """``GET /network/{id}``."""
    return web.json_response(request.app[NETWORK].find(request.match_info["fault_id"]).to_json())


async def end_network_fault(request: web.Request) -> web.Response:
    """``DELETE /network/{id}``: end it now."""
    fault = await request.app[NETWORK].end(request.match_info["fault_id"])
    return web.json_response(fault.to_json())


async def create_outage(request: web.Request) -> web.Response:
    """``POST /outages``: pause a registered target for a duration."""
    body = await _pause_request(request)
    target = request.app[TARGETS].find(body.target, body.backend)
    outage = await request.app[CONTROLLER].pause(target, body.duration_s)
    return web.json_response(outage.to_json(), status=201)


async def list_outages(request: web.Request) -> web.Response:
    """``GET /outages``."""
    return web.json_response([o.to_json() for o in request.app[CONTROLLER].outages()])


def _outage(request: web.Request) -> Any:
    outage_id = request.match_info["outage_id"]
    for outage in request.app[CONTROLLER].outages():
        if outage.id == outage_id:
            return outage
    raise _error(web.HTTPNotFound, f"no outage {outage_id[:40]!r}")


async def get_outage(request: web.Request) -> web.Response:
    """``GET /outages/{id}``."""
    return web.json_response(_outage(request).to_json())


async def end_outage(request: web.Request) -> web.Response:
    """``DELETE /outages/{id}``: resume now."""
    outage = _outage(request)
    await request.app[CONTROLLER].resume(outage.id, reason="early")
    return web.json_response(outage.to_json())


async def list_targets(request: web.Request) -> web.Response:
    """``GET /targets``: ``[{"backend", "target", "state"}]``, the state of each target's first instance."""
    return web.json_response(await asyncio.to_thread(target_states, request.app[TARGETS]))


def target_states(targets: TargetRegistry) -> list[dict[str, str]]:
    """Each registered target with the state of its first instance (blocking: backends are synchronous)."""
    rows = []
    for backend, name in targets.listing():
        refs = backend.resolve(name)
        rows.append({"backend": backend.name, "target": name, "state": str(backend.state(refs[0]))})
    return rows


async def metrics(request: web.Request) -> web.Response:
    """``GET /metrics``: Prometheus text format."""
    return web.Response(body=generate_latest(request.app[REGISTRY]), headers={"Content-Type": CONTENT_TYPE_LATEST})


async def healthz(request: web.Request) -> web.Response:
    """``GET /healthz``."""
    controller = request.app[CONTROLLER]
    active = {
        "active_outages": len(controller.active()),
        "active_throttles": len(controller.throttles.active()),
        "active_network": len(request.app[NETWORK].active()),
    }
    return web.json_response({"status": "ok", **active})


async def openapi(_request: web.Request) -> web.Response:
    """``GET /openapi.json``: this API as OpenAPI 3.1 (``chaos/openapi.json``)."""
    return web.Response(body=OPENAPI.read_bytes(), content_type="application/json")


#: (method, path, handler): the routes, also read by :mod:`retrystorm.chaos.openapi` to check the document.
ROUTES: tuple[tuple[str, str, Handler], ...] = (
    ("POST", "/outages", create_outage),
    ("GET", "/outages", list_outages),
    ("GET", "/outages/{outage_id}", get_outage),
    ("DELETE", "/outages/{outage_id}", end_outage),
    ("POST", "/throttles", create_throttle),
    ("GET", "/throttles", list_throttles),
    ("GET", "/throttles/{throttle_id}", get_throttle),
    ("DELETE", "/throttles/{throttle_id}", end_throttle),
    ("POST", "/network", create_network_fault),
    ("GET", "/network", list_network_faults),
    ("GET", "/network-targets", network_targets),
    ("GET", "/network/{fault_id}", get_network_fault),
    ("DELETE", "/network/{fault_id}", end_network_fault),
    ("GET", "/targets", list_targets),
    ("GET", "/metrics", metrics),
    ("GET", "/healthz", healthz),
    ("GET", "/openapi.json", openapi),
)


def create_app(
    controller: OutageController,
    targets: TargetRegistry,
    *,
    registry: CollectorRegistry,
    token: str = "",
    network: NetworkFaults | None = None,
) -> web.Application:
    """The chaos API around ``controller``, pausing ``targets`` only, playing faults in the network on what
    ``network`` registered (none: nothing); ends every fault when the app shuts down."""
    app = web.Application(
        middlewares=[guard], client_max_size=MAX_BODY_BYTES, handler_args={"keepalive_timeout": HEAD_TIMEOUT_S}
    )
    app[CONTROLLER] = controller
    app[NETWORK] = network if network is not None else NetworkFaults(controller, {}, Peers())
    app[TARGETS] = targets
    app[REGISTRY] = registry
    app[GUARD] = RequestGuard(token, surface="the chaos API", token_hint=TOKEN_HINT)
    for method, path, handler in ROUTES:
        app.router.add_route(method, path, handler)

    async def lifecycle(_app: web.Application) -> Any:
        await controller.start()
        yield
        await controller.resume_all("shutdown")

    app.cleanup_ctx.append(lifecycle)
    return app
