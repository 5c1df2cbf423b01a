"""Every model parameter has a ceiling, the same for the simulator, scenarios, the command line and the admin API."""

import pytest

from retrystorm.errors import SpecError
from retrystorm.spec import DURATION, params_of
from retrystorm.target.models import MAX_DURATION_S, MODELS, parse_model


@pytest.mark.parametrize(("name", "cls"), MODELS.items())
def test_every_numeric_parameter_declares_a_ceiling(name, cls):
    for info in params_of(cls):
        if info.type.choices:  # a word, not a number
            continue
        assert info.at_most is not None, f"{name}: {info.key} has no ceiling"
        if info.type is DURATION:
            assert info.at_most <= MAX_DURATION_S, f"{name}: {info.key} may exceed an hour"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("exponential:max_delay=1e300s", "max_delay: got '1e300s', expected finite durations >= 0 and <= 1000000000s"),
        ("exponential:max_delay=61m", "max_delay: got 61m, expected"),
        ("exponential:base_delay=2h,max_delay=3h", "base_delay: got 2h, expected"),
        ("exponential:tick=2h", "tick: got 2h, expected"),
        ("exponential:limit=1000001", "limit: got 1000001, expected a whole number >= 0 and <= 1000000"),
        ("exponential:k=1e7", "k: got 10000000, expected a number > 0 and <= 1000000"),
        ("exponential:factor=1001", "factor: got 1001, expected a number >= 1 and <= 1000"),
        ("fixed:base_delay=1e300s", "base_delay: got '1e300s'"),
        ("queue:workers=1000000000000", "workers: got 1000000000000, expected a whole number >= 1 and <= 1000000"),
        ("queue:overwhelm_at=2000000", "overwhelm_at: got 2000000"),
        ("queue:progress_per_tick=2000000", "progress_per_tick: got 2000000"),
        ("queue:service_time=90m", "service_time: got 90m"),
        ("queue:reject_after=3601s", "reject_after: got 3601s"),
        ("queue:tick=1e300s", "tick: got '1e300s'"),
        ("exponential:limit=1" + "0" * 5000, "limit: got '10000000000000000...000000000000000000' (5001 characters)"),
    ],
)
def test_values_above_the_ceiling_are_refused_naming_the_parameter_and_its_range(spec, message):
    with pytest.raises(SpecError) as caught:
        parse_model(spec)
    text = str(caught.value)
    assert message in text
    assert "\n" not in text
    assert len(text) < 300  # a 5,000-digit value is not echoed


def test_the_ceilings_themselves_are_accepted():
    parse_model("exponential:base_delay=1h,limit=1000000,factor=1000,k=1000000,tick=1h,max_delay=1h")
    parse_model("queue:workers=1000000,service_time=1h,reject_after=1h,overwhelm_at=1000000,progress_per_tick=1000000")
    parse_model("fixed:base_delay=1h")
