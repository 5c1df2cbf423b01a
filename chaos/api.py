"""The chaos HTTP API: outages on demand while a swarm runs.

``POST /outages`` ``{"target": "target", "duration": "30s"}``  -> 201 with the outage
``GET /outages``  every outage;  ``GET /outages/{id}``;  ``DELETE /outages/{id}`` resumes early
``GET /targets``  targets this controller may pause, and whether each is paused
``GET /metrics``  Prometheus text;  ``GET /healthz``

Bound to loopback it needs no credentials; bound anywhere else every route but
``/healthz`` and ``/metrics`` requires ``Authorization: Bearer TOKEN``.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from chaos.backends.base import BackendError, TargetRefusedError, UnknownTargetError
from chaos.controller import OutageController
from retrystorm.durations import parse_duration
from retrystorm.errors import UserError

CONTROLLER = web.AppKey("controller", OutageController)
REGISTRY = web.AppKey("registry", CollectorRegistry)
TOKEN = web.AppKey("token", str)
OPEN_PATHS = frozenset({"/healthz", "/metrics"})

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _error(status: type[web.HTTPException], message: str) -> web.HTTPException:
    return status(text=json.dumps({"error": message}), content_type="application/json")


@web.middleware
async def errors_and_auth(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Bearer-token check when a token is set; user errors as 4xx JSON ``{"error": ...}``."""
    token = request.app.get(TOKEN, "")
    if token and request.path not in OPEN_PATHS:
        given = request.headers.get("Authorization", "")
        if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
            raise _error(web.HTTPUnauthorized, "missing or wrong bearer token: send Authorization: Bearer TOKEN")
    try:
        return await handler(request)
    except UnknownTargetError as error:
        raise _error(web.HTTPNotFound, str(error)) from error
    except TargetRefusedError as error:
        raise _error(web.HTTPForbidden, str(error)) from error
    except UserError as error:
        raise _error(web.HTTPBadRequest, str(error)) from error
    except BackendError as error:
        raise _error(web.HTTPBadGateway, str(error)) from error


async def _json_body(request: web.Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise UserError('body: expected JSON like {"target": "target", "duration": "30s"}') from None
    if not isinstance(body, dict):
        raise UserError('body: expected a JSON object like {"target": "target", "duration": "30s"}')
    return body


async def create_outage(request: web.Request) -> web.Response:
    """``POST /outages``: pause a target for a duration."""
    body = await _json_body(request)
    unknown = sorted(set(body) - {"target", "duration", "backend"})
    if unknown:
        raise UserError(f"body: unknown field {unknown[0]!r}; accepted: target, duration, backend")
    target = body.get("target")
    if not isinstance(target, str) or not target:
        raise UserError('target: expected the name of a target, e.g. "target" (see GET /targets)')
    if "duration" not in body:
        raise UserError('duration: required, e.g. "30s"')
    duration = parse_duration(body["duration"], what="duration")
    backend = body.get("backend")
    if backend is not None and not isinstance(backend, str):
        raise UserError("backend: expected a backend name")
    outage = await request.app[CONTROLLER].pause(target, duration, backend=backend)
    return web.json_response(outage.to_json(), status=201)


async def list_outages(request: web.Request) -> web.Response:
    """``GET /outages``."""
    return web.json_response([o.to_json() for o in request.app[CONTROLLER].outages()])


def _outage(request: web.Request) -> Any:
    outage_id = request.match_info["outage_id"]
    for outage in request.app[CONTROLLER].outages():
        if outage.id == outage_id:
            return outage
    raise _error(web.HTTPNotFound, f"no outage {outage_id!r}")


async def get_outage(request: web.Request) -> web.Response:
    """``GET /outages/{id}``."""
    return web.json_response(_outage(request).to_json())


async def end_outage(request: web.Request) -> web.Response:
    """``DELETE /outages/{id}``: resume now."""
    outage = _outage(request)
    await request.app[CONTROLLER].resume(outage.id, reason="early")
    return web.json_response(outage.to_json())


async def list_targets(request: web.Request) -> web.Response:
    """``GET /targets``: ``[{"backend", "target", "state"}]``."""
    states = await request.app[CONTROLLER].states()
    return web.json_response(
        [
            {"backend": key.split(":", 1)[0], "target": key.split(":", 1)[1], "state": str(state)}
            for key, state in sorted(states.items())
        ]
    )


async def metrics(request: web.Request) -> web.Response:
    """``GET /metrics``: Prometheus text format."""
    return web.Response(body=generate_latest(request.app[REGISTRY]), headers={"Content-Type": CONTENT_TYPE_LATEST})


async def healthz(request: web.Request) -> web.Response:
    """``GET /healthz``."""
    return web.json_response({"status": "ok", "active_outages": len(request.app[CONTROLLER].active())})


def create_app(controller: OutageController, *, registry: CollectorRegistry, token: str = "") -> web.Application:
    """The chaos API around ``controller``; resumes every outage when the app shuts down."""
    app = web.Application(middlewares=[errors_and_auth])
    app[CONTROLLER] = controller
    app[REGISTRY] = registry
    app[TOKEN] = token
    app.router.add_post("/outages", create_outage)
    app.router.add_get("/outages", list_outages)
    app.router.add_get("/outages/{outage_id}", get_outage)
    app.router.add_delete("/outages/{outage_id}", end_outage)
    app.router.add_get("/targets", list_targets)
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", healthz)

    async def lifecycle(_app: web.Application) -> Any:
        await controller.recover()
        yield
        await controller.resume_all("shutdown")

    app.cleanup_ctx.append(lifecycle)
    return app
