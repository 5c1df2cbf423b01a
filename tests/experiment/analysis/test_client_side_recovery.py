"""The server's recovery judged from the clients, for a service without server readings (outage 20-30 s)."""

from retrystorm.experiment.analysis import CLIENT_SIGNALS, SERVER_GAUGES, Samples, recoveries
from retrystorm.experiment.scenario import OutageWindow

LENGTH = 60
OUTAGE = [OutageWindow(20, 30)]


def seen_by_clients(latency=None, timeouts=None, in_flight=None):
    """Interval ``i``: steady 50 ms attempts and no timeouts unless ``latency``/``timeouts`` say otherwise."""
    latency, timeouts = latency or {}, timeouts or {}
    return Samples(
        step_s=1.0,
        goodput=[20.0] * LENGTH,
        in_flight=[in_flight] * LENGTH,
        delay_s=[None if in_flight is None else 0.0] * LENGTH,  # a service's own gauge: no modelled delay
        attempt_latency_s=[latency.get(i, 0.05 + 0.01 * (i % 3)) for i in range(LENGTH)],
        timeouts=[timeouts.get(i, 0.0) for i in range(LENGTH)],
    )


def storm(until: int) -> dict[int, float]:
    """Every attempt ending from the pause until interval ``until`` took the whole 1 s timeout."""
    return dict.fromkeys(range(20, until), 1.0)


def test_the_server_is_back_once_attempt_latency_and_timeouts_have_been_steady_for_5_s():
    series = seen_by_clients(latency=storm(40), timeouts=dict.fromkeys(range(21, 40), 30.0))
    [found] = recoveries(series, OUTAGE)
    assert found.server_signals == CLIENT_SIGNALS
    assert found.server_s == 11.0  # interval 40 ends at 41 s, 11 s after the resume


def test_a_server_whose_attempts_keep_timing_out_never_recovers():
    series = seen_by_clients(latency=storm(LENGTH), timeouts=dict.fromkeys(range(21, LENGTH), 50.0))
    [found] = recoveries(series, OUTAGE)
    assert found.server_s is None


def test_timeouts_alone_keep_it_unrecovered_and_a_second_without_answers_is_no_evidence():
    timeouts = dict.fromkeys(range(21, 45), 30.0)
    [found] = recoveries(seen_by_clients(timeouts=timeouts), OUTAGE)
    assert found.server_s == 16.0  # latency was fine from the resume on; timeouts until interval 44
    silent = dict.fromkeys(range(30, 50))
    [found] = recoveries(seen_by_clients(latency={**storm(30), **silent}), OUTAGE)
    assert found.server_s == 21.0  # nothing ended 30-49: no evidence until interval 50


def test_with_server_gauges_the_gauges_judge_as_before():
    [found] = recoveries(seen_by_clients(latency=storm(LENGTH), in_flight=3.0), OUTAGE)
    assert found.server_signals == SERVER_GAUGES
    assert found.server_s == 1.0  # the in-flight gauge never moved; the clients' signals are not used


def test_a_few_timeouts_after_a_steady_state_without_any_are_noise():
    # no timeout in the steady state: the room is that of a mean of one (0 + 4 * sqrt(1) + 1 = 5 a second), so the
    # 2 or 3 timeouts a second of attempts sent just before a full recovery do not read as a storm; 6 do
    series = seen_by_clients(latency=storm(31), timeouts={30: 40.0, **{i: 2.0 + i % 2 for i in range(31, LENGTH)}})
    [found] = recoveries(series, OUTAGE)
    assert found.server_s == 2.0  # interval 31 (latency back) ends at 32 s
    series = seen_by_clients(latency=storm(31), timeouts={30: 40.0, **dict.fromkeys(range(31, LENGTH), 6.0)})
    [found] = recoveries(series, OUTAGE)
    assert found.server_s is None
