"""Summing the client metrics of Locust workers on the master.

Each worker keeps its own registry (see :mod:`retrystorm.loadgen.metrics`). With every report
Locust sends to the master (``events.report_to_master``, every second as
:mod:`retrystorm.loadgen.plugin` sets it, and once more on quit) a worker adds a :func:`snapshot`
of its registry: its *cumulative* values, not deltas since the last report. The master
keeps the latest snapshot of every worker it has heard from and serves, through
:class:`MergedCollector`, the sum of its own registry and those snapshots:

* counters and histograms (buckets, sum, count) are summed over every worker ever
  seen, including workers that have since quit, so the sums never go down;
* gauges are summed over the workers still connected only (a quit worker has no users
  in backoff).

Cumulative snapshots make a report idempotent: a late or repeated report cannot count
twice, and one lost report is repaired by the next. No Locust import here: the
snapshots are plain lists and dicts that Locust's msgpack transport carries as is.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

#: ``{family name: [type, help, [[sample name, {label: value}, value], ...]]}``
Snapshot = dict[str, list[Any]]

#: The key of the snapshot in a worker's report.
REPORT_KEY = "retrystorm_metrics"

_SUMMED_OVER_ALL_WORKERS = frozenset({"counter", "histogram", "summary"})


def snapshot(registry: CollectorRegistry) -> Snapshot:
    """The current samples of ``registry`` as plain data (``_created`` samples dropped)."""
    families: Snapshot = {}
    for metric in registry.collect():
        samples = [[s.name, dict(s.labels), s.value] for s in metric.samples if not s.name.endswith("_created")]
        families[metric.name] = [metric.type, metric.documentation, samples]
    return families


class WorkerSnapshots:
    """The latest snapshot of every worker the master has heard from."""

    def __init__(self) -> None:
        self._by_worker: dict[str, Snapshot] = {}

    def update(self, worker_id: str, data: Snapshot) -> None:
        """Store what ``worker_id`` reported (its cumulative values)."""
        self._by_worker[worker_id] = data

    def worker_ids(self) -> list[str]:
        """Every worker that has reported."""
        return list(self._by_worker)

    def contributions(self, connected: Collection[str] | None) -> Iterator[tuple[Snapshot, bool]]:
        """``(snapshot, include gauges)`` per worker; gauges only from ``connected`` ones.

        ``connected=None`` means every worker is still connected.
        """
        for worker_id, data in self._by_worker.items():
            yield data, connected is None or worker_id in connected


def merge(parts: Iterable[tuple[Snapshot, bool]]) -> Snapshot:
    """Sum snapshots sample by sample; gauges of parts flagged ``False`` are left out.

    Samples keep the order in which they were first seen, so a histogram's buckets
    stay in ascending order in the exposition.
    """
    families: dict[str, list[Any]] = {}
    sums: dict[str, dict[tuple[str, tuple[tuple[str, str], ...]], list[Any]]] = {}
    for data, with_gauges in parts:
        for name, (kind, help_text, samples) in data.items():
            if kind not in _SUMMED_OVER_ALL_WORKERS and not with_gauges:
                continue
            if name not in families:
                families[name] = [kind, help_text, []]
                sums[name] = {}
            family_sums = sums[name]
            for sample_name, labels, value in samples:
                key = (sample_name, tuple(sorted(labels.items())))
                if key in family_sums:
                    family_sums[key][2] += value
                else:
                    entry = [sample_name, dict(labels), float(value)]
                    family_sums[key] = entry
                    families[name][2].append(entry)
    return families


def to_metrics(data: Snapshot) -> list[Metric]:
    """Prometheus metric families from a snapshot, ready for exposition."""
    metrics = []
    for name, (kind, help_text, samples) in data.items():
        metric = Metric(name, help_text, kind)
        for sample_name, labels, value in samples:
            metric.add_sample(sample_name, labels, value)
        metrics.append(metric)
    return metrics


class MergedCollector(Collector):
    """This process's metrics plus the workers' snapshots, summed at each scrape.

    ``connected`` returns the ids of the workers still connected (``None`` when the
    process has no workers); it is read at every scrape.
    """

    def __init__(
        self,
        local: CollectorRegistry,
        workers: WorkerSnapshots,
        connected: Callable[[], Collection[str] | None],
    ) -> None:
        self.local = local
        self.workers = workers
        self.connected = connected

    def collect(self) -> Iterable[Metric]:
        parts = [(snapshot(self.local), True), *self.workers.contributions(self.connected())]
        return to_metrics(merge(parts))


def exposition_registry(collector: MergedCollector) -> CollectorRegistry:
    """A registry that serves ``collector`` alone (what ``/metrics`` renders)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return registry
