"""The seed server's model: its formula, its clamp, the Go server's overflow, and single requests.

How many requests leave when, against a per-request reference: ``test_own_grid.py``.
"""

import math
import random

import pytest

from retrystorm.errors import SpecError
from retrystorm.target.models import ExponentialModel, parse_model
from retrystorm.target.models.exponential import go_delay_ns

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


def test_after_a_freeze_one_evaluation_catches_up():
    server = SEED.start(0.0)
    for i in range(10):
        server.admit(0.001 * i, i)
    released = server.advance(30.0, NO_RNG)  # resumed after 30 s
    assert [payload for payload, _, _ in released] == list(range(10))


def test_a_freeze_replays_the_checks_each_at_its_own_time():
    # 40 in flight (105 ms: three checks each), frozen before any could leave: on resume
    # each is decided at its own third check, the count dropping as they go, as an
    # on-time server would have; all are reported at the resume.
    server = SEED.start(0.0)
    for i in range(40):
        server.admit(0.001 * i, i)
    assert server.advance(0.12, NO_RNG) == []
    released = server.advance(30.0, NO_RNG)
    assert [payload for payload, _, _ in released] == list(range(40))
    assert server.in_flight == 0 and server.next_wakeup_s(30.0) is None


# -- the Go server's overflow ------------------------------------------------------

GO = ExponentialModel(overflow="go")


@pytest.mark.parametrize(
    ("in_flight", "nanoseconds"),
    [  # printed by Go 1.19 on amd64: time.Duration(float64(100*time.Millisecond) * math.Pow(1.05, float64(c-30)/15.0))
        (30, 100_000_000),
        (31, 100_325_797),
        (60, 110_250_000),
        (100, 125_569_277),
        (7791, 9_190_588_867_711_936_512),
        (7792, 9_220_531_560_921_252_864),
        (7793, -9_223_372_036_854_775_808),
        (8000, -9_223_372_036_854_775_808),
        (100_000, -9_223_372_036_854_775_808),
    ],
)
def test_go_delay_is_the_seed_servers_int64_nanoseconds(in_flight, nanoseconds):
    got = go_delay_ns(0.1, 30, 1.05, 15, in_flight)
    assert got == pytest.approx(nanoseconds, rel=1e-13)  # Python's pow and Go's differ in the last bits
    assert (got < 0) == (nanoseconds < 0)


def test_go_delay_overflows_where_the_float_itself_overflows():
    assert go_delay_ns(0.1, 0, 1000, 0.001, 10**6) == -(2**63)  # math.pow raises OverflowError; Go gets +Inf


def test_go_overflow_is_opt_in_and_round_trips():
    assert SEED.overflow == "clamp"
    model = parse_model("exponential:overflow=go")
    assert model.overflow == "go" and parse_model(model.spec()) == model
    assert model.delay_at(7792) == pytest.approx(9.22e9, rel=1e-3)  # 292 years
    assert model.delay_at(7793) < 0 < SEED.delay_at(7793) == 600.0
    with pytest.raises(SpecError, match="overflow: got 'wrap', expected one of clamp, go"):
        parse_model("exponential:overflow=wrap")


def test_past_the_overflow_a_request_leaves_at_its_next_check():
    model = ExponentialModel(limit=0, factor=1000, k=1, overflow="go")  # 1e5 s at 2, overflowed from 4
    server = model.start(0.0)
    for i in range(3):
        server.admit(0.01 * i, i)
    assert server.advance(10.0, NO_RNG) == []  # stuck: 1e14 ns each
    assert server.admission_hastens  # the shells ask again after each admission
    server.admit(10.001, "fourth")  # 4 in flight: overflowed
    wake = server.next_wakeup_s(10.001)
    assert wake == pytest.approx(10.01)  # the first check after 10.001 is request 1's (its grid: 0.01 + n/20)
    assert [payload for payload, _, _ in server.advance(wake, NO_RNG)] == [1]
    assert server.in_flight == 3 and server.delay_s > 1e5  # back below the overflow: stuck again


def test_reconfigure_keeps_what_is_in_flight():
    server = SEED.start(0.0)
    server.admit(0.0, "a")
    server.reconfigure(ExponentialModel(base_delay_s=1.0))
    assert server.advance(0.5, NO_RNG) == []
    assert server.delay_s == 1.0
    assert [payload for payload, _, _ in server.advance(1.05, NO_RNG)] == ["a"]
