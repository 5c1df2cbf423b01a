"""Numbers as the reports show them: seconds, counts, ratios, per-outage recovery lists.

Shared by the simulator's terminal tables and the run report; no plotting imports here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: What a missing number shows as.
DASH = "—"


def seconds(value: float | None, *, none: str = "-") -> str:
    """``0.124s``, ``6s``, ``2,853s``; ``none`` for ``None``."""
    if value is None:
        return none
    if abs(value) >= 100:
        return f"{value:,.0f}s"
    return f"{value:.3g}s"


def recovery_text(values: Sequence[float | None], has_outage: bool, *, none: str = "-") -> str:
    """Recovery times after each outage, ``never`` where none was seen; ``none`` without outages."""
    if not has_outage:
        return none
    return ", ".join(seconds(value, none="never") for value in values)


def count(value: float | None) -> str:
    """``5,900``; a dash for ``None``."""
    return DASH if value is None else f"{value:,.0f}"


def percent(ratio: float | None) -> str:
    """``97.3 %``; a dash for ``None``."""
    return DASH if ratio is None else f"{100 * ratio:.1f} %"


def times(value: float | None) -> str:
    """An amplification: 1.02 or 12 followed by the times sign; a dash for ``None``."""
    if value is None:
        return DASH
    return f"{value:.3g}×" if value < 10 else f"{value:,.0f}×"


def per_outage(row: Mapping[str, Any], key: str) -> list[float | None]:
    """A results row's ``server_recovery_s`` or ``client_recovery_s`` as one value per outage.

    The results document writes one number (or ``null``) for a single outage, a list for
    several, and ``null`` for none; ``row["outages"]`` tells the last two apart.
    """
    outages = row.get("outages") or []
    value = row.get(key)
    if not outages:
        return []
    if isinstance(value, list):
        return [None if item is None else float(item) for item in value]
    return [None if value is None else float(value)]


def verdict_mark(passed: bool, expected_failure: bool = False) -> tuple[str, str]:
    """How a terminal marks an assertion: ``(text, rich style)``; a confirmed expected failure is not a green pass."""
    if expected_failure:
        return "  xfail ", "yellow"
    return ("  ok    ", "green") if passed else ("  FAIL  ", "bold red")
