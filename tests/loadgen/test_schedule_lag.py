"""How late the load generator runs against its plan: the users' planned starts and its event loop's wake-ups."""

import random

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from retrystorm.loadgen.aggregate import merge, snapshot, to_metrics
from retrystorm.loadgen.exposition import parse_client
from retrystorm.loadgen.metrics import build_metrics
from retrystorm.loadgen.readings import client_from_samples
from retrystorm.loadgen.schedule_lag import PlannedWait, Wait, plan_wait, watch_loop
from retrystorm.loadgen.think import ConstantThink

LAG = "retrystorm_client_schedule_lag_seconds"
LOOP = "retrystorm_client_loop_lag_seconds"


def test_a_closed_loop_plans_its_start_one_think_time_after_now():
    planned = plan_wait(ConstantThink(wait_s=0.5), random.Random(1), open_loop=False, arrival_s=None, now_s=10.0)
    assert planned == PlannedWait(0.5, 0.5, None, 10.5, Wait.THINK)


def test_an_open_loop_plans_its_start_on_its_schedule_not_after_a_late_wake_up():
    think = ConstantThink(wait_s=0.5)
    first = plan_wait(think, random.Random(1), open_loop=True, arrival_s=None, now_s=10.0)
    assert (first.start_s, first.wait_s, first.wait) == (10.5, 0.5, Wait.ARRIVAL)
    late = plan_wait(think, random.Random(1), open_loop=True, arrival_s=first.arrival_s, now_s=10.8)  # woke 0.3 s late
    assert (late.start_s, late.wait_s) == (11.0, pytest.approx(0.2))


class WatcherStoppedError(Exception):
    """Ends the endless watcher."""


def test_the_loop_watcher_observes_how_late_each_wake_up_came():
    now = [0.0]
    late_by = iter([0.0, 0.002, 0.3])
    observed = []

    def sleep(seconds):
        extra = next(late_by, None)
        if extra is None:
            raise WatcherStoppedError
        now[0] += seconds + extra

    with pytest.raises(WatcherStoppedError):
        watch_loop(observed.append, clock=lambda: now[0], sleep=sleep, tick_s=0.1)
    assert observed == pytest.approx([0.0, 0.002, 0.3])


def test_lateness_is_observed_in_a_real_registry_by_strategy_and_wait():
    registry = CollectorRegistry()
    metrics = build_metrics(registry)
    strategy = metrics.for_strategy("fixed")
    strategy.started_late(PlannedWait(0.05, 0.05, None, 10.0, Wait.THINK), 10.12)  # 120 ms late
    strategy.started_late(PlannedWait(0.05, 0.05, None, 20.0, Wait.THINK), 19.99)  # early: 0
    strategy.started_late(None, 5.0)  # nothing planned (the first request of a user started elsewhere): not observed
    strategy.backoff_ended(30.0, 30.004)
    think = {"strategy": "fixed", "wait": "think"}
    assert registry.get_sample_value(LAG + "_count", think) == 2
    assert registry.get_sample_value(LAG + "_sum", think) == pytest.approx(0.12)
    assert registry.get_sample_value(LAG + "_bucket", {**think, "le": "0.1"}) == 1  # the early one
    assert registry.get_sample_value(LAG + "_bucket", {**think, "le": "0.2"}) == 2
    assert registry.get_sample_value(LAG + "_sum", {"strategy": "fixed", "wait": "backoff"}) == pytest.approx(0.004)
    metrics.loop_lag.labels("w1").observe(0.03)
    assert registry.get_sample_value(LOOP + "_sum", {"process": "w1"}) == pytest.approx(0.03)
    reading = parse_client(generate_latest(registry).decode())
    assert reading.schedule_lag_sum == pytest.approx(0.124) and reading.schedule_lag_count == 3
    assert reading.loop_lag_sum == pytest.approx(0.03) and reading.loop_lag_count == 1


def test_a_master_sums_its_workers_lag_histograms():
    one, two = CollectorRegistry(), CollectorRegistry()
    for registry, late_s in ((one, 0.2), (two, 0.01)):
        metrics = build_metrics(registry)
        metrics.for_strategy("fixed").started_late(PlannedWait(0.1, 0.1, None, 1.0, Wait.THINK), 1.0 + late_s)
        metrics.loop_lag.labels(f"worker {late_s}").observe(late_s)
    merged = to_metrics(merge([(snapshot(one), True), (snapshot(two), True)]))
    samples = [(sample.name, dict(sample.labels), sample.value) for family in merged for sample in family.samples]
    reading = client_from_samples(samples)
    assert reading.schedule_lag_sum == pytest.approx(0.21) and reading.schedule_lag_count == 2
    assert reading.loop_lag_sum == pytest.approx(0.21) and reading.loop_lag_count == 2
