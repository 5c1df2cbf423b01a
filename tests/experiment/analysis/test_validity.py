"""The saturation rule: a run whose load generator was behind for more than 5 % of its seconds is not valid."""

from __future__ import annotations

import dataclasses
import itertools

from hypothesis import given
from hypothesis import strategies as st

from retrystorm.experiment.analysis.validity import (
    GeneratorSeconds,
    ValidityRule,
    assess,
    demand_window_s,
    demanded_per_s,
)
from retrystorm.loadgen.think import BetweenThink, ConstantThink, ExponentialThink

THINK = ExponentialThink(average_s=10.0)


def seconds(cpu, started, *, active=1000.0, in_progress=0.0):
    """A run of ``len(cpu)`` seconds: 1,000 users thinking 10 s demand 100 requests/s."""
    n = len(cpu)
    return GeneratorSeconds(
        cpu=[None if share is None else {"locust": share} for share in cpu],
        started=list(started) if not isinstance(started, int | float) else [float(started)] * n,
        active=[active] * n,
        in_progress=[in_progress] * n,
    )


def test_a_generator_that_keeps_up_is_valid():
    verdict = assess(seconds([0.3] * 100, 100.0), THINK, open_loop=False)
    assert verdict.valid and verdict.saturated_s == 0 and verdict.seconds == 100
    assert verdict.cpu_peak == {"locust": 0.3}
    assert verdict.demanded_per_s == 100.0 and verdict.started_per_s == 100.0


def test_more_than_5_percent_of_seconds_at_a_full_core_is_not_valid():
    cpu = [0.95] * 6 + [0.3] * 94
    verdict = assess(seconds(cpu, 100.0), THINK, open_loop=False)
    assert not verdict.valid and verdict.cpu_saturated_s == 6 and verdict.share == 0.06
    assert assess(seconds([0.95] * 5 + [0.3] * 95, 100.0), THINK, open_loop=False).valid  # 5 % is allowed


def test_users_starting_far_fewer_requests_than_they_demand_is_not_valid_without_any_cpu_reading():
    verdict = assess(seconds([None] * 100, 60.0), THINK, open_loop=False)  # 60/s of the 100/s demanded
    assert not verdict.valid and verdict.cpu_saturated_s == 0 and verdict.short_s > 90
    assert verdict.worst_ratio == 0.6


def test_a_shortfall_within_poisson_noise_is_not_counted():
    # 1,000 users, 10 s think: 100/s demanded, 500 per 5-s window; 90/s is 450, within 3 sd of 500 (67)
    assert assess(seconds([None] * 100, 90.0), THINK, open_loop=False).short_s == 0


def test_users_waiting_for_answers_demand_nothing():
    # a storm: 900 of 1,000 users are in a request, so 10 requests/s are demanded, and 10 started
    verdict = assess(seconds([0.2] * 60, 10.0, in_progress=900.0), THINK, open_loop=False)
    assert verdict.valid and verdict.demanded_per_s == 10.0


def test_open_loop_demand_is_every_active_user_at_its_rate():
    assert demanded_per_s(100.0, 99.0, 2.0, open_loop=True) == 50.0
    assert demanded_per_s(100.0, 99.0, 2.0, open_loop=False) == 0.5
    assert demanded_per_s(100.0, None, 0.0, open_loop=False) is None  # no think time: only the CPU signal


def test_with_no_reading_at_all_the_run_is_valid_and_says_it_measured_nothing():
    verdict = assess(seconds([None] * 10, [None] * 10), THINK, open_loop=False)
    assert verdict.valid and verdict.seconds == 0 and verdict.to_json()["saturated_share"] == 0.0


def test_a_non_exponential_think_time_is_judged_over_five_of_its_longest_waits():
    assert demand_window_s(THINK) == 5.0
    assert demand_window_s(BetweenThink(low_s=1.0, high_s=3.0)) == 15.0


@given(st.lists(st.one_of(st.none(), st.floats(0.0, 2.0)), min_size=1, max_size=60), st.floats(0.0, 200.0))
def test_saturated_seconds_never_exceed_the_seconds_measured(cpu, started):
    verdict = assess(seconds(cpu, started), THINK, open_loop=False)
    assert 0 <= verdict.saturated_s <= verdict.seconds <= len(cpu)
    assert verdict.valid == (verdict.saturated_s <= 0.05 * verdict.seconds or verdict.saturated_s < 2)


def test_one_saturated_second_alone_is_a_blip_even_in_a_short_run():
    # 18 s: one hot second is 5.6 % of them, over the share, but a single second is not a generator behind
    assert assess(seconds([0.95] + [0.3] * 17, 100.0), THINK, open_loop=False).valid
    verdict = assess(seconds([0.95] * 2 + [0.3] * 16, 100.0), THINK, open_loop=False)
    assert not verdict.valid and verdict.saturated_s == 2


