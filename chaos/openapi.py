"""The chaos API as an OpenAPI 3.1 document, built from its pydantic body models with the shared builder
(:mod:`retrystorm.openapi`, which the target's document uses too).

``chaos/openapi.json`` is this document, kept in the repository and served at
``/openapi.json``; the tests check that the file, the generator and the served routes
agree, and fuzz the API from it. Regenerate the file after changing the API::

    python -m retrystorm.chaos.openapi > chaos/openapi.json
"""

from __future__ import annotations

import sys
from typing import Any

from retrystorm.chaos.bodies import PauseRequest, ThrottleRequest
from retrystorm.chaos.network.agent import NetworkRequest
from retrystorm.openapi import GUARD_MEANING, document, guard_answers, guarded, json_answer, json_body, ref
from retrystorm.openapi import render as render_document

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
_NETWORK_FAULT = {
    "type": "object",
    "properties": {
        **{key: value for key, value in _OUTAGE["properties"].items() if key != "status"},  # type: ignore[attr-defined]
        "status": {"type": "string", "enum": ["active", "restored", "failed"]},
        "kind": {"type": "string", "enum": ["delay", "loss", "hang", "reset", "partition"]},
        "settings": {"type": "object", "description": "the toxic's fields, or the partition's method and peers"},
    },
    "required": ["id", "target", "kind", "status", "duration_s", "started_utc"],
}
_NETWORK_TARGETS = {
    "type": "object",
    "properties": {
        "proxies": {"type": "object", "description": "registered fault proxies: name -> {listen, pid}"},
        "peers": {"type": "object", "description": "registered peers: name -> address"},
        "interfaces": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["proxies", "peers", "interfaces"],
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


_PROMETHEUS: dict[str, Any] = {"text/plain": {"schema": {}}}


def _error(description: str) -> dict[str, Any]:
    return json_answer(ref("Error"), description)


_MEANING = {
    "400": "a malformed field",
    "403": f"{GUARD_MEANING['403']}; or a target that may not be paused or throttled "
    "(e.g. no writable cgroup cpu controller)",
    "404": "no such target, outage, fault proxy, peer or interface",
    "413": "a body larger than 16 KiB",
    "429": "too many faults in force: of this target, or in this controller (end one first)",
    "502": "the backend could not act (e.g. the Docker engine is unreachable)",
}


def _refusals(*codes: str) -> dict[str, Any]:
    return {code: _error(_MEANING[code]) for code in codes}


def _op(summary: str, answers: dict[str, Any], *, body: dict[str, Any] | None = None) -> dict[str, Any]:
    """An operation behind the token: the guard's 401, 403 and (with a ``body``) 415 added."""
    operation: dict[str, Any] = {"summary": summary, "responses": answers}
    if body is not None:
        operation = {"summary": summary, "requestBody": json_body(body), "responses": answers}
    return guarded(operation, _error, body=body is not None)


def _open(summary: str, answer: dict[str, Any]) -> dict[str, Any]:
    """An operation without the token (liveness, metrics, this document): still the guard's 403."""
    return {"summary": summary, "responses": {"200": answer, **guard_answers(_error, token=False)}}


def _outage_id(name: str = "outage_id") -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string", "maxLength": 64}}


def _paths() -> dict[str, Any]:
    pause = PauseRequest.model_json_schema(by_alias=True)
    throttle = ThrottleRequest.model_json_schema(by_alias=True)
    outage, cut = ref("Outage"), ref("Throttle")
    start_refusals = _refusals("400", "403", "404", "413", "429", "502")
    return {
        "/outages": {
            "post": _op(
                "Pause a registered target for a duration",
                {"201": json_answer(outage, "the outage, active"), **start_refusals},
                body=pause,
            ),
            "get": _op(
                "Every outage of this controller, oldest first",
                {"200": json_answer({"type": "array", "items": outage}, "the outages")},
            ),
        },
        "/outages/{outage_id}": {
            "parameters": [_outage_id()],
            "get": _op("One outage", {"200": json_answer(outage, "the outage"), **_refusals("404")}),
            "delete": _op(
                "End an outage now (resume its target)",
                {"200": json_answer(outage, "the outage, ended"), **_refusals("404", "502")},
            ),
        },
        "/throttles": {
            "post": _op(
                "Cut a registered target's CPU to a fraction of its allowance for a duration",
                {"201": json_answer(cut, "the throttle, active"), **start_refusals},
                body=throttle,
            ),
            "get": _op(
                "Every throttle of this controller, oldest first",
                {"200": json_answer({"type": "array", "items": cut}, "the throttles")},
            ),
        },
        "/throttles/{throttle_id}": {
            "parameters": [_outage_id("throttle_id")],
            "get": _op("One throttle", {"200": json_answer(cut, "the throttle"), **_refusals("404")}),
            "delete": _op(
                "End a throttle now (restore the target's original CPU settings)",
                {"200": json_answer(cut, "the throttle, ended"), **_refusals("404", "502")},
            ),
        },
        **_network_paths(start_refusals),
        "/targets": {
            "get": _op(
                "The targets this controller may pause, with their state",
                {"200": json_answer({"type": "array", "items": ref("Target")}, "targets")},
            )
        },
        "/healthz": {"get": _open("Liveness", json_answer({"type": "object"}, "ok"))},
        "/metrics": {"get": _open("Prometheus text format", {"description": "metrics", "content": _PROMETHEUS})},
        "/openapi.json": {"get": _open("This document", json_answer({"type": "object"}, "the document"))},
    }


def _network_paths(start_refusals: dict[str, Any]) -> dict[str, Any]:
    fault = ref("NetworkFault")
    return {
        "/network": {
            "post": _op(
                "A fault in the network for a duration: a toxic on a registered proxy, or a partition",
                {"201": json_answer(fault, "the fault, in force"), **start_refusals},
                body=NetworkRequest.model_json_schema(by_alias=True),
            ),
            "get": _op(
                "Every network fault of this agent, oldest first",
                {"200": json_answer({"type": "array", "items": fault}, "the faults")},
            ),
        },
        "/network-targets": {
            "get": _op(
                "The proxies, peers and interfaces registered",
                {"200": json_answer(_NETWORK_TARGETS, "what may be cut")},
            )
        },
        "/network/{fault_id}": {
            "parameters": [_outage_id("fault_id")],
            "get": _op("One network fault", {"200": json_answer(fault, "the fault"), **_refusals("404")}),
            "delete": _op(
                "End a network fault now (clear the toxic, heal the partition)",
                {"200": json_answer(fault, "the fault, ended"), **_refusals("404", "502")},
            ),
        },
    }


def build_openapi() -> dict[str, Any]:
    """The chaos API as an OpenAPI 3.1 document."""
    return document(
        title="retrystorm chaos API",
        description="Pause or throttle registered targets, or fault the network through registered proxies and "
        "peers, for a while; each ends by its deadline. Every request "
        "passes the request guard: with a token (chaos serve --token, RETRYSTORM_CHAOS_TOKEN; required beyond "
        "loopback) every route but /healthz, /metrics and /openapi.json needs Authorization: Bearer TOKEN; "
        "requests other sites' pages make are refused, and so are bodies that are not application/json.",
        paths=_paths(),
        schemas={
            "Error": _ERROR,
            "Outage": _OUTAGE,
            "Throttle": _THROTTLE,
            "Target": _TARGET,
            "NetworkFault": _NETWORK_FAULT,
        },
        scheme_description="chaos serve's --token (RETRYSTORM_CHAOS_TOKEN); not asked when it runs without one "
        "(then on loopback only)",
    )


def render() -> str:
    """The document as the file holds it: indented JSON, keys sorted, with a final newline."""
    return render_document(build_openapi(), sort_keys=True)


if __name__ == "__main__":  # pragma: no cover
    sys.stdout.write(render())
