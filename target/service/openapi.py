"""The target's HTTP API as an OpenAPI 3.0 document, built from the model registry.

``target/openapi.json`` is this document, kept in the repository and served at
``/openapi.json``; the tests check that the file, the generator and the served routes
agree. Regenerate the file after changing a model's parameters::

    python -m target.service.openapi > target/openapi.json
"""

from __future__ import annotations

import json
import sys
from typing import Any

from retrystorm import __version__
from retrystorm.spec import DURATION, INTEGER, NUMBER, ParamInfo, params_of
from target.faults import MAX_ATTEMPT, MAX_COUNT, MAX_RETRY_AFTER_S, RECENT_CAPACITY
from target.models import MODELS
from target.service.http import MAX_BODY_BYTES

_TEXT = {"text/plain": {"schema": {"type": "string"}}}


def _text(description: str) -> dict[str, Any]:
    return {"description": description, "content": _TEXT}


def _bad_input(description: str) -> dict[str, Any]:
    return {
        "400": _text(f"{description}: one line naming the field and what is accepted"),
        "413": _text(f"the body is larger than {MAX_BODY_BYTES} bytes"),
    }


#: What every admin operation adds: the bearer token (when the target has one) and its 401.
_ADMIN_SECURITY: list[dict[str, list[str]]] = [{"adminToken": []}]
_UNAUTHORIZED = _text(
    "the target was started with --admin-token and the request lacks Authorization: Bearer TOKEN "
    "(header WWW-Authenticate: Bearer)"
)


def _admin(operation: dict[str, Any]) -> dict[str, Any]:
    """``operation`` of an admin path, with its security requirement and 401."""
    return {**operation, "security": _ADMIN_SECURITY, "responses": {**operation["responses"], "401": _UNAUTHORIZED}}


def _number_schema(info: ParamInfo) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "integer" if info.type is INTEGER else "number"}
    if info.at_least is not None:
        schema["minimum"] = info.at_least
    if info.above is not None:
        schema["minimum"] = info.above
        schema["exclusiveMinimum"] = True
    if info.at_most is not None:
        schema["maximum"] = info.at_most
    return schema


def _param_schema(info: ParamInfo) -> dict[str, Any]:
    if info.type.choices:  # a word
        default = info.type.to_text(info.default)
        return {"description": f"{info.help}; default {default}", "type": "string", "enum": list(info.type.choices)}
    text = {"type": "string", "description": f"as in a spec: {info.describe_bounds()}"}
    number = _number_schema(info)
    if info.type is DURATION:
        number["description"] = "seconds"
    elif info.type not in (INTEGER, NUMBER):  # optional(INTEGER): null means the default rule
        number = {"type": "integer", "minimum": info.at_least or 0, "nullable": True}
        if info.at_most is not None:
            number["maximum"] = info.at_most
    return {"description": f"{info.help}; default {info.type.to_text(info.default)}", "anyOf": [text, number]}


