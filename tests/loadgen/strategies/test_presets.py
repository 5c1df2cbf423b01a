"""Each preset's delays against its library's formula, its attempt cap and its retry conditions.

Delays are checked statistically with fixed seeds: every draw within the formula's
bounds, and the mean over many draws near the formula's mean. The expected values are
written from the libraries' sources (named in each preset's docstring), not read from
the code under test.
"""

import math
import random
import statistics

import pytest

from retrystorm.loadgen.strategies import GiveUp, RetryAfter, RetrySession, parse_strategy, resolve
from retrystorm.loadgen.strategies.budgets import ConcurrencyBudget, QuotaBudget, RatioBudget, TokensBudget
from retrystorm.loadgen.strategies.budgets.aws_rate_limiter import AwsRateLimiterBudget

DRAWS = 20_000


def draws(spec: str, attempt: int, *, seed: int = 1, n: int = DRAWS, previous: float = 0.0) -> list[float]:
    strategy = parse_strategy(spec)
    rng = random.Random(seed)
    return [strategy.delay(attempt, previous, rng) for _ in range(n)]


def retried(spec: str, **outcome) -> bool:
    conditions = resolve(parse_strategy(spec))[0].retry_on
    return conditions.retries(**{"timed_out": False, "status": None, **outcome})


# -- grpc-retry -------------------------------------------------------------------------


@pytest.mark.parametrize(("attempt", "base"), [(1, 0.1), (2, 0.2), (3, 0.4), (4, 0.8), (5, 1.0), (9, 1.0)])
def test_grpc_retry_is_a6_backoff_times_uniform_08_12(attempt, base):
    # A6 (2024-08-23) and grpc-go v1.83.1: min(initialBackoff * multiplier^(n-1), maxBackoff) * U(0.8, 1.2)
    samples = draws("grpc-retry", attempt)
    assert 0.8 * base <= min(samples) and max(samples) <= 1.2 * base
    assert statistics.fmean(samples) == pytest.approx(base, rel=0.005)
    assert min(samples) < 0.81 * base and max(samples) > 1.19 * base  # the whole band is used


def test_grpc_retry_full_jitter_is_a6_before_its_2024_update():
    # random(0, min(initialBackoff * multiplier^(n-1), maxBackoff)): mean half the cap
    samples = draws("grpc-retry:jitter=full,initial_backoff=1s,max_backoff=3s,multiplier=2", 3)
    assert min(samples) >= 0 and max(samples) <= 3.0
    assert statistics.fmean(samples) == pytest.approx(1.5, rel=0.01)


def test_grpc_retry_attempts_are_capped_at_five():
    assert resolve(parse_strategy("grpc-retry"))[0].max_attempts == 4
    assert resolve(parse_strategy("grpc-retry:max_attempts=9"))[0].max_attempts == 5
    assert resolve(parse_strategy("grpc-retry:max_attempts=9,max_attempts_limit=7"))[0].max_attempts == 7


@pytest.mark.parametrize(
    ("outcome", "expected"),
    [
        ({"status": 503}, True),  # UNAVAILABLE
        ({"status": 429}, True),  # UNAVAILABLE
        ({"status": 502}, True),
        ({"status": 504}, True),
        ({"status": 500}, False),  # UNKNOWN
        ({"status": 404}, False),  # UNIMPLEMENTED
        ({"timed_out": True}, False),  # DEADLINE_EXCEEDED: the call's deadline, never retried
        ({}, True),  # a connection error: UNAVAILABLE
    ],
)
def test_grpc_retry_retries_unavailable_as_grpc_go_maps_http_statuses(outcome, expected):
    assert retried("grpc-retry", **outcome) is expected


def test_grpc_retry_codes_widen_the_conditions():
    spec = "grpc-retry:codes=[UNAVAILABLE,UNKNOWN,DEADLINE_EXCEEDED]"
    assert retried(spec, status=500) and retried(spec, status=501) and retried(spec, timed_out=True)
    assert not retried(spec, status=400)  # INTERNAL


def test_grpc_retry_throttling_is_the_tokens_budget_and_pushback_reads_retry_after():
    policy, budget = resolve(parse_strategy("grpc-retry:max_tokens=10,token_ratio=0.1"))
    assert budget == TokensBudget(max_tokens=10, ratio=0.1)
    assert policy.retry_after is RetryAfter.PUSHBACK
    assert resolve(parse_strategy("grpc-retry"))[1] is None  # A6: no throttling unless configured


# -- envoy ------------------------------------------------------------------------------


