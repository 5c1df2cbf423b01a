"""The linear model (Brooker's collapse simulation): delay fixed on arrival, base + slope x concurrency."""

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from retrystorm.errors import SpecError
from retrystorm.target.models import LinearModel, parse_model
from retrystorm.target.service.config import check_servable

BROOKER = parse_model("linear:base_delay=1s,slope=10ms")


def drain_all(server, until_s):
    """Wake the server at each of its wake-ups until ``until_s``; (time, payload) of each release."""
    released, rng, now = [], random.Random(0), 0.0
    while (wake := server.next_wakeup_s(now)) is not None and wake <= until_s:
        now = wake
        released += [(now, payload) for payload, _, _ in server.advance(now, rng)]
    return released


def test_defaults_are_brookers_and_the_spec_round_trips():
    assert LinearModel() == BROOKER
    assert parse_model(BROOKER.spec()) == BROOKER
    assert BROOKER.spec() == "linear:base_delay=1s,slope=10ms,max_delay=10m"


def test_each_request_keeps_the_delay_of_the_concurrency_it_arrived_to():
    server = BROOKER.start(0.0)
    server.admit(0.0, "a")  # alone: 1 + 0.01 x 1
    server.admit(0.5, "b")  # second: 1 + 0.01 x 2, done at 1.52
    for i in range(98):  # a crowd arriving later does not slow a or b
        server.admit(0.6, i)
    released = drain_all(server, 1.6)
    assert released[:2] == [(pytest.approx(1.01), "a"), (pytest.approx(1.52), "b")]
    assert server.delay_s == pytest.approx(1 + 0.01 * 98)


def test_delay_is_clamped_and_the_ceilings_hold():
    assert parse_model("linear:base_delay=1s,slope=1s,max_delay=5s").delay_at(100) == 5
    with pytest.raises(SpecError, match="slope: got 2h"):
        parse_model("linear:slope=2h")
    with pytest.raises(SpecError, match="max_delay: must be at least base_delay"):
        parse_model("linear:base_delay=10s,max_delay=5s")


def test_the_live_target_can_serve_it():
    check_servable(BROOKER)  # no tick, every duration finite


def test_withdraw_and_drain_give_back_what_is_in_flight_oldest_first():
    server = BROOKER.start(0.0)
    payloads = [object() for _ in range(3)]
    for at, payload in enumerate(payloads):
        server.admit(float(at), payload)
    assert server.withdraw(payloads[1])
    assert not server.withdraw(payloads[1])
    assert server.drain() == [(0.0, payloads[0]), (2.0, payloads[2])]
    assert server.in_flight == 0


@given(st.lists(st.floats(0, 100), min_size=1, max_size=200))
def test_every_request_is_released_once_at_its_own_delay_or_later(arrivals):
    server = BROOKER.start(0.0)
    due = {}
    for index, at in enumerate(sorted(arrivals)):
        due[index] = at + BROOKER.delay_at(server.in_flight + 1)
        server.admit(at, index)
    released = drain_all(server, float("inf"))
    assert sorted(payload for _, payload in released) == list(range(len(arrivals)))
    assert all(time == due[payload] for time, payload in released)
