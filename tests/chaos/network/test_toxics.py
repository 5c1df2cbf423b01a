"""The toxics' formulas, with seeded random sources: delays never negative, capped, in order of the rules."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from retrystorm.chaos.network.toxics import (
    HOLD,
    MAX_RETRANSMIT_WAIT_S,
    RESET,
    RTO_INITIAL_S,
    Action,
    Delay,
    Hang,
    Loss,
    Reset,
    combine,
    retransmit_wait_s,
    toxic_from_json,
)
from retrystorm.errors import UserError


@given(
    latency=st.floats(0, 60),
    jitter=st.floats(0, 60),
    seed=st.integers(0, 2**32),
)
def test_a_delay_lies_within_latency_plus_minus_jitter_and_is_never_negative(latency, jitter, seed):
    action = Delay(latency_s=latency, jitter_s=jitter).on_chunk("downstream", random.Random(seed))
    assert action.verb == "forward"
    assert max(0.0, latency - jitter) <= action.delay_s <= latency + jitter


def test_a_delay_acts_on_its_direction_only():
    rng = random.Random(1)
    answers = Delay(latency_s=0.2)
    assert answers.on_chunk("upstream", rng).delay_s == 0
    assert answers.on_chunk("downstream", rng).delay_s == 0.2
    both = Delay(latency_s=0.2, direction="both")
    assert both.on_chunk("upstream", rng).delay_s == both.on_chunk("downstream", rng).delay_s == 0.2


@given(probability=st.floats(0, 0.999), rto=st.floats(0.001, 60), seed=st.integers(0, 2**32))
def test_a_retransmission_wait_is_a_sum_of_doubling_timeouts_capped(probability, rto, seed):
    wait = retransmit_wait_s(probability, rto, random.Random(seed))
    assert 0 <= wait <= MAX_RETRANSMIT_WAIT_S
    if wait < MAX_RETRANSMIT_WAIT_S:  # k losses wait rto * (2**k - 1)
        losses = round(wait / rto + 1).bit_length() - 1
        assert wait == pytest.approx(rto * (2**losses - 1))


def test_loss_delays_a_share_of_segments_near_its_probability_and_syns_by_the_initial_rto():
    rng = random.Random(7)
    loss = Loss(probability=0.1)
    delays = [loss.on_chunk("upstream", rng).delay_s for _ in range(20_000)]
    lost = sum(1 for delay in delays if delay > 0) / len(delays)
    assert 0.09 < lost < 0.11
    assert min(delay for delay in delays if delay > 0) == pytest.approx(0.2)
    connects = [loss.on_connect(rng).delay_s for _ in range(2_000)]
    assert min(delay for delay in connects if delay > 0) == pytest.approx(RTO_INITIAL_S)


def test_hang_and_reset_take_a_share_of_connections():
    rng = random.Random(3)
    half = Reset(probability=0.5)
    taken = sum(half.applies_to_connection(rng) for _ in range(10_000)) / 10_000
    assert 0.47 < taken < 0.53
    assert Hang().on_connect(rng) == HOLD and Hang().on_chunk("downstream", rng) == HOLD
    assert Reset().on_connect(rng) == RESET


def test_combined_actions_reset_beats_hold_beats_forward_and_delays_add():
    assert combine([Action("forward", 0.1), Action("forward", 0.2)]) == Action("forward", pytest.approx(0.3))
    assert combine([Action("forward", 0.1), HOLD]) == HOLD
    assert combine([HOLD, RESET, Action("forward", 1)]) == RESET


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"kind": "bogus"}, "expected one of delay, loss, hang, reset"),
        ({"kind": "delay"}, "delay:"),
        ({"kind": "delay", "latency_s": -1}, "latency: got -1"),
        ({"kind": "delay", "latency_s": float("nan")}, "latency: got nan"),
        ({"kind": "delay", "latency_s": 61}, "from 0 to 60"),
        ({"kind": "delay", "latency_s": 0.1, "direction": "sideways"}, "direction: got 'sideways'"),
        ({"kind": "delay", "latency_s": "1"}, "expected a number"),
        ({"kind": "delay", "latency_s": True}, "expected a number"),
        ({"kind": "loss", "probability": 1}, "in (0, 1)"),
        ({"kind": "hang", "probability": 0}, "in (0, 1]"),
        ({"kind": "reset", "wat": 1}, "unknown field 'wat'"),
        (["delay"], "expected an object"),
    ],
)
def test_bad_toxics_are_one_line_errors_naming_the_field(raw, message):
    with pytest.raises(UserError, match=r"^[^\n]*$") as caught:
        toxic_from_json(raw)
    assert message in str(caught.value)


def test_a_toxic_round_trips_through_json():
    for toxic in (Delay(latency_s=0.2, jitter_s=0.05), Loss(probability=0.3), Hang(probability=0.5), Reset()):
        assert toxic_from_json(toxic.to_json()) == toxic
