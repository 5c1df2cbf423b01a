"""The HTTP API references, rendered from the OpenAPI documents the services serve (``GET /openapi.json``), and the
fields of ``results.json``, rendered from its JSON Schema (:func:`retrystorm.runner.results_schema.results_schema`).

The documents are the package's own files (``target/openapi.json``, ``chaos/openapi.json``), which tests keep equal
to what the services generate from their pydantic bodies and check against the running services; this module only
renders them: each route with its body and answers, then each schema with every field's type, bounds and default.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from reference_specs import cell, code, table

_METHODS = ("get", "put", "post", "delete", "patch")


def _document(package: str) -> dict[str, Any]:
    return dict(json.loads(resources.files(package).joinpath("openapi.json").read_text(encoding="utf-8")))


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def schema_anchor(name: str) -> str:
    """The anchor of a schema's section (the heading ``Schema `NAME```, as the toc slugifies it)."""
    return "schema-" + name.lower()


def type_text(schema: dict[str, Any]) -> str:
    """A schema's type in words, with its bounds: ``integer 1 to 999999999``, ``number > 0 and <= 1 or null``."""
    if "$ref" in schema:
        name = _ref_name(schema["$ref"])
        return f"[{name}](#{schema_anchor(name)})"
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " or ".join(type_text(option) for option in schema[key])
    if "enum" in schema:
        return "one of " + ", ".join(code(json.dumps(value)) for value in schema["enum"])
    if "const" in schema:
        return code(json.dumps(schema["const"]))
    kind = schema.get("type", "any")
    if isinstance(kind, list):
        kind = " or ".join(kind)
    if kind == "array":
        items = schema.get("items")
        kind = f"array of {type_text(items)}" if items else "array"
        if "maxItems" in schema:
            kind += f" (at most {schema['maxItems']})"
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        kind = f"object of {type_text(schema['additionalProperties'])}"
    return kind + _bounds(schema)


def _bounds(schema: dict[str, Any]) -> str:
    parts = []
    for key, word in (("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="), ("exclusiveMaximum", "<")):
        if key in schema:
            parts.append(f"{word} {schema[key]:g}" if isinstance(schema[key], float) else f"{word} {schema[key]}")
    if "minLength" in schema:
        parts.append(f"at least {schema['minLength']} characters")
    if "maxLength" in schema:
        parts.append(f"at most {schema['maxLength']} characters")
    if "pattern" in schema:
        parts.append(f"matching {code(schema['pattern'])}")
    return " " + " and ".join(parts) if parts else ""


def _body_of(content: dict[str, Any] | None) -> str:
    if not content:
        return "-"
    shown = []
    for media, entry in content.items():
        schema = entry.get("schema", {})
        shown.append(f"{code(media)}: {type_text(schema)}")
    return "; ".join(shown)


def _route(path: str, method: str, operation: dict[str, Any], security: dict[str, Any]) -> str:
    parts = [f"### `{method.upper()} {path}`", cell(operation.get("summary", ""))]
    if operation.get("description"):
        parts.append(operation["description"].strip())
    needs = [name for requirement in operation.get("security", []) for name in requirement]
    if needs:
        parts.append(
            "Needs " + "; ".join(cell(security.get(name, {}).get("description", name)) for name in needs) + "."
        )
    parameters = operation.get("parameters", [])
    if parameters:
        rows = [
            [code(p["name"]), p.get("in", ""), type_text(p.get("schema", {})), cell(p.get("description", ""))]
            for p in parameters
        ]
        parts.append(table(["parameter", "in", "type", "meaning"], rows))
    body = operation.get("requestBody")
    if body:
        parts.append("Body: " + _body_of(body.get("content")) + ("" if body.get("required") else " (optional)"))
        schemas = [entry.get("schema", {}) for entry in (body.get("content") or {}).values()]
        parts.extend(_fields(schema) for schema in schemas if schema.get("properties"))
    responses = [
        [code(status), cell(answer.get("description", "")), _body_of(answer.get("content"))]
        for status, answer in operation.get("responses", {}).items()
    ]
    parts.append(table(["status", "when", "body"], responses))
    return "\n\n".join(parts)


