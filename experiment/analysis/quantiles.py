"""Quantiles of a cumulative histogram, the way Prometheus' ``histogram_quantile`` takes them.

Given buckets ``(upper bound b_i, cumulative count c_i)`` ascending and ending with
``+Inf``, and ``q`` in ``[0, 1]``: the rank is ``r = q * c_last``; the quantile lies in
the first bucket ``i`` with ``c_i >= r`` and is interpolated linearly inside it,
``b_(i-1) + (b_i - b_(i-1)) * (r - c_(i-1)) / (c_i - c_(i-1))``, with ``b_(-1) = 0``
(Prometheus assumes a lower bound of 0 when the first bound is positive). A rank in the
``+Inf`` bucket returns the highest finite bound. Source: Prometheus,
``promql/quantile.go`` (``bucketQuantile``). Like every histogram quantile it is exact
only to the bucket; the buckets here are ~3 per decade, so a quantile may be off by up
to the width of its bucket.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

Buckets = Sequence[tuple[float, float]]


def difference(end: Buckets, start: Buckets) -> list[tuple[float, float]]:
    """``end - start`` bucket by bucket: the histogram of what happened between two readings.

    Bounds missing from ``start`` count as 0 there (the series did not exist yet).
    """
    before = dict(start)
    return [(bound, max(0.0, count - before.get(bound, 0.0))) for bound, count in end]


def histogram_quantile(q: float, buckets: Buckets) -> float | None:
    """The ``q``-quantile (``0 <= q <= 1``) of cumulative ``buckets``; ``None`` when empty."""
    if not 0 <= q <= 1:
        raise ValueError(f"q must be within [0, 1], got {q}")
    return sorted_quantile(q, sorted(buckets))


def sorted_quantile(q: float, ordered: Buckets) -> float | None:
    """:func:`histogram_quantile` of buckets already sorted by bound (``combine`` returns them so)."""
    if not ordered or not math.isinf(ordered[-1][0]) or ordered[-1][1] <= 0:
        return None
    rank = q * ordered[-1][1]
    lower_bound, lower_count = 0.0, 0.0
    for bound, count in ordered:
        if count >= rank and count > 0:
            if math.isinf(bound):
                return highest_finite_bound(ordered)
            if bound <= 0:
                return bound
            width = count - lower_count
            share = (rank - lower_count) / width if width > 0 else 1.0
            return lower_bound + (bound - lower_bound) * share
        lower_bound, lower_count = bound, count
    return highest_finite_bound(ordered)


def highest_finite_bound(buckets: Buckets) -> float | None:
    """The largest finite upper bound, or ``None`` if there is none."""
    finite = [bound for bound, _ in buckets if not math.isinf(bound)]
    return max(finite) if finite else None


def upper_bound_of_max(buckets: Buckets) -> float | None:
    """The smallest bound every observation lies under: the upper bound of the highest non-empty bucket.

    ``inf`` when observations fell beyond the highest finite bound; ``None`` when empty.
    """
    ordered = sorted(buckets)
    if not ordered or ordered[-1][1] <= 0:
        return None
    total = ordered[-1][1]
    return next(bound for bound, count in ordered if count >= total)


def cumulative_at(buckets: Buckets, bound: float) -> float:
    """The cumulative count of ``buckets`` at ``bound``: that of its largest bound ``<= bound`` (0 if none)."""
    found = 0.0
    for upper, count in sorted(buckets):
        if upper > bound:
            break
        found = count
    return found


def combine(*histograms: Buckets | None) -> list[tuple[float, float]]:
    """Several cumulative histograms as one: the union of their bounds, their counts added.

    Where one lacks a bound it counts what it holds up to its largest bound below that
    one (a histogram's count is a step function between its bounds), so each
    observation stays in a bucket whose upper bound is at least its own: at each bound
    ``b`` the sum is ``fsum(cumulative_at(part, b) for part in parts)``. Each part is
    sorted once and read in one pass over the union's bounds (``O(n log n)`` for ``n``
    buckets in all, where reading each bound by :func:`cumulative_at` was ``O(n^2 log n)``).
    ``None`` parts are left out; no parts give ``[]``.
    """
    parts = [sorted(part) for part in histograms if part]
    bounds = sorted({bound for part in parts for bound, _ in part})
    steps = [_steps_at(part, bounds) for part in parts]
    return [(bound, math.fsum(counts)) for bound, *counts in zip(bounds, *steps, strict=True)]


def _steps_at(ordered: Buckets, bounds: list[float]) -> list[float]:
    """:func:`cumulative_at` of sorted ``ordered`` at each of ascending ``bounds``, in one pass."""
    if [bound for bound, _ in ordered] == bounds:  # it has every bound (the shared buckets): its own counts
        return [count for _, count in ordered]
    found, index, count = [], 0, 0.0
    for bound in bounds:
        while index < len(ordered) and ordered[index][0] <= bound:
            count = ordered[index][1]
            index += 1
        found.append(count)
    return found


def histogram_of(values: Sequence[float], bounds: Sequence[float]) -> list[tuple[float, float]]:
    """A cumulative histogram of ``values`` over ascending ``bounds`` and ``+Inf`` (a value on a bound counts in it)."""
    ordered = sorted(values)
    found = [(bound, float(bisect.bisect_right(ordered, bound))) for bound in bounds]
    return [*found, (math.inf, float(len(ordered)))]
