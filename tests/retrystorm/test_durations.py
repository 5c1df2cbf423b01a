import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from retrystorm.durations import MAX_DURATION_S, format_duration, parse_duration, seconds_text
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


def test_infinity_round_trips_where_it_is_allowed():
    assert parse_duration(format_duration(math.inf), allow_inf=True) == math.inf


@pytest.mark.parametrize("value", [float("inf"), float("nan"), -0.5])
def test_bad_numbers_say_what_is_accepted_without_contradiction(value):
    """A YAML ``.inf`` used to get "got inf, expected a duration >= 0"."""
    with pytest.raises(DurationError, match=rf"^max: got {value!r}, expected a finite number of seconds >= 0$"):
        parse_duration(value, what="max")


FOUR_HUNDRED_DIGITS = "1" * 400


@pytest.mark.parametrize(
    "text",
    [
        FOUR_HUNDRED_DIGITS + "s",  # was inf, silently
        "1e309s",
        "1e308h",  # finite digits, an infinite sum once multiplied by the unit
        "1e308s1e308s",
        "inf",
        "forever",
        pytest.param(int(FOUR_HUNDRED_DIGITS), id="yaml-int-400-digits"),  # was an OverflowError traceback
        pytest.param(10**5000, id="yaml-int-5000-digits"),  # beyond Python's int-to-text limit: never printed
        2e9,  # finite, but beyond the ceiling
        "2000000000s",
    ],
)
def test_infinite_or_absurd_durations_are_refused_in_one_line(text):
    with pytest.raises(DurationError) as caught:
        parse_duration(text, what="timeout")
    message = str(caught.value)
    assert message.startswith("timeout: got ")
    assert len(message.splitlines()) == 1
    assert len(message) < 300
    assert any(words in message for words in ("finite", "<= 1000000000s", "at most 100 characters"))


def test_a_caller_may_lower_the_ceiling():
    assert parse_duration("24h", at_most=86400) == 86400
    with pytest.raises(DurationError, match=r"^delay: got '25h', expected finite durations >= 0 and <= 24h \("):
        parse_duration("25h", what="delay", at_most=86400)


def test_the_ceiling_itself_is_accepted():
    assert parse_duration("1000000000s") == MAX_DURATION_S == 1e9
    assert parse_duration(MAX_DURATION_S) == MAX_DURATION_S


def test_infinity_only_where_the_caller_allows_it():
    assert parse_duration("forever", allow_inf=True) == math.inf
    assert parse_duration(math.inf, allow_inf=True) == math.inf
    with pytest.raises(DurationError, match="finite"):
        parse_duration("1" * 99 + "s", allow_inf=True)  # too large is not infinite
    with pytest.raises(DurationError, match="<= 1000000000s"):
        parse_duration(int(FOUR_HUNDRED_DIGITS), allow_inf=True)


def test_a_long_text_is_refused_without_quoting_it_whole():
    with pytest.raises(DurationError) as caught:
        parse_duration("1" * 1_000_000 + "s")
    message = str(caught.value)
    assert "1000001 characters" in message
    assert len(message) < 300


@pytest.mark.parametrize("value", [None, [1, 2], {"s": 1}, b"1s"])
def test_values_that_are_not_text_or_numbers_are_refused(value):
    with pytest.raises(DurationError, match=r"^timeout: got .*expected"):
        parse_duration(value, what="timeout")


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(7.5, "7.5s"), (60.0, "60s"), (40 / 3, "13.333s"), (3000.0, "3,000s"), (0.25, "0.25s"), (math.inf, "inf")],
)
def test_seconds_text_reads_every_time_in_one_unit(seconds, text):
    assert seconds_text(seconds) == text
