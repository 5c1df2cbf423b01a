"""The simulator's request log: the ages in progress at each sample, however requests start, end and start again."""

from __future__ import annotations

import bisect

from hypothesis import given
from hypothesis import strategies as st

from retrystorm.loadgen.buckets import LATENCY_BUCKETS_S
from retrystorm.sim.latency import RequestLog

#: (what, client, time step): start a request of a client, end it, or sample the ages in progress.
STEPS = st.lists(st.tuples(st.sampled_from(["start", "end", "sample"]), st.integers(0, 40), st.floats(0, 5)))


@given(steps=STEPS)
def test_every_sample_counts_the_ages_of_exactly_the_requests_in_progress(steps):
    log = RequestLog(intervals=len(steps))
    started: dict[int, float] = {}
    expected: list[list[int]] = []
    now, interval = 0.0, 0
    for what, client, step in steps:
        now += step
        if what == "start":  # also a client whose last request never ended: its start is replaced
            log.start(client, now)
            started[client] = now
        elif what == "end" and client in started:
            log.end(client, now, interval, attempts=1, ok=True)
            del started[client]
        elif what == "sample":
            log.sample(now)
            counts = [0] * (len(LATENCY_BUCKETS_S) + 1)
            for begun in started.values():
                counts[bisect.bisect_left(LATENCY_BUCKETS_S, now - begun)] += 1
            expected.append(counts)
            interval += 1
    assert log._in_progress == expected
    assert log.in_progress == [sum(counts) for counts in expected]
    assert log.open == started


def test_slots_are_reused_once_the_arrays_fill():
    log = RequestLog(intervals=1)
    for client in range(5000):  # more than the first arrays hold, most of them ended at once
        log.start(client, float(client))
        if client % 10:
            log.end(client, float(client), 0, attempts=1, ok=True)
    log.sample(5000.0)
    assert log.in_progress == [500]
    assert len(log._starts) <= 2048
