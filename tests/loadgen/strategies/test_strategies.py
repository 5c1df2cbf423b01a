"""Each strategy against its formula; every delay within [0, max_delay_s]."""

import random
import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from retrystorm.loadgen.strategies import (
    STRATEGIES,
    DecorrelatedJitter,
    ExponentialBackoff,
    FixedBackoff,
    GrpcBackoff,
    Jitter,
    NoBackoff,
    TableBackoff,
    UniformBackoff,
    parse_strategy,
)


def test_none_and_fixed():
    rng = random.Random(1)
    assert NoBackoff().delay(5, 3.0, rng) == 0
    assert FixedBackoff(delay_s=0.1).delay(1, 0.0, rng) == 0.1
    assert FixedBackoff(delay_s=0.1).delay(50, 99.0, rng) == 0.1


def test_uniform_stays_in_its_interval_with_the_right_mean():
    rng = random.Random(2)
    samples = [UniformBackoff(min_s=1, max_s=3).delay(1, 0, rng) for _ in range(10_000)]
    assert min(samples) >= 1 and max(samples) <= 3
    assert statistics.fmean(samples) == pytest.approx(2.0, abs=0.03)


def test_seed_simulation_eb_is_two_to_the_n_capped_at_30():
    eb = parse_strategy("exponential:base=2s,factor=2,max=30s")
    rng = random.Random(0)
    assert [eb.delay(n, 0, rng) for n in range(1, 7)] == [2, 4, 8, 16, 30, 30]


def test_seed_simulation_reb_is_uniform_under_eb():
    reb = parse_strategy("exponential:base=2s,factor=2,max=30s,jitter=full")
    rng = random.Random(0)
    for n, cap in [(1, 2), (3, 8), (9, 30)]:
        samples = [reb.delay(n, 0, rng) for _ in range(5000)]
        assert max(samples) <= cap
        assert statistics.fmean(samples) == pytest.approx(cap / 2, rel=0.05)


def test_exponential_cap_survives_huge_retry_numbers():
    strategy = ExponentialBackoff(base_s=0.1, factor=2.718, max_s=300)
    assert strategy.delay(100_000, 0, random.Random(0)) == 300


def test_decorrelated_starts_at_base_and_grows_from_the_previous_delay():
    strategy = DecorrelatedJitter(base_s=1.0, max_s=100.0)
    rng = random.Random(4)
    first = [strategy.delay(1, 50.0, rng) for _ in range(5000)]
    assert min(first) >= 1.0 and max(first) <= 3.0
    later = [strategy.delay(2, 10.0, rng) for _ in range(5000)]
    assert min(later) >= 1.0 and max(later) <= 30.0
    assert statistics.fmean(later) == pytest.approx(15.5, rel=0.03)
    assert strategy.delay(3, 1000.0, rng) <= 100.0


def test_grpc_constants_and_jitter_band():
    strategy = GrpcBackoff()
    assert (strategy.base_s, strategy.factor, strategy.jitter, strategy.max_s) == (1.0, 1.6, 0.2, 120.0)
    assert strategy.min_connect_timeout_s == 20.0
    rng = random.Random(5)
    for n, base in [(1, 1.0), (2, 1.6), (3, 2.56), (20, 120.0)]:
        samples = [strategy.delay(n, 0, rng) for _ in range(2000)]
        assert base * 0.8 <= min(samples) and max(samples) <= base * 1.2
        assert statistics.fmean(samples) == pytest.approx(base, rel=0.02)


def test_table_uses_the_seed_defaults_saturates_and_randomises():
    strategy = TableBackoff()
    assert [round(d * 1000) for d in strategy.delays_s] == [0, 10, 10, 100, 100, 500, 500, 3000, 3000, 5000]
    rng = random.Random(6)
    assert strategy.delay(1, 0, rng) == 0
    for n, base in [(4, 0.1), (10, 5.0), (25, 5.0)]:
        samples = [strategy.delay(n, 0, rng) for _ in range(4000)]
        assert 0.5 * base <= min(samples) and max(samples) < 1.5 * base
        assert statistics.fmean(samples) == pytest.approx(base, rel=0.03)


ALL_DEFAULTS = [STRATEGIES.get(name)() for name in STRATEGIES.names()] + [
    ExponentialBackoff(jitter=Jitter("normal", 0.5)),
    ExponentialBackoff(jitter=Jitter("proportional", 1.0)),
    parse_strategy("table:delays=[1s,0,2s]"),
]


@pytest.mark.parametrize("strategy", ALL_DEFAULTS, ids=str)
@given(
    attempt=st.integers(min_value=1, max_value=10_000),
    previous=st.floats(min_value=0, max_value=1e5),
    seed=st.integers(min_value=0, max_value=2**32),
)
def test_every_delay_is_between_zero_and_the_bound(strategy, attempt, previous, seed):
    delay = strategy.delay(attempt, previous, random.Random(seed))
    assert 0 <= delay <= strategy.max_delay_s


@pytest.mark.parametrize("strategy", ALL_DEFAULTS, ids=str)
def test_delays_are_reproducible_from_the_seed(strategy):
    def sequence(seed):
        rng = random.Random(seed)
        return [strategy.delay(n, 1.0, rng) for n in range(1, 20)]

    assert sequence(42) == sequence(42)


def test_strategies_are_immutable():
    strategy = FixedBackoff(delay_s=1.0)
    with pytest.raises(AttributeError):
        strategy.delay_s = 2.0  # type: ignore[misc]
