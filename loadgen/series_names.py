"""The names of a run's per-interval series: one set for the simulator, the live runner and the storm tab.

Both record a grid of intervals (``[i * step, (i + 1) * step)`` seconds after the load
starts; the live runner's step is 1 s, the simulator's ``sim.sample_every``). A
*rate* is a count over the interval divided by its length, per second; a *gauge* is
read at the interval's end. ``timeseries.csv`` (simulated and live) has a column per
name, after ``strategy`` and ``t_s`` (the interval's end); :class:`Samples` and the
report's curves use the same names.

Rates, per second:

* ``goodput``: logical requests that succeeded;
* ``attempts``: attempts sent, counted when sent (those never answered included);
* ``timeouts``: attempts the client gave up on, counted when they timed out;
* ``gave_up``: logical requests given up (attempts, deadline or budget exhausted);
* ``started``: logical requests started.

The live runner also records ``attempt_latency_s``: the mean latency of the attempts
that ended in each interval (not a rate), one of the client-side signals of a server's
recovery when the server has no readings of its own.

Gauges: ``in_flight`` (requests the target holds) and ``delay_s`` (its modelled delay).
Each side adds its own beside these: the simulator ``rejections`` (a rate: answers
that refused an attempt), ``peak_in_flight``, ``accept_queue`` and ``frozen``; the live
runner ``connections``, ``users_in_backoff`` and ``active_users``.

The Locust web UI's Retry storm tab (:mod:`retrystorm.loadgen.storm_series`) serves its series under these names
too (its points are per reading, not per grid interval); its one other name, ``requests_started``, is ``started``.
These names live with the load generator, the lowest layer that reads them, so the tab can import them.
"""

from __future__ import annotations

GOODPUT = "goodput"
ATTEMPTS = "attempts"
TIMEOUTS = "timeouts"
GAVE_UP = "gave_up"
STARTED = "started"
IN_FLIGHT = "in_flight"
DELAY_S = "delay_s"
ATTEMPT_LATENCY_S = "attempt_latency_s"
#: Client gauges, read at each interval's end: users backing off before a retry, and users running.
USERS_IN_BACKOFF = "users_in_backoff"
ACTIVE_USERS = "active_users"

#: The rates both record, per second over each interval.
RATES = (GOODPUT, ATTEMPTS, TIMEOUTS, GAVE_UP, STARTED)
#: The gauges both record, read at each interval's end.
GAUGES = (IN_FLIGHT, DELAY_S)

#: Gauge: logical requests in progress (a user waiting for an answer or backing off) at the interval's end.
IN_PROGRESS = "in_progress"
#: Latency percentiles over time, seconds, censored: of the logical requests that ended in
#: the interval (at their latency) and those in progress at its end (at their age so far),
#: interpolated within the shared buckets (:mod:`retrystorm.loadgen.buckets`); ``None`` when there is neither.
LATENCY_P50 = "latency_p50"
LATENCY_P95 = "latency_p95"
LATENCY_P99 = "latency_p99"
#: The latency series and the quantile each holds.
LATENCY_QUANTILES = {LATENCY_P50: 0.5, LATENCY_P95: 0.95, LATENCY_P99: 0.99}
