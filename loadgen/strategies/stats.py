"""Delay statistics per retry number: what ``retrystorm strategies show`` prints. Pure."""

from __future__ import annotations

import dataclasses
import math
import random

from retrystorm.loadgen.strategies.base import RetryStrategy
from retrystorm.loadgen.strategies.controls import GiveUp, RetryPolicy, RetrySession
from retrystorm.loadgen.strategies.presets.base import resolve

#: Retry numbers shown at most.
MAX_RETRIES_SHOWN = 10


@dataclasses.dataclass(frozen=True, slots=True)
class RetryDelayStats:
    """The delay before one retry number over many draws, in seconds."""

    retry: int
    p5: float
    median: float
    p95: float
    mean: float


def percentile(ordered: list[float], q: float) -> float:
    """The ``q``-th percentile (0-100) of sorted values, interpolated linearly (numpy's default)."""
    if not ordered:
        raise ValueError("no values")
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def retries_shown(strategy: RetryStrategy, limit: int = MAX_RETRIES_SHOWN) -> int:
    """Retry numbers to show: up to ``limit``, or until the strategy's own attempt cap (a preset's)."""
    cap = resolve(strategy)[0].max_attempts
    return limit if cap is None else max(0, min(limit, cap - 1))


def delay_stats(
    strategy: RetryStrategy, *, draws: int, rng: random.Random, think_time_s: float = 0.0
) -> list[RetryDelayStats]:
    """p5, median, p95 and mean of the delay before each retry shown, over ``draws`` retry sequences.

    Each sequence is one request failing again and again, through a
    :class:`RetrySession` (so a stateful strategy carries its state), without attempt
    cap, deadline or budget; it starts after an exponential think time of mean
    ``think_time_s`` (what ``smira`` grows its first retry from; 0: none).
    """
    if draws < 1:
        raise ValueError("draws must be >= 1")
    retries = retries_shown(strategy)
    policy = RetryPolicy(strategy=strategy, per_request=True)
    samples: list[list[float]] = [[] for _ in range(retries)]
    session = RetrySession(policy, rng=rng)
    for _ in range(draws):
        think = rng.expovariate(1 / think_time_s) if think_time_s > 0 else 0.0
        session.start_request(0.0, slept_s=think)
        for column in range(retries):
            delay = session.retry_delay(0.0)
            # a policy without cap, deadline or budget never gives up; the check keeps mypy told
            samples[column].append(0.0 if isinstance(delay, GiveUp) else delay)
    found = []
    for index, values in enumerate(samples):
        values.sort()
        found.append(
            RetryDelayStats(
                retry=index + 1,
                p5=percentile(values, 5),
                median=percentile(values, 50),
                p95=percentile(values, 95),
                mean=math.fsum(values) / len(values),
            )
        )
    return found
