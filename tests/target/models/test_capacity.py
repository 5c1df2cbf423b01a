"""The capacity cut: any model's server on a clock that runs at a fraction of real time."""

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from retrystorm.target.models import ScaledServer, parse_model
from retrystorm.target.models.base import MAX_DURATION_S
from retrystorm.target.models.capacity import MIN_CAPACITY


def run(server, until_s):
    """Wake ``server`` at each of its wake-ups until ``until_s``; (time, payload) of each release."""
    released, rng, now = [], random.Random(0), 0.0
    while (wake := server.next_wakeup_s(now)) is not None and wake <= until_s:
        assert wake >= now
        now = wake
        released += [(now, payload) for payload, _, _ in server.advance(now, rng)]
    return released


def test_full_capacity_changes_nothing():
    plain, scaled = parse_model("exponential").start(0.0), ScaledServer(parse_model("exponential").start(0.0), 0.0)
    for i in range(50):
        plain.admit(i * 0.01, i)
        scaled.admit(i * 0.01, i)
    assert run(plain, 100) == run(scaled, 100)


@pytest.mark.parametrize(
    ("spec", "alone_s"),
    [("fixed:base_delay=100ms", 0.1), ("linear:base_delay=1s,slope=0s", 1.0), ("exponential", 0.1)],
)
def test_a_request_within_a_cut_takes_its_delay_over_the_capacity(spec, alone_s):
    server = ScaledServer(parse_model(spec).start(0.0), 0.0)
    server.set_capacity(10.0, 0.4)
    server.admit(20.0, "r")
    assert server.delay_s == pytest.approx(alone_s / 0.4)
    assert run(server, 100) == [(pytest.approx(20 + alone_s / 0.4), "r")]


def test_work_goes_at_the_speed_of_the_moment():
    server = ScaledServer(parse_model("fixed:base_delay=10s").start(0.0), 0.0)
    server.admit(0.0, "r")
    server.set_capacity(4.0, 0.5)  # 4 s done; 6 s of work left at half speed would take 12 s
    server.set_capacity(8.0, 1.0)  # 2 s more done by then: 4 s left at full speed
    assert run(server, 100) == [(pytest.approx(12.0), "r")]
    assert server.real_time(server.server_time(9.5)) == pytest.approx(9.5)
    assert server.real_time(6.0) == pytest.approx(8.0)  # server time 6 s was reached at 8 s


def test_a_cut_divides_the_queue_models_throughput():
    model = parse_model("queue:workers=2,service_time=1s,reject_after=100ms,tick=100ms")
    full, cut = model.start(0.0), ScaledServer(model.start(0.0), 0.0)
    cut.set_capacity(0.0, 0.25)
    for server in (full, cut):
        server.admit(0.0, "a")
        server.admit(0.0, "b")
    assert [time for time, _ in run(full, 100)] == [pytest.approx(1.0)] * 2
    assert [time for time, _ in run(cut, 100)] == [pytest.approx(4.0)] * 2


def test_capacity_outside_its_floor_to_one_is_refused():
    server = ScaledServer(parse_model("fixed").start(0.0), 0.0)
    for bad in (0.0, 1.5, -1.0, 5e-324, MIN_CAPACITY / 2, float("nan")):
        with pytest.raises(ValueError, match=r"capacity must be in \[0.001, 1\]"):
            server.set_capacity(1.0, bad)


@given(
    st.floats(MIN_CAPACITY, 1.0),
    st.floats(0.0, 1e6),
    st.sampled_from([f"fixed:base_delay={MAX_DURATION_S:g}s", "exponential:max_delay=1h,overflow=clamp", "linear"]),
)
def test_at_any_capacity_from_the_floor_every_delay_and_wakeup_is_finite_and_bounded(capacity, at_s, spec):
    """The issue's 5e-324 stopped the server's clock: delays of inf, a wake-up never. From the floor up, each
    delay is within the longest a model may ask (1 h) over the capacity, and the request is released."""
    server = ScaledServer(parse_model(spec).start(0.0), 0.0)
    server.set_capacity(at_s, capacity)
    server.admit(at_s, "r")
    assert 0 <= server.delay_s <= MAX_DURATION_S / capacity * (1 + 1e-9)
    wake = server.next_wakeup_s(at_s)
    assert wake is not None
    assert at_s <= wake <= at_s + MAX_DURATION_S / capacity * (1 + 1e-9) + 1


@given(st.lists(st.tuples(st.floats(0.01, 50), st.floats(0.05, 1.0)), max_size=8), st.floats(0.001, 5))
def test_wake_ups_never_come_before_the_model_can_release(cuts, delay_s):
    """A wake-up computed through the clock always releases: the run ends without looping at one instant."""
    server = ScaledServer(parse_model(f"fixed:base_delay={delay_s}s").start(0.0), 0.0)
    changes = sorted(cuts)
    for index in range(40):
        server.admit(index * 0.7, index)
    rng, now, released, steps = random.Random(0), 0.0, 0, 0
    while (wake := server.next_wakeup_s(now)) is not None:
        while changes and changes[0][0] <= wake:
            at, capacity = changes.pop(0)
            server.set_capacity(max(at, now), capacity)
            wake = server.next_wakeup_s(max(at, now))
        now = max(now, wake)
        got = server.advance(now, rng)
        released += len(got)
        steps += 1
        assert got or changes, "a wake-up released nothing"
        assert steps < 1000
    assert released == 40


@pytest.mark.parametrize(("spec", "hastens"), [("exponential:overflow=go", True), ("exponential", False)])
def test_a_cut_server_says_what_its_model_says_of_admissions_hastening_a_release(spec, hastens):
    scaled = ScaledServer(parse_model(spec).start(0.0), 0.0)
    scaled.set_capacity(1.0, 0.5)
    assert scaled.admission_hastens is hastens  # else a shell keeps a wake-up an admission brought forward