def _model_schemas() -> dict[str, Any]:
    schemas: dict[str, Any] = {}
    for name, cls in MODELS.items():
        properties: dict[str, Any] = {"name": {"type": "string", "enum": [name]}}
        properties.update({info.key: _param_schema(info) for info in params_of(cls)})
        summary = (cls.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
        schemas[f"{name.capitalize()}Model"] = {
            "type": "object",
            "description": summary,
            "required": ["name"],
            "properties": properties,
            "additionalProperties": False,
        }
    return schemas


def _nullable_count(description: str, minimum: int = 1) -> dict[str, Any]:
    return {"type": "integer", "minimum": minimum, "nullable": True, "default": None, "description": description}


def _fault_schemas() -> dict[str, Any]:
    rule = {
        "type": "object",
        "description": "Which attempts of /api fail at once, and how; an attempt fails when every condition holds.",
        "properties": {
            "status": {
                "description": "the status sent",
                "default": 503,
                "anyOf": [{"type": "integer", "enum": [429]}, {"type": "integer", "minimum": 500, "maximum": 599}],
            },
            "retry_after": {
                **_nullable_count("send Retry-After with this many seconds; null: no header", minimum=0),
                "maximum": MAX_RETRY_AFTER_S,
            },
            "first_attempts": {
                **_nullable_count(
                    "fail only attempts 1..N of each logical request (Retrystorm-Attempt header, absent: 1); null: all"
                ),
                "maximum": MAX_ATTEMPT,
            },
            "probability": {
                "type": "number",
                "minimum": 0,
                "exclusiveMinimum": True,
                "maximum": 1,
                "default": 1,
                "description": "a qualifying attempt fails with this probability",
            },
            "count": {
                **_nullable_count("at most this many failures in all, then everything passes; null: no limit"),
                "maximum": MAX_COUNT,
            },
        },
        "additionalProperties": False,
    }
    judged = {
        "type": "object",
        "required": ["at_seconds", "attempt", "status"],
        "properties": {
            "at_seconds": {"type": "number", "description": "arrival on the service's monotonic clock"},
            "attempt": {"type": "integer", "minimum": 1},
            "status": {"type": "integer", "nullable": True, "description": "the status sent; null: passed on"},
        },
    }
    document = {
        "type": "object",
        "required": ["rule", "injected", "passed", "remaining", "recent"],
        "properties": {
            "rule": {"allOf": [{"$ref": "#/components/schemas/FaultRule"}], "nullable": True},
            "injected": {"type": "integer", "minimum": 0, "description": "attempts failed by the last rule armed"},
            "passed": {"type": "integer", "minimum": 0, "description": "attempts it let through to the model"},
            "remaining": {"type": "integer", "minimum": 0, "nullable": True, "description": "failures left"},
            "recent": {
                "type": "array",
                "maxItems": RECENT_CAPACITY,
                "description": "the last attempts the rule judged, oldest first",
                "items": judged,
            },
        },
    }
    return {"FaultRule": rule, "FaultDocument": document}


def _schemas() -> dict[str, Any]:
    models = _model_schemas()
    return {
        **models,
        **_fault_schemas(),
        "SpecString": {
            "type": "object",
            "required": ["spec"],
            "properties": {"spec": {"type": "string", "example": "exponential:limit=30,factor=1.05"}},
            "additionalProperties": False,
        },
        "ModelRequest": {
            "description": "The new model: a spec string, or a mapping whose missing parameters take defaults.",
            "oneOf": [{"$ref": "#/components/schemas/SpecString"}]
            + [{"$ref": f"#/components/schemas/{key}"} for key in models],
        },
        "ModelDocument": {
            "type": "object",
            "required": ["spec", "model", "in_flight", "delay_seconds"],
            "properties": {
                "spec": {"type": "string", "description": "the full spec, every parameter given"},
                "model": {
                    "type": "object",
                    "description": "the same as a mapping of parameter to spec text",
                    "required": ["name"],
                    "additionalProperties": {"type": "string"},
                },
                "in_flight": {"type": "integer", "minimum": 0},
                "delay_seconds": {"type": "number", "minimum": 0},
            },
        },
        "ResetRequest": {
            "type": "object",
            "properties": {
                "release_in_flight": {
                    "type": "boolean",
                    "default": False,
                    "description": "also answer every request in flight with 503 at once",
                }
            },
            "additionalProperties": False,
        },
        "ResetResult": {
            "type": "object",
            "required": ["reset", "released"],
            "properties": {"reset": {"type": "boolean"}, "released": {"type": "integer", "minimum": 0}},
        },
    }


def _json_body(ref: str, *, required: bool = True) -> dict[str, Any]:
    return {"required": required, "content": {"application/json": {"schema": {"$ref": ref}}}}


def _json_response(description: str, ref: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": {"$ref": ref}}}}


def _api_path() -> dict[str, Any]:
    attempt = {
        "name": "Retrystorm-Attempt",
        "in": "header",
        "required": False,
        "description": "the attempt number of a retry (2, 3, ...; absent: 1); only the fault rule reads it",
        "schema": {"type": "integer", "minimum": 1},
    }
    return {
        "get": {
            "summary": "The modelled endpoint: answers after the model's delay (the seed's endpoint)",
            "parameters": [attempt],
            "responses": {
                "200": _text("OK"),
                "400": _text("a fault rule is armed and Retrystorm-Attempt is not a whole number >= 1"),
                "503": _text("the model rejected the request, or the fault rule failed it"),
                "default": _text("the fault rule's status (429 or 5xx), with Retry-After when the rule sets one"),
            },
        }
    }


def _paths() -> dict[str, Any]:
    model_doc = "#/components/schemas/ModelDocument"
    return {
        "/api": _api_path(),
        "/healthz": {"get": {"summary": "Liveness", "responses": {"200": _text("OK")}}},
        "/metrics": {"get": {"summary": "Prometheus metrics, text format", "responses": {"200": _text("exposition")}}},
        "/openapi.json": {
            "get": {
                "summary": "This document",
                "responses": {"200": {"description": "OpenAPI 3.0", "content": {"application/json": {}}}},
            }
        },
        "/admin/model": {
            "get": _admin(
                {"summary": "The running model", "responses": {"200": _json_response("the model", model_doc)}}
            ),
            "put": _admin(
                {
                    "summary": "Switch the model live; requests in flight stay in flight",
                    "requestBody": _json_body("#/components/schemas/ModelRequest"),
                    "responses": {"200": _json_response("the new model", model_doc), **_bad_input("bad model")},
                }
            ),
        },
        "/admin/faults": {method: _admin(operation) for method, operation in _faults_path().items()},
        "/admin/reset": {
            "post": _admin(
                {
                    "summary": "Zero the counters and histograms between scenario runs",
                    "requestBody": _json_body("#/components/schemas/ResetRequest", required=False),
                    "responses": {
                        "200": _json_response("reset done", "#/components/schemas/ResetResult"),
                        **_bad_input("bad body"),
                    },
                }
            )
        },
    }


def _faults_path() -> dict[str, Any]:
    document = "#/components/schemas/FaultDocument"
    return {
        "get": {
            "summary": "The fault rule (null: off, the default), what it did, and the attempts it judged lately",
            "responses": {"200": _json_response("the fault rule", document)},
        },
        "put": {
            "summary": "Arm a fault rule: fail chosen attempts of /api at once; its counters start at zero",
            "requestBody": _json_body("#/components/schemas/FaultRule"),
            "responses": {"200": _json_response("the rule armed", document), **_bad_input("bad rule")},
        },
        "delete": {
            "summary": "Disarm the fault rule; its counters stay readable",
            "responses": {"200": _json_response("no rule armed", document)},
        },
    }


def build_openapi() -> dict[str, Any]:
    """The OpenAPI document of the target service."""
    return {
        "openapi": "3.0.3",
        "info": {
            "title": "retrystorm target",
            "version": __version__,
            "description": "An HTTP service that answers after a modelled, load-dependent delay. "
            "Every 4xx carries a one-line plain-text message. The admin API (/admin/*) needs "
            "Authorization: Bearer TOKEN when the target was started with --admin-token "
            "(RETRYSTORM_ADMIN_TOKEN); without a token the target listens on loopback only. "
            "Every model and fault-rule parameter has a ceiling (the schemas' maximum).",
        },
        "servers": [{"url": "http://127.0.0.1:8070"}],
        "paths": _paths(),
        "components": {
            "schemas": _schemas(),
            "securitySchemes": {
                "adminToken": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "the target's --admin-token (RETRYSTORM_ADMIN_TOKEN); "
                    "not required when it was started without one (then on loopback only)",
                }
            },
        },
    }


def render() -> str:
    """The document as the text of ``target/openapi.json``."""
    return json.dumps(build_openapi(), indent=2) + "\n"


if __name__ == "__main__":  # pragma: no cover
    sys.stdout.write(render())
