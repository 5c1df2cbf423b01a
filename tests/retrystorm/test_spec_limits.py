"""Specs refuse infinity, absurd sizes and absurd lengths with one line naming the field."""

import math

import pytest

from retrystorm.errors import SpecError
from retrystorm.loadgen.strategies import parse_budget, parse_strategy
from retrystorm.loadgen.think import parse_think_time
from retrystorm.spec import MAX_LIST_ITEMS, MAX_SPEC_CHARS
from retrystorm.target.models import parse_model

DIGITS_400 = "1" * 400
DIGITS_5000 = "1" * 5000


def refused(parse, spec) -> str:
    """The message ``parse(spec)`` refuses ``spec`` with, checked to be one short line."""
    with pytest.raises(SpecError) as caught:
        parse(spec)
    message = str(caught.value)
    assert len(message.splitlines()) == 1, message
    assert len(message) < 400, message
    return message


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        pytest.param(f"fixed:{DIGITS_400}s", ["delay", "at most 100 characters"], id="fixed-400-digits"),
        pytest.param(f"fixed:{'9' * 90}s", ["delay", "<= 1000000000s"], id="fixed-90-digits"),
        ("fixed:1e309s", ["delay", "finite"]),  # was accepted as fixed:inf
        ("fixed:inf", ["delay", "finite"]),
        ("fixed:forever", ["delay", "finite"]),
        ("smira:factor=1e309", ["factor", "got inf, expected a finite number >= 1"]),
        ("exponential:factor=nan", ["factor", "got nan"]),
        pytest.param(f"uniform:max={'9' * 90}s", ["max", "<= 1000000000s"], id="uniform-90-digits"),
        ("exponential:max=inf", ["max", "finite"]),
        ("exponential:jitter=normal:1e309", ["jitter", "normal:J (0 < J <= 100)"]),
        ("exponential:jitter=normal:101", ["jitter", "normal:J (0 < J <= 100)"]),
        ("table:delays=[1s,inf]", ["delays[1]", "finite"]),
        pytest.param(
            "table:delays=[" + ",".join(["1ms"] * (MAX_LIST_ITEMS + 1)) + "]",
            ["delays", f"at most {MAX_LIST_ITEMS}"],
            id="table-too-long",
        ),
        pytest.param("x" * 1_000_000, [f"at most {MAX_SPEC_CHARS} characters", "1000000 characters"], id="1MB"),
        pytest.param("fixed:" + "1" * 1_000_000, [f"at most {MAX_SPEC_CHARS} characters"], id="1MB-value"),
        pytest.param(f"{DIGITS_5000}:x=1", ["unknown strategy", "5000 characters"], id="5000-digit-name"),
    ],
)
def test_strategy_specs_refuse_infinity_and_absurd_sizes(spec, words):
    message = refused(parse_strategy, spec)
    for word in words:
        assert word in message


@pytest.mark.parametrize(
    ("mapping", "words"),
    [
        pytest.param({"name": "table", "delays": [10**5000]}, ["delays[0]", "5001 digits"], id="table-yaml-int"),
        pytest.param({"name": "fixed", "delay": int(DIGITS_400)}, ["delay", "400 digits"], id="fixed-yaml-int"),
        ({"name": "fixed", "delay": math.inf}, ["delay", "finite"]),
        pytest.param({"name": "fixed", 10**5000: 1}, ["unknown parameter", "5001 digits"], id="yaml-int-key"),
        pytest.param({"name": "table", "delays": [0.1] * 100_000}, ["at most 1000"], id="table-100000"),
        pytest.param({"name": "fixed", "delay": "1" * 1_000_000}, ["delay", "1000000 characters"], id="1MB-value"),
        pytest.param({"name": ["x"] * 1_000_000}, ["name", "expected one of"], id="1M-list-as-name"),
    ],
)
def test_strategy_mappings_refuse_infinity_and_absurd_sizes(mapping, words):
    message = refused(parse_strategy, mapping)
    for word in words:
        assert word in message


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        pytest.param(f"exponential:limit={DIGITS_5000}", ["limit", "5000 characters"], id="limit-5000-digits"),
        pytest.param({"name": "exponential", "limit": 10**5000}, ["limit", "5001 digits"], id="limit-yaml-5000"),
        ("exponential:limit=1000001", ["limit", "<= 1000000"]),
        ("exponential:factor=1e309", ["factor", "got inf, expected a finite number"]),
        ("fixed:base_delay=forever", ["base_delay", "got inf, expected a finite duration"]),
        ("queue:workers=1e3", ["workers", "expected a whole number"]),
        pytest.param(f"queue:progress_per_tick={DIGITS_5000}", ["progress_per_tick"], id="auto-5000-digits"),
    ],
)
def test_models_refuse_what_the_parser_cannot_hold(spec, words):
    message = refused(parse_model, spec)
    for word in words:
        assert word in message


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("quota:cost=inf", ["cost", "finite"]),
        ("ratio:ttl=1e309s", ["ttl", "finite"]),
        ("adaptive:k=1e309", ["k", "finite"]),
        ("tokens:max=1e309", ["max", "finite"]),
    ],
)
def test_budgets_refuse_infinity_and_absurd_sizes(spec, words):
    message = refused(parse_budget, spec)
    for word in words:
        assert word in message


@pytest.mark.parametrize(
    "spec",
    [
        f"{DIGITS_400}s",
        "exponential:inf",
        "between:1s,1e309s",
        {"name": "constant", "wait": 10**400},
        "x" * 1_000_000,
    ],
    ids=["400-digits", "exponential-inf", "between-1e309", "yaml-int", "1MB"],
)
def test_think_times_refuse_infinity_and_absurd_sizes(spec):
    message = refused(parse_think_time, spec)
    assert "think time" in message


@pytest.mark.parametrize(("text", "limit"), [(" 5 ", 5), ("+7", 7), ("1_000", 1000), ("1000000", 10**6)])
def test_whole_numbers_as_python_writes_them_are_still_read(text, limit):
    assert parse_model({"name": "exponential", "limit": text}).limit == limit


@pytest.mark.parametrize("text", ["1__0", "1_", "²", "١٢", "5.0", "0x10"])
def test_whole_numbers_are_ascii_digits(text):
    assert "expected a whole number" in refused(parse_model, {"name": "exponential", "limit": text})
