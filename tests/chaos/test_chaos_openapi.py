"""The chaos API's OpenAPI document: kept in the repository, generated from the body models, matching the routes."""

import subprocess
import sys
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

import retrystorm.chaos
from retrystorm.chaos.api import ROUTES
from retrystorm.chaos.openapi import build_openapi, render

from .conftest import call, free_port, is_stopped, wait_for

OPENAPI = Path(retrystorm.chaos.__file__).parent / "openapi.json"


def test_the_file_is_the_generated_document():
    assert OPENAPI.read_text() == render(), "run: python -m retrystorm.chaos.openapi > chaos/openapi.json"


def test_every_route_is_documented_and_nothing_else():
    documented = {(method.upper(), path) for path, item in build_openapi()["paths"].items() for method in item}
    documented = {(method, path) for method, path in documented if method != "PARAMETERS"}
    served = {(method, path.replace("{outage_id}", "{outage_id}")) for method, path, _ in ROUTES}
    assert documented == served


def test_the_pause_body_is_the_validated_model():
    body = build_openapi()["paths"]["/outages"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert body["additionalProperties"] is False
    assert set(body["properties"]) == {"target", "duration", "backend"}
    assert body["required"] == ["target", "duration"]
    assert body["properties"]["target"]["maxLength"] == 200


# --- the live API fuzzed from its document ----------------------------------------------

schema = schemathesis.openapi.from_path(OPENAPI)


@pytest.fixture
def fuzzed(victim, journal_path):
    """``chaos serve`` with the victim registered; every outage clamped to 1 s, so fuzzed pauses end fast."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "retrystorm", "chaos", "serve", "--port", str(port), "--max-outage", "1s",
         "--target", f"target={victim.pid}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    wait_for(lambda: _answers(base), what="the chaos API to answer")
    yield base
    process.terminate()
    process.wait(timeout=20)
    assert not is_stopped(victim.pid)


def _answers(base: str) -> bool:
    try:
        return call(base, "GET", "/healthz")[0] == 200
    except OSError:
        return False


@pytest.mark.live
@pytest.mark.signals
@schema.parametrize()
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
def test_fuzz_the_chaos_api_from_its_document(case, fuzzed):
    # Every response conforms to the document: no 500, every refusal a documented 4xx with
    # {"error": ...}. A schema-valid body can still name a target that does not exist (404).
    case.call_and_validate(base_url=fuzzed, timeout=10, excluded_checks=[positive_data_acceptance])
