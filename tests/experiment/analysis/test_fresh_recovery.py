"""Server recovery asks fresh requests too, where a run sent them (outage 20-30 s, step 1 s)."""

import dataclasses

from retrystorm.experiment.analysis import Samples, recoveries
from retrystorm.experiment.analysis.recovery import CLIENT_SIGNALS, FRESH_REQUESTS, SERVER_GAUGES, fresh_refusal
from retrystorm.experiment.scenario import OutageWindow

LENGTH = 60
OUTAGE = OutageWindow(20, 30)


def samples(fresh_failed=(), in_flight=None, fresh=True):
    """Steady series whose in-flight is back at 31 s; ``fresh_failed``: the seconds whose fresh request was late."""
    in_flight = in_flight or {}
    return Samples(
        step_s=1.0,
        goodput=[100.0] * LENGTH,
        in_flight=[in_flight.get(i + 1, 10.0) for i in range(LENGTH)],
        delay_s=[0.1] * LENGTH,
        fresh_in_time=[0.0 if i in fresh_failed else 1.0 for i in range(LENGTH)] if fresh else (),
    )


def test_a_gauge_back_at_its_level_while_fresh_requests_wait_is_not_a_recovery():
    # the in-flight gauge reads steady from 31 s (a thread pool's gauge stays under its threshold however many
    # connections queue), but the fresh requests sent in 30-33 s were not answered in time
    [found] = recoveries(samples(fresh_failed={20, 21, 29, 30, 31, 32, 33}), [OUTAGE])
    assert found.server_s == 5  # 34-35 s is the first second whose fresh request was served; read at its end
    assert found.server_signals == f"{SERVER_GAUGES} and {FRESH_REQUESTS}"


def test_without_fresh_requests_the_gauges_alone_decide():
    [found] = recoveries(samples(fresh=False), [OUTAGE])
    assert found.server_s == 1 and found.server_signals == SERVER_GAUGES


def test_fresh_requests_that_fail_in_the_steady_window_are_not_used_and_it_is_said():
    # the probe, not the outage, would decide: half its steady requests failed (10-20 s is the steady window)
    series = samples(fresh_failed={10, 12, 14, 16, 18, 30, 31, 32, 33})
    assert fresh_refusal(series, (10.0, 20.0)) == "only 50% of the steady window's fresh requests were answered in time"
    [found] = recoveries(series, [OUTAGE])
    assert found.server_s == 1
    assert found.server_signals == f"{SERVER_GAUGES}; fresh requests not used: {fresh_refusal(series, (10.0, 20.0))}"


def test_a_second_without_a_fresh_request_neither_helps_nor_objects():
    series = samples(fresh_failed={30})
    gaps = list(series.fresh_in_time)
    gaps[31] = gaps[32] = None  # none sent in 31-33 s
    [found] = recoveries(dataclasses.replace(series, fresh_in_time=gaps), [OUTAGE])
    assert found.server_s == 2


def test_the_client_side_judge_asks_the_fresh_requests_too():
    series = dataclasses.replace(
        samples(fresh_failed={30, 31, 32}),
        in_flight=[None] * LENGTH,
        attempt_latency_s=[0.05] * LENGTH,
        timeouts=[0.0] * LENGTH,
    )
    [found] = recoveries(series, [OUTAGE])
    assert found.server_s == 4
    assert found.server_signals == f"{CLIENT_SIGNALS} and {FRESH_REQUESTS}"


def test_too_few_steady_fresh_requests_are_not_used():
    series = samples(fresh_failed={30})
    gaps = [None] * 20 + list(series.fresh_in_time[20:])
    assert fresh_refusal(dataclasses.replace(series, fresh_in_time=gaps), (10.0, 20.0)) == (
        "fewer than two fresh requests were sent in the steady window"
    )
