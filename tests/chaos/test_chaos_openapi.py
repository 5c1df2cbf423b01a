"""The chaos API's OpenAPI document: kept in the repository, generated from the body models, matching the routes."""

from pathlib import Path

import chaos
from chaos.api import ROUTES
from chaos.openapi import build_openapi, render

OPENAPI = Path(chaos.__file__).parent / "openapi.json"


def test_the_file_is_the_generated_document():
    assert OPENAPI.read_text() == render(), "run: python -m chaos.openapi > chaos/openapi.json"


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
