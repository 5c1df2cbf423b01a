"""The chaos API as an OpenAPI 3.1 document, built from its pydantic body models.

``chaos/openapi.json`` is this document, kept in the repository and served at
``/openapi.json``; the tests check that the file, the generator and the served routes
agree, and fuzz the API from it. Regenerate the file after changing the API::

    python -m retrystorm.chaos.openapi > chaos/openapi.json
"""

from __future__ import annotations

import json
import sys
from typing import Any

from retrystorm import __version__
from retrystorm.chaos.bodies import PauseRequest, ThrottleRequest

_ERROR = {
    "type": "object",
    "properties": {"error": {"type": "string", "description": "one line: what is wrong and what is accepted"}},
    "required": ["error"],
}
_OUTAGE = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "target": {"type": "string"},
        "backend": {"type": "string"},
        "instances": {"type": "array", "items": {"type": "string"}},
        "requested_s": {"type": "number"},
        "duration_s": {"type": "number"},
        "clamped": {"type": "boolean"},
        "status": {"type": "string", "enum": ["active", "resumed", "failed"]},
        "started_utc": {"type": "string"},
        "in_force_utc": {
            "type": ["string", "null"],
            "description": "when the fault took effect (every process stopped, the cut applied): its clock starts here",
        },
        "in_force_s": {"type": ["number", "null"], "description": "how long it was in force, once reverted"},
        "ended_utc": {"type": ["string", "null"]},
        "end_reason": {"type": ["string", "null"]},
        "error": {"type": ["string", "null"]},
    },
    "required": ["id", "target", "backend", "status", "duration_s", "started_utc"],
}
_THROTTLE = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "target": {"type": "string"},
        "backend": {"type": "string"},
        "capacity": {"type": "number"},
        "instances": {"type": "array", "items": {"type": "string"}},
        "cpus_before": {
            "type": "array",
            "items": {"type": "number"},
            "description": "CPUs allowed before, per instance",
        },
        "cpus_during": {
            "type": "array",
            "items": {"type": "number"},
            "description": "CPUs allowed during, per instance",
        },
        "requested_s": {"type": "number"},
        "duration_s": {"type": "number"},
        "clamped": {"type": "boolean"},
        "status": {"type": "string", "enum": ["active", "restored", "failed"]},
        "started_utc": {"type": "string"},
        "in_force_utc": {
            "type": ["string", "null"],
            "description": "when the fault took effect (every process stopped, the cut applied): its clock starts here",
        },
        "in_force_s": {"type": ["number", "null"], "description": "how long it was in force, once reverted"},
        "ended_utc": {"type": ["string", "null"]},
        "end_reason": {"type": ["string", "null"]},
        "error": {"type": ["string", "null"]},
    },
    "required": ["id", "target", "backend", "capacity", "status", "duration_s", "started_utc"],
}
_TARGET = {
    "type": "object",
    "properties": {
        "backend": {"type": "string"},
        "target": {"type": "string"},
        "state": {"type": "string", "enum": ["running", "paused", "gone"]},
    },
    "required": ["backend", "target", "state"],
}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


def _refusals(*codes: str) -> dict[str, Any]:
    meaning = {
        "400": "a malformed field",
        "401": "a missing or wrong bearer token (a server bound beyond loopback)",
        "403": "a cross-site request, a Host that is not loopback without a token, or a target that may not be "
        "paused or throttled (e.g. no writable cgroup cpu controller)",
        "404": "no such target or outage",
        "413": "a body larger than 16 KiB",
        "415": "a body that is not application/json",
        "429": "too many faults in force: of this target, or in this controller (end one first)",
        "502": "the backend could not act (e.g. the Docker engine is unreachable)",
    }
    return {code: _json({"$ref": "#/components/schemas/Error"}, meaning[code]) for code in codes}


def _outage_id(name: str = "outage_id") -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string", "maxLength": 64}}


def build_openapi() -> dict[str, Any]:
    """The chaos API as an OpenAPI 3.1 document."""
    pause = PauseRequest.model_json_schema(by_alias=True)
    throttle = ThrottleRequest.model_json_schema(by_alias=True)
    outage_ref = {"$ref": "#/components/schemas/Outage"}
    throttle_ref = {"$ref": "#/components/schemas/Throttle"}
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "retrystorm chaos API",
            "version": __version__,
            "description": "Pause or throttle registered targets for a while; each ends by its deadline.",
        },
        "paths": {
            "/outages": {
                "post": {
                    "summary": "Pause a registered target for a duration",
                    "requestBody": {"required": True, "content": {"application/json": {"schema": pause}}},
                    "responses": {
                        "201": _json(outage_ref, "the outage, active"),
                        **_refusals("400", "401", "403", "404", "413", "415", "429", "502"),
                    },
                },
                "get": {
                    "summary": "Every outage of this controller, oldest first",
                    "responses": {"200": _json({"type": "array", "items": outage_ref}, "the outages")},
                },
            },
            "/outages/{outage_id}": {
                "parameters": [_outage_id()],
                "get": {
                    "summary": "One outage",
                    "responses": {"200": _json(outage_ref, "the outage"), **_refusals("404")},
                },
                "delete": {
                    "summary": "End an outage now (resume its target)",
                    "responses": {"200": _json(outage_ref, "the outage, ended"), **_refusals("404", "502")},
                },
            },
            "/throttles": {
                "post": {
                    "summary": "Cut a registered target's CPU to a fraction of its allowance for a duration",
                    "requestBody": {"required": True, "content": {"application/json": {"schema": throttle}}},
                    "responses": {
                        "201": _json(throttle_ref, "the throttle, active"),
                        **_refusals("400", "401", "403", "404", "413", "415", "429", "502"),
                    },
                },
                "get": {
                    "summary": "Every throttle of this controller, oldest first",
                    "responses": {"200": _json({"type": "array", "items": throttle_ref}, "the throttles")},
                },
            },
            "/throttles/{throttle_id}": {
                "parameters": [_outage_id("throttle_id")],
                "get": {
                    "summary": "One throttle",
                    "responses": {"200": _json(throttle_ref, "the throttle"), **_refusals("404")},
                },
                "delete": {
                    "summary": "End a throttle now (restore the target's original CPU settings)",
                    "responses": {"200": _json(throttle_ref, "the throttle, ended"), **_refusals("404", "502")},
                },
            },
            "/targets": {
                "get": {
                    "summary": "The targets this controller may pause, with their state",
                    "responses": {
                        "200": _json({"type": "array", "items": {"$ref": "#/components/schemas/Target"}}, "targets")
                    },
                }
            },
            "/healthz": {"get": {"summary": "Liveness", "responses": {"200": _json({"type": "object"}, "ok")}}},
            "/metrics": {
                "get": {
                    "summary": "Prometheus text format",
                    "responses": {"200": {"description": "metrics", "content": {"text/plain": {"schema": {}}}}},
                }
            },
            "/openapi.json": {
                "get": {"summary": "This document", "responses": {"200": _json({"type": "object"}, "the document")}}
            },
        },
        "components": {"schemas": {"Error": _ERROR, "Outage": _OUTAGE, "Throttle": _THROTTLE, "Target": _TARGET}},
    }


def render() -> str:
    """The document as the file holds it: indented JSON with a final newline."""
    return json.dumps(build_openapi(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":  # pragma: no cover
    sys.stdout.write(render())
