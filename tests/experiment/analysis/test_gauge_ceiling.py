"""A thread pool's in-flight gauge pinned at its ceiling, below its recovery threshold, is not used (outage 20-30 s).

The steady gauge reads 8 and 10 in turn (largest 10, mean 9): the threshold is max(1.5 x 10, 9 + 4 x 3) + 1 = 22,
above the pool's 16 threads, so the gauge cannot show a storm however many connections wait behind them.
"""

from retrystorm.experiment.analysis import CLIENT_SIGNALS, SERVER_GAUGES, Samples, recoveries
from retrystorm.experiment.analysis.gauge_ceiling import GAUGE_NOT_USED, SaturatedGauge, saturated_gauge
from retrystorm.experiment.analysis.recovery import FRESH_REQUESTS
from retrystorm.experiment.scenario import OutageWindow

LENGTH = 60
OUTAGE = [OutageWindow(20, 30)]
THREADS = 16.0


def thread_pool(storm_until: int, in_flight=None, fresh_failed=None):
    """Clients time out (1 s attempts, 30 timeouts/s) from the pause until interval ``storm_until``; the gauge reads
    ``in_flight`` (by interval) after the resume, steady 8/10 before; no readings while paused."""
    in_flight = in_flight or {}
    steady = [8.0 + 2 * (i % 2) for i in range(20)]
    after = [in_flight.get(i, 9.0) for i in range(30, LENGTH)]
    return Samples(
        step_s=1.0,
        goodput=[20.0] * LENGTH,
        in_flight=[*steady, *[None] * 10, *after],
        delay_s=[*[0.0] * 20, *[None] * 10, *[0.0] * 30],
        attempt_latency_s=[1.0 if 20 <= i < storm_until else 0.05 for i in range(LENGTH)],
        timeouts=[30.0 if 20 <= i < storm_until else 0.0 for i in range(LENGTH)],
        fresh_in_time=([0.0 if i in fresh_failed else 1.0 for i in range(LENGTH)] if fresh_failed is not None else ()),
    )


def pinned(until: int) -> dict[int, float]:
    """The gauge at the pool's 16 threads from the resume until interval ``until``."""
    return dict.fromkeys(range(30, until), THREADS)


def test_a_storm_behind_a_gauge_pinned_at_its_thread_count_never_recovers_and_says_why():
    series = thread_pool(LENGTH, in_flight=pinned(LENGTH))
    [found] = recoveries(series, OUTAGE)
    assert found.server_s is None  # the gauge alone read "back" (16 <= 22) at the first reading after the resume
    assert found.server_signals.startswith(f"{CLIENT_SIGNALS}; {GAUGE_NOT_USED}: ")
    assert "its largest reading, 16, is at or below its recovery threshold, 22.0" in found.server_signals
    assert "in 30 readings after the resume" in found.server_signals


def test_the_clients_and_fresh_requests_then_judge_when_it_is_back():
    failed = set(range(20, 40))
    series = thread_pool(40, in_flight=pinned(40), fresh_failed=failed)
    [found] = recoveries(series, OUTAGE)
    assert found.server_s == 11.0  # interval 40 (timeouts gone, fresh request answered) ends at 41 s
    assert found.server_signals.startswith(f"{CLIENT_SIGNALS} and {FRESH_REQUESTS}; {GAUGE_NOT_USED}: ")


def test_an_early_dip_of_the_gauge_is_not_a_recovery():
    # the pool's gauge dips to 4 for 6 s after the resume (threads between two bursts of the backlog) while the
    # clients still time out; then it is pinned again. The gauge alone would call it back at 1 s.
    gauge = {**pinned(LENGTH), **dict.fromkeys(range(30, 36), 4.0)}
    series = thread_pool(LENGTH, in_flight=gauge)
    [found] = recoveries(series, OUTAGE)
    assert found.server_s is None


def test_a_gauge_pinned_while_fresh_requests_wait_is_saturated_even_without_timeouts():
    series = thread_pool(31, in_flight=pinned(LENGTH), fresh_failed=set(range(20, LENGTH)))
    found = saturated_gauge(series, 30.0, in_flight_max=22.0, timeouts_max=5.0)
    assert found == SaturatedGauge(ceiling=16.0, threshold=22.0, pinned=30)


def test_a_gauge_that_reads_above_its_threshold_is_used():
    series = thread_pool(LENGTH, in_flight={**pinned(LENGTH), 30: 400.0})  # no ceiling: the built-in target
    [found] = recoveries(series, OUTAGE)
    assert found.server_signals == SERVER_GAUGES
    assert found.server_s == 2.0  # 16 <= 22 from interval 31: the gauge decides, as before


def test_two_seconds_of_timeouts_from_the_pause_do_not_make_a_ceiling():
    # the requests caught by the pause time out just after the resume while the gauge reads its run maximum
    series = thread_pool(32, in_flight=pinned(32))
    [found] = recoveries(series, OUTAGE)
    assert found.server_signals == SERVER_GAUGES
    assert found.server_s == 1.0


def test_without_the_clients_signals_the_gauge_is_kept():
    series = thread_pool(LENGTH, in_flight=pinned(LENGTH))
    bare = Samples(step_s=1.0, goodput=series.goodput, in_flight=series.in_flight, delay_s=series.delay_s)
    [found] = recoveries(bare, OUTAGE)  # the simulator's samples: nothing else to judge the server from
    assert found.server_signals == SERVER_GAUGES