@pytest.mark.parametrize(("attempt", "interval_ms"), [(1, 25), (2, 50), (3, 100), (4, 200), (5, 250), (12, 250)])
def test_envoy_draws_whole_milliseconds_below_a_doubling_interval(attempt, interval_ms):
    # backoff_strategy.cc: random() % next_interval_, the interval 25 ms doubling below max/2, then max (250 ms)
    samples = draws("envoy", attempt)
    millis = {round(s * 1000, 6) for s in samples}
    assert all(m == int(m) for m in millis)
    assert min(millis) == 0 and max(millis) == interval_ms - 1
    assert statistics.fmean(samples) == pytest.approx((interval_ms - 1) / 2 / 1000, rel=0.02)


def test_envoy_max_interval_and_base_interval():
    # base 100 ms, max 300 ms: intervals 100, 200 (100 < 150), 300 (200 >= 150), 300
    for attempt, interval_ms in [(1, 100), (2, 200), (3, 300), (4, 300)]:
        samples = draws("envoy:base_interval=100ms,max_interval=300ms", attempt, n=5000)
        assert max(samples) == pytest.approx((interval_ms - 1) / 1000)


def test_envoy_attempts_budget_and_conditions():
    policy, budget = resolve(parse_strategy("envoy"))
    assert policy.max_attempts == 2  # num_retries 1
    assert budget == ConcurrencyBudget(percent=0, min_retries=3)  # the max_retries circuit breaker
    policy, budget = resolve(parse_strategy("envoy:num_retries=3,budget_percent=25,min_retry_concurrency=5"))
    assert policy.max_attempts == 4
    assert budget == ConcurrencyBudget(percent=25, min_retries=5)
    assert policy.retry_after is RetryAfter.IGNORE


@pytest.mark.parametrize(
    ("spec", "outcome", "expected"),
    [
        ("envoy", {"status": 503}, True),
        ("envoy", {"status": 500}, True),
        ("envoy", {"status": 429}, False),
        ("envoy", {"timed_out": True}, True),  # a per-try timeout, under 5xx
        ("envoy", {}, True),
        ("envoy:retry_on=[gateway-error]", {"status": 500}, False),
        ("envoy:retry_on=[gateway-error]", {"status": 504}, True),
        ("envoy:retry_on=[connect-failure]", {"timed_out": True}, False),
        ("envoy:retry_on=[connect-failure]", {"status": 503}, False),
        ("envoy:retry_on=[connect-failure]", {}, True),
        ("envoy:retry_on=[retriable-status-codes],retriable_status_codes=[429]", {"status": 429}, True),
        ("envoy:retry_on=[retriable-4xx]", {"status": 409}, True),
    ],
)
def test_envoy_retry_on(spec, outcome, expected):
    assert retried(spec, **outcome) is expected


# -- aws --------------------------------------------------------------------------------


@pytest.mark.parametrize(("attempt", "cap"), [(1, 0.05), (2, 0.1), (3, 0.2), (9, 12.8), (10, 20.0), (30, 20.0)])
def test_aws_standard_is_full_jitter_below_min_50ms_two_to_the_n_and_20_s(attempt, cap):
    # botocore 1.44.8 standard.py: t_i = rand(0, 1) * min(0.05 * 2 ** (attempt - 1), 20) for a non-throttling error
    samples = draws("aws-standard", attempt)
    assert 0 <= min(samples) < 0.01 * cap and 0.99 * cap < max(samples) <= cap
    assert statistics.fmean(samples) == pytest.approx(cap / 2, rel=0.02)


@pytest.mark.parametrize(("attempt", "cap"), [(1, 1.0), (2, 2.0), (3, 4.0), (5, 16.0), (6, 20.0)])
def test_aws_standard_backs_off_from_1_s_after_a_throttle(attempt, cap):
    strategy = parse_strategy("aws-standard")
    rng = random.Random(1)
    samples = [strategy.throttled_delay(attempt, 0.0, rng) for _ in range(DRAWS)]
    assert 0 <= min(samples) < 0.01 * cap and 0.99 * cap < max(samples) <= cap


def test_a_session_takes_the_throttle_base_and_cost_on_a_429_only():
    policy, budget = resolve(parse_strategy("aws-standard:quota=28"))
    state = budget.start()
    session = RetrySession(policy, budget=state, rng=random.Random(3))
    session.start_request(0.0)
    throttled = session.on_failure(0.0, status=429)
    assert 0.05 < throttled.delay_s <= 1.0 and state.quota == 23  # with this seed, above the 50 ms base
    session.start_request(1.0)
    unavailable = session.on_failure(1.0, status=503)
    assert 0 <= unavailable.delay_s <= 0.05 and state.quota == 9
    assert session.on_failure(1.1, status=503).give_up is GiveUp.BUDGET  # 9 < 14


