"""The seed server's model: its formula, its clamp, and the FIFO release rule."""

import heapq
import math
import random

import pytest
from hypothesis import example, given
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
    with pytest.raises(SpecError, match=r"tick: got 0s, expected a duration .*>= 1ms"):
        parse_model("exponential:tick=0")


def release_time(server, admitted_s):
    """Admit one request and follow the server's wake-ups until it is released."""
    server.admit(admitted_s, "a")
    t = server.next_wakeup_s(admitted_s)
    while not server.advance(t, NO_RNG):
        t = server.next_wakeup_s(t)
    assert server.next_wakeup_s(t) is None
    return t


@pytest.mark.parametrize("admitted_s", [0.0, 0.012, 0.049, 7.3])
def test_at_low_concurrency_a_request_finishes_at_its_own_second_check_after_100ms(admitted_s):
    # the seed server's goroutine: wait 50 ms, compare, loop; answered after 100 ms
    assert release_time(SEED.start(0.0), admitted_s) == pytest.approx(admitted_s + 0.1)


def test_a_delay_between_checks_waits_for_the_next_check():
    model = ExponentialModel(base_delay_s=0.12)
    assert release_time(model.start(0.0), 0.012) == pytest.approx(0.012 + 0.15)


def test_zero_base_delay_finishes_at_the_first_check():
    model = ExponentialModel(base_delay_s=0.0)
    assert release_time(model.start(0.0), 0.3) == pytest.approx(0.35)


def drive(server, arrivals, horizon_s):
    """Admit ``arrivals`` (time, id) and evaluate at every wake-up the server asks for,
    as the simulator and the live clock task do; id -> release time.

    Like them, it keeps a wake-up already scheduled when an arrival makes the server
    name a later one: an arrival that lands on a check (0.3 against a check computed as
    0.30000000000000004) must not skip that check.
    """
    released = {}
    pending = sorted(arrivals)
    i, now, scheduled = 0, 0.0, None
    while now < horizon_s:
        fresh = server.next_wakeup_s(now)
        if fresh is not None and (scheduled is None or fresh < scheduled):
            scheduled = fresh
        arrival = pending[i][0] if i < len(pending) else None
        if arrival is not None and (scheduled is None or arrival < scheduled):
            now = arrival
            server.admit(*pending[i])
            i += 1
            continue
        if scheduled is None:
            break
        now, scheduled = scheduled, None
        for payload, outcome, _ in server.advance(now, NO_RNG):
            assert outcome is Outcome.OK
            released[payload] = now
    return released


class NaiveServer:
    """Reference: the seed's goroutines, one per request, each checking on its own grid
    ``arrival + n * tick`` whether ``n * tick`` reached the delay at the current count."""

    def __init__(self, model):
        self.model = model

    def run(self, arrivals, horizon_s):
        tick = self.model.tick_s
        checks = [(t + tick, i, t) for t, i in arrivals]  # (check time, id, arrival)
        heapq.heapify(checks)
        in_flight, released = 0, {}
        admitted = sorted(arrivals)
        j = 0
        while checks and checks[0][0] < horizon_s:
            at, payload, arrival = heapq.heappop(checks)
            while j < len(admitted) and admitted[j][0] <= at:
                in_flight += 1
                j += 1
            if round((at - arrival) / tick) * tick >= self.model.delay_at(in_flight) - 1e-9:
                released[payload] = at
                in_flight -= 1
            else:
                heapq.heappush(checks, (at + tick, payload, arrival))
        return released


@given(
    arrivals=st.lists(st.floats(min_value=0, max_value=3, allow_nan=False), max_size=300),
    base_delay=st.sampled_from([0.0, 0.05, 0.1, 0.12, 0.3]),
)
@example(arrivals=[0.0, 0.3], base_delay=0.3)  # an arrival on a check: the check still happens
def test_below_the_limit_every_request_finishes_as_the_seeds_goroutine_would(arrivals, base_delay):
    model = ExponentialModel(base_delay_s=base_delay, limit=1000)
    requests = [(t, i) for i, t in enumerate(arrivals)]
    fifo = drive(model.start(0.0), requests, 10.0)
    naive = NaiveServer(model).run(requests, 10.0)
    assert fifo.keys() == naive.keys() == {i for _, i in requests}
    for payload, at in naive.items():
        assert fifo[payload] == pytest.approx(at)


@given(
    arrivals=st.lists(st.floats(min_value=0, max_value=3, allow_nan=False), max_size=300),
    limit=st.integers(min_value=0, max_value=40),
    factor=st.floats(min_value=1, max_value=3),
    k=st.floats(min_value=0.5, max_value=20),
    max_delay=st.floats(min_value=0.1, max_value=2),
)
def test_under_load_every_request_waits_out_its_delay_and_leaves_oldest_first(arrivals, limit, factor, k, max_delay):
    model = ExponentialModel(limit=limit, factor=factor, k=k, max_delay_s=max_delay)
    requests = sorted((t, i) for i, t in enumerate(arrivals))
    released = drive(model.start(0.0), requests, 30.0)
    assert released.keys() == {i for _, i in requests}  # max_delay bounds every wait
    in_arrival_order = [released[i] for _, i in requests]
    assert in_arrival_order == sorted(in_arrival_order)  # oldest first
    for t, i in requests:
        assert released[i] - t >= model.base_delay_s - 1e-9  # never before the base delay


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