def _fields(schema: dict[str, Any]) -> str:
    """An object schema's fields: type with bounds, whether required, default, meaning."""
    required = set(schema.get("required", []))
    rows = [
        [
            code(field),
            type_text(spec),
            "yes" if field in required else "no",
            code(json.dumps(spec["default"])) if "default" in spec else "-",
            cell(spec.get("description", "")),
        ]
        for field, spec in schema["properties"].items()
    ]
    shown = table(["field", "type", "required", "default", "meaning"], rows)
    return shown + ("\n\nAny other field is refused." if schema.get("additionalProperties") is False else "")


def _schema(name: str, schema: dict[str, Any]) -> str:
    parts = [f"### Schema `{name}` {{#{schema_anchor(name)}}}"]
    if schema.get("description"):
        parts.append(cell(schema["description"]))
    if schema.get("properties"):
        parts.append(_fields(schema))
    else:
        parts.append("A value of type " + type_text(schema) + ".")
    discriminator = schema.get("discriminator")
    if discriminator:
        parts.append(f"Told apart by the field {code(discriminator['propertyName'])}.")
    return "\n\n".join(parts)


def api_page(title: str, intro: str, document: dict[str, Any]) -> str:
    """A page for one OpenAPI document: its routes in order, then its schemas."""
    security = document.get("components", {}).get("securitySchemes", {})
    routes = [
        _route(path, method, item[method], security)
        for path, item in document.get("paths", {}).items()
        for method in _METHODS
        if method in item
    ]
    schemas = [_schema(name, schema) for name, schema in document.get("components", {}).get("schemas", {}).items()]
    info = document.get("info", {})
    version = f"OpenAPI {document.get('openapi', '')}, {info.get('title', '')} {info.get('version', '')}".strip()
    return "\n\n".join(
        [
            f"# {title}",
            intro,
            f"From the document the service serves ({version}).",
            "## Routes",
            *routes,
            "## Schemas",
            *schemas,
        ]
    )


def target_api_page() -> str:
    """The built-in target's HTTP API."""
    return api_page(
        "Target HTTP API",
        "The HTTP API of `retrystorm target`: `GET /api` answered after the modelled delay, and the admin API "
        "that switches the model, cuts its capacity, arms a fault rule or resets it. The service serves this "
        "document at `GET /openapi.json`. [The target service](../guides/target-service.md) explains it.",
        _document("retrystorm.target"),
    )


def chaos_api_page() -> str:
    """The chaos controller's HTTP API."""
    return api_page(
        "Chaos HTTP API",
        "The HTTP API of `retrystorm chaos serve`: pause registered targets for a while, cut their CPU, see "
        "what is paused and throttled. The service serves this document at `GET /openapi.json`. "
        "[Faults](../safety/faults.md) and [Control surfaces](../safety/control-surfaces.md) explain it.",
        _document("retrystorm.chaos"),
    )


def results_fields_page() -> str:
    """Every field of ``results.json``, from the JSON Schema generated from the runner's pydantic models."""
    from retrystorm.runner.results_schema import TIMESERIES_COLUMNS, results_schema  # noqa: PLC0415 - this page only

    schema = results_schema()
    definitions = schema.get("$defs", {})
    columns = ", ".join(code(column) for column in TIMESERIES_COLUMNS)
    return "\n\n".join(
        [
            "# Fields of results.json",
            (
                "Every field a live run writes to `results.json`, with its type and meaning, rendered from the JSON "
                "Schema the runner's models generate ([`results.schema.json`](results.schema.json)); "
                "[Results files](results.md) says how to read and check them. A run's document is checked against "
                "the schema by the test suite, so a field written but not described fails it."
            ),
            "## The document",
            cell(schema.get("description", "")),
            _fields(schema),
            "## Objects",
            *(_schema(name, definition) for name, definition in definitions.items()),
            "## timeseries.csv",
            (
                f"Its columns, always all of them, in this order: {columns}. [Results files](results.md#timeseriescsv) "
                "says what each holds."
            ),
        ]
    )
