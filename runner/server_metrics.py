"""Server readings of a service of one's own (``retrystorm.target.metrics``): its in-flight gauge, scraped or from
Prometheus.

The built-in target serves ``retrystorm_target_*`` series (:mod:`retrystorm.loadgen.readings`). A
service of one's own may serve a gauge of requests in progress under any name: scraped
from its ``/metrics`` (``metrics: {url, in_flight}``), or queried from a Prometheus that
scrapes it (``metrics: {prometheus: {url, query_in_flight}}``). Either way it becomes a
:class:`~retrystorm.loadgen.readings.TargetReading` whose ``in_flight`` is that gauge (summed over
its series) and whose delay is 0, so the server's recovery is judged from its own gauge,
as for the built-in target. A gauge that is absent from an answer is no reading (``None``).
"""

from __future__ import annotations

import json
import math
import urllib.parse
from collections.abc import Callable

from retrystorm.experiment.scenario.service import ServerMetrics
from retrystorm.loadgen.exposition import samples_of
from retrystorm.loadgen.readings import TargetReading

Parse = Callable[[str], TargetReading | None]


def in_flight_reading(in_flight: float) -> TargetReading:
    """A reading of a service that reports only its requests in progress."""
    return TargetReading(in_flight=in_flight, delay_s=0.0, connections=0.0, abandoned_in_flight=0.0, served={})


def gauge_parser(name: str) -> Parse:
    """Reads gauge ``name`` (summed over its series) from Prometheus text; ``None`` when it is absent."""

    def parse(text: str) -> TargetReading | None:
        values = [value for sample, _, value in samples_of(text) if sample == name and math.isfinite(value)]
        return in_flight_reading(math.fsum(values)) if values else None

    return parse


def query_parser(text: str) -> TargetReading | None:
    """Reads an instant query's answer (a vector, summed; ``None`` when empty or failed)."""
    document = json.loads(text)
    data = document.get("data") or {}
    if document.get("status") != "success" or data.get("resultType") not in ("vector", "scalar"):
        return None
    if data["resultType"] == "scalar":
        values = [float(data["result"][1])]
    else:
        values = [float(series["value"][1]) for series in data.get("result", [])]
    values = [value for value in values if math.isfinite(value)]
    return in_flight_reading(math.fsum(values)) if values else None


def endpoint(metrics: ServerMetrics | None) -> tuple[str, Parse] | None:
    """Where a reading of ``metrics`` is fetched and how it is read; ``None`` without server readings."""
    if metrics is None:
        return None
    if metrics.prometheus is not None:
        query = urllib.parse.urlencode({"query": metrics.prometheus.query_in_flight})
        return f"{metrics.prometheus.url}/api/v1/query?{query}", query_parser
    if metrics.url is not None and metrics.in_flight is not None:
        return metrics.url, gauge_parser(metrics.in_flight)
    return None


def describe(metrics: ServerMetrics | None) -> str:
    """How the server is read, for the plan."""
    if metrics is None:
        return "no server readings: the server's recovery is judged from the clients (attempt latency, timeouts)"
    if metrics.prometheus is not None:
        return f"in flight from Prometheus {metrics.prometheus.url}: {metrics.prometheus.query_in_flight}"
    return f"in flight: gauge {metrics.in_flight} scraped from {metrics.url}"
