"""The OpenAPI document: kept in the repository, served as is, matching the routes; and
the admin API fuzzed from it against a real server."""

import json
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

import target
from target.probe import fetch
from target.service.openapi import build_openapi, render

OPENAPI = Path(target.__file__).parent / "openapi.json"
schema = schemathesis.openapi.from_path(OPENAPI).exclude(path="/api")  # /api waits for the model
#: The fault rule's constraints are all in its schema: every schema-valid rule must be accepted.
fault_schema = schemathesis.openapi.from_path(OPENAPI).include(path="/admin/faults")


def test_the_file_is_the_generated_document():
    assert OPENAPI.read_text() == render(), "run: python -m target.service.openapi > target/openapi.json"


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


def test_every_model_parameter_is_documented():
    schemas = json.loads(OPENAPI.read_text())["components"]["schemas"]
    assert set(schemas["ExponentialModel"]["properties"]) == {
        "name",
        "base_delay",
        "limit",
        "factor",
        "k",
        "tick",
        "max_delay",
        "overflow",
    }
    assert "workers" in schemas["QueueModel"]["properties"]


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


@pytest.mark.live
@schema.parametrize()
@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
def test_fuzz_the_api_from_its_document(case, fuzzed):
    # A schema-valid model can still be refused with a documented 400: max_delay below
    # base_delay, or a duration string out of range, are rules JSON Schema cannot state.
    case.call_and_validate(
        base_url=f"http://127.0.0.1:{fuzzed.port}",
        timeout=10,
        headers=AUTHORIZED,
        excluded_checks=[positive_data_acceptance],
    )


@pytest.mark.live
@fault_schema.parametrize()
@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
def test_fuzz_the_fault_rule_every_valid_rule_is_accepted(case, fuzzed):
    case.call_and_validate(base_url=f"http://127.0.0.1:{fuzzed.port}", timeout=10, headers=AUTHORIZED)
