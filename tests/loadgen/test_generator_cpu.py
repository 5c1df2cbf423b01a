"""A load-generator process says, in its metrics, how much CPU it used and whether it was saturated."""

from prometheus_client import CollectorRegistry

from retrystorm.loadgen.aggregate import merge, snapshot
from retrystorm.loadgen.generator_cpu import GeneratorCpu
from retrystorm.loadgen.metrics import build_metrics

SECONDS = "retrystorm_client_generator_cpu_seconds_total"
SATURATED = "retrystorm_client_generator_saturated"


def fake(name="w1"):
    now, used = [0.0], [0.0]
    collector = GeneratorCpu(cpu_s=lambda: used[0], clock=lambda: now[0], name=name)
    registry = CollectorRegistry()
    registry.register(collector)
    return registry, now, used


def test_a_process_at_a_full_core_reads_saturated_and_one_that_idles_does_not():
    registry, now, used = fake()
    get = registry.get_sample_value
    assert get(SATURATED, {"process": "w1"}) == 0  # no window yet
    now[0], used[0] = 2.0, 1.9  # 95 % of a core over 2 s
    assert get(SATURATED, {"process": "w1"}) == 1
    assert get(SECONDS, {"process": "w1"}) == 1.9
    now[0], used[0] = 4.0, 2.3  # 20 % over the next 2 s
    assert get(SATURATED, {"process": "w1"}) == 0


def test_readers_within_one_window_do_not_shorten_it():
    registry, now, used = fake()
    now[0], used[0] = 1.0, 0.95
    assert registry.get_sample_value(SATURATED, {"process": "w1"}) == 1
    now[0], used[0] = 1.5, 0.95  # half a second idle: too short a window, the last verdict stands
    assert registry.get_sample_value(SATURATED, {"process": "w1"}) == 1


def test_a_master_keeps_each_workers_cpu_apart():
    one, now_one, used_one = fake("w1")
    two, now_two, used_two = fake("w2")
    now_one[0], used_one[0] = 1.0, 1.0
    now_two[0], used_two[0] = 1.0, 0.1
    merged = merge([(snapshot(one), True), (snapshot(two), True)])
    saturated = {sample[1]["process"]: sample[2] for sample in merged[SATURATED][2]}
    assert saturated == {"w1": 1.0, "w2": 0.0}


def test_the_client_metrics_carry_this_processes_real_cpu():
    registry = CollectorRegistry()
    build_metrics(registry)
    sum(i * i for i in range(200_000))  # some CPU of our own
    names = {sample.labels.get("process") for family in registry.collect() for sample in family.samples}
    process = next(name for name in names if name and "pid" in name)
    assert registry.get_sample_value(SECONDS, {"process": process}) > 0


def test_each_process_counts_the_attempts_it_sent_and_a_master_keeps_them_apart():
    registry = CollectorRegistry()
    bound = build_metrics(registry).for_strategy("fixed")
    for _ in range(3):
        bound.attempts_started.inc()
    own = [value for name, _, value in snapshot(registry)["retrystorm_client_generator_attempts_started"][2]]
    assert own == [3.0]  # this process's attempts, every strategy and request
    workers = []
    for name, sent in (("w1", 3.0), ("w2", 5.0)):
        worker = CollectorRegistry()
        worker.register(GeneratorCpu(cpu_s=lambda: 0.0, name=name, attempts_started=lambda sent=sent: sent))
        workers.append((snapshot(worker), True))
    samples = merge(workers)["retrystorm_client_generator_attempts_started"][2]
    assert {labels["process"]: value for _, labels, value in samples} == {"w1": 3.0, "w2": 5.0}
