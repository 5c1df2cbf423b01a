"""Statistical checks of every jitter mode against its formula, with a fixed seed."""

import math
import random
import statistics

import pytest

from retrystorm.loadgen.strategies import ExponentialBackoff, Jitter

DRAWS = 20_000
D = 2.0


def draw(jitter: Jitter, seed: int = 7) -> list[float]:
    rng = random.Random(seed)
    return [jitter.apply(D, rng) for _ in range(DRAWS)]


def assert_mean(samples: list[float], expected: float, sd: float) -> None:
    # Four standard errors: fails about once in 16,000 seeds, never with the fixed seed.
    assert abs(statistics.fmean(samples) - expected) < 4 * sd / math.sqrt(len(samples))


def test_none_is_exact():
    assert set(draw(Jitter("none"))) == {D}


def test_full_is_uniform_on_zero_to_d():
    samples = draw(Jitter("full"))
    assert min(samples) >= 0
    assert max(samples) <= D
    assert_mean(samples, D / 2, D / math.sqrt(12))
    assert min(samples) < 0.01 * D
    assert max(samples) > 0.99 * D


def test_equal_is_uniform_on_half_d_to_d():
    samples = draw(Jitter("equal"))
    assert min(samples) >= D / 2
    assert max(samples) <= D
    assert_mean(samples, 0.75 * D, (D / 2) / math.sqrt(12))


@pytest.mark.parametrize("j", [0.1, 0.2, 0.5])
def test_proportional_is_uniform_within_j_of_d(j):
    samples = draw(Jitter("proportional", j))
    assert min(samples) >= D * (1 - j)
    assert max(samples) <= D * (1 + j)
    assert_mean(samples, D, 2 * j * D / math.sqrt(12))


@pytest.mark.parametrize("j", [0.1, 0.3])
def test_normal_has_mean_d_and_sd_j_d(j):
    samples = draw(Jitter("normal", j))
    assert min(samples) >= 0
    assert max(samples) <= 2 * D
    assert_mean(samples, D, j * D)
    assert statistics.stdev(samples) == pytest.approx(j * D, rel=0.03)


def test_normal_clips_symmetrically_so_the_mean_stays_d():
    samples = draw(Jitter("normal", 2.0))
    assert min(samples) == 0
    assert max(samples) == 2 * D
    assert_mean(samples, D, D)


@pytest.mark.parametrize("mode", ["full", "equal", "proportional:0.2", "normal:0.1"])
def test_exponential_jitters_the_first_retry_too(mode):
    strategy = ExponentialBackoff(base_s=1.0, jitter=Jitter.parse(mode))
    rng = random.Random(3)
    first_delays = {strategy.delay(1, 0.0, rng) for _ in range(50)}
    assert len(first_delays) > 40