def test_x_amz_retry_after_raises_the_delay_at_most_5_s_past_the_backoff():
    policy, _ = resolve(parse_strategy("aws-standard:quota=none"))
    assert policy.retry_after is RetryAfter.AWS and RetryAfter.AWS.header == "x-amz-retry-after"
    for retry_after_s, low, high in ((0.5, 0.5, 0.5), (3.0, 3.0, 3.0), (60.0, 5.0, 5.05)):
        session = RetrySession(policy, rng=random.Random(5))
        session.start_request(0.0)
        delay = session.on_failure(0.0, status=503, retry_after_s=retry_after_s).delay_s
        assert low <= delay <= high


def test_aws_modes_attempts_budgets_and_conditions():
    policy, budget = resolve(parse_strategy("aws-standard"))
    assert policy.max_attempts == 3
    # botocore 1.44.8 RetryQuota(500) and RetryQuotaChecker: 14 a retry, 5 after a throttle
    assert budget == QuotaBudget(capacity=500, cost=14, timeout_cost=14, throttle_cost=5, increment=1)
    assert resolve(parse_strategy("aws-standard:quota=none"))[1] is None
    policy, budget = resolve(parse_strategy("aws-adaptive"))
    assert policy.max_attempts == 3
    assert budget == AwsRateLimiterBudget(quota=500)
    for status in (429, 500, 502, 503, 504):
        assert retried("aws-standard", status=status)
    for status in (400, 404, 501):
        assert not retried("aws-standard", status=status)
    assert retried("aws-standard", timed_out=True) and retried("aws-standard")


def test_a_full_quota_gets_35_retries_of_a_503_outage_not_100():
    _, budget = resolve(parse_strategy("aws-standard"))
    state = budget.start()
    assert sum(state.try_retry(0.0, after_timeout=False) is not None for _ in range(200)) == 35
    _, old = resolve(parse_strategy("aws-standard-2025"))
    state = old.start()
    assert sum(state.try_retry(0.0, after_timeout=False) is not None for _ in range(200)) == 100


@pytest.mark.parametrize(("attempt", "cap"), [(1, 1.0), (2, 2.0), (3, 4.0), (5, 16.0), (6, 20.0)])
def test_aws_standard_2025_backs_off_from_1_s_for_every_error(attempt, cap):
    # botocore 1.43.67 standard.py: t_i = rand(0, 1) * min(2 ** (attempt - 1), 20), one base
    samples = draws("aws-standard-2025", attempt)
    assert 0 <= min(samples) < 0.01 * cap and 0.99 * cap < max(samples) <= cap
    policy, budget = resolve(parse_strategy("aws-standard-2025"))
    assert budget == QuotaBudget(capacity=500, cost=5, timeout_cost=10, throttle_cost=5)
    assert policy.retry_after is RetryAfter.IGNORE


@pytest.mark.parametrize(("attempt", "cap"), [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0)])
def test_aws_legacy_is_rand_times_two_to_the_n_five_attempts_and_no_quota(attempt, cap):
    # botocore retryhandler.delay_exponential('rand', 2, attempts) and _retry.json's max_attempts 5
    samples = draws("aws-legacy", attempt)
    assert 0 <= min(samples) < 0.01 * cap and 0.99 * cap < max(samples) <= cap
    policy, budget = resolve(parse_strategy("aws-legacy"))
    assert (policy.max_attempts, budget) == (5, None)
    assert retried("aws-legacy", status=509) and retried("aws-legacy", timed_out=True)
    assert not retried("aws-legacy", status=501)


# -- polly ------------------------------------------------------------------------------


class Draws(random.Random):
    """A random source that returns the given draws in turn."""

    def __init__(self, values: list[float]) -> None:
        super().__init__(0)
        self.values = list(values)

    def random(self) -> float:
        return self.values.pop(0)


def test_polly_defaults_are_a_constant_two_seconds_three_retries_on_exceptions():
    policy, budget = resolve(parse_strategy("polly"))
    assert policy.max_attempts == 4 and budget is None
    assert [parse_strategy("polly").delay(n, 0, random.Random(1)) for n in (1, 2, 3)] == [2.0, 2.0, 2.0]
    assert retried("polly", timed_out=True) and retried("polly")
    assert not retried("polly", status=503) and not retried("polly", status=500)


