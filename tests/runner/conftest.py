"""Fabricated readings: a run whose counters and gauges follow given per-second rates."""

from __future__ import annotations

import pytest

from retrystorm.loadgen.readings import ClientReading, Reading, TargetReading

BOUNDS = (0.1, 0.25, 0.5, 1.0, float("inf"))


def client(
    ok: float, attempts: float, *, started: float | None = None, sent: float | None = None, latency=None
) -> ClientReading:
    """Cumulative client counters; ``latency`` maps bucket bound -> cumulative count.

    ``attempts`` ended (``ok`` of them successfully); ``sent``, default ``attempts``, were sent.
    """
    buckets = tuple((bound, (latency or {}).get(bound, ok)) for bound in BOUNDS)
    return ClientReading(
        attempts={"ok": ok, "timeout": attempts - ok},
        attempts_started=attempts if sent is None else sent,
        requests_ok=ok,
        requests_gave_up=0.0,
        requests_started=ok if started is None else started,
        users_in_backoff=0.0,
        active_users=100.0,
        retries=attempts - ok,
        budget_refusals=0.0,
        ended_buckets=buckets,
    )


def target(in_flight: float, delay_s: float = 0.1) -> TargetReading:
    return TargetReading(in_flight, delay_s, in_flight, 0.0, {"ok": 0.0})


def fabricate(goodput, attempts, in_flight, *, jitter_s: float = 0.01):
    """Readings at ticks 0..n for per-second ``goodput``/``attempts`` rates and gauges.

    ``in_flight[i]`` is the gauge read at tick ``i + 1``; ``None`` means the target did
    not answer (paused).
    """
    readings = [Reading(0, jitter_s, target(0.0), client(0.0, 0.0))]
    ok = total = 0.0
    for index, (good, sent, flight) in enumerate(zip(goodput, attempts, in_flight, strict=True), start=1):
        ok += good
        total += sent
        part = None if flight is None else target(flight, 0.1 if flight < 40 else 60.0)
        readings.append(Reading(index, index + jitter_s, part, client(ok, total, started=ok + (total - ok) / 4)))
    return readings


@pytest.fixture
def storm_run():
    """40 s, outage 20-25 s: a server that never comes back (no goodput, in flight 2,000)."""
    goodput = [100.0] * 20 + [0.0] * 20
    attempts = [100.0] * 20 + [150.0] * 20
    in_flight = [10.0] * 20 + [None] * 5 + [2000.0 + 50 * i for i in range(15)]
    return fabricate(goodput, attempts, in_flight)


@pytest.fixture
def recovered_run():
    """40 s, outage 20-25 s: back to steady at 28 s."""
    goodput = [100.0] * 20 + [0.0] * 5 + [20.0, 50.0, 80.0] + [100.0] * 12
    attempts = [100.0] * 20 + [30.0] * 5 + [20.0, 50.0, 80.0] + [100.0] * 12
    in_flight = [10.0] * 20 + [None] * 5 + [300.0, 60.0] + [10.0] * 13
    return fabricate(goodput, attempts, in_flight)


SMALL = """\
name: small
model: exponential:limit=30
load: {users: 100, think_time: exponential:1s, attempt_timeout: 2s, duration: 40s}
strategies: [fixed:100ms, smira]
faults: [{at: 20s, for: 5s}]
assertions:
  fixed:100ms: {server_recovers_within: never, client_recovers_within: never}
  smira: {server_recovers_within: 10s, client_recovers_within: 10s, max_amplification: 1.5}
"""


@pytest.fixture
def small():
    from retrystorm.experiment.scenario import parse_scenario

    return parse_scenario(SMALL, source="small.yaml")


@pytest.fixture
def record_of(small):
    """``record_of(label, readings)``: a StrategyRecord of ``small`` with its planned outage."""
    from retrystorm.experiment.scenario import RunSpec
    from retrystorm.runner.record import StrategyRecord

    def build(label, readings, outages=None):
        entry = next(entry for entry in small.strategies if entry.label == label)
        planned = small.outages()
        return StrategyRecord(
            spec=RunSpec.of(small, entry),
            readings=readings,
            outages=planned if outages is None else outages,
            planned_outages=planned,
            started_utc="2026-01-01T00:00:00.000+00:00",
            ended_utc="2026-01-01T00:00:40.000+00:00",
            target="target on http://127.0.0.1:1",
            load="locust",
        )

    return build
