import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from retrystorm.durations import format_duration, parse_duration
from retrystorm.errors import DurationError


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("100ms", 0.1),
        ("2s", 2.0),
        ("5m", 300.0),
        ("1h", 3600.0),
        ("1m30s", 90.0),
        ("1.5s", 1.5),
        ("250us", 0.00025),
        ("0", 0.0),
        (" 50ms ", 0.05),
        (3, 3.0),
        (0.25, 0.25),
    ],
)
def test_parse_duration_accepts_the_documented_forms(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["100", "1.5", "10 s", "ms", "-1s", "1d", "", "abc", "1s2"])
def test_parse_duration_rejects_malformed_text_naming_the_field(text):
    with pytest.raises(DurationError, match=r"^timeout: got .*expected"):
        parse_duration(text, what="timeout")


def test_bare_number_hint_says_add_a_unit():
    with pytest.raises(DurationError, match="add a unit"):
        parse_duration("100")


@pytest.mark.parametrize("value", [-1, float("nan"), True])
def test_parse_duration_rejects_bad_numbers(value):
    with pytest.raises(DurationError):
        parse_duration(value)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0.1, "100ms"), (300.0, "5m"), (2.0, "2s"), (0.0, "0s"), (1.5, "1500ms"), (0.05, "50ms"), (7200.0, "2h")],
)
def test_format_duration_is_compact(seconds, text):
    assert format_duration(seconds) == text


@given(st.floats(min_value=0, max_value=1e9, allow_nan=False, allow_infinity=False))
def test_format_then_parse_is_exact(seconds):
    assert parse_duration(format_duration(seconds)) == seconds


def test_a_negative_duration_is_shown_in_errors_not_refused():
    """A spec's bounds check shows the bad value; showing ``-1`` used to raise a parse error about ``'-1s'``."""
    assert format_duration(-1.0) == "-1s"
    assert format_duration(-0.25) == "-250ms"


def test_infinity_round_trips():
    assert parse_duration(format_duration(math.inf)) == math.inf


@pytest.mark.parametrize("value", [float("inf"), float("nan"), -0.5])
def test_bad_numbers_say_what_is_accepted_without_contradiction(value):
    """A YAML ``.inf`` used to get "got inf, expected a duration >= 0"."""
    with pytest.raises(DurationError, match=rf"^max: got {value!r}, expected a finite number of seconds >= 0$"):
        parse_duration(value, what="max")
