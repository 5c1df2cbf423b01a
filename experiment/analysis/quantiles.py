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
    ordered = sorted(buckets)
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
    observation stays in a bucket whose upper bound is at least its own. ``None`` parts
    are left out; no parts give ``[]``.
    """
    parts = [part for part in histograms if part]
    bounds = sorted({bound for part in parts for bound, _ in part})
    return [(bound, math.fsum(cumulative_at(part, bound) for part in parts)) for bound in bounds]


def histogram_of(values: Sequence[float], bounds: Sequence[float]) -> list[tuple[float, float]]:
    """A cumulative histogram of ``values`` over ascending ``bounds`` and ``+Inf`` (a value on a bound counts in it)."""
    ordered = sorted(values)
    found = [(bound, float(bisect.bisect_right(ordered, bound))) for bound in bounds]
    return [*found, (math.inf, float(len(ordered)))]
