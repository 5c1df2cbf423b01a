"""One builder for the OpenAPI 3.1 documents of retrystorm's HTTP APIs: the target's and the chaos API's.

Each API states its own paths and schemas (``retrystorm.target.service.openapi``,
``retrystorm.chaos.openapi``); what they share is built here, once: the document's frame and the
``info`` with the package's version, request bodies and answers, references to schemas, the bearer
token's security scheme, the answers every guarded route may give (:func:`guard_answers`: the 401,
403 and 415 of :mod:`retrystorm.request_guard`, worded once for both), and the file's text
(:func:`render`). Each API's document is kept in the repository beside it, served at
``GET /openapi.json``, and checked equal to what its builder gives.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from retrystorm import __version__

OPENAPI_VERSION = "3.1.0"
#: The name of the bearer token's security scheme in every document.
SECURITY_SCHEME = "bearerToken"
#: What a 401, a 403 of the request guard and a 415 mean, in both APIs.
GUARD_MEANING = {
    "401": "the server has a token and the request lacks Authorization: Bearer TOKEN (header WWW-Authenticate)",
    "403": "a request another site's page made (Origin, Sec-Fetch-Site other than same-origin or none), or, "
    "without a token, a Host that is not a loopback name (DNS rebinding)",
    "415": "a body (or a Content-Type given without one) that is not application/json",
}

#: How an API words an answer: ``(description) -> response object``.
Answer = Callable[[str], dict[str, Any]]


def ref(name: str) -> dict[str, str]:
    """A reference to the schema ``name`` of the document's components."""
    return {"$ref": f"#/components/schemas/{name}"}


def json_answer(schema: Mapping[str, Any], description: str) -> dict[str, Any]:
    """An answer with a JSON body of ``schema``."""
    return {"description": description, "content": {"application/json": {"schema": dict(schema)}}}


def text_answer(description: str) -> dict[str, Any]:
    """An answer with a plain-text body."""
    return {"description": description, "content": {"text/plain": {"schema": {"type": "string"}}}}


def json_body(schema: Mapping[str, Any], *, required: bool = True) -> dict[str, Any]:
    """A request body of JSON ``schema`` (the only media type the request guard lets through)."""
    return {"required": required, "content": {"application/json": {"schema": dict(schema)}}}


def guard_answers(answer: Answer, *, token: bool = True, body: bool = False) -> dict[str, dict[str, Any]]:
    """The answers of the request guard for one operation: 403 always, 401 where a token is asked
    (``token``), 415 where a body is read (``body``); each worded by ``answer`` (JSON or text)."""
    codes = ["401"] * token + ["403"] + ["415"] * body
    return {code: answer(GUARD_MEANING[code]) for code in codes}


#: The security requirement of a guarded operation: the bearer token, or nothing (``{}``), since a server asks
#: for its token only when it was started with one (and then listens beyond loopback, or may).
TOKEN_IF_SET: list[dict[str, list[str]]] = [{SECURITY_SCHEME: []}, {}]


def guarded(operation: dict[str, Any], answer: Answer, *, body: bool = False) -> dict[str, Any]:
    """``operation`` with the token's security requirement and the guard's answers after its own (an answer
    of its own with the same status, which says more, stays)."""
    answers = dict(operation["responses"])
    for code, guard_answer in guard_answers(answer, body=body).items():
        answers.setdefault(code, guard_answer)
    return {**operation, "security": TOKEN_IF_SET, "responses": answers}


def token_scheme(description: str) -> dict[str, Any]:
    """The bearer token's security scheme; ``description`` says where it is set and when it is asked."""
    return {SECURITY_SCHEME: {"type": "http", "scheme": "bearer", "description": description}}


def document(
    *,
    title: str,
    description: str,
    paths: dict[str, Any],
    schemas: dict[str, Any],
    scheme_description: str,
    servers: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    """An OpenAPI 3.1 document of ``paths`` and ``schemas``, with the bearer token's scheme."""
    made: dict[str, Any] = {
        "openapi": OPENAPI_VERSION,
        "info": {"title": title, "version": __version__, "description": description},
    }
    if servers:
        made["servers"] = servers
    made["paths"] = paths
    made["components"] = {"schemas": schemas, "securitySchemes": token_scheme(scheme_description)}
    return made


def render(made: dict[str, Any], *, sort_keys: bool = False) -> str:
    """The document as its file holds it: indented JSON with a final newline."""
    return json.dumps(made, indent=2, sort_keys=sort_keys) + "\n"
