"""The chaos controller's Prometheus metrics, read from the controller at scrape time.

``retrystorm_chaos_outage_active{target}``      1 while a target is paused (gauge)
``retrystorm_chaos_outages_total{target}``      outages started (counter)
``retrystorm_chaos_paused_seconds_total{target}`` seconds paused, the ongoing outage
                                                 included, so it rises while paused (counter)
``retrystorm_chaos_throttle_active{target}``     1 while a target's CPU is cut (gauge)
``retrystorm_chaos_throttle_capacity_ratio{target}`` the capacity in force: the cut's fraction of the
                                                 target's CPU allowance, 1 when not cut (gauge)
``retrystorm_chaos_throttles_total{target}``     throttles started (counter)
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from retrystorm.chaos.controller import OutageController, OutageStatus


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
        yield from self._throttles()

    def _throttles(self) -> Iterator[Metric]:
        active = GaugeMetricFamily(
            "retrystorm_chaos_throttle_active", "1 while the target's CPU is cut", labels=["target"]
        )
        capacity = GaugeMetricFamily(
            "retrystorm_chaos_throttle_capacity_ratio",
            "The target's CPU capacity in force, 1 when not cut",
            labels=["target"],
        )
        started = CounterMetricFamily("retrystorm_chaos_throttles", "Throttles started", labels=["target"])
        by_target: dict[str, tuple[int, float, int]] = dict.fromkeys(self.known_targets, (0, 1.0, 0))
        for throttle in self.controller.throttles.throttles():
            is_active, ratio, count = by_target.get(throttle.target, (0, 1.0, 0))
            if throttle.status == "active":
                is_active, ratio = 1, min(ratio, throttle.capacity)
            by_target[throttle.target] = (is_active, ratio, count + 1)
        for target, (is_active, ratio, count) in sorted(by_target.items()):
            active.add_metric([target], is_active)
            capacity.add_metric([target], ratio)
            started.add_metric([target], count)
        yield from (active, capacity, started)


def register_chaos_metrics(
    registry: CollectorRegistry, controller: OutageController, known_targets: list[str] | None = None
) -> ChaosCollector:
    """Register the chaos metrics for ``controller`` in ``registry``."""
    collector = ChaosCollector(controller, known_targets)
    registry.register(collector)
    return collector
