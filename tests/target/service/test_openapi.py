"""The OpenAPI document: kept in the repository, served as is, matching the routes; and
the admin API fuzzed from it against a real server."""

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

import retrystorm.target
from retrystorm.spec import params_of
from retrystorm.spec_bodies import body_title
from retrystorm.target.models import MODELS
from retrystorm.target.probe import fetch
from retrystorm.target.service.openapi import build_openapi, render

OPENAPI = Path(retrystorm.target.__file__).parent / "openapi.json"
schema = schemathesis.openapi.from_path(OPENAPI).exclude(path="/api")  # /api waits for the model


def test_the_file_is_the_generated_document():
    assert OPENAPI.read_text() == render(), "run: python -m retrystorm.target.service.openapi > target/openapi.json"


def test_the_served_document_is_the_file(live):
    async def scenario():
        async with live.serve() as app:
            reply = await fetch(app.port, "/openapi.json")
            assert reply.body == OPENAPI.read_bytes()
            assert reply.headers["content-type"] == "application/json"
            documented = {
                (path, method.upper().encode()) for path, item in build_openapi()["paths"].items() for method in item
            }
            served = {(path, method) for path, methods in app.routes.items() for method in methods}
            assert documented == served

    live.run(scenario())


def test_every_model_and_parameter_is_documented():
    schemas = json.loads(OPENAPI.read_text())["components"]["schemas"]
    mapping = schemas["ModelRequest"]["oneOf"][1]
    assert mapping["discriminator"]["propertyName"] == "name"
    assert set(mapping["discriminator"]["mapping"]) == set(MODELS.names())
    for cls in map(MODELS.get, MODELS.names()):
        documented = schemas[body_title(cls)]
        assert set(documented["properties"]) == {"name", *(info.key for info in params_of(cls))}
        assert documented["additionalProperties"] is False
    assert schemas["ExponentialModel"]["properties"]["limit"]["anyOf"][0] == {
        "type": "integer",
        "minimum": 0,
        "maximum": 1_000_000,
    }
    assert schemas["ExponentialModel"]["properties"]["overflow"]["enum"] == ["clamp", "go"]


TOKEN = "fuzz-token"
AUTHORIZED = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def fuzzed(target_process):
    return target_process("--model", "fixed", "--base-delay", "0", "--admin-token", TOKEN)


def test_every_admin_operation_documents_the_token_and_its_401():
    for path, item in build_openapi()["paths"].items():
        for method, operation in item.items():
            admin = path.startswith("/admin")
            assert ("security" in operation) is admin, (path, method)
            assert ("401" in operation["responses"]) is admin, (path, method)


#: What the model bodies' schema cannot state, so a schema-valid body may still be refused
#: for it: a model's rules across its parameters, found in the refusal's words.
RULES_ACROSS_PARAMETERS = ("max_delay: must be at least base_delay",)


def _has_text(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, list) and any(isinstance(item, str) for item in value))


def refused_only_for_what_the_schema_leaves_to_the_spec(ctx, response, case):
    """positive_data_acceptance for PUT /admin/model, but for what its schema cannot state: a
    value given as text (read as in a spec: its syntax and bounds) and rules across parameters."""
    generated = case.meta.generation.mode.is_positive if case.meta is not None else False
    if not generated or (case.method, case.path) != ("PUT", "/admin/model") or response.status_code != 400:
        return
    text = any(_has_text(value) for key, value in case.body.items() if key != "name")
    if "spec" in case.body or text:
        return
    assert any(rule in response.text for rule in RULES_ACROSS_PARAMETERS), (
        f"a model body of numbers that its schema accepts was refused: {case.body} -> {response.text}"
    )


def _numbers_only(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` with the model bodies' text forms left out: only mappings whose values are numbers."""
    document = copy.deepcopy(document)
    schemas = document["components"]["schemas"]
    schemas["ModelRequest"] = schemas["ModelRequest"]["oneOf"][1]  # the mappings, not the spec string
    for cls in map(MODELS.get, MODELS.names()):
        for prop in schemas[body_title(cls)]["properties"].values():
            if "anyOf" in prop:
                prop["anyOf"] = [form for form in prop["anyOf"] if form.get("type") != "string"]
    return document


numbers_schema = schemathesis.openapi.from_dict(_numbers_only(build_openapi())).include(
    path="/admin/model", method="PUT"
)


@pytest.mark.live
@schema.parametrize()
@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
def test_fuzz_the_api_from_its_document(case, fuzzed):
    # Every schema-valid body is accepted (positive_data_acceptance), but a model's: see
    # refused_only_for_what_the_schema_leaves_to_the_spec, which takes that check's place there.
    model_body = (case.method, case.path) == ("PUT", "/admin/model")
    case.call_and_validate(
        base_url=f"http://127.0.0.1:{fuzzed.port}",
        timeout=10,
        headers=AUTHORIZED,
        excluded_checks=[positive_data_acceptance] if model_body else [],
        additional_checks=[refused_only_for_what_the_schema_leaves_to_the_spec],
    )


@pytest.mark.live
@numbers_schema.parametrize()
@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
def test_fuzz_model_bodies_of_numbers_every_one_the_schema_accepts_is_served(case, fuzzed):
    # Most bodies of the whole document give some value as text; these give numbers only, so
    # the schema's bounds are all that may refuse them, with the rules across parameters.
    case.call_and_validate(
        base_url=f"http://127.0.0.1:{fuzzed.port}",
        timeout=10,
        headers=AUTHORIZED,
        excluded_checks=[positive_data_acceptance],
        additional_checks=[refused_only_for_what_the_schema_leaves_to_the_spec],
    )
