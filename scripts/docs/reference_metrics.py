"""The Prometheus metrics reference: every metric each component registers, with its type, labels and help.

Each component's metrics are built as the component builds them (``build_metrics(registry)`` on a fresh registry,
its scrape-time collectors bound to functions that read nothing), then read back from the registry. A family's
label names come from the metric object (prometheus-client keeps them as ``_labelnames``, on its metric wrappers
and on the families custom collectors yield), so a labelled metric with no series yet is listed with its labels.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

from prometheus_client import CollectorRegistry
from reference_specs import cell, code, table

from retrystorm.chaos.metrics import ChaosCollector
from retrystorm.loadgen.metrics import build_metrics as build_client_metrics
from retrystorm.target.metrics import build_metrics as build_target_metrics

#: What prometheus-client adds to a counter's family name in the exposition.
_SUFFIX = {"counter": "_total", "info": "_info"}
#: Families of prometheus-client's own process, platform and GC collectors: listed once, by prefix.
_LIBRARY_PREFIXES = ("process_", "python_")


def target_registry() -> CollectorRegistry:
    """The target service's metrics, every scrape-time collector bound (the gRPC front's included)."""
    registry = CollectorRegistry()
    metrics = build_target_metrics(registry)
    metrics.bind_connection_counters(lambda: 0, dict)
    metrics.bind_grpc_attempts(dict)
    return registry


def client_registry() -> CollectorRegistry:
    """The load generator's metrics (one Locust process, or a master's sum over its workers)."""
    registry = CollectorRegistry()
    build_client_metrics(registry)
    return registry


def chaos_registry() -> CollectorRegistry:
    """The chaos controller's metrics, read from a controller that has paused and throttled nothing."""
    registry = CollectorRegistry()
    idle = SimpleNamespace(clock=lambda: 0.0, outages=list, throttles=SimpleNamespace(throttles=list))
    registry.register(ChaosCollector(idle))  # type: ignore[arg-type]
    return registry


def _families(registry: CollectorRegistry) -> Iterator[tuple[str, str, tuple[str, ...], str]]:
    """``(exposed name, type, label names, help)`` of every family the registry exposes, library ones left out."""
    wrapper_labels: dict[str, tuple[str, ...]] = {}
    for collector in registry._collector_to_names:
        labels = getattr(collector, "_labelnames", None)
        if labels is not None:
            wrapper_labels[getattr(collector, "_name", "")] = tuple(labels)
    for family in registry.collect():
        if family.name.startswith(_LIBRARY_PREFIXES):
            continue
        labels = tuple(getattr(family, "_labelnames", ())) or wrapper_labels.get(family.name, ())
        name = family.name + _SUFFIX.get(family.type, "")
        yield name, family.type, labels, family.documentation


def _section(title: str, intro: str, registry: CollectorRegistry) -> str:
    rows = [
        [code(name), kind, ", ".join(code(label) for label in labels) or "-", cell(documentation)]
        for name, kind, labels, documentation in sorted(_families(registry))
    ]
    return f"## {title}\n\n{intro}\n\n" + table(["metric", "type", "labels", "meaning"], rows)


def metrics_page() -> str:
    """Every metric of the target, the load generator and the chaos controller."""
    sections: list[tuple[str, str, Any]] = [
        (
            "The target service",
            (
                "`GET /metrics` of `retrystorm target`, besides prometheus-client's process and GC metrics "
                "(`process_*`, `python_*`). The traffic counters are cleared by `POST /admin/reset`; the connection "
                "counters are not."
            ),
            target_registry(),
        ),
        (
            "The load generator",
            (
                "`GET /metrics` on the Locust web UI's port (no login), or on `--metrics-port`. On a master, the sum "
                "over its workers. Every series but the generator's own (`process`) has the `strategy` label (the "
                "strategy's family name); counters are never reset for the life of the process: delimit a run by "
                "the difference of readings, as "
                "`increase()` does."
            ),
            client_registry(),
        ),
        (
            "The chaos controller",
            "`GET /metrics` of `retrystorm chaos serve`, one series per registered target.",
            chaos_registry(),
        ),
    ]
    return "\n\n".join(
        [
            "# Prometheus metrics",
            (
                "Every metric retrystorm serves, by component, read from the code that registers it. Names follow "
                "`retrystorm_<component>_<what>_<unit>` in base units; counters end in `_total`. Latency histograms' "
                "buckets run from 10 ms to 10 min. [The load generator](../guides/locust.md#prometheus) says how "
                "goodput, attempts and amplification are computed from them; [Grafana](../guides/grafana.md) shows "
                "the dashboard built on them."
            ),
            *(_section(title, intro, registry) for title, intro, registry in sections),
        ]
    )
