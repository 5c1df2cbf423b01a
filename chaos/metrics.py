"""The chaos controller's Prometheus metrics, read from the controller at scrape time.

``retrystorm_chaos_outage_active{target}``      1 while a target is paused (gauge)
``retrystorm_chaos_outages_total{target}``      outages started (counter)
``retrystorm_chaos_paused_seconds_total{target}`` seconds paused, the ongoing outage
                                                 included, so it rises while paused (counter)
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from chaos.controller import OutageController, OutageStatus


class ChaosCollector(Collector):
    """Builds the chaos metrics from the controller's outages on every scrape."""

    def __init__(self, controller: OutageController, known_targets: list[str] | None = None) -> None:
        self.controller = controller
        self.known_targets = list(known_targets or [])

    def collect(self) -> Iterator[Metric]:
        active = GaugeMetricFamily("retrystorm_chaos_outage_active", "1 while the target is paused", labels=["target"])
        started = CounterMetricFamily("retrystorm_chaos_outages", "Outages started", labels=["target"])
        paused = CounterMetricFamily("retrystorm_chaos_paused_seconds", "Seconds paused", labels=["target"])
        now = self.controller.clock()
        by_target: dict[str, tuple[int, int, float]] = dict.fromkeys(self.known_targets, (0, 0, 0.0))
        for outage in self.controller.outages():
            is_active, count, seconds = by_target.get(outage.target, (0, 0, 0.0))
            end = outage.ended_monotonic if outage.ended_monotonic is not None else now
            by_target[outage.target] = (
                is_active or int(outage.status is OutageStatus.ACTIVE),
                count + 1,
                seconds + max(0.0, end - outage.started_monotonic),
            )
        for target, (is_active, count, seconds) in sorted(by_target.items()):
            active.add_metric([target], is_active)
            started.add_metric([target], count)
            paused.add_metric([target], seconds)
        yield from (active, started, paused)


def register_chaos_metrics(
    registry: CollectorRegistry, controller: OutageController, known_targets: list[str] | None = None
) -> ChaosCollector:
    """Register the chaos metrics for ``controller`` in ``registry``."""
    collector = ChaosCollector(controller, known_targets)
    registry.register(collector)
    return collector