def test_a_spike_of_users_is_not_a_generator_behind_but_the_same_shortfall_at_a_steady_count_is():
    """Measured live: 10 users spiked to 30 for 6 s, gauges read at each second's end, requests one second behind."""
    active = [10.0] * 6 + [30.0] * 6 + [10.0] * 8
    started = [50.0] * 6 + [50.0, 150.0, 150.0, 150.0, 150.0, 150.0] + [150.0] + [50.0] * 7
    spiked = GeneratorSeconds(cpu=[None] * 20, started=started, active=active, in_progress=[0.0] * 20)
    verdict = assess(spiked, ExponentialThink(average_s=0.2), open_loop=False)
    assert verdict.short_s == 0 and verdict.valid
    steady = GeneratorSeconds(cpu=[None] * 20, started=[100.0] * 20, active=[30.0] * 20, in_progress=[0.0] * 20)
    assert assess(steady, ExponentialThink(average_s=0.2), open_loop=False).short_s > 0  # 100 of 150 demanded


def test_a_closed_loop_with_a_constant_think_time_is_judged_by_cpu_and_lag_not_demand():
    """As measured live: 10 users, a constant 200 ms think, 50-ms answers: in step with the readings."""
    think = ConstantThink(wait_s=0.2)
    in_step = GeneratorSeconds(
        cpu=[{"locust": 0.04}] * 20, started=[40.0] * 20, active=[10.0] * 20, in_progress=[0.0] * 20
    )
    verdict = assess(in_step, think, open_loop=False)
    assert verdict.short_s == 0 and verdict.valid and verdict.demanded_per_s is None
    behind = dataclasses.replace(in_step, started=[35.0] * 20)
    assert assess(behind, ExponentialThink(average_s=0.2), open_loop=False).short_s > 0  # 35 of 50 demanded: judged
    assert assess(behind, think, open_loop=False).short_s == 0
    hot = GeneratorSeconds(cpu=[{"locust": 0.95}] * 20, started=[40.0] * 20, active=[10.0] * 20, in_progress=[0.0] * 20)
    assert not assess(hot, think, open_loop=False).valid  # the CPU signal still judges


def test_a_drain_is_judged_by_the_demand_over_each_second_not_at_its_end():
    # A paused service resumes at 10 s and its 300 waiting users come back over 6 s, 50 a
    # second. They start 95 % of the mean demand over each second (Poisson noise). Read at
    # each second's end alone, users back at 11 s would count as thinking for all of it,
    # and the drain would read 0.475 of the demand (the compose CI run of 0e915ee: smira's
    # recovery read 21 started of 20 demanded overall yet 2 seconds "short").
    users = 300.0
    waiting = [users] * 10 + [users - 50.0 * k for k in range(1, 7)] + [0.0] * 14
    thinking = [users - w for w in waiting]
    mean_over_second = [thinking[0]] + [(a + b) / 2 for a, b in itertools.pairwise(thinking)]
    run = GeneratorSeconds(
        cpu=[{"locust": 0.1}] * 30,
        started=[0.95 * demand for demand in mean_over_second],
        active=[users] * 30,
        in_progress=waiting,
    )
    verdict = assess(run, ExponentialThink(average_s=1.0), open_loop=False)
    assert verdict.valid and verdict.short_s == 0
    assert abs(verdict.worst_ratio - 0.95) < 1e-9


def test_a_generator_whose_readings_go_missing_is_not_judged_fine():
    """21 of 25 readings missed (a busy machine, a 0.8 s read timeout): the seconds read look fine, the run is not."""
    read = dataclasses.replace(seconds([0.3] * 4, 100.0), readings=25, readings_missed=21)
    verdict = assess(read, THINK, open_loop=False)
    assert not verdict.valid and verdict.saturated_s == 0
    assert verdict.to_json()["readings_missed_share"] == 0.84
    few = dataclasses.replace(seconds([0.3] * 100, 100.0), readings=100, readings_missed=10)  # 10 %: allowed
    assert assess(few, THINK, open_loop=False).valid
    one = dataclasses.replace(seconds([0.3] * 5, 100.0), readings=5, readings_missed=1)  # one lost reading: a blip
    assert assess(one, THINK, open_loop=False).valid


