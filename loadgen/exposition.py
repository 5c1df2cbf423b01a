"""Samples ``(name, labels, value)`` from Prometheus exposition text or from a ``prometheus_client`` registry.

The one parser of scraped metrics: :mod:`retrystorm.loadgen.readings` builds its readings from these samples,
whether the runner scraped a ``/metrics`` page or the storm tab read its own process's registry.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from retrystorm.loadgen.readings import ClientReading, Sample, TargetReading, client_from_samples, target_from_samples


def samples_of(text: str) -> list[Sample]:
    """Every sample of Prometheus exposition ``text``."""
    return [
        (sample.name, dict(sample.labels), float(sample.value))
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    ]


def samples_in(registry: CollectorRegistry) -> list[Sample]:
    """Every sample ``registry`` holds now (what its ``/metrics`` page would show)."""
    return [
        (sample.name, dict(sample.labels), float(sample.value))
        for family in registry.collect()
        for sample in family.samples
    ]


def parse_target(text: str) -> TargetReading:
    """A :class:`TargetReading` from the target's ``/metrics``."""
    return target_from_samples(samples_of(text))


def parse_client(text: str) -> ClientReading:
    """A :class:`ClientReading` from the load generator's ``/metrics``."""
    return client_from_samples(samples_of(text))
