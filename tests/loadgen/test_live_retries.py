"""Retry sequences on the wire: a real Locust user against a target that fails on purpose.

The target (``retrystorm target --model fixed --base-delay 0``) has a fault rule that
fails attempts 1..N of every logical request, and records when each attempt arrives
(``GET /admin/faults``). With ``--random-seed`` the user's delays are
known in advance: replaying :class:`RetrySession` with the same seed gives them.
Each gap between attempts must be at least the delay the strategy chose (a retry
never comes early), and gaps must be ordered as the delays are when they differ
widely. Nothing is asserted about how late a retry may be.
"""

from __future__ import annotations

import itertools
import random

import pytest

from retrystorm.loadgen.strategies import RetryPolicy, RetrySession, parse_strategy

pytestmark = pytest.mark.live

SEED = 7
THINK_S = 0.1
#: A retry may come this much before its delay only through clock granularity.
EARLY_S = 0.01
#: Delays this far apart must arrive in the same order.
ORDER_MARGIN_S = 0.25


def expected_delays(strategy: str, fail_first: int, requests: int, *, keep_backoff: bool = False) -> list[list[float]]:
    """The delays the first user draws, replayed with its random source (see Runtime.new_rng)."""
    policy = RetryPolicy(strategy=parse_strategy(strategy), reset_after_success=not keep_backoff)
    session = RetrySession(policy, rng=random.Random(f"{SEED}:0:0"))
    delays = []
    for _ in range(requests):
        session.start_request(0.0, slept_s=THINK_S)
        delays.append([session.on_failure(0.0).delay_s for _ in range(fail_first)])
        session.on_success(0.0)
    return delays


def gaps(arrivals: list[float]) -> list[float]:
    return [later - earlier for earlier, later in itertools.pairwise(arrivals)]


def assert_sequence(observed: list[list[float]], expected: list[list[float]]) -> None:
    pairs = [(o, e) for got, want in zip(observed, expected, strict=False) for o, e in zip(got, want, strict=False)]
    for got, want in pairs:
        assert got >= want - EARLY_S, f"a retry came {want - got:.3f} s early: {pairs}"
    for got_a, want_a in pairs:
        for got_b, want_b in pairs:
            if want_a > want_b + ORDER_MARGIN_S:
                assert got_a > got_b, f"gaps out of order: {pairs}"


#: (strategy, failures before each success); all run at once, each against its own server.
SEQUENCES = [
    ("fixed:150ms", 3),
    ("exponential:base=50ms,factor=3,max=5s,jitter=none", 3),
    ("exponential:base=100ms,factor=2,max=5s,jitter=full", 3),
    ("decorrelated:base=50ms,max=2s", 3),
    ("grpc:base=100ms,factor=2.5,jitter=0.2,max=5s", 3),
    ("smira:jitter=0", 2),  # the first retry grows from the think time: e * 100 ms
]


@pytest.fixture(scope="module")
def sequence_runs(module_failing_target, module_start_locust):
    start_server, start = module_failing_target, module_start_locust
    pending = {}
    for strategy, fail_first in SEQUENCES:
        server = start_server(fail_first=fail_first)
        options = (f"--retry-strategy={strategy}", f"--think-time=constant:{THINK_S * 1000:.0f}ms")
        pending[strategy] = (server, start(server.url, *options, f"--random-seed={SEED}", run_time="3s"))
    return {strategy: (server, run.finish()) for strategy, (server, run) in pending.items()}


@pytest.mark.parametrize(("strategy", "fail_first"), SEQUENCES)
def test_retry_sequence(sequence_runs, strategy, fail_first):
    server, run = sequence_runs[strategy]
    complete = [arrivals for arrivals in server.requests() if len(arrivals) == fail_first + 1]
    assert len(complete) >= 2, server.judged()
    assert all(len(arrivals) <= fail_first + 1 for arrivals in server.requests())
    assert_sequence([gaps(a) for a in complete], expected_delays(strategy, fail_first, len(complete)))
    family = strategy.split(":")[0]
    ok = run.metrics.get("retrystorm_client_requests_total", strategy=family, outcome="ok")
    assert len(complete) - 1 <= ok <= len(complete)
    failed = run.metrics.get("retrystorm_client_attempts_total", strategy=family, outcome="server_error")
    assert failed >= fail_first * ok
    assert run.metrics.get("retrystorm_client_retries_total", strategy=family) == failed
    # Locust's own table carries attempts and logical requests under distinct names
    assert run.stat("/api (logical)")["num_requests"] == ok
    assert run.stat("/api")["num_failures"] == failed