def test_polly_linear_and_exponential_without_jitter():
    # RetryHelper: linear (attempt + 1) * delay, exponential 2^attempt * delay, attempt 0 for the first retry
    linear = parse_strategy("polly:backoff=linear,delay=1s")
    exponential = parse_strategy("polly:backoff=exponential,delay=1s,max_delay=5s")
    rng = random.Random(1)
    assert [linear.delay(n, 0, rng) for n in (1, 2, 3)] == [1.0, 2.0, 3.0]
    assert [exponential.delay(n, 0, rng) for n in (1, 2, 3, 4)] == [1.0, 2.0, 4.0, 5.0]


def test_polly_jitter_on_a_constant_is_plus_or_minus_a_quarter():
    # ApplyJitter: d + d * 0.5 * r - d * 0.5 / 2, so [0.75 d, 1.25 d)
    samples = draws("polly:jitter=true", 2)
    assert 1.5 <= min(samples) < 1.51 and 2.49 < max(samples) < 2.5
    assert statistics.fmean(samples) == pytest.approx(2.0, rel=0.005)


def f(t: float) -> float:
    """Decorrelated jitter v2's curve: 2^t * tanh(sqrt(4 t))."""
    return 2**t * math.tanh(math.sqrt(4 * t))


def test_polly_decorrelated_jitter_v2_carries_its_state_from_retry_to_retry():
    # RetryHelper.DecorrelatedJitterBackoffV2 with base 2 s and draws 0.5, 0.25, 0.75:
    # t = attempt + r; delay = (f(t) - f(previous t)) / 1.4 * base, f(previous) = 0 before the first retry
    strategy = parse_strategy("polly:backoff=exponential,jitter=true")
    rng = Draws([0.5, 0.25, 0.75])
    state = 0.0
    delays = []
    for attempt in (1, 2, 3):
        delay, state = strategy.next_delay(attempt, 0.0, state, rng)
        delays.append(delay)
    expected = [
        (f(0.5) - 0) / 1.4 * 2,
        (f(1.25) - f(0.5)) / 1.4 * 2,
        (f(2.75) - f(1.25)) / 1.4 * 2,
    ]
    assert delays == pytest.approx(expected, abs=1e-7)  # whole ticks of 100 ns
    assert state == pytest.approx(f(2.75))


def test_polly_delay_alone_draws_the_same_distribution_as_a_carried_sequence():
    strategy = parse_strategy("polly:backoff=exponential,jitter=true,delay=1s")
    rng = random.Random(3)
    carried = []
    for _ in range(DRAWS):
        _, state = strategy.next_delay(1, 0.0, 0.0, rng)
        carried.append(strategy.next_delay(2, 0.0, state, rng)[0])
    alone = draws("polly:backoff=exponential,jitter=true,delay=1s", 2, seed=4)
    assert statistics.fmean(alone) == pytest.approx(statistics.fmean(carried), rel=0.02)
    assert statistics.median(alone) == pytest.approx(statistics.median(carried), rel=0.03)


# -- resilience4j -----------------------------------------------------------------------


def test_resilience4j_defaults_are_three_attempts_500_ms_fixed_all_exceptions():
    policy, budget = resolve(parse_strategy("resilience4j"))
    assert policy.max_attempts == 3 and budget is None
    assert set(draws("resilience4j", 2, n=100)) == {0.5}
    assert retried("resilience4j", status=503) and retried("resilience4j", status=404)
    assert retried("resilience4j", timed_out=True) and retried("resilience4j")


def test_resilience4j_exponential_truncates_to_whole_milliseconds_at_each_step():
    # IntervalFunction.of(500, x -> (long) (x * 1.5)): 500, 750, 1125, 1687 (1687.5), 2530 (2530.5)
    strategy = parse_strategy("resilience4j:interval=exponential")
    assert [strategy.delay(n, 0, random.Random(1)) for n in range(1, 6)] == [0.5, 0.75, 1.125, 1.687, 2.53]
    capped = parse_strategy("resilience4j:interval=exponential,max_wait=1s")
    assert capped.delay(4, 0, random.Random(1)) == 1.0


def test_resilience4j_randomized_is_whole_ms_over_c_plus_or_minus_half_plus_one():
    # randomize(500, 0.5) = 250 + U * (750 - 250 + 1), truncated: 250 ... 750 ms, mean 500
    samples = draws("resilience4j:interval=randomized", 1)
    assert min(samples) == 0.25 and max(samples) == 0.75
    assert statistics.fmean(samples) == pytest.approx(0.5, rel=0.005)
    # exponential-random, retry 3: c = 1125, 562.5 + U * 1126, truncated: 562 ... 1688 ms
    samples = draws("resilience4j:interval=exponential-random", 3)
    assert min(samples) == 0.562 and max(samples) == 1.688
    assert statistics.fmean(samples) == pytest.approx(1.125, rel=0.005)


