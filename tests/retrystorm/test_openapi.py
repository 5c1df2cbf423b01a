"""One OpenAPI builder for both HTTP APIs: the same frame, token scheme and request-guard answers in each."""

from __future__ import annotations

import pytest

from retrystorm import __version__
from retrystorm.chaos.openapi import build_openapi as chaos_document
from retrystorm.openapi import GUARD_MEANING, SECURITY_SCHEME, guarded, json_answer, ref, text_answer
from retrystorm.target.service.openapi import build_openapi as target_document

METHODS = ("get", "put", "post", "delete", "patch")


def operations(document):
    for path, item in document["paths"].items():
        for method in METHODS:
            if method in item:
                yield path, method, item[method]


@pytest.mark.parametrize("build", [chaos_document, target_document])
def test_both_documents_have_one_frame_and_one_token_scheme(build):
    document = build()
    assert document["openapi"] == "3.1.0"
    assert document["info"]["version"] == __version__
    [(name, scheme)] = document["components"]["securitySchemes"].items()
    assert (name, scheme["type"], scheme["scheme"]) == (SECURITY_SCHEME, "http", "bearer")


@pytest.mark.parametrize(("build", "guarded_path"), [(chaos_document, None), (target_document, "/admin")])
def test_every_guarded_operation_documents_the_guards_answers_in_the_same_words(build, guarded_path):
    checked = 0
    for path, _method, operation in operations(build()):
        if guarded_path is not None and not path.startswith(guarded_path):
            continue
        answers = operation["responses"]
        assert "403" in answers, path
        if "security" in operation:
            assert operation["security"] == [{SECURITY_SCHEME: []}, {}]  # the token only when the server has one
            assert answers["401"]["description"] == GUARD_MEANING["401"], path
        if "requestBody" in operation:
            assert answers["415"]["description"] == GUARD_MEANING["415"], path
            assert list(operation["requestBody"]["content"]) == ["application/json"], path
        assert GUARD_MEANING["403"] in answers["403"]["description"], path
        checked += 1
    assert checked >= 8


def test_an_operations_own_answer_stays_and_the_guards_follow():
    operation = {"summary": "x", "responses": {"200": text_answer("ok"), "403": text_answer("not this target")}}
    made = guarded(operation, text_answer, body=True)
    assert list(made["responses"]) == ["200", "403", "401", "415"]
    assert made["responses"]["403"]["description"] == "not this target"
    assert json_answer(ref("Error"), "e")["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Error"
    }
