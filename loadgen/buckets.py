"""The latency buckets every latency histogram of the project uses, live and simulated.

Seconds, 10 ms to 10 min, about three per decade, with the seed's 2 s attempt timeout
as an edge: the tail of a retry storm is minutes long. The client's Prometheus
histograms (:mod:`retrystorm.loadgen.metrics`), the age of the requests still in progress, and
the simulator's per-interval latency histograms share them, so a quantile taken from
either is exact to the same bucket. Pure: no imports.
"""

from __future__ import annotations

#: Upper bounds in seconds (``+Inf`` is implied after the last).
LATENCY_BUCKETS_S = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0)
