"""Server and client recovery on hand-made series (step 1 s, outage 20-30 s unless said)."""

import pytest

from retrystorm.experiment.analysis import (
    RecoveryRule,
    Samples,
    SteadyLevels,
    client_recovery_s,
    default_steady_window,
    goodput_fraction,
    noise_threshold,
    recoveries,
    server_recovery_s,
    steady_levels,
)
from retrystorm.experiment.scenario import OutageWindow

LENGTH = 60


def samples(goodput=None, in_flight=None, delay=None):
    """Series of LENGTH intervals; ``in_flight``/``delay`` map reading times to values (others steady)."""
    goodput = goodput or {}
    in_flight = in_flight or {}
    delay = delay or {}
    return Samples(
        step_s=1.0,
        goodput=[goodput.get(i, 100.0) for i in range(LENGTH)],  # by interval start
        in_flight=[in_flight.get(i + 1, 10.0) for i in range(LENGTH)],  # by reading time
        delay_s=[delay.get(i + 1, 0.1) for i in range(LENGTH)],
    )


STEADY = SteadyLevels(goodput=100.0, in_flight=10.0, in_flight_mean=4.0, delay_s=0.1)  # 4 + 4 * 2 < 1.5 * 10


def test_steady_levels_over_the_second_half_before_the_first_outage():
    window = default_steady_window([OutageWindow(40, 50), OutageWindow(20, 30)])
    assert window == (10, 20)
    series = samples(goodput={12: 80.0}, in_flight={15: 14.0, 25: 900.0})
    levels = steady_levels(series, window)
    # readings at 11..20 s: nine of 10 and one of 14
    assert levels == SteadyLevels(goodput=98.0, in_flight=14.0, in_flight_mean=10.4, delay_s=0.1)


def test_server_recovers_when_in_flight_and_delay_stay_down_for_5_s():
    readings = {31: 500, 32: 400, 33: 12, 34: 12, 35: 12, 36: 20, 37: 10}
    series = samples(in_flight=readings)
    # threshold 1.5 * 10 + 1 = 16: the reading of 20 at 36 s breaks the run that started at 33 s
    assert server_recovery_s(series, STEADY, 30, LENGTH) == 7


def test_server_delay_counts_too():
    series = samples(in_flight={31: 500}, delay={31: 30.0, 32: 0.2, 33: 0.16, 34: 0.15})
    assert server_recovery_s(series, STEADY, 30, LENGTH) == 4  # 0.16 > 1.5 * 0.1


def test_missing_readings_are_not_a_recovery():
    series = samples(in_flight={31: None, 32: None}, delay={31: None, 32: None})
    assert server_recovery_s(series, STEADY, 30, LENGTH) == 3


def test_no_server_recovery_before_the_data_ends():
    series = samples(in_flight=dict.fromkeys(range(31, 57), 999))
    assert server_recovery_s(series, STEADY, 30, LENGTH) is None  # 57..60 is only 4 readings


def test_client_recovery_is_the_first_5_s_window_at_90_percent():
    goodput = {30: 0, 31: 0, 32: 95, 33: 90, 34: 88, 35: 92, 36: 91}
    assert client_recovery_s(samples(goodput=goodput), STEADY, 30, LENGTH) == 2  # mean 91.2 from 32 s


def test_client_recovery_window_mean_below_90_percent_waits():
    goodput = {30: 0, 31: 0, 32: 95, 33: 80, 34: 80, 35: 92, 36: 91, 37: 95}
    # windows from 32 s and 33 s average 87.6; from 34 s: 80, 92, 91, 95, 100 = 91.6
    assert client_recovery_s(samples(goodput=goodput), STEADY, 30, LENGTH) == 4


def test_a_burst_of_delayed_successes_counts_as_served():
    goodput = {30: 500, 31: 0, 32: 0, 33: 0, 34: 0, **dict.fromkeys(range(35, LENGTH), 0)}
    assert client_recovery_s(samples(goodput=goodput), STEADY, 30, LENGTH) == 0


def test_the_next_outage_ends_the_search():
    series = samples(in_flight=dict.fromkeys(range(31, 37), 500), goodput=dict.fromkeys(range(30, 34), 0))
    first, second = recoveries(series, [OutageWindow(20, 30), OutageWindow(40, 50)])
    assert (first.server_s, first.client_s) == (None, 4)  # server: 37..41 crosses 40 s; client: [34, 39) fits
    assert (second.server_s, second.client_s) == (1, 0)