# -- urllib3 ----------------------------------------------------------------------------


def test_urllib3_default_retries_three_times_at_once():
    policy, budget = resolve(parse_strategy("urllib3"))
    assert policy.max_attempts == 4 and budget is None  # Retry.DEFAULT = Retry(3)
    assert [parse_strategy("urllib3").delay(n, 0, random.Random(1)) for n in (1, 2, 3)] == [0.0, 0.0, 0.0]
    assert resolve(parse_strategy("urllib3:total=0"))[0].max_attempts == 1  # requests' Retry(0, read=False)


def test_urllib3_backoff_skips_the_first_retry_then_doubles_up_to_backoff_max():
    # get_backoff_time: 0 for one consecutive error, then backoff_factor * 2 ** (errors - 1), capped
    strategy = parse_strategy("urllib3:backoff_factor=0.5,backoff_max=3s")
    assert [strategy.delay(n, 0, random.Random(1)) for n in (1, 2, 3, 4, 5)] == [0.0, 1.0, 2.0, 3.0, 3.0]
    samples = draws("urllib3:backoff_factor=0.5,backoff_jitter=1s", 3)
    assert min(samples) >= 2.0 and max(samples) <= 3.0
    assert statistics.fmean(samples) == pytest.approx(2.5, rel=0.005)


def test_urllib3_retries_statuses_on_the_forcelist_or_with_retry_after():
    assert retried("urllib3", timed_out=True) and retried("urllib3")
    assert not retried("urllib3", status=503)
    assert retried("urllib3", status=503, retry_after=True)
    assert retried("urllib3", status=429, retry_after=True)
    assert not retried("urllib3", status=500, retry_after=True)
    assert not retried("urllib3:respect_retry_after_header=false", status=503, retry_after=True)
    assert retried("urllib3:status_forcelist=[500,503]", status=500)
    assert resolve(parse_strategy("urllib3"))[0].retry_after is RetryAfter.EXACT


# -- finagle ----------------------------------------------------------------------------


def test_finagle_requeues_connection_failures_at_once_under_its_retry_budget():
    policy, budget = resolve(parse_strategy("finagle"))
    assert policy.max_attempts is None
    assert budget == RatioBudget(percent=0.2, min_rate=10, ttl_s=10, deposit="successes")  # RetryBudget(): 20 %, 10/s
    assert set(draws("finagle", 3, n=100)) == {0.0}
    assert retried("finagle")
    assert not retried("finagle", timed_out=True) and not retried("finagle", status=503)


def test_finagle_tries_uses_decorrelated_jitter_from_the_previous_backoff():
    # Backoff.decorrelatedJittered(5 ms, 200 ms): 5 ms, then U(d, min(3 d, 200 ms))
    assert resolve(parse_strategy("finagle:tries=3"))[0].max_attempts == 3
    assert draws("finagle:tries=3", 1, n=10) == [0.005] * 10
    samples = draws("finagle:tries=3", 2, previous=0.005)
    assert min(samples) >= 0.005 and max(samples) < 0.015
    assert statistics.fmean(samples) == pytest.approx(0.01, rel=0.01)
    near_cap = draws("finagle:tries=3", 4, previous=0.1)
    assert min(near_cap) >= 0.1 and max(near_cap) < 0.2


# -- every preset -----------------------------------------------------------------------

PRESETS = ["grpc-retry", "envoy", "aws-standard", "aws-adaptive", "polly", "resilience4j", "urllib3", "finagle"]


@pytest.mark.parametrize("name", PRESETS)
def test_every_preset_is_marked_sourced_and_per_request(name):
    strategy = parse_strategy(name)
    assert strategy.is_preset
    assert strategy.library
    policy, _ = resolve(strategy)
    assert policy.per_request
    assert policy.retry_on is not None


def test_polly_reads_retry_after_only_when_asked_as_the_http_resilience_handler_does():
    assert resolve(parse_strategy("polly"))[0].retry_after is RetryAfter.IGNORE
    policy, _ = resolve(parse_strategy("polly:backoff=exponential,jitter=true,retry_after=true,retry_on=[5xx]"))
    assert policy.retry_after is RetryAfter.EXACT
    session = RetrySession(policy, rng=random.Random(1))
    session.start_request(0.0)
    assert session.on_failure(0.0, status=503, retry_after_s=7.0).delay_s == 7.0  # the header's, not Polly's own
    assert session.on_failure(7.0, status=503).delay_s != 7.0
