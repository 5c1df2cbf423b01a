"""Durations as people write them (``100ms``, ``2s``, ``5m``, ``1m30s``) and back.

Internally every duration is a float number of seconds. Parsing divides by the unit's
size rather than multiplying by its reciprocal, so ``100ms`` is exactly ``0.1``.
:func:`format_duration` picks the largest unit that represents the value exactly and
guarantees ``parse_duration(format_duration(x)) == x`` for every finite ``x >= 0``.
"""

from __future__ import annotations

import math
import re

from retrystorm.errors import DurationError, shorten

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
_PART = re.compile(r"((?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)(h|ms|m|s|us|µs|ns)")
ACCEPTED = "a number with a unit: 250us, 100ms, 2s, 1.5m, 1h, or a sum like 1m30s"


def parse_duration(text: str | float | int, *, what: str = "duration") -> float:
    """Parse ``text`` into seconds.

    Strings need a unit (``0`` alone is allowed); numbers (from YAML or JSON) are
    seconds. Raises :class:`DurationError` naming ``what`` and the accepted forms.
    """
    if isinstance(text, bool):
        raise DurationError(f"{what}: got {shorten(repr(text))}, expected {ACCEPTED}")
    if isinstance(text, int | float):
        try:
            value = float(text)
        except OverflowError:  # a whole number from YAML or JSON beyond the float range
            value = math.inf if text > 0 else -math.inf
        if not math.isfinite(value) or value < 0:
            raise DurationError(f"{what}: got {shorten(repr(text))}, expected a finite number of seconds >= 0")
        return value
    raw = text.strip()
    if raw in ("0", "0.0"):
        return 0.0
    if raw.lower() in ("inf", "forever"):
        return math.inf
    pos = 0
    total = 0.0
    for match in _PART.finditer(raw):
        if match.start() != pos:
            break
        numerator, denominator = _UNITS[match.group(2)]
        total += float(match.group(1)) * numerator / denominator
        pos = match.end()
    if pos != len(raw) or not raw:
        hint = " (add a unit)" if _is_number(raw) else ""
        raise DurationError(f"{what}: got {shorten(repr(text))}{hint}, expected {ACCEPTED}")
    return total


def format_duration(seconds: float) -> str:
    """Format ``seconds`` compactly and exactly: ``0.1`` -> ``100ms``, ``300`` -> ``5m``."""
    if seconds == 0:
        return "0s"
    if math.isinf(seconds):
        return "inf"
    if seconds >= 1e15:  # far beyond any unit's whole numbers: the float itself, exactly
        return f"{seconds!r}s"
    for digits in (0, 3):  # whole numbers of the largest unit first, then 3 decimals
        for unit in ("h", "m", "s", "ms", "us"):
            numerator, denominator = _UNITS[unit]
            candidate = round(seconds * denominator / numerator, digits)
            text = f"{_plain(candidate)}{unit}"
            if candidate != 0 and parse_duration(text) == seconds:
                return text
    return f"{seconds!r}s"


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
