"""The runner's series and the Locust web UI's Retry storm tab, fed the same readings, read the same numbers."""

import datetime

import pytest

from retrystorm.loadgen.readings import ClientReading, Reading, TargetReading
from retrystorm.loadgen.series_names import (
    ACTIVE_USERS,
    ATTEMPTS,
    GAVE_UP,
    GOODPUT,
    IN_FLIGHT,
    STARTED,
    USERS_IN_BACKOFF,
)
from retrystorm.loadgen.storm_series import StormHistory, columns
from retrystorm.runner.series import build_series

T0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
#: Per second: attempts sent, logical requests started, succeeded, given up; users in backoff; in flight
#: (``None``: the target did not answer, paused).
SECONDS = [
    (100, 100, 100, 0, 0, 10),
    (100, 100, 98, 0, 1, 12),
    (260, 90, 20, 5, 60, None),
    (400, 80, 0, 30, 200, None),
    (150, 100, 130, 2, 40, 300),
    (100, 100, 100, 0, 2, 11),
]


def client_at(totals: tuple[float, ...], backoff: float) -> ClientReading:
    attempts, started, ok, gave_up = totals
    return ClientReading(attempts={}, attempts_started=attempts, requests_ok=ok, requests_gave_up=gave_up,
                         requests_started=started, users_in_backoff=backoff, active_users=1000.0, retries=0.0,
                         budget_refusals=0.0, ended_buckets=())  # fmt: skip


def readings(start: tuple[float, ...] = (5_000, 4_000, 3_900, 50)) -> list[Reading]:
    """A reading at each whole second, its counters starting where a long-lived Locust left them."""
    totals = start
    found = [Reading(0, 0.0, TargetReading(10.0), client_at(totals, 0.0))]
    for tick, (*added, backoff, in_flight) in enumerate(SECONDS, start=1):
        totals = tuple(total + more for total, more in zip(totals, added, strict=True))
        target = TargetReading(float(in_flight)) if in_flight is not None else None
        found.append(Reading(tick, float(tick), target, client_at(totals, float(backoff))))
    return found


def storm_tab(found: list[Reading]) -> dict:
    history = StormHistory()
    history.start_run(found[0], T0)
    for reading in found[1:]:
        history.add(reading, T0 + datetime.timedelta(seconds=reading.time_s))
    return columns(history.since(None))["series"]


@pytest.mark.parametrize(("tab", "runner"), [(ATTEMPTS, ATTEMPTS), (GOODPUT, GOODPUT), (GAVE_UP, GAVE_UP),
                                             ("requests_started", STARTED)])  # fmt: skip
def test_both_read_the_same_rate_of_each_counter(tab, runner):
    found = readings()
    assert storm_tab(found)[tab]["values"] == build_series(found, len(SECONDS)).rates[runner]


@pytest.mark.parametrize("name", [USERS_IN_BACKOFF, ACTIVE_USERS, IN_FLIGHT])
def test_both_read_the_same_gauges_and_the_same_gaps(name):
    found = readings()
    assert storm_tab(found)[name]["values"] == build_series(found, len(SECONDS)).gauges[name]


def test_a_counter_that_went_down_is_a_gap_in_both():
    found = readings()
    for tick in range(3, len(found)):  # a worker that had sent 900 attempts left the master's sum at ~2.5 s
        before = found[tick].client
        assert before is not None
        totals = (before.attempts_started - 900, before.requests_started, before.requests_ok, before.requests_gave_up)
        found[tick] = Reading(tick, float(tick), found[tick].target, client_at(totals, before.users_in_backoff))
    tab, runner = storm_tab(found), build_series(found, len(SECONDS))
    assert tab[ATTEMPTS]["values"] == runner.rates[ATTEMPTS] == [100.0, 100.0, None, 400.0, 150.0, 100.0]
    assert tab[GOODPUT]["values"] == runner.rates[GOODPUT]
