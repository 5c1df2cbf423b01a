"""Optimistic concurrency under contention: the AWS Architecture Blog's backoff experiment.

Marc Brooker, "Exponential Backoff And Jitter" (AWS Architecture Blog, 2015), and its
simulator (github.com/aws-samples/aws-arch-backoff-simulator): N clients start at
once; each reads a versioned row, then writes it conditionally on the version it
read, and retries (read, write) after a backoff until one write succeeds. Every
network hop takes ``|N(10 ms, 2 ms)|``. The post's two charts are the writes
("calls") and the time until every client has succeeded, averaged over repetitions,
against N.

One event per attempt: a client's read reaches the row at ``t_r`` and its write at
``t_w = t_r + hop + hop``; the write succeeds iff no write succeeded in between
(``last_success < t_r``), which is the version check, because writes are processed
in time order. A failed client hears back at ``t_w + hop`` and reads again ``hop +
backoff`` later. The strategies come from :mod:`retrystorm.loadgen.strategies`; the post's
``min(cap, base * 2**n)`` with base 5 ms and n = 1 for the first retry is our
``exponential:base=10ms`` (``base * factor**(n-1)``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import heapq
import math
from collections.abc import Iterator

import numpy as np

from retrystorm.experiment.scenario import rng_for
from retrystorm.loadgen.strategies import RetryStrategy, parse_strategy
from retrystorm.sim.experiments.base import Finding, Report

#: The post's five strategies: base 5 ms, cap 2 s.
STRATEGIES: dict[str, str] = {
    "none": "none",
    "exponential": "exponential:base=10ms,factor=2,max=2s",
    "full-jitter": "exponential:base=10ms,factor=2,max=2s,jitter=full",
    "equal-jitter": "exponential:base=10ms,factor=2,max=2s,jitter=equal",
    "decorrelated": "decorrelated:base=5ms,max=2s",
}
CLIENTS = tuple(range(10, 200, 10))
HOP_MEAN_S = 0.010
HOP_SD_S = 0.002


@dataclasses.dataclass(frozen=True, slots=True)
class ContentionPoint:
    """The mean writes and completion time of one strategy at one N."""

    strategy: str
    clients: int
    calls: float
    completion_time_s: float

    def to_json(self) -> dict[str, object]:
        """The JSON row: ``strategy``, ``clients``, ``calls``, ``completion_time_s``."""
        return {
            "strategy": self.strategy,
            "clients": self.clients,
            "calls": round(self.calls, 3),
            "completion_time_s": round(self.completion_time_s, 6),
        }


def _hops(seed: str, mean_s: float, sd_s: float) -> Iterator[float]:
    """Endless ``|N(mean, sd)|`` network delays, drawn by numpy in blocks (``random.gauss`` per hop
    was 40 % of the run time) from a generator seeded by the SHA-256 of ``seed``."""
    generator = np.random.default_rng(int.from_bytes(hashlib.sha256(seed.encode()).digest()[:8], "big"))
    block = 256
    while True:
        yield from np.abs(generator.normal(mean_s, sd_s, block)).tolist()
        block = min(2 * block, 65536)


def contend(strategy: RetryStrategy, clients: int, seed: str, *, hop_mean_s: float = HOP_MEAN_S,
            hop_sd_s: float = HOP_SD_S) -> tuple[int, float]:  # fmt: skip
    """One repetition: ``(writes, time until the last client succeeded)``.

    Each client's retries follow ``strategy.delay(n, previous delay, rng)`` exactly as a
    :class:`~retrystorm.loadgen.strategies.RetrySession` without budget, deadline or attempt cap
    computes them (retry ``n`` = failures so far, ``previous`` = the last backoff, 0
    before the first), called directly here because this loop runs millions of times.
    """
    hop = _hops(f"net/{seed}", hop_mean_s, hop_sd_s).__next__
    retry = rng_for(0, f"contention/retry/{seed}")
    delay_of = strategy.delay
    failures = [0] * clients
    previous = [0.0] * clients
    heap: list[tuple[float, int, float]] = []
    for index in range(clients):
        read_s = hop()
        heap.append((read_s + hop() + hop(), index, read_s))
    heapq.heapify(heap)
    pop, push = heapq.heappop, heapq.heappush
    last_success_s = -math.inf
    writes = 0
    done_s = 0.0
    while heap:
        write_s, index, read_s = pop(heap)
        writes += 1
        answer_s = write_s + hop()
        if last_success_s < read_s:
            last_success_s = write_s
            done_s = max(done_s, answer_s)
            continue
        failures[index] += 1
        delay = previous[index] = delay_of(failures[index], previous[index], retry)
        read_s = answer_s + hop() + delay
        push(heap, (read_s + hop() + hop(), index, read_s))
    return writes, done_s


def contention_point(label: str, strategy: RetryStrategy, clients: int, repetitions: int, seed: int) -> ContentionPoint:
    """Mean writes and completion time over ``repetitions`` runs (each its own random streams)."""
    total_writes = 0
    total_s = 0.0
    for repetition in range(repetitions):
        writes, done_s = contend(strategy, clients, f"{seed}/{clients}/{repetition}")
        total_writes += writes
        total_s += done_s
    return ContentionPoint(label, clients, total_writes / repetitions, total_s / repetitions)


def contention(
    strategies: dict[str, str] | None = None,
    clients: tuple[int, ...] = CLIENTS,
    repetitions: int = 100,
    seed: int = 1,
) -> list[ContentionPoint]:
    """Every strategy at every N; the same network draws for every strategy at a given N and repetition."""
    chosen = strategies or STRATEGIES
    return [
        contention_point(label, parse_strategy(spec), count, repetitions, seed)
        for label, spec in chosen.items()
        for count in clients
    ]


def run(
    strategies: dict[str, str] | None = None,
    clients: tuple[int, ...] = CLIENTS,
    repetitions: int = 100,
    seed: int = 1,
) -> Report:
    """The experiment as a report; the post's findings are checked when its five strategies ran."""
    points = contention(strategies, clients, repetitions, seed)
    report = Report(
        experiment="contention",
        kind="contention",
        rows=[point.to_json() for point in points],
        notes=[
            (
                f"{repetitions} repetitions per point; network hops |N(10 ms, 2 ms)|; one version-checked write "
                "per attempt; the same network draws for every strategy at a given N and repetition."
            ),
            (
                "The post's min(cap, base * 2^n) with base 5 ms and n = 1 for the first retry is "
                "exponential:base=10ms,factor=2,max=2s; decorrelated starts from base 5 ms."
            ),
        ],
        extra={"repetitions": repetitions},
    )
    # The post's conclusions are about its scale (tens to ~200 clients); below 100 they need not hold.
    if set(STRATEGIES) <= {point.strategy for point in points} and len(clients) >= 2 and max(clients) >= 100:
        report.findings = findings(points)
    return report


