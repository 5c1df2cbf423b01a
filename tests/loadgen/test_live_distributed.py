"""Distributed mode: a master and two worker processes; the master's metrics are their sum.

Each worker also serves its own ``/metrics`` (``--metrics-port``), so the test compares
the master's series with the sum of the workers' series, sample by sample, and both
with what the target received and with Locust's own aggregated statistics. The target
runs the queue model with two workers, so some attempts are rejected with 503 and
retried: every kind of series has something to sum.
"""

from __future__ import annotations

import json

import pytest

from .conftest import get_text

pytestmark = pytest.mark.live

COUNTED = ("_total", "_bucket", "_count", "_sum")
GENERATOR = "retrystorm_client_generator_"
GENERATOR_CPU = "retrystorm_client_generator_cpu_seconds"
GENERATOR_ATTEMPTS = "retrystorm_client_generator_attempts_started_total"
#: Each process's event-loop lag: observed every 100 ms, run or no run, like the generator's CPU.
LOOP_LAG = "retrystorm_client_loop_lag_seconds"


def summed_series(metrics_list) -> dict:
    totals: dict = {}
    for metrics in metrics_list:
        for name, labels, value in metrics.samples:
            key = (name, tuple(sorted(labels.items())))
            totals[key] = totals.get(key, 0.0) + value
    return totals


def counted(totals: dict) -> dict:
    """The summed counters, but the generators' own series and the event loop's lag: each process's (its CPU and its
    loop's lag keep counting after a run; the master serves its own beside each worker's), which
    :func:`per_process` compares instead."""
    return {
        key: value
        for key, value in totals.items()
        if key[0].endswith(COUNTED) and not key[0].startswith((GENERATOR, LOOP_LAG))
    }


def per_process(metrics, name: str) -> dict[str, float]:
    """The ``process``-labelled series ``name`` a Locust process serves, by process."""
    return {labels["process"]: value for sample, labels, value in metrics.samples if sample == name}


def generator_processes(metrics) -> set[str]:
    """The ``process`` label of every generator CPU series a Locust process serves."""
    return {labels["process"] for name, labels, _ in metrics.samples if name.startswith(GENERATOR_CPU)}


def attempts_in_view(url: str) -> tuple[float, dict]:
    """The attempts the Retry storm tab's per-second rates add up to since the run started."""
    data = json.loads(get_text(url + "/storm/series"))
    times = [0.0, *data["t_s"]]
    rates = data["series"]["attempts"]["values"]
    return sum(rate * (times[i + 1] - times[i]) for i, rate in enumerate(rates) if rate is not None), data


def test_master_serves_the_sum_of_two_workers(target_server, locust_cluster, wait):
    target = target_server("--model", "queue", "--workers", "2", "--service-time", "100ms")
    cluster = locust_cluster(target.url)
    master = cluster.master

    refused = master.swarm(user_count="4", spawn_rate="20", retry_strategy="fixed:lots")
    assert refused["success"] is False
    assert "--retry-strategy" in refused["message"]

    form = {"user_count": "4", "spawn_rate": "20", "run_time": "6s"}
    started = master.swarm(**form, retry_strategy="fixed:50ms", think_time="constant:100ms")
    assert started["success"] is True, started
    active = "retrystorm_client_active_users"
    wait(lambda: master.metrics().get(active, strategy="fixed") == 4, 30, "4 active users on the master")
    per_worker = [m.get(active, strategy="fixed") for m in cluster.worker_metrics()]
    assert per_worker == [2, 2]
    wait(lambda: master.stats()["state"] == "stopped", 60, "the run to end")

    def master_equals_workers():
        workers = cluster.worker_metrics()
        return counted(summed_series([master.metrics()])) == counted(summed_series(workers)) and workers

    workers = wait(master_equals_workers, 30, "the master's sums to catch up with the workers (reports every second)")
    totals = summed_series([master.metrics()])
    assert counted(totals)
    # the generators' CPU is per process: the master serves each worker's series beside its own
    own = [generator_processes(m) for m in workers]
    assert all(len(processes) == 1 for processes in own) and own[0] != own[1]
    assert set.union(*own) < generator_processes(master.metrics())
    lagged = [set(per_process(m, LOOP_LAG + "_count")) for m in workers]  # the loop's lag: the same processes
    assert lagged == own and set.union(*own) <= set(per_process(master.metrics(), LOOP_LAG + "_count"))
    # each worker's share of the attempts, as the master serves it, is the worker's own count
    shares = per_process(master.metrics(), GENERATOR_ATTEMPTS)
    for worker in workers:
        [(process, sent)] = per_process(worker, GENERATOR_ATTEMPTS).items()
        assert sent > 0 and shares[process] == sent
    attempts = master.metrics().get("retrystorm_client_attempts_total", strategy="fixed")
    assert all(m.get("retrystorm_client_attempts_total", strategy="fixed") > 0 for m in workers)
    assert master.metrics().get(active, strategy="fixed") == 0
    # both agree with what the server saw and what Locust aggregated on its own
    served = target.metrics()
    received = served.get("retrystorm_target_requests_total") + served.get("retrystorm_target_in_flight_requests")
    assert attempts <= received <= attempts + 4  # attempts cut short by the stop
    started = master.metrics().get("retrystorm_client_attempts_started_total", strategy="fixed")
    assert attempts <= started <= attempts + 4  # counted when sent: the ones cut short too
    assert served.get("retrystorm_target_requests_total", outcome="rejected") > 0
    ok = master.metrics().get("retrystorm_client_requests_total", strategy="fixed", outcome="ok")
    failed = master.metrics().get("retrystorm_client_attempts_total", strategy="fixed", outcome="server_error")
    assert master.metrics().get("retrystorm_client_retries_total", strategy="fixed") == failed
    assert ok > 0
    assert failed > 0

    def locust_stats():  # Locust caches /stats/requests for a few seconds
        stats = {entry["name"]: entry["num_requests"] for entry in master.stats()["stats"]}
        return stats if stats.get("/api") == attempts else None

    stats = wait(locust_stats, 15, "Locust's own statistics to show the same attempts")
    assert stats["/api (logical)"] == ok

    # the master's Retry storm tab reads the same sums, once a second
    _, view = wait(
        lambda: (found := attempts_in_view(master.url)) and abs(found[0] - started) <= 1 and found,
        30,
        "the Retry storm tab's attempts to add up to the attempts the workers sent",
    )
    assert max(view["series"]["active_users"]["values"]) == 4  # 2 users on each worker
    assert view["run_started"] is True
    for log in [master.log, *cluster.worker_logs]:
        assert "Traceback" not in log.read_text(), log.read_text()