def test_no_steady_window_no_recovery():
    (only,) = recoveries(samples(), [OutageWindow(0, 10)])
    assert (only.server_s, only.client_s) == (None, None)


def test_rule_thresholds_are_parameters():
    series = samples(in_flight={31: 25})
    assert server_recovery_s(series, STEADY, 30, LENGTH) == 2
    assert server_recovery_s(series, STEADY, 30, LENGTH, RecoveryRule(level_factor=3.0)) == 1


def test_small_steady_counts_leave_room_for_poisson_noise():
    # three steady readings of 2 (mean 4.5 in truth): 1.5 * 2 + 1 = 4 alone would refuse the 5s
    # and 6s that a recovered server with mean 4.5 reads; 2 + 4 * sqrt(2) + 1 = 8.66 accepts them
    few = SteadyLevels(goodput=30.0, in_flight=2.0, in_flight_mean=2.0, delay_s=0.1)
    series = samples(in_flight={31: 36, **{t: 5 + t % 2 for t in range(32, LENGTH + 1)}})
    assert server_recovery_s(series, few, 30, LENGTH) == 2
    assert server_recovery_s(series, few, 30, LENGTH, RecoveryRule(noise_sd=0.0)) is None
    series = samples(in_flight={31: 36, **dict.fromkeys(range(32, LENGTH + 1), 9)})
    assert server_recovery_s(series, few, 30, LENGTH) is None  # 9 > 8.66: not back


def test_large_steady_counts_are_judged_by_their_largest_reading():
    # mean 100, largest 130: 1.5 * 130 + 1 = 196 is above 100 + 4 * 10 + 1 = 141 and decides
    large = SteadyLevels(goodput=1000.0, in_flight=130.0, in_flight_mean=100.0, delay_s=0.1)
    assert server_recovery_s(samples(in_flight=dict.fromkeys(range(31, LENGTH + 1), 197)), large, 30, LENGTH) is None
    assert server_recovery_s(samples(in_flight=dict.fromkeys(range(31, LENGTH + 1), 196)), large, 30, LENGTH) == 1


def test_goodput_fraction():
    series = samples(goodput={35: 0, 36: 50})
    assert goodput_fraction(series, STEADY, 35, 37) == pytest.approx(0.25)
    assert goodput_fraction(series, STEADY, 70, 80) is None


def test_samples_must_be_aligned():
    with pytest.raises(ValueError, match="one value per interval"):
        Samples(step_s=1, goodput=[1.0], in_flight=[], delay_s=[])


def test_no_steady_goodput_no_client_recovery():
    levels = SteadyLevels(goodput=0.0, in_flight=10.0, in_flight_mean=4.0, delay_s=0.1)
    assert client_recovery_s(samples(), levels, 30, LENGTH) is None


def test_a_steady_mean_below_one_request_leaves_the_room_of_a_mean_of_one():
    # every steady reading was 0 (a fast service at a low rate): without the floor the threshold is 0 + 0 + 1 = 1,
    # and the 2 in flight a recovered server holds now and then read as "never"; with it, 0 + 4 * sqrt(1) + 1 = 5
    idle = SteadyLevels(goodput=5.0, in_flight=0.0, in_flight_mean=0.0, delay_s=0.1)
    series = samples(in_flight={31: 40, **{t: 2 * (t % 2) for t in range(32, LENGTH + 1)}})
    assert noise_threshold(0.0, 0.0) == 4.0
    assert server_recovery_s(series, idle, 30, LENGTH) == 2
    assert server_recovery_s(series, idle, 30, LENGTH, RecoveryRule(noise_floor_mean=0.0)) is None
    stuck = samples(in_flight={31: 40, **dict.fromkeys(range(32, LENGTH + 1), 6)})
    assert server_recovery_s(stuck, idle, 30, LENGTH) is None  # 6 > 5: still not back


def test_the_floor_is_continuous_and_gives_way_above_a_mean_of_one():
    assert noise_threshold(0.0, 0.5) == 4.5  # 0.5 + 4 * sqrt(1)
    assert noise_threshold(0.0, 1.0) == 5.0
    assert noise_threshold(0.0, 4.0) == 12.0  # 4 + 4 * sqrt(4): the floor no longer matters
    assert noise_threshold(10.0, 4.0) == 15.0  # 1.5 * 10 decides
