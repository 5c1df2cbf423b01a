"""The target's HTTP API as an OpenAPI 3.1 document; the request bodies' schemas are their models'.

Built with the shared builder (:mod:`retrystorm.openapi`), which the chaos API's document uses too.

The bodies are pydantic models (:mod:`retrystorm.target.service.bodies`), the model bodies generated
from the model registry; their JSON schema is the document's, so a model or parameter
registered later is documented as it is validated. ``target/openapi.json`` is this
document, kept in the repository and served at ``/openapi.json``; the tests check that
the file, the generator and the served routes agree, and fuzz the admin API from it.
Regenerate the file after changing a model's parameters::

    python -m retrystorm.target.service.openapi > target/openapi.json
"""

from __future__ import annotations

import sys
from typing import Any

from pydantic import TypeAdapter

from retrystorm.openapi import document, guarded, json_answer, json_body, ref, text_answer
from retrystorm.openapi import render as render_document
from retrystorm.target.faults import RECENT_CAPACITY
from retrystorm.target.models.capacity import MIN_CAPACITY
from retrystorm.target.service.bodies import MODEL_REQUEST, CapacityRequest, FaultRuleRequest, ResetRequest
from retrystorm.target.service.http import MAX_BODY_BYTES


def _bad_input(description: str) -> dict[str, Any]:
    return {
        "400": text_answer(f"{description}: one line naming the field and what is accepted"),
        "413": text_answer(f"the body is larger than {MAX_BODY_BYTES} bytes"),
    }


def _admin(operation: dict[str, Any]) -> dict[str, Any]:
    """``operation`` of an admin path: the token's security requirement and the request guard's answers."""
    return guarded(operation, text_answer, body="requestBody" in operation)


#: Where the request bodies' schemas go, and how they refer to each other.
_REF = "#/components/schemas/{model}"
#: Each request body's model, by the name of its schema.
_BODIES: dict[str, TypeAdapter[Any]] = {
    "ModelRequest": MODEL_REQUEST,
    "ResetRequest": TypeAdapter(ResetRequest),
    "FaultRuleRequest": TypeAdapter(FaultRuleRequest),
    "CapacityRequest": TypeAdapter(CapacityRequest),
}
_MODEL_REQUEST = (
    "The new model: a spec string, or a mapping whose missing parameters take their defaults. Beyond this "
    "schema, a value given as text is read as in a spec (its syntax and bounds are checked then), and a model's "
    "rules across its parameters hold (such as exponential's max_delay >= base_delay); either is refused with a 400."
)


def _request_schemas() -> dict[str, Any]:
    """The request bodies' JSON schemas, from their models, with every definition they use."""
    keys, document = TypeAdapter.json_schemas(
        [(name, "validation", adapter) for name, adapter in _BODIES.items()], ref_template=_REF, by_alias=True
    )
    schemas: dict[str, Any] = dict(document.get("$defs", {}))
    for (name, _), schema in keys.items():
        if schema != {"$ref": _REF.format(model=name)}:  # not a model's own definition: the union of models
            schemas[name] = schema
    schemas["ModelRequest"] = {"description": _MODEL_REQUEST, **schemas["ModelRequest"]}
    return schemas


def _fault_document() -> dict[str, Any]:
    judged = {
        "type": "object",
        "required": ["at_seconds", "attempt", "status"],
        "properties": {
            "at_seconds": {"type": "number", "description": "arrival on the service's monotonic clock"},
            "attempt": {"type": "integer", "minimum": 1},
            "status": {"type": ["integer", "null"], "description": "the status sent; null: passed on"},
        },
    }
    return {
        "type": "object",
        "required": ["rule", "injected", "passed", "remaining", "recent"],
        "properties": {
            "rule": {
                "anyOf": [ref("FaultRuleRequest"), {"type": "null"}],
                "description": "the rule armed, as PUT /admin/faults takes it; null: none",
            },
            "injected": {"type": "integer", "minimum": 0, "description": "attempts failed by the last rule armed"},
            "passed": {"type": "integer", "minimum": 0, "description": "attempts it let through to the model"},
            "remaining": {"type": ["integer", "null"], "minimum": 0, "description": "failures left"},
            "recent": {
                "type": "array",
                "maxItems": RECENT_CAPACITY,
                "description": "the last attempts the rule judged, oldest first",
                "items": judged,
            },
        },
    }


def _schemas() -> dict[str, Any]:
    return {
        **_request_schemas(),
        "FaultDocument": _fault_document(),
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
        "CapacityDocument": {
            "type": "object",
            "required": ["capacity"],
            "properties": {"capacity": {"type": "number", "minimum": MIN_CAPACITY, "maximum": 1}},
        },
        "ResetResult": {
            "type": "object",
            "required": ["reset", "released"],
            "properties": {"reset": {"type": "boolean"}, "released": {"type": "integer", "minimum": 0}},
        },
    }


