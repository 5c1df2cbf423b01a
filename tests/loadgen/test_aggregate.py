"""Summing worker snapshots on the master: counters monotonic, gauges of live workers only."""

import msgpack
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from retrystorm.loadgen.aggregate import MergedCollector, WorkerSnapshots, exposition_registry, snapshot
from retrystorm.loadgen.metrics import build_metrics
from retrystorm.loadgen.outcomes import AttemptOutcome, RequestOutcome


def worker(attempts_ok: int, timeouts: int, users: int, strategy: str = "fixed") -> CollectorRegistry:
    registry = CollectorRegistry()
    bound = build_metrics(registry).for_strategy(strategy)
    bound.attempts_started.inc(attempts_ok + timeouts + 1)  # one still awaits its answer
    for _ in range(attempts_ok):
        bound.attempt(AttemptOutcome.OK, 0.1)
        bound.request(RequestOutcome.OK, 0.15)
    for _ in range(timeouts):
        bound.attempt(AttemptOutcome.TIMEOUT, 2.0)
        bound.retry(0.1)
    bound.active_users.inc(users)
    return registry


def scrape(registry: CollectorRegistry) -> dict:
    text = generate_latest(registry).decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: dict, name: str, **labels: str) -> float:
    return samples[(name, tuple(sorted(labels.items())))]


def master(workers: WorkerSnapshots, connected) -> CollectorRegistry:
    local = CollectorRegistry()
    build_metrics(local)
    return exposition_registry(MergedCollector(local, workers, lambda: connected))


def test_master_serves_the_sum_of_its_workers():
    a, b = worker(3, 2, users=5), worker(4, 1, users=7)
    store = WorkerSnapshots()
    store.update("a", snapshot(a))
    store.update("b", snapshot(b))
    merged = scrape(master(store, {"a", "b"}))
    assert value(merged, "retrystorm_client_attempts_total", strategy="fixed", request="/api", outcome="ok") == 7
    assert value(merged, "retrystorm_client_attempts_total", strategy="fixed", request="/api", outcome="timeout") == 3
    assert value(merged, "retrystorm_client_retries_total", strategy="fixed") == 3
    assert value(merged, "retrystorm_client_attempts_started_total", strategy="fixed", request="/api") == 12
    assert value(merged, "retrystorm_client_active_users", strategy="fixed") == 12
    # every series of the workers, summed: buckets, sums and counts included
    parts = [scrape(a), scrape(b)]
    for key, total in merged.items():
        if key[0].startswith("retrystorm_client_generator_"):
            continue  # per process; here every registry is this one process (tests/loadgen/test_generator_cpu.py)
        assert total == sum(part.get(key, 0.0) for part in parts), key


def test_histogram_buckets_stay_cumulative_and_ordered():
    store = WorkerSnapshots()
    store.update("a", snapshot(worker(2, 3, users=1)))
    store.update("b", snapshot(worker(5, 0, users=1)))
    text = generate_latest(master(store, None)).decode()
    family = next(
        f for f in text_string_to_metric_families(text) if f.name == "retrystorm_client_attempt_latency_seconds"
    )
    buckets = [s for s in family.samples if s.name.endswith("_bucket") and s.labels["outcome"] == "timeout"]
    bounds = [float(s.labels["le"]) for s in buckets]
    assert bounds == sorted(bounds)
    counts = [s.value for s in buckets]
    assert counts == sorted(counts)
    assert counts[-1] == 3


def test_a_quit_worker_keeps_its_counts_but_not_its_gauges():
    store = WorkerSnapshots()
    store.update("a", snapshot(worker(3, 0, users=5)))
    store.update("b", snapshot(worker(4, 0, users=7)))
    merged = scrape(master(store, {"b"}))
    assert value(merged, "retrystorm_client_attempts_total", strategy="fixed", request="/api", outcome="ok") == 7
    assert value(merged, "retrystorm_client_active_users", strategy="fixed") == 7


def test_reports_are_idempotent_and_carry_through_msgpack():
    registry = worker(3, 1, users=2)
    store = WorkerSnapshots()
    for _ in range(3):  # the same cumulative report, received three times
        store.update("a", msgpack.unpackb(msgpack.packb(snapshot(registry))))
    merged = scrape(master(store, {"a"}))
    assert value(merged, "retrystorm_client_attempts_total", strategy="fixed", request="/api", outcome="ok") == 3


def test_strategies_stay_apart():
    store = WorkerSnapshots()
    store.update("a", snapshot(worker(3, 0, users=1, strategy="fixed")))
    store.update("b", snapshot(worker(4, 0, users=1, strategy="smira")))
    merged = scrape(master(store, None))
    assert value(merged, "retrystorm_client_attempts_total", strategy="fixed", request="/api", outcome="ok") == 3
    assert value(merged, "retrystorm_client_attempts_total", strategy="smira", request="/api", outcome="ok") == 4


def test_no_created_series():
    store = WorkerSnapshots()
    store.update("a", snapshot(worker(1, 0, users=1)))
    assert "_created" not in generate_latest(master(store, None)).decode()
