"""The seed's retry storm in miniature: freeze the target, resume it, count the attempts.

Two real targets with the seed's exponential model (made steeper, so that 100 users
can overload it as 1000 overload the seed's), two Locust processes with the seed's
two clients: fixed 100 ms retries and ``smira`` (the seed's exponential backoff).
Both targets are frozen with SIGSTOP at the same moment and resumed together. From
the resume on, fixed retries keep every stuck user sending an attempt per timeout,
while backoff spreads them out: fixed must send several times the attempts.
"""

from __future__ import annotations

import time

import pytest

pytestmark = [pytest.mark.live, pytest.mark.signals]

USERS = 100
#: The seed's model with a lower limit and a steeper slope: 100 users at 1 s think
#: time offer the seed's 100 requests/s and keep about 10 in flight in steady state.
MODEL = ("--model", "exponential", "--limit", "10", "--k", "2")
LOAD = ("--think-time=exponential:1s", "--attempt-timeout=2s", "--random-seed=3")
STRATEGIES = {"fixed": "fixed:100ms", "smira": "smira"}
STEADY_S = 4.0
OUTAGE_S = 5.0
AFTER_S = 10.0
ATTEMPTS = "retrystorm_client_attempts_total"


def test_fixed_retries_storm_where_backoff_does_not(target_server, start_locust, wait):
    targets = {name: target_server(*MODEL) for name in STRATEGIES}
    run_time = f"{STEADY_S + OUTAGE_S + AFTER_S + 1:.0f}s"
    runs = {
        name: start_locust(targets[name].url, f"--retry-strategy={spec}", *LOAD, users=USERS, run_time=run_time)
        for name, spec in STRATEGIES.items()
    }
    ok = "retrystorm_client_requests_total"
    for name, run in runs.items():
        wait(lambda run=run: run.scrape().get(ok, outcome="ok") >= USERS, 30, f"{name}: steady load")
    time.sleep(STEADY_S / 2)
    for target in targets.values():
        target.freeze()
    time.sleep(OUTAGE_S)
    for target in targets.values():
        target.resume()
    at_resume = {name: run.scrape() for name, run in runs.items()}
    results = {name: run.finish() for name, run in runs.items()}
    after = {name: results[name].metrics.get(ATTEMPTS) - at_resume[name].get(ATTEMPTS) for name in STRATEGIES}
    in_flight = {name: targets[name].metrics().get("retrystorm_target_in_flight_requests") for name in STRATEGIES}
    report = f"attempts after the resume {after}, in flight at the end {in_flight}"
    backing_off = {name: metrics.get("retrystorm_client_users_in_backoff") for name, metrics in at_resume.items()}
    assert backing_off["smira"] > 0, backing_off
    assert after["smira"] > 0, report
    # fixed: every user stuck, one attempt per 2.1 s (about 48/s); smira: 2.7 s, 7.4 s, 20 s, ...
    assert after["fixed"] >= 3 * after["smira"], report
    # ... and the abandoned attempts pile up in the server that fixed retries feed
    assert in_flight["fixed"] >= 2 * in_flight["smira"], report
