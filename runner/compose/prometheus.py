"""Readings from Prometheus' HTTP API instead of scraping ``/metrics`` directly (the compose stack).

Each reading is two instant queries (``GET /api/v1/query``), sent at once, within the
reading's deadline: every ``retrystorm_target_*`` series of job ``target`` and every
``retrystorm_client_*`` series of job ``locust`` (the Locust master: the sum over its
workers), each with the job's ``up``. Their samples go through the same parsing as a
scrape (:mod:`retrystorm.loadgen.readings`).

A part is ``None``, as a scrape of a paused target is, when its job's last scrape
failed (``up`` is 0: a paused target does not answer Prometheus either), when its
series are stale or missing, or when Prometheus does not answer in time. Prometheus
returns what it scraped last, at most one scrape interval (1 s in the stack) before the
query: the first reading of an outage may still show the target as it was just before
the pause, until Prometheus' scrape of the frozen target times out.
"""

from __future__ import annotations

import json
import math
import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any

from retrystorm.loadgen.readings import (
    CLIENT,
    TARGET,
    ClientReading,
    Sample,
    TargetReading,
    client_from_samples,
    target_from_samples,
)
from retrystorm.runner.fetch import PairFetcher
from retrystorm.runner.interfaces import LoadHandle, TargetHandle

TARGET_JOB = "target"
CLIENT_JOB = "locust"


def series_query(prefix: str, job: str) -> str:
    """Every series named ``prefix...`` of ``job``, and the job's ``up``."""
    return f'{{__name__=~"{prefix}.+|up",job="{job}"}}'


def vector_samples(document: Mapping[str, Any]) -> list[Sample]:
    """The samples of an instant query's answer (``resultType`` vector); ``ValueError`` otherwise."""
    if document.get("status") != "success":
        raise ValueError(f"query failed: {document.get('errorType')}: {document.get('error')}")
    data = document.get("data") or {}
    if data.get("resultType") != "vector":
        raise ValueError(f"expected a vector, got {data.get('resultType')!r}")
    samples: list[Sample] = []
    for series in data.get("result", []):
        labels = dict(series["metric"])
        name = labels.pop("__name__", "")
        samples.append((name, labels, float(series["value"][1])))  # "NaN", "+Inf" included
    return samples


def scraped(samples: list[Sample], prefix: str) -> list[Sample] | None:
    """The ``prefix`` samples if the job's last scrape succeeded; ``None`` when it failed or they are stale."""
    up = [value for name, _, value in samples if name == "up"]
    found = [sample for sample in samples if sample[0].startswith(prefix)]
    if not up or any(math.isnan(value) or value < 1 for value in up) or not found:
        return None
    return found


def target_part(text: str) -> TargetReading | None:
    """The target's part of a reading from the answer to its :func:`series_query`."""
    found = scraped(vector_samples(json.loads(text)), TARGET)
    return None if found is None else target_from_samples(found)


def client_part(text: str) -> ClientReading | None:
    """The client's part of a reading from the answer to its :func:`series_query`."""
    found = scraped(vector_samples(json.loads(text)), CLIENT)
    return None if found is None else client_from_samples(found)


class PrometheusMetricsSource:
    """Reads both parts from the Prometheus at ``url`` (jobs ``target`` and ``locust`` by default)."""

    def __init__(self, url: str, *, target_job: str = TARGET_JOB, client_job: str = CLIENT_JOB) -> None:
        self.fetcher = PairFetcher()
        self.url = url.rstrip("/")
        self.target_query = series_query(TARGET, target_job)
        self.client_query = series_query(CLIENT, client_job)
        #: Where the target part is read and how: the built-in target's series; ``None``: no target part
        #: (a service of one's own without metrics). A scenario's own service sets its gauge's query.
        self.target: tuple[str, Callable[[str], TargetReading | None]] | None = (
            self.query_url(self.target_query),
            target_part,
        )

    def query_url(self, query: str) -> str:
        """The ``GET /api/v1/query`` address of an instant query."""
        return f"{self.url}/api/v1/query?{urllib.parse.urlencode({'query': query})}"

    async def read(
        self, target: TargetHandle, load: LoadHandle, *, timeout_s: float
    ) -> tuple[TargetReading | None, ClientReading | None]:
        """Both parts, queried concurrently (the handles' own ``metrics_url`` are not used)."""
        client = (self.query_url(self.client_query), client_part)
        if self.target is None:
            return None, await self.fetcher.get(*client, timeout_s)
        return await self.fetcher.fetch(self.target, client, timeout_s)

    async def close(self) -> None:
        """Close the HTTP session."""
        await self.fetcher.close()
