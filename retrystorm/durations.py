"""Durations as people write them (``100ms``, ``2s``, ``5m``, ``1m30s``) and back.

Internally every duration is a float number of seconds. Parsing divides by the unit's
size rather than multiplying by its reciprocal, so ``100ms`` is exactly ``0.1``.
:func:`format_duration` picks the largest unit that represents the value exactly and
guarantees ``parse_duration(format_duration(x)) == x`` for every ``0 <= x <= MAX_DURATION_S``.

Every duration is finite and at most :data:`MAX_DURATION_S`; ``inf`` (or ``forever``) is
read only where a caller says it means something (``allow_inf=True``), such as "no
deadline". A number too large for a float is never read as ``inf``.
"""

from __future__ import annotations

import math
import re

from retrystorm.errors import DurationError, shown

#: Unit suffix -> (numerator, denominator) in seconds, so "ms" is 1/1000 s.
_UNITS: dict[str, tuple[int, int]] = {
    "h": (3600, 1),
    "m": (60, 1),
    "s": (1, 1),
    "ms": (1, 1000),
    "us": (1, 1_000_000),
    "µs": (1, 1_000_000),
    "ns": (1, 1_000_000_000),
}
_PART = re.compile(r"((?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)(h|ms|m|s|us|µs|ns)", re.ASCII)
ACCEPTED = "a number with a unit: 250us, 100ms, 2s, 1.5m, 1h, or a sum like 1m30s"

#: The longest duration anything accepts: 1e9 s, about 31.7 years. Far beyond any run,
#: outage, delay or window, and below every timer's limit (``threading.TIMEOUT_MAX`` is
#: about 292 years), so a parsed duration never overflows a sleep or a timeout.
MAX_DURATION_S = 1e9
#: The longest duration text: ``1h2m3.456789s`` is 13 characters; anything near 100 is not a duration.
MAX_DURATION_CHARS = 100


def parse_duration(
    text: object, *, what: str = "duration", allow_inf: bool = False, at_most: float = MAX_DURATION_S
) -> float:
    """Parse ``text`` into seconds, ``0 <= seconds <= at_most``.

    Strings need a unit (``0`` alone is allowed); numbers (from YAML or JSON) are
    seconds. ``inf`` and ``forever`` (and a YAML ``.inf``) are infinity only with
    ``allow_inf``, for a caller that documents what infinity means there; a number too
    large for a float is too large, never infinite. Raises :class:`DurationError`
    naming ``what`` and the accepted forms, on one line.
    """
    if isinstance(text, int | float) and not isinstance(text, bool):
        return _from_number(text, what, allow_inf=allow_inf, at_most=at_most)
    if not isinstance(text, str):
        raise DurationError(f"{what}: got {shown(text)}, expected {ACCEPTED}")
    if len(text) > MAX_DURATION_CHARS:
        raise DurationError(f"{what}: got {shown(text)}, expected at most {MAX_DURATION_CHARS} characters: {ACCEPTED}")
    raw = text.strip()
    if raw.lower() in ("inf", "forever"):
        if allow_inf:
            return math.inf
        raise DurationError(f"{what}: got {shown(text)}, expected {_finite(at_most)}")
    seconds = _seconds(raw)
    if seconds is None:
        hint = " (add a unit)" if _is_number(raw) else ""
        raise DurationError(f"{what}: got {shown(text)}{hint}, expected {ACCEPTED}")
    if seconds > at_most:  # inf too, when a part or the sum is too large for a float
        raise DurationError(f"{what}: got {shown(text)}, expected {_finite(at_most)}")
    return seconds


def _finite(at_most: float) -> str:
    # "finite durations >= 0": the scenario loader's think times promise those words
    return f"finite durations >= 0 and <= {format_duration(at_most)} ({ACCEPTED})"


def _from_number(value: float, what: str, *, allow_inf: bool, at_most: float) -> float:
    """A YAML or JSON number of seconds."""
    too_large = f"{what}: got {shown(value)}, expected a number of seconds >= 0 and <= {format_duration(at_most)}"
    try:
        seconds = float(value)
    except OverflowError:  # an int beyond the float range: too large, not infinite
        raise DurationError(too_large) from None
    if seconds == math.inf and allow_inf:
        return seconds
    if not (math.isfinite(seconds) and seconds >= 0):
        raise DurationError(f"{what}: got {shown(value)}, expected a finite number of seconds >= 0")
    if seconds > at_most:
        raise DurationError(too_large)
    return seconds


def _seconds(raw: str) -> float | None:
    """The sum of ``raw``'s parts in seconds (``inf`` if too large), or ``None`` when malformed."""
    if raw in ("0", "0.0"):
        return 0.0
    if not raw:
        return None
    pos = 0
    total = 0.0
    while pos < len(raw):
        match = _PART.match(raw, pos)
        if match is None:
            return None
        numerator, denominator = _UNITS[match.group(2)]
        total += float(match.group(1)) * numerator / denominator
        pos = match.end()
    return total


def format_duration(seconds: float) -> str:
    """Format ``seconds`` compactly and exactly: ``0.1`` -> ``100ms``, ``300`` -> ``5m``, ``-1`` -> ``-1s``.

    A negative duration is never parsed, but an error that shows one must not fail itself.
    """
    if seconds == 0:
        return "0s"
    if seconds < 0:
        return "-" + format_duration(-seconds)
    if math.isinf(seconds):
        return "inf"
    for digits in (0, 3):  # whole numbers of the largest unit first, then 3 decimals
        for unit in ("h", "m", "s", "ms", "us"):
            numerator, denominator = _UNITS[unit]
            candidate = round(seconds * denominator / numerator, digits)
            text = f"{_plain(candidate)}{unit}"
            if candidate != 0 and _seconds(text) == seconds:
                return text
    return f"{seconds!r}s"


def seconds_text(seconds: float) -> str:
    """``seconds`` for reading, in one unit whatever the size, to the millisecond: ``7.5s``, ``60s``, ``13.333s``,
    ``3,000s``. Lines that list several times (a plan) use it so that they all read alike; a duration to be parsed
    back is :func:`format_duration`'s."""
    if math.isinf(seconds):
        return "inf"
    return f"{seconds:,.3f}".rstrip("0").rstrip(".") + "s"


def _plain(number: float) -> str:
    """``5.0`` -> ``5``, ``1.5`` -> ``1.5``, never scientific notation for short values."""
    if float(number).is_integer():
        return str(int(number))
    text = repr(float(number))
    return text if "e" not in text else f"{number:f}".rstrip("0")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
