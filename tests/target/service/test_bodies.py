"""The admin API's bodies, read into what they ask for: the models generated from the registry,
the fault rule, the reset; every refusal one line naming the field and what it accepts."""

import json

import pydantic_core
import pytest

from retrystorm.errors import UserError
from retrystorm.spec import DURATION, INTEGER, NUMBER, params_of
from retrystorm.spec_bodies import body_title
from retrystorm.target.faults import FaultRule
from retrystorm.target.models import MODELS, parse_model
from retrystorm.target.service.admin import parse_model_body, parse_reset_body, parse_rule_body
from retrystorm.target.service.bodies import MODEL_REQUEST
from retrystorm.target.service.config import MIN_TICK_S, live_param

RETRY_AFTER = "a whole number of seconds from 0 to 86400, or null (no header)"
FIRST_ATTEMPTS = "a whole number from 1 to 999,999,999, or null (no limit)"
COUNT = "a whole number from 1 to 1,000,000,000, or null (no limit)"


def refusal(parse, body: bytes) -> str:
    with pytest.raises(UserError) as caught:
        parse(body)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_a_rule_takes_defaults_and_round_trips():
    assert parse_rule_body(b"{}") == FaultRule()
    body = {"status": 429, "retry_after": 2, "first_attempts": 3, "probability": 1, "count": 7}
    rule = parse_rule_body(json.dumps(body).encode())
    assert rule == FaultRule(status=429, retry_after_s=2, first_attempts=3, probability=1.0, count=7)
    assert parse_rule_body(json.dumps(rule.to_json()).encode()) == rule


def test_a_whole_number_may_be_written_as_json_schema_allows():
    # JSON Schema's integer is any number without a fraction, so the schema accepts these
    rule = parse_rule_body(b'{"status": 503.0, "count": 1e2, "first_attempts": 2.0}')
    assert (rule.status, rule.count, rule.first_attempts) == (503, 100, 2)
    assert type(rule.count) is int
    assert parse_model_body(b'{"name": "exponential", "limit": 250.0}').limit == 250


def test_the_largest_values_are_accepted():
    rule = parse_rule_body(b'{"retry_after": 86400, "first_attempts": 999999999, "count": 1000000000}')
    assert (rule.retry_after_s, rule.first_attempts, rule.count) == (86_400, 999_999_999, 10**9)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"status": 404}, "status: got 404, expected 429 or 500 to 599"),
        ({"status": 600}, "status: got 600, expected 429 or 500 to 599"),
        ({"status": "503"}, "status: got '503', expected 429 or 500 to 599"),
        ({"status": True}, "status: got True, expected 429 or 500 to 599"),
        ({"status": None}, "status: got None, expected 429 or 500 to 599"),
        ({"retry_after": -1}, f"retry_after: got -1, expected {RETRY_AFTER}"),
        ({"retry_after": 86_401}, f"retry_after: got 86401, expected {RETRY_AFTER}"),
        ({"retry_after": 1.5}, f"retry_after: got 1.5, expected {RETRY_AFTER}"),
        ({"retry_after": "1s"}, f"retry_after: got '1s', expected {RETRY_AFTER}"),
        ({"first_attempts": 0}, f"first_attempts: got 0, expected {FIRST_ATTEMPTS}"),
        ({"first_attempts": 10**9}, f"first_attempts: got 1000000000, expected {FIRST_ATTEMPTS}"),
        ({"count": 0}, f"count: got 0, expected {COUNT}"),
        ({"count": 10**9 + 1}, f"count: got 1000000001, expected {COUNT}"),
        ({"count": [1]}, f"count: got [1], expected {COUNT}"),
        ({"probability": 0}, "probability: got 0, expected a number > 0 and <= 1"),
        ({"probability": 1.5}, "probability: got 1.5, expected a number > 0 and <= 1"),
        ({"probability": "half"}, "probability: got 'half', expected a number > 0 and <= 1"),
        ({"probability": False}, "probability: got False, expected a number > 0 and <= 1"),
        ({"fail": 3}, "body: unknown field 'fail'; accepted: status, retry_after, first_attempts, probability, count"),
        ({"retry_after_s": 3}, "body: unknown field 'retry_after_s'; accepted: status, retry_after"),
    ],
)
def test_bad_rules_name_the_field_and_what_is_accepted(body, message):
    assert refusal(parse_rule_body, json.dumps(body).encode()).startswith(message)


def test_pydantic_cores_json_parser_names_no_field_for_a_huge_number_so_the_body_is_read_first():
    huge = b'{"count": 1' + b"0" * 5000 + b"}"
    with pytest.raises(ValueError, match="number out of range"):  # why admin.py reads JSON with the standard library
        pydantic_core.from_json(huge)
    assert refusal(parse_rule_body, huge) == f"count: got a whole number of 5,001 digits, expected {COUNT}"


def test_the_reset_body():
    assert parse_reset_body(b"") is False
    assert parse_reset_body(b"{}") is False
    assert parse_reset_body(b'{"release_in_flight": true}') is True
    assert refusal(parse_reset_body, b'{"release_in_flight": 1}') == "release_in_flight: got 1, expected true or false"
    assert refusal(parse_reset_body, b"[]") == "body: got a JSON list, expected a JSON object"


def test_every_registered_model_is_a_body_of_its_parameters():
    for name, cls in MODELS.items():
        defaults = parse_model_body(json.dumps({"name": name}).encode())
        assert defaults == cls()
        assert parse_model_body(json.dumps({"spec": name}).encode()) == defaults
        every = {info.key: info.type.to_text(getattr(defaults, info.field)) for info in params_of(cls)}
        assert parse_model_body(json.dumps({"name": name, **every}).encode()) == defaults


def test_a_mapping_and_a_spec_string_give_the_same_model():
    mapping = {"name": "queue", "workers": 3, "service_time": 0.5, "progress_per_tick": None, "tick": "10ms"}
    assert parse_model_body(json.dumps(mapping).encode()) == parse_model(
        "queue:workers=3,service_time=500ms,progress_per_tick=auto,tick=10ms"
    )


def test_the_schema_states_the_bounds_the_body_checks():
    # each model's parameters, with the bounds of a live server, in the document's words
    _, document = MODEL_REQUEST.json_schemas([("m", "validation", MODEL_REQUEST)])
    for name, cls in MODELS.items():
        schema = document["$defs"][body_title(cls)]
        assert set(schema["properties"]) == {"name", *(info.key for info in params_of(cls))}
        for info in map(live_param, params_of(cls)):
            if (info.type.optional_of or info.type) not in (DURATION, INTEGER, NUMBER):
                continue  # text only (as in a spec): no bounds to state
            number = schema["properties"][info.key]["anyOf"][0]
            assert number.get("maximum") == info.ceiling, (name, info.key)
            assert number.get("exclusiveMinimum") == info.above, (name, info.key)
            if info.at_least is not None:
                assert number["minimum"] == info.at_least, (name, info.key)
    tick = document["$defs"]["ExponentialModel"]["properties"]["tick"]["anyOf"][0]
    assert tick["minimum"] == MIN_TICK_S
