"""The seed server's model: its formula, its clamp, and the FIFO release rule."""

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from retrystorm.errors import SpecError
from target.models import ExponentialModel, Outcome, parse_model

SEED = ExponentialModel()
NO_RNG = random.Random(0)


def test_seed_parameters():
    assert (SEED.base_delay_s, SEED.limit, SEED.factor, SEED.k, SEED.tick_s) == (0.1, 30, 1.05, 15, 0.05)


@pytest.mark.parametrize("in_flight", [0, 1, 29, 30])
def test_base_delay_at_or_below_the_limit(in_flight):
    assert SEED.delay_at(in_flight) == 0.1


@pytest.mark.parametrize("in_flight", [31, 45, 60, 300, 1000])
def test_exponential_growth_above_the_limit(in_flight):
    assert SEED.delay_at(in_flight) == pytest.approx(0.1 * 1.05 ** ((in_flight - 30) / 15))


def test_fifteen_above_the_limit_is_one_factor():
    assert SEED.delay_at(45) == pytest.approx(0.105)
    assert SEED.delay_at(60) == pytest.approx(0.11025)


def test_delay_clamps_instead_of_overflowing():
    # The Go server's time.Duration overflows near 6,000 in flight; here it clamps.
    assert SEED.delay_at(6000) == 600.0
    assert SEED.delay_at(10**9) == 600.0
    assert ExponentialModel(max_delay_s=5.0).delay_at(2000) == 5.0
    just_below = 30 + math.floor(15 * math.log(6000) / math.log(1.05))
    assert SEED.delay_at(just_below) < 600.0


def test_bad_parameters_are_rejected():
    with pytest.raises(SpecError, match=r"factor: got 0\.9, expected a number >= 1"):
        parse_model("exponential:factor=0.9")
    with pytest.raises(SpecError, match="max_delay: must be at least base_delay"):
        parse_model("exponential:base_delay=1s,max_delay=10ms")
    with pytest.raises(SpecError, match=r"tick: got 0s, expected a duration .*> 0"):
        parse_model("exponential:tick=0")


def test_low_concurrency_request_finishes_at_the_first_tick_past_base_delay():
    server = SEED.start(0.0)
    server.admit(0.012, "a")
    t = server.next_wakeup_s(0.012)
    released_at = None
    while released_at is None:
        if server.advance(t, NO_RNG):
            released_at = t
        t = server.next_wakeup_s(t)
    assert released_at == pytest.approx(0.15)  # first tick where age 0.138 > 0.1
    assert server.next_wakeup_s(released_at) is None


def run_ticks(server, arrivals, ticks):
    """Admit ``arrivals`` (time, id) and evaluate at each of ``ticks``; id -> release tick."""
    released = {}
    pending = sorted(arrivals)
    i = 0
    for tick in ticks:
        while i < len(pending) and pending[i][0] < tick:
            server.admit(*pending[i])
            i += 1
        for payload, outcome, _ in server.advance(tick, NO_RNG):
            assert outcome is Outcome.OK
            released[payload] = tick
    return released


class NaiveServer:
    """Reference: every in-flight request checks its own age at each tick, oldest first."""

    def __init__(self, model):
        self.model = model
        self.requests = []

    def admit(self, now, payload):
        self.requests.append((now, payload))

    def advance(self, now, rng):
        released = []
        for admitted, payload in list(self.requests):
            if now - admitted > self.model.delay_at(len(self.requests)):
                self.requests.remove((admitted, payload))
                released.append((payload, Outcome.OK, admitted))
        return released


@given(
    arrivals=st.lists(st.floats(min_value=0, max_value=3, allow_nan=False), max_size=300),
    limit=st.integers(min_value=0, max_value=40),
    factor=st.floats(min_value=1, max_value=3),
    k=st.floats(min_value=0.5, max_value=20),
    max_delay=st.floats(min_value=0.1, max_value=2),
)
def test_fifo_release_matches_the_naive_per_request_reference(arrivals, limit, factor, k, max_delay):
    model = ExponentialModel(limit=limit, factor=factor, k=k, max_delay_s=max_delay)
    ticks = [model.tick_s * n for n in range(1, 200)]
    requests = [(t, i) for i, t in enumerate(arrivals)]
    fifo = run_ticks(model.start(0.0), requests, ticks)
    naive = run_ticks(NaiveServer(model), requests, ticks)
    assert fifo == naive


def test_releases_are_oldest_first_under_load():
    server = SEED.start(0.0)
    for i in range(500):
        server.admit(i * 0.001, i)
    order = []
    t = 0.0
    while server.in_flight:
        t = server.next_wakeup_s(t)
        order += [payload for payload, _, _ in server.advance(t, NO_RNG)]
    assert order == list(range(500))


def test_after_a_freeze_one_evaluation_catches_up():
    server = SEED.start(0.0)
    for i in range(10):
        server.admit(0.001 * i, i)
    released = server.advance(30.0, NO_RNG)  # resumed after 30 s
    assert [payload for payload, _, _ in released] == list(range(10))


def test_reconfigure_keeps_what_is_in_flight():
    server = SEED.start(0.0)
    server.admit(0.0, "a")
    server.reconfigure(ExponentialModel(base_delay_s=1.0))
    assert server.advance(0.5, NO_RNG) == []
    assert server.delay_s == 1.0
    assert [payload for payload, _, _ in server.advance(1.05, NO_RNG)] == ["a"]
