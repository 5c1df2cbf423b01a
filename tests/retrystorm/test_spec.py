import pytest

from retrystorm.errors import SpecError
from retrystorm.loadgen.strategies import (
    STRATEGIES,
    ExponentialBackoff,
    FixedBackoff,
    Jitter,
    TableBackoff,
    parse_strategy,
)
from retrystorm.spec import spec_to_mapping


def test_parses_the_issue_example():
    strategy = parse_strategy("exponential:base=100ms,factor=2.718,max=5m,jitter=normal:0.1")
    assert strategy == ExponentialBackoff(base_s=0.1, factor=2.718, max_s=300.0, jitter=Jitter("normal", 0.1))
    assert strategy.spec() == "exponential:base=100ms,factor=2.718,max=5m,jitter=normal:0.1"


def test_positional_parameter():
    assert parse_strategy("fixed:100ms") == FixedBackoff(delay_s=0.1)
    assert parse_strategy("fixed:delay=2s").spec() == "fixed:2s"


def test_bracketed_list_parameter():
    strategy = parse_strategy("table:delays=[0,10ms,1s]")
    assert strategy == TableBackoff(delays_s=(0.0, 0.01, 1.0))
    assert strategy.spec() == "table:delays=[0s,10ms,1s]"


def test_mapping_form_with_yaml_values():
    strategy = parse_strategy({"name": "exponential", "base": "100ms", "factor": 3, "max": 60, "jitter": "full"})
    assert strategy == ExponentialBackoff(base_s=0.1, factor=3.0, max_s=60.0, jitter=Jitter("full"))
    assert parse_strategy(spec_to_mapping(strategy)) == strategy


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("bogus", r"unknown strategy 'bogus'; valid: .*exponential.*fixed"),
        ("exponential:factor=0.5", r"strategy 'exponential': factor: got 0.5, expected a number >= 1"),
        ("exponential:base=-1s", r"strategy 'exponential': base: got '-1s'"),
        ("exponential:base=100", r"base: got '100' \(add a unit\)"),
        ("exponential:colour=red", r"unknown parameter 'colour'; accepted: base, factor, max, jitter"),
        ("exponential:jitter=wobbly", r"jitter: got 'wobbly', expected none, full, equal"),
        ("exponential:jitter=proportional:2", r"jitter: got 'proportional:2'"),
        ("exponential:base=1s,max=10ms", r"max: must be at least base"),
        ("fixed:1s,2s", r"'2s' needs a key"),
        ("fixed:delay=1s,delay=2s", r"delay given twice"),
        ("uniform:min=2s,max=1s", r"min: must not exceed max"),
        ("table:delays=1s", r"expected a list in brackets"),
        ("table:delays=[]", r"needs at least one duration"),
    ],
)
def test_bad_specs_name_the_parameter_and_the_accepted_form(spec, message):
    with pytest.raises(SpecError, match=message):
        parse_strategy(spec)


def test_bad_specs_are_one_line():
    with pytest.raises(SpecError) as caught:
        parse_strategy("exponential:factor=x")
    assert "\n" not in str(caught.value)


def test_mapping_without_name_lists_names():
    with pytest.raises(SpecError, match=r"needs a 'name' key; valid names: .*smira"):
        parse_strategy({"base": "1s"})


def test_registry_names_every_required_strategy():
    assert set(STRATEGIES.names()) >= {
        "none",
        "fixed",
        "uniform",
        "exponential",
        "decorrelated",
        "grpc",
        "table",
        "smira",
    }