def test_backoff_resets_after_a_success_unless_kept(failing_target, start_locust):
    strategy = "exponential:base=100ms,factor=6,max=1m,jitter=none"  # 0.1 s, then 0.6 s, 3.6 s, ...
    pending = {}
    for keep in (False, True):
        server = failing_target(fail_first=2)
        flags = ["--keep-backoff"] if keep else []
        options = (f"--retry-strategy={strategy}", "--think-time=constant:100ms", *flags)
        pending[keep] = (server, start_locust(server.url, *options, run_time="5s"))
    observed = {}
    for keep, (server, run) in pending.items():
        run.finish()
        observed[keep] = [gaps(arrivals) for arrivals in server.requests()]
    reset, kept = observed[False], observed[True]
    assert len(reset) >= 3
    assert len(kept) >= 2
    assert len(kept[1]) >= 1, kept
    # reset: every request starts again from the base delay
    assert_sequence([g for g in reset if len(g) == 2], expected_delays(strategy, 2, len(reset)))
    assert all(g[0] < g[1] for g in reset if len(g) == 2), reset
    # kept: the second request goes on where the first stopped (retry 3: 3.6 s)
    assert_sequence(kept[:2], expected_delays(strategy, 2, 2, keep_backoff=True))
    assert kept[1][0] > kept[0][1] + ORDER_MARGIN_S, kept


@pytest.mark.parametrize("status", [429, 503])
def test_retry_after_is_honoured_or_ignored(failing_target, start_locust, status):
    pending = {}
    for ignore in (False, True):
        server = failing_target(fail_first=1, status=status, retry_after=1)
        flags = ["--ignore-retry-after"] if ignore else []
        pending[ignore] = (
            server,
            start_locust(server.url, "--retry-strategy=fixed:10ms", "--think-time=constant:100ms", *flags),
        )
    gaps_by_flag = {}
    for ignore, (server, run) in pending.items():
        result = run.finish()
        gaps_by_flag[ignore] = [gaps(a)[0] for a in server.requests() if len(a) == 2]
        assert result.metrics.get("retrystorm_client_requests_total", outcome="ok") >= 1
    honoured, ignored = gaps_by_flag[False], gaps_by_flag[True]
    assert honoured
    assert ignored
    assert min(honoured) >= 1.0 - EARLY_S
    assert max(ignored) + ORDER_MARGIN_S < min(honoured)
    assert len(ignored) > len(honoured)


#: --max-attempts, then the context and exception of every logical request's event
EVENT_CASES = {
    "retry until ok": ("none", {"attempts": 3, "outcome": "ok", "strategy": "fixed"}, None),
    "give up": (
        "2",
        {"attempts": 2, "outcome": "gave_up", "strategy": "fixed", "reason": "max_attempts"},
        "gave up: max_attempts",
    ),
}


@pytest.mark.parametrize("case", EVENT_CASES)
def test_every_attempt_and_every_logical_request_fires_an_event(failing_target, run_locust, recording_locustfile, case):
    max_attempts, logical_context, exception = EVENT_CASES[case]
    server = failing_target(fail_first=2)
    run = run_locust(
        server.url,
        "--retry-strategy=fixed:200ms",
        "--think-time=constant:100ms",
        f"--max-attempts={max_attempts}",
        run_time="3s",
        locustfile=recording_locustfile,
    )
    attempts = [e for e in run.events if e["name"] == "/api"]
    logical = [e for e in run.events if e["name"] == "/api (logical)"]
    per_request = logical_context["attempts"]
    assert len(logical) >= 2
    for event in attempts:
        assert event["context"]["strategy"] == "fixed"
        assert event["context"]["outcome"] in ("ok", "server_error")
        assert (event["exception"] is None) == (event["context"]["outcome"] == "ok")
    numbers = [e["context"]["attempt"] for e in attempts]
    assert numbers[: per_request * len(logical)] == list(range(1, per_request + 1)) * len(logical)
    for event in logical:
        assert event["context"] == logical_context
        assert event["exception"] == exception
        backoffs_ms = (per_request - 1) * 200
        assert event["response_time_ms"] >= backoffs_ms - EARLY_S * 1000  # the backoff is included
    assert len(attempts) == run.stat("/api")["num_requests"]
    assert len(logical) == run.stat("/api (logical)")["num_requests"]
