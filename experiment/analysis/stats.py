"""Latency percentiles of logical requests."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) of ascending ``sorted_values``, linearly interpolated.

    The same rule as numpy's default (``method="linear"``): rank ``h = (n - 1) q / 100``,
    value ``x[floor h] + (h - floor h) (x[floor h + 1] - x[floor h])``.
    """
    if not sorted_values:
        raise ValueError("percentile of no values")
    rank = (len(sorted_values) - 1) * q / 100
    low = math.floor(rank)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (rank - low) * (sorted_values[high] - sorted_values[low])


@dataclasses.dataclass(frozen=True, slots=True)
class LatencySummary:
    """p50, p75, p90, p99 and max of logical-request latencies in seconds (``None`` when none finished)."""

    p50: float | None = None
    p75: float | None = None
    p90: float | None = None
    p99: float | None = None
    max: float | None = None

    @classmethod
    def of(cls, latencies: Iterable[float]) -> LatencySummary:
        """Summarise ``latencies`` (any order)."""
        ordered = sorted(latencies)
        if not ordered:
            return cls()
        p50, p75, p90, p99 = (percentile(ordered, q) for q in (50, 75, 90, 99))
        return cls(p50, p75, p90, p99, ordered[-1])
