"""What happened to an attempt and to a logical request, and the ``Retry-After`` header.

Pure: no Locust, no clock (the caller passes the wall-clock time an HTTP-date is read
against). An attempt is retried after a timeout, a connection error, a 5xx or a 429,
as the seed client retries every error and timeout; any other 4xx is the client's own
fault and ends the logical request at once.
"""

from __future__ import annotations

import enum
import math
from email.utils import parsedate_to_datetime


class AttemptOutcome(enum.StrEnum):
    """One attempt's result; the ``outcome`` label of ``retrystorm_client_attempts_total``."""

    OK = "ok"
    TIMEOUT = "timeout"
    CONNECTION_ERROR = "connection_error"
    SERVER_ERROR = "server_error"
    THROTTLED = "throttled"
    CLIENT_ERROR = "client_error"

    @property
    def retryable(self) -> bool:
        """Whether a failed attempt with this outcome may be retried."""
        return self not in (AttemptOutcome.OK, AttemptOutcome.CLIENT_ERROR)


class RequestOutcome(enum.StrEnum):
    """A logical request's result; the ``outcome`` label of ``retrystorm_client_requests_total``."""

    OK = "ok"
    GAVE_UP = "gave_up"


#: Why a request gave up without the policy deciding it: the response was not retryable.
NOT_RETRYABLE = "not_retryable"


def outcome_of_status(status: int) -> AttemptOutcome:
    """Classify an HTTP status code: 1xx-3xx ok, 429 throttled, other 4xx client error, 5xx server error."""
    if status < 400:
        return AttemptOutcome.OK
    if status == 429:
        return AttemptOutcome.THROTTLED
    if status < 500:
        return AttemptOutcome.CLIENT_ERROR
    return AttemptOutcome.SERVER_ERROR


def parse_amz_retry_after(value: str | None) -> float | None:
    """Seconds to wait from ``x-amz-retry-after`` (whole milliseconds), or ``None`` when absent or invalid.

    botocore 1.44.8 ``ExponentialBackoff._get_retry_after_delay``: ``int(value) / 1000``, ignored when it
    is not a whole number or is negative.
    """
    if value is None:
        return None
    text = value.strip()
    return int(text) / 1000 if text.isdigit() and len(text) <= 12 else None


def parse_retry_after(value: str | None, *, now_epoch_s: float) -> float | None:
    """Seconds to wait from a ``Retry-After`` header, or ``None`` when absent or invalid.

    RFC 9110, section 10.2.3: either ``delay-seconds`` (a non-negative whole number)
    or an HTTP-date, read against ``now_epoch_s``; a date in the past means 0. An
    invalid value is ignored, as browsers and most clients do.
    """
    if value is None:
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # RFC 9110 dates are always GMT
        return None
    seconds = when.timestamp() - now_epoch_s
    return max(0.0, seconds) if math.isfinite(seconds) else None