def test_the_why_line_says_the_readings_went_missing():
    from retrystorm.experiment.report.why import validity_phrase

    read = dataclasses.replace(seconds([0.3] * 4, 100.0), readings=25, readings_missed=21)
    row = {"strategy": "s", "validity": assess(read, THINK, open_loop=False).to_json()}
    phrase = validity_phrase(row)
    assert phrase == (
        "not valid: 84.0 % of its load generator's readings went unanswered (too busy to be read), "
        "so these figures may measure the generator, not the service"
    )


def lagging(users_lag, loop_lag=None, *, cpu=0.35):
    """1,000 users starting all they demand (100/s) at a third of a core, ``users_lag`` seconds late each second."""
    n = len(users_lag)
    return dataclasses.replace(
        seconds([cpu] * n, 100.0), schedule_lag_s=users_lag, loop_lag_s=loop_lag if loop_lag is not None else [None] * n
    )


def test_users_that_start_late_make_a_run_not_valid_whatever_its_cpu_share():
    """A generator given a third of a core by the kernel (a CPU hog beside it) reads 35 %, and lags."""
    run = lagging([0.004] * 10 + [0.12] * 10)
    verdict = assess(run, THINK, open_loop=False)
    assert not verdict.valid and verdict.cpu_saturated_s == 0 and verdict.short_s == 0
    assert verdict.lagging_s == 10 and verdict.saturated_s == 10
    figures = verdict.to_json()
    assert figures["schedule_lag_mean_s"] == 0.062 and figures["schedule_lag_worst_s"] == 0.12
    assert figures["lagging_s"] == 10 and figures["loop_lag_mean_s"] is None
    assert assess(lagging([0.004] * 20), THINK, open_loop=False).valid


def test_a_closed_loop_with_a_constant_think_time_is_judged_by_its_lag():
    """Measured live: 300 users, a constant 20 ms think, a zero-delay model, one Locust process pinned to one CPU
    beside two busy loops: 24-27 % of a core, its users 43-98 ms late each second; a healthy one 1-6 ms."""
    think = ConstantThink(wait_s=0.02)
    starved = lagging([0.045, 0.098, 0.061, 0.065, 0.045, 0.043, 0.067, 0.068] * 2, cpu=0.25)
    verdict = assess(starved, think, open_loop=False)
    assert not verdict.valid and verdict.lagging_s == 16 and verdict.cpu_saturated_s == 0
    assert assess(lagging([0.004, 0.006] * 8, cpu=0.25), think, open_loop=False).valid


def test_the_users_lag_limit_is_half_the_think_time_between_10_and_50_ms():
    rule = ValidityRule()
    assert rule.lag_limit_for(10.0) == 0.05  # the seed's 10 s think: 50 ms
    assert rule.lag_limit_for(0.05) == 0.025
    assert rule.lag_limit_for(0.0) == 0.01  # back to back: a loop's jitter is not a lag
    think = ConstantThink(wait_s=0.05)
    assert assess(lagging([0.03] * 20), think, open_loop=False).lagging_s == 20  # 30 ms on a 50 ms think
    assert assess(lagging([0.03] * 20), THINK, open_loop=False).lagging_s == 0  # 30 ms on a 10 s think


def test_the_event_loops_own_lag_judges_a_second_when_no_user_woke():
    """Every user waiting on a frozen server: no planned start in the second, but the loop's watcher still wakes."""
    verdict = assess(lagging([None] * 20, [0.08] * 3 + [0.01] * 17), THINK, open_loop=False)
    assert not verdict.valid and verdict.lagging_s == 3
    assert verdict.to_json()["loop_lag_worst_s"] == 0.08
    assert assess(lagging([None] * 20, [0.04] * 20), THINK, open_loop=False).lagging_s == 0


def test_one_lagging_second_is_a_blip_and_seconds_with_only_lag_read_are_measured():
    assert assess(lagging([0.2] + [0.001] * 19), THINK, open_loop=False).valid
    only_lag = GeneratorSeconds(
        cpu=[None] * 4, started=[None] * 4, active=[None] * 4, in_progress=[None] * 4, schedule_lag_s=[0.001] * 4
    )
    assert assess(only_lag, THINK, open_loop=False).seconds == 4


def test_the_why_line_and_the_rule_name_the_lag():
    from retrystorm.experiment.report.why import validity_phrase

    row = {"strategy": "s", "validity": assess(lagging([0.12] * 20, [0.09] * 20), THINK, open_loop=False).to_json()}
    assert validity_phrase(row) == (
        "not valid: its load generator was saturated 100.0 % of the run (its users started 120 ms late on average "
        "(worst second 120 ms) and its event loop woke 90 ms late on average (worst second 90 ms), past the lag limit "
        "in 20 s: a load generator starved of CPU), so these figures measure the generator, not the service"
    )
    assert "started late against their plan" in ValidityRule().describe()