def findings(points: list[ContentionPoint]) -> list[Finding]:
    """The post's conclusions that do not depend on noise."""
    at = {(p.strategy, p.clients): p for p in points}
    counts = sorted({p.clients for p in points})
    low, high = counts[0], counts[-1]
    none_low, none_high = at[("none", low)], at[("none", high)]
    exponent = math.log(none_high.calls / none_low.calls) / math.log(high / low)
    time_per_client = (none_high.completion_time_s - none_low.completion_time_s) / (high - low)
    jittered = ("full-jitter", "equal-jitter", "decorrelated")
    others = [s for s in STRATEGIES if s != "exponential"]
    return [
        Finding(
            f"No backoff: time grows about linearly ({time_per_client * 1000:.0f} ms per client) and work "
            f"superlinearly (writes ~ N^{exponent:.1f}) with contention",
            exponent >= 1.5 and none_high.completion_time_s / none_low.completion_time_s <= 1.5 * high / low,
        ),
        Finding(
            "Exponential backoff without jitter is the clear loser: it takes the longest at every N "
            f"({at[('exponential', high)].completion_time_s:.0f} s at N = {high})",
            all(
                at[("exponential", n)].completion_time_s > at[(s, n)].completion_time_s for n in counts for s in others
            ),
        ),
        Finding(
            f"Jitter cuts the work: at N = {high} full, equal and decorrelated jitter need under half the writes of "
            "no backoff and of exponential without jitter",
            all(
                2 * at[(j, high)].calls < min(at[("none", high)].calls, at[("exponential", high)].calls)
                for j in jittered
            ),
        ),
        Finding(
            "Equal jitter takes longer than full jitter",
            all(
                at[("equal-jitter", n)].completion_time_s > at[("full-jitter", n)].completion_time_s
                for n in counts
                if n >= 50
            ),
        ),
    ]
