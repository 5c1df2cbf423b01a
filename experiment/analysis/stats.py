"""Latency percentiles of logical requests, counting the unfinished ones at their age (censored).

**The censoring rule.** A run ends with some logical requests still in progress: a user
waiting for an answer or backing off. Leaving them out makes a strategy whose users
never got an answer look fast (its p99 is that of the few that finished). So every
summary here counts every logical request started during the run:

* a request that ended (``ok`` or ``gave up``) at its latency, from its first attempt
  to its outcome, backoff included;
* a request still in progress when the run ended at its *age so far*, from its first
  attempt to the end of the run: a lower bound of its latency (right-censored).

A percentile that falls among the censored values is then itself a lower bound: the
true figure is at least that. ``censored`` says how many values were ages, so a reader
can tell a fast run (``censored`` 0) from a cut-short one.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence

from retrystorm.experiment.analysis.quantiles import Buckets, histogram_quantile, upper_bound_of_max

#: What every results document says of its latencies (the ``choices`` of a run, the simulator's notes).
CENSORING_NOTE = (
    "Latencies (latency_p50 ... latency_max, and the percentiles over time) count every logical request started: "
    "ended ones (succeeded or given up) at their latency, backoff included; those still in progress when the run "
    "(or, over time, the second) ended at their age so far, a lower bound (right-censored). latency_censored says "
    "how many were ages; a percentile that falls among them is itself a lower bound."
)
#: The quantiles a summary holds, in percent.
PERCENTILES = (50, 75, 90, 95, 99)


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


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class LatencySummary:
    """p50, p75, p90, p95, p99 and max of logical-request latencies in seconds, censored (module docstring).

    ``None`` when no request started. ``censored`` values were ages of unfinished
    requests; ``max`` is then at least the oldest one's age.
    """

    p50: float | None = None
    p75: float | None = None
    p90: float | None = None
    p95: float | None = None
    p99: float | None = None
    max: float | None = None
    censored: int = 0

    @classmethod
    def of(cls, latencies: Iterable[float], censored_ages: Iterable[float] = ()) -> LatencySummary:
        """Summarise finished requests' ``latencies`` and unfinished ones' ``censored_ages`` (any order)."""
        ages = list(censored_ages)
        ordered = sorted([*latencies, *ages])
        if not ordered:
            return cls()
        p50, p75, p90, p95, p99 = (percentile(ordered, q) for q in PERCENTILES)
        return cls(p50=p50, p75=p75, p90=p90, p95=p95, p99=p99, max=ordered[-1], censored=len(ages))

    @classmethod
    def of_histogram(cls, buckets: Buckets, censored: int = 0) -> LatencySummary:
        """Summarise a cumulative histogram of latencies and censored ages together.

        Quantiles are interpolated within buckets as Prometheus' ``histogram_quantile``
        does (:mod:`retrystorm.experiment.analysis.quantiles`); ``max`` is the upper bound of the
        highest non-empty bucket, ``None`` when that is the ``+Inf`` bucket.
        """
        p50, p75, p90, p95, p99 = (histogram_quantile(q / 100, buckets) for q in PERCENTILES)
        top = upper_bound_of_max(buckets)
        top = None if top is not None and math.isinf(top) else top
        return cls(p50=p50, p75=p75, p90=p90, p95=p95, p99=p99, max=top, censored=censored)
