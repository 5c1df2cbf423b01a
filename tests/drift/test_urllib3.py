"""Drift check: urllib3's own ``Retry``, driven against a local server, against the ``urllib3`` preset.

A ``PoolManager`` with the ``Retry`` under test sends to a scripted loopback server that fails
every request; the preset replays the same failures in virtual time. urllib3 draws its jitter
from Python's global ``random`` (``Retry.get_backoff_time``), one draw per backoff, as the preset
draws from its own: seeded alike, each delay the preset gives must be the gap urllib3 left on
the wire (at least it, and at most a few milliseconds of sending more).
"""

from __future__ import annotations

import contextlib
import random
import statistics

import pytest

urllib3 = pytest.importorskip("urllib3")
from urllib3.util.retry import Retry  # noqa: E402 - after the skip

from tests.drift.preset_replay import replay  # noqa: E402
from tests.drift.scripted import gaps, medians_by_retry, scripted_server  # noqa: E402

pytestmark = pytest.mark.live
UNAVAILABLE = (503, {}, b"down")
#: How much later than its delay a retry reaches the server, by the median over a test's retries: a request's
#: own round trip (one retry alone can be 50 ms late on a busy machine; a changed formula moves them all).
SLACK_S = 0.025


def drive(retry: Retry, answer, calls: int, seed: int) -> tuple[list[int], list[list[float]]]:
    """``calls`` requests through a pool with ``retry``: the attempts and the gaps before each retry, per call."""
    with scripted_server(lambda _: answer) as server:
        pool = urllib3.PoolManager(retries=retry, timeout=5)
        random.seed(seed)
        attempts, waits = [], []
        for _ in range(calls):
            before = len(server.arrivals)
            with contextlib.suppress(urllib3.exceptions.MaxRetryError):  # raised once the retries are spent
                pool.request("GET", server.url + "/api")
            arrived = server.arrivals[before:]
            attempts.append(len(arrived))
            waits.append(gaps(arrived))
        pool.clear()
    return attempts, waits


def assert_slept(waits: list[list[float]], delays: list[list[float]]) -> None:
    """Each retry came at least its delay later, and the median lateness is a round trip's."""
    late = []
    for call_waits, call_delays in zip(waits, delays, strict=True):
        assert len(call_waits) == len(call_delays)
        late += [waited - delay for waited, delay in zip(call_waits, call_delays, strict=True)]
    assert min(late) >= -0.002
    assert statistics.median(late) <= SLACK_S, late


def test_backoff_with_jitter_and_a_forcelist_matches_the_preset():
    retry = Retry(total=3, backoff_factor=0.1, backoff_jitter=0.05, status_forcelist=[503])
    attempts, waits = drive(retry, UNAVAILABLE, calls=6, seed=21)
    spec = "urllib3:total=3,backoff_factor=0.1,backoff_jitter=50ms,status_forcelist=[503]"
    preset = replay(spec, [{"status": 503}], calls=6, seed=21)
    assert attempts == preset.attempts == [4] * 6
    assert_slept(waits, preset.delays)
    print("medians:", {"urllib3": medians_by_retry(waits), "preset": medians_by_retry(preset.delays)})  # noqa: T201 - the figures, with pytest -s


def test_retry_after_is_slept_exactly_and_makes_503_retryable_without_a_forcelist():
    answer = (503, {"Retry-After": "1"}, b"down")
    attempts, waits = drive(Retry(total=2), answer, calls=1, seed=1)
    preset = replay("urllib3:total=2", [{"status": 503, "retry_after_s": 1.0}], calls=1, seed=1)
    assert attempts == preset.attempts == [3]
    assert_slept(waits, preset.delays)


def test_the_default_retry_gives_up_at_once_on_a_503_without_retry_after():
    attempts, _ = drive(Retry.DEFAULT, UNAVAILABLE, calls=2, seed=1)
    preset = replay("urllib3", [{"status": 503}], calls=2, seed=1)
    assert attempts == preset.attempts == [1, 1]
