"""Faults in the network in the simulator: each kind's effect on attempts and answers, and the storm a delay starts."""

import json
import random

import pytest

from retrystorm.experiment.scenario import RunSpec
from retrystorm.experiment.scenario.network import (
    DelayWindow,
    HangWindow,
    LossWindow,
    PartitionWindow,
    ResetWindow,
)
from retrystorm.loadgen.strategies import RetryPolicy, parse_strategy
from retrystorm.loadgen.think import ConstantThink, ExponentialThink
from retrystorm.sim.config import RunConfig
from retrystorm.sim.engine import simulate
from retrystorm.sim.network import SYN_RETRANSMITS_S, NetworkPlay
from retrystorm.target.models import parse_model


def config(*, triggers=(), strategy="fixed:100ms", **changes):
    """One user every second against a 100 ms fixed server for 60 s, a 2 s attempt timeout."""
    values = {
        "label": "t",
        "model": parse_model("fixed:base_delay=100ms"),
        "policy": changes.pop("policy", None) or RetryPolicy(strategy=parse_strategy(strategy)),
        "users": 1,
        "think": ConstantThink(wait_s=1.0),
        "duration_s": 60.0,
        "attempt_timeout_s": 2.0,
        **changes,
    }
    return RunConfig(spec=RunSpec(**values), triggers=triggers)


def in_force(play: NetworkPlay, now: float) -> NetworkPlay:
    for at_s, action in sorted(play.actions(), key=lambda found: found[0]):
        if at_s <= now:
            action(at_s)
    return play


def test_a_delay_adds_its_latency_to_answers_only():
    run = simulate(config(triggers=(DelayWindow(10, 20, latency_s=0.3),)))
    assert sorted({round(latency, 6) for latency in run.latencies}) == [0.1, 0.4]
    assert run.counts["timeouts"] == 0


def test_a_delay_longer_than_the_timeout_makes_every_attempt_time_out_while_it_holds():
    one_attempt = RetryPolicy(strategy=parse_strategy("fixed:100ms"), max_attempts=1)
    run = simulate(config(triggers=(DelayWindow(10, 20, latency_s=3.0),), policy=one_attempt, users=5))
    assert sum(run.series.timeouts[10:22]) >= 5 * 3  # each user: an attempt, its 2 s timeout, 1 s of thought
    assert sum(run.series.goodput[10:20]) == 0
    assert sum(run.series.goodput[25:60]) >= 5 * 30


def test_a_reset_fails_attempts_at_once_with_connection_errors_that_are_retried():
    run = simulate(config(triggers=(ResetWindow(10, 20, probability=1.0),)))
    assert run.counts["connection_errors"] > 0
    assert run.counts["timeouts"] == 0
    assert sum(run.series.attempts[10:20]) > 50  # retried every 100 ms, each failing at once
    assert sum(run.series.goodput[11:20]) == 0


def test_a_hang_holds_attempts_which_time_out_and_the_server_never_sees_them():
    run = simulate(config(triggers=(HangWindow(10, 20, probability=1.0),), users=5))
    assert sum(run.series.goodput[11:20]) == 0
    assert sum(run.series.timeouts[10:21]) > 0
    assert max(run.series.in_flight[11:20]) == 0


def test_a_hang_shorter_than_the_timeout_ends_in_connection_errors_at_its_end():
    run = simulate(config(triggers=(HangWindow(10, 11, probability=1.0),), users=5, attempt_timeout_s=5.0))
    assert run.counts["connection_errors"] > 0
    assert run.counts["timeouts"] == 0


def test_a_partition_loses_attempts_unless_a_syn_retransmission_comes_after_it_in_time():
    play = in_force(NetworkPlay((PartitionWindow(10, 12),), seed=1, network_delay=None), 10.5)
    assert play.send(10.5, timeout_s=5.0) == ("at", 10.5 + SYN_RETRANSMITS_S[1])  # 3 s later: the partition ended
    assert play.send(10.5, timeout_s=2.0) == ("lost", 0.0)  # its client gave up before the retransmission
    assert play.answer_at(10.5) == ("lost", 0.0)
    run = simulate(config(triggers=(PartitionWindow(10, 20),), users=5))
    assert max(run.series.in_flight[11:20]) == 0
    assert sum(run.series.goodput[11:20]) == 0
    assert sum(run.series.goodput[25:60]) > 0


def test_loss_delays_a_share_of_attempts_and_answers_by_retransmission_timeouts():
    play = in_force(NetworkPlay((LossWindow(0, 60, probability=0.2),), seed=1, network_delay=None), 1.0)
    waits = [play.send(1.0, 2.0)[1] - 1.0 for _ in range(5000)]
    late = sum(1 for wait in waits if wait > 0) / len(waits)
    assert 0.17 < late < 0.23
    assert min(wait for wait in waits if wait > 0) == pytest.approx(0.2)


def test_the_highest_probability_and_the_longest_delay_hold_where_windows_overlap():
    windows = (DelayWindow(0, 30, latency_s=0.1), DelayWindow(10, 20, latency_s=0.5))
    play = in_force(NetworkPlay(windows, seed=1, network_delay=None), 15)
    assert play.answer_at(15) == ("at", pytest.approx(15.5))
    play = in_force(NetworkPlay(windows, seed=1, network_delay=None), 25)
    assert play.answer_at(25) == ("at", pytest.approx(25.1))


def test_the_same_seed_gives_the_same_run_and_network_faults_change_it():
    def document(**changes):
        output = simulate(config(users=20, think=ExponentialThink(average_s=1.0), **changes))
        return json.dumps([output.result().to_json(), output.series.rows()], sort_keys=True)

    lossy = (LossWindow(10, 30, probability=0.3), ResetWindow(35, 40, probability=0.5))
    assert document(triggers=lossy, seed=3) == document(triggers=lossy, seed=3)
    assert document(triggers=lossy, seed=3) != document(seed=3)


def test_a_delay_turns_fixed_retries_into_a_storm_that_backoff_survives():
    """Answers 200 ms late for 10 s against a 250 ms timeout: fixed 100 ms retries overload the server for good."""
    delay = (DelayWindow(20, 30, latency_s=0.2),)
    values = {
        "model": parse_model("linear:base_delay=50ms,slope=5ms"),
        "users": 60,
        "think": ExponentialThink(average_s=2.0),
        "attempt_timeout_s": 0.25,
        "duration_s": 80.0,
    }
    fixed = simulate(config(triggers=delay, **values)).result()
    backoff = simulate(config(triggers=delay, strategy="exponential", **values)).result()
    assert fixed.recoveries[0].server_s is None
    assert backoff.recoveries[0].server_s is not None
    assert backoff.recoveries[0].client_s is not None


def test_random_probabilities_draw_from_their_own_source():
    play = NetworkPlay((HangWindow(0, 10, probability=0.5),), seed=1, network_delay=None)
    in_force(play, 1)
    taken = sum(play.send(1.0, 2.0)[0] == "error" for _ in range(4000)) / 4000
    assert 0.46 < taken < 0.54
    assert random.Random(1).random() != play.rng.random()  # not the global source's sequence
