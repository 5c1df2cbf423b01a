"""The seed simulation's queue service: workers, rejections, overwhelm."""

import random

from hypothesis import given
from hypothesis import strategies as st

from retrystorm.target.models import Outcome, parse_model

ARTICLE = parse_model("queue:workers=5,service_time=5s,reject_after=1s,overwhelm_at=25,tick=1s")


def step(server, until, rng=None):
    rng = rng or random.Random(0)
    done = []
    for tick in range(1, until + 1):
        done += [(tick, payload, outcome) for payload, outcome, _ in server.advance(float(tick), rng)]
    return done


def test_free_workers_serve_and_busy_ones_reject_after_one_tick():
    server = ARTICLE.start(0.0)
    for i in range(7):
        server.admit(0.5, i)
    assert server.in_service == 5
    done = step(server, 5)
    assert [(t, p, o) for t, p, o in done if o is Outcome.REJECTED] == [
        (1, 5, Outcome.REJECTED),
        (1, 6, Outcome.REJECTED),
    ]
    assert [(t, p) for t, p, o in done if o is Outcome.OK] == [(5, i) for i in range(5)]
    assert server.in_flight == 0


def test_worker_freed_at_a_tick_serves_the_next_arrival():
    server = ARTICLE.start(0.0)
    for i in range(5):
        server.admit(0.0, i)
    step(server, 5)
    server.admit(5.5, "late")
    assert server.in_service == 1


def test_overwhelmed_server_moves_only_a_random_subset():
    model = parse_model("queue:workers=5,service_time=5s,reject_after=1s,overwhelm_at=25,progress_per_tick=10,tick=1s")
    server = model.start(0.0)
    for i in range(105):  # 5 in service, 100 being rejected
        server.admit(0.1, i)
    assert server.overwhelmed
    assert server.delay_s == 5.0 * (105 / 10)  # 10 of 105 progress per tick
    done = server.advance(1.0, random.Random(1))
    assert len(done) <= 10  # only 10 progressed, and only rejections finish after one tick
    assert all(outcome is Outcome.REJECTED for _, outcome, _ in done)


def test_progress_per_tick_defaults_to_overwhelm_at():
    assert ARTICLE.progress_limit == 25
    assert parse_model("queue:progress_per_tick=3").progress_limit == 3


def test_same_seed_same_releases_and_every_request_ends():
    def run(seed):
        server = ARTICLE.start(0.0)
        rng = random.Random(seed)
        for i in range(200):
            server.admit(rng.uniform(0, 20), i)
        done = step(server, 400, random.Random(seed))
        return done, server.in_flight

    first, left = run(3)
    assert (first, left) == run(3)
    assert left == 0
    assert sorted(p for _, p, _ in first) == list(range(200))


def test_nothing_progresses_between_ticks():
    server = ARTICLE.start(0.0)
    server.admit(0.0, "a")
    assert server.advance(0.5, random.Random(0)) == []
    assert server.next_wakeup_s(0.5) == 1.0


@given(
    arrivals=st.lists(st.tuples(st.floats(0, 30, allow_nan=False), st.booleans()), max_size=150),
    seed=st.integers(0, 100),
)
def test_every_request_leaves_once_oldest_first_with_withdrawals(arrivals, seed):
    """Releases and withdrawals in any mix: each request leaves once, releases oldest first, workers never exceeded."""
    server = ARTICLE.start(0.0)
    rng = random.Random(seed)
    released, withdrawn = [], set()
    tick = 1

    def release_until(now):
        nonlocal tick
        while tick <= now:
            answers = server.advance(float(tick), rng)
            assert [admitted for _, _, admitted in answers] == sorted(admitted for _, _, admitted in answers)
            released.extend(payload for payload, _, _ in answers)
            tick += 1

    for number, (arrival, withdraw_one) in enumerate(sorted(arrivals)):
        release_until(arrival)
        server.admit(arrival, number)
        assert server.in_service <= 5
        if withdraw_one and server.withdraw(victim := rng.randrange(number + 1)):
            withdrawn.add(victim)
    while server.in_flight:
        release_until(tick)
    assert len(released) == len(set(released))
    assert sorted([*released, *withdrawn]) == list(range(len(arrivals)))
