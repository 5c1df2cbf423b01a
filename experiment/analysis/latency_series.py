"""Latency percentiles over time, censored: what users waited, second by second.

For each interval the distribution is that of

* the logical requests that *ended* in the interval (``ok`` or given up), at their
  latency (first attempt to outcome, backoff included), and
* the logical requests still *in progress* at the interval's end, at their age so far
  (a lower bound of their latency: right-censored, as in :mod:`retrystorm.experiment.analysis.stats`).

So a storm in which nobody gets an answer shows as percentiles that climb one second
per second, instead of an empty plot or the few fast requests that did finish. Both
parts are cumulative histograms over the shared buckets (:mod:`retrystorm.loadgen.buckets`); the
percentiles are interpolated within them as Prometheus' ``histogram_quantile`` does,
live and simulated alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from retrystorm.experiment.analysis.quantiles import Buckets, combine, sorted_quantile
from retrystorm.loadgen.series_names import LATENCY_QUANTILES


def interval_quantile(q: float, ended: Buckets | None, in_progress: Buckets | None) -> float | None:
    """The ``q``-quantile (0 to 1) of one interval: requests that ended in it and ages of those in progress."""
    return _quantile(q, combine(ended, in_progress))


def latency_over_time(
    ended: Sequence[Buckets | None], in_progress: Sequence[Buckets | None]
) -> dict[str, list[float | None]]:
    """Series name -> one censored percentile per interval (``latency_p50``, ``latency_p95``, ``latency_p99``).

    ``ended[i]`` is the histogram of the requests that ended in interval ``i`` (``None``:
    not read), ``in_progress[i]`` that of the ages of those in progress at its end.
    """
    if len(ended) != len(in_progress):
        raise ValueError("ended and in_progress must have one histogram per interval")
    return quantiles_over_time([combine(done, waiting) for done, waiting in zip(ended, in_progress, strict=True)])


def quantiles_over_time(
    combined: Sequence[Buckets], quantiles: Mapping[str, float] = LATENCY_QUANTILES
) -> dict[str, list[float | None]]:
    """:func:`latency_over_time` of intervals whose two histograms are combined already, sorted by bound.

    The simulator adds the two per bucket (they share the buckets), which is :func:`combine` on shared bounds.
    """
    return {name: [_quantile(q, interval) for interval in combined] for name, q in quantiles.items()}


def _quantile(q: float, both: Buckets) -> float | None:
    """The ``q``-quantile of an interval's combined histogram; ``None`` when it holds nothing."""
    if not both or both[-1][1] <= 0:
        return None
    return sorted_quantile(q, both)
