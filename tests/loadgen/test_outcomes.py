"""Attempt classification and Retry-After parsing (RFC 9110, section 10.2.3)."""

from datetime import UTC, datetime
from email.utils import format_datetime

import pytest

from retrystorm.loadgen.outcomes import AttemptOutcome, outcome_of_status, parse_retry_after


@pytest.mark.parametrize(
    ("status", "outcome", "retryable"),
    [
        (200, AttemptOutcome.OK, False),
        (204, AttemptOutcome.OK, False),
        (301, AttemptOutcome.OK, False),
        (404, AttemptOutcome.CLIENT_ERROR, False),
        (400, AttemptOutcome.CLIENT_ERROR, False),
        (429, AttemptOutcome.THROTTLED, True),
        (500, AttemptOutcome.SERVER_ERROR, True),
        (503, AttemptOutcome.SERVER_ERROR, True),
    ],
)
def test_status_classes(status, outcome, retryable):
    assert outcome_of_status(status) is outcome
    assert outcome.retryable is retryable


def test_timeouts_and_connection_errors_are_retried():
    assert AttemptOutcome.TIMEOUT.retryable
    assert AttemptOutcome.CONNECTION_ERROR.retryable


NOW = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        (None, None),
        ("0", 0.0),
        ("7", 7.0),
        (" 120 ", 120.0),
        ("Sat, 01 Mar 2025 12:00:30 GMT", 30.0),
        ("Sat, 01 Mar 2025 11:59:00 GMT", 0.0),  # in the past: retry now
        ("-5", None),
        ("1.5", None),
        ("soon", None),
        ("", None),
        ("Sat, 01 Mar 2025 12:00:30 -0000", None),  # not GMT: not an HTTP-date
    ],
)
def test_retry_after(header, seconds):
    assert parse_retry_after(header, now_epoch_s=NOW) == seconds


def test_retry_after_date_as_servers_write_it():
    later = datetime.fromtimestamp(NOW + 90, tz=UTC)
    assert parse_retry_after(format_datetime(later, usegmt=True), now_epoch_s=NOW) == pytest.approx(90.0)


def test_x_amz_retry_after_is_whole_milliseconds():
    from retrystorm.loadgen.outcomes import parse_amz_retry_after

    assert parse_amz_retry_after("1500") == 1.5
    assert parse_amz_retry_after(" 0 ") == 0.0
    for invalid in (None, "-1", "1.5", "soon", ""):
        assert parse_amz_retry_after(invalid) is None