def _json_body(name: str, *, required: bool = True) -> dict[str, Any]:
    return json_body(ref(name), required=required)


def _json_response(description: str, name: str) -> dict[str, Any]:
    return json_answer(ref(name), description)


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
                "200": text_answer("OK"),
                "400": text_answer("a fault rule is armed and Retrystorm-Attempt is not a whole number >= 1"),
                "503": text_answer("the model rejected the request, or the fault rule failed it"),
                "default": text_answer("the fault rule's status (429 or 5xx), with Retry-After when the rule sets one"),
            },
        }
    }


def _paths() -> dict[str, Any]:
    model_doc = "ModelDocument"
    return {
        "/api": _api_path(),
        "/healthz": {"get": {"summary": "Liveness", "responses": {"200": text_answer("OK")}}},
        "/metrics": {
            "get": {"summary": "Prometheus metrics, text format", "responses": {"200": text_answer("exposition")}}
        },
        "/openapi.json": {
            "get": {
                "summary": "This document",
                "responses": {"200": {"description": "OpenAPI 3.1", "content": {"application/json": {}}}},
            }
        },
        "/admin/model": {
            "get": _admin(
                {"summary": "The running model", "responses": {"200": _json_response("the model", model_doc)}}
            ),
            "put": _admin(
                {
                    "summary": "Switch the model live; requests in flight stay in flight",
                    "requestBody": _json_body("ModelRequest"),
                    "responses": {"200": _json_response("the new model", model_doc), **_bad_input("bad model")},
                }
            ),
        },
        "/admin/faults": {method: _admin(operation) for method, operation in _faults_path().items()},
        "/admin/capacity": {method: _admin(operation) for method, operation in _capacity_path().items()},
        "/admin/reset": {
            "post": _admin(
                {
                    "summary": "Zero the counters and histograms between scenario runs; full capacity again",
                    "requestBody": _json_body("ResetRequest", required=False),
                    "responses": {
                        "200": _json_response("reset done", "ResetResult"),
                        **_bad_input("bad body"),
                    },
                }
            )
        },
    }


def _faults_path() -> dict[str, Any]:
    document = "FaultDocument"
    return {
        "get": {
            "summary": "The fault rule (null: off, the default), what it did, and the attempts it judged lately",
            "responses": {"200": _json_response("the fault rule", document)},
        },
        "put": {
            "summary": "Arm a fault rule: fail chosen attempts of /api at once; its counters start at zero",
            "requestBody": _json_body("FaultRuleRequest"),
            "responses": {"200": _json_response("the rule armed", document), **_bad_input("bad rule")},
        },
        "delete": {
            "summary": "Disarm the fault rule; its counters stay readable",
            "responses": {"200": _json_response("no rule armed", document)},
        },
    }


def _capacity_path() -> dict[str, Any]:
    document = "CapacityDocument"
    return {
        "get": {
            "summary": "The fraction of its capacity the model runs at (1: full, the default)",
            "responses": {"200": _json_response("the capacity", document)},
        },
        "put": {
            "summary": "Run the model at a fraction of its capacity (a slow trigger); work in flight slows too",
            "requestBody": _json_body("CapacityRequest"),
            "responses": {"200": _json_response("the capacity set", document), **_bad_input("bad capacity")},
        },
        "delete": {
            "summary": "Full capacity again",
            "responses": {"200": _json_response("the capacity: 1", document)},
        },
    }


def build_openapi() -> dict[str, Any]:
    """The OpenAPI document of the target service."""
    return document(
        title="retrystorm target",
        description="An HTTP service that answers after a modelled, load-dependent delay. "
        "Every 4xx carries a one-line plain-text message. The admin API (/admin/*) passes the request guard: "
        "Authorization: Bearer TOKEN when the target was started with --admin-token (RETRYSTORM_ADMIN_TOKEN), "
        "no request another site's page made, bodies only as application/json; without a token the target "
        "listens on loopback only and answers loopback Host names only. "
        "Every model and fault-rule parameter has a ceiling (the schemas' maximum).",
        servers=[{"url": "http://127.0.0.1:8070"}],
        paths=_paths(),
        schemas=_schemas(),
        scheme_description="the target's --admin-token (RETRYSTORM_ADMIN_TOKEN); "
        "not required when it was started without one (then on loopback only)",
    )


def render() -> str:
    """The document as the text of ``target/openapi.json``."""
    return render_document(build_openapi())


if __name__ == "__main__":  # pragma: no cover
    sys.stdout.write(render())
