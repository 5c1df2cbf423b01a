"""Drift check: botocore's retries, driven against a local server, against the ``aws-*`` presets.

The library runs for real (a CloudWatch Logs client, JSON 1.1 protocol, pointed at a scripted
loopback server that fails every call); the preset replays the same failures in virtual time with
the same seed. botocore draws its jitter from Python's global ``random`` (``ExponentialBackoff``'s
``random=random.random``, ``retryhandler.delay_exponential``), one draw per retry, as the presets
draw from theirs: seeded alike, the delays must be equal, not only alike in distribution. The
library's own delays are read from its debug log (the delay it slept); the arrival gaps at the
server confirm it slept them. A botocore release that changes a base, a cost, an attempt cap or
the quota fails here.
"""

from __future__ import annotations

import json
import logging
import random

import pytest

botocore_session = pytest.importorskip("botocore.session")
from botocore.config import Config  # noqa: E402 - after the skip

from tests.drift.preset_replay import replay  # noqa: E402
from tests.drift.scripted import gaps, medians_by_retry, scripted_server  # noqa: E402

pytestmark = pytest.mark.live
JSON = {"Content-Type": "application/x-amz-json-1.1"}
UNAVAILABLE = (503, JSON, json.dumps({"__type": "ServiceUnavailableException", "message": "down"}).encode())
THROTTLED = (400, JSON, json.dumps({"__type": "ThrottlingException", "message": "slow down"}).encode())
#: What botocore logs before it sleeps a retry's delay (standard mode; legacy mode's action).
_STANDARD = "Retry needed, retrying request after delay of: "
_LEGACY = "Retry needed, action of: "


class Delays(logging.Handler):
    """The delays botocore decided, one list per call (a call starts with :meth:`next_call`)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.calls: list[list[float]] = []

    def next_call(self) -> None:
        self.calls.append([])

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        for prefix in (_STANDARD, _LEGACY):
            if message.startswith(prefix):
                self.calls[-1].append(float(message.removeprefix(prefix)))


@pytest.fixture
def delays():
    handler = Delays()
    loggers = [logging.getLogger("botocore.retries.standard"), logging.getLogger("botocore.retryhandler")]
    levels = [each.level for each in loggers]
    for each in loggers:
        each.setLevel(logging.DEBUG)
        each.addHandler(handler)
    yield handler
    for each, level in zip(loggers, levels, strict=True):
        each.removeHandler(handler)
        each.setLevel(level)


def same(expected: list[list[float]]) -> list:
    """Each call's delays, equal to within a microsecond (pytest.approx takes no nesting)."""
    return [pytest.approx(call, abs=1e-6) for call in expected]


def client(url: str, mode: str):
    session = botocore_session.get_session()
    session.set_credentials("AKIDEXAMPLE", "not-a-secret")
    config = Config(retries={"mode": mode}, connect_timeout=5, read_timeout=5)
    return session.create_client("logs", region_name="us-east-1", endpoint_url=url, config=config)


def run_calls(url: str, mode: str, calls: int, delays: Delays, seed: int) -> list[int]:
    """Make ``calls`` failing calls; the attempts each made (botocore's RetryAttempts + 1)."""
    logs = client(url, mode)
    random.seed(seed)
    attempts = []
    for _ in range(calls):
        delays.next_call()
        with pytest.raises(logs.exceptions.ClientError) as failed:
            logs.describe_log_groups()
        attempts.append(failed.value.response["ResponseMetadata"]["RetryAttempts"] + 1)
    return attempts


def test_standard_mode_503s_delays_attempts_and_quota_match_aws_standard(delays):
    with scripted_server(lambda _: UNAVAILABLE) as server:
        attempts = run_calls(server.url, "standard", 25, delays, seed=11)
        arrivals = list(server.arrivals)
    preset = replay("aws-standard", [{"status": 503}], calls=25, seed=11)
    assert attempts == preset.attempts  # 3 a call while the quota lasts (500 / 14 = 35 retries: 17 calls and a half)
    assert sum(len(call) for call in delays.calls) == preset.retries == 35
    assert delays.calls == same(preset.delays)
    real, emulated = medians_by_retry(delays.calls), medians_by_retry(preset.delays)
    print("medians:", {"botocore": real, "aws-standard": emulated})  # noqa: T201 - the figures, with pytest -s
    assert 0 < real[0] <= 0.05 and 0 < real[1] <= 0.1  # U(0, 50 ms), U(0, 100 ms)
    for call, (start, count) in zip(delays.calls, _spans(attempts), strict=True):  # slept on the wire too
        assert all(gap >= delay - 0.002 for gap, delay in zip(gaps(arrivals[start : start + count]), call, strict=True))


def _spans(attempts: list[int]) -> list[tuple[int, int]]:
    """Where each call's attempts lie among the arrivals: (first index, count)."""
    starts = [sum(attempts[:n]) for n in range(len(attempts))]
    return list(zip(starts, attempts, strict=True))


def test_throttles_cost_5_and_back_off_from_1_s(delays):
    # 4 throttled retries (cost 5 each), then 503s until the quota is dry: (500 - 20) / 14 = 34 more
    script = [THROTTLED, THROTTLED, THROTTLED, THROTTLED, THROTTLED, THROTTLED]
    with scripted_server(lambda n: script[n] if n < len(script) else UNAVAILABLE) as server:
        attempts = run_calls(server.url, "standard", 22, delays, seed=5)
    preset = replay("aws-standard", [{"status": 429}, {"status": 429}], calls=2, seed=5)
    assert delays.calls[:2] == same(preset.delays)
    assert max(delays.calls[0] + delays.calls[1]) > 0.1  # a 1 s base, not 50 ms: with this seed one draw shows it
    assert attempts[:2] == [3, 3]
    assert sum(len(call) for call in delays.calls[2:]) == (500 - 4 * 5) // 14


def test_x_amz_retry_after_is_honoured_up_to_5_s_past_the_backoff(delays):
    answer = (503, {**JSON, "x-amz-retry-after": "300"}, UNAVAILABLE[2])
    with scripted_server(lambda _: answer) as server:
        run_calls(server.url, "standard", 2, delays, seed=3)
    preset = replay("aws-standard", [{"status": 503, "retry_after_s": 0.3}], calls=2, seed=3)
    assert delays.calls == same(preset.delays)
    assert all(delay >= 0.3 for call in delays.calls for delay in call)


def _quick_legacy_seed() -> int:
    """A seed whose four legacy delays (U(0,1) x 1, 2, 4, 8) add up to under 2 s: a short test, the same draws."""
    for seed in range(1000):
        draws = random.Random(seed)
        if sum(draws.random() * 2**n for n in range(4)) < 2.0:
            return seed
    raise AssertionError("no quick seed")


def test_legacy_mode_makes_5_attempts_a_call_with_no_quota_as_aws_legacy(delays):
    seed = _quick_legacy_seed()
    with scripted_server(lambda _: UNAVAILABLE) as server:
        attempts = run_calls(server.url, "legacy", 1, delays, seed=seed)
    preset = replay("aws-legacy", [{"status": 503}], calls=1, seed=seed)
    assert attempts == preset.attempts == [5]
    assert delays.calls == same(preset.delays)
