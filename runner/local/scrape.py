"""Readings by scraping the target's and the load generator's ``/metrics`` directly (local backend).

Both endpoints are fetched at once, each within the reading's deadline
(:class:`~runner.fetch.PairFetcher`). A compose stack reads the same series from
Prometheus' HTTP API instead: :mod:`runner.compose.prometheus`.
"""

from __future__ import annotations

from runner.fetch import PairFetcher
from runner.interfaces import LoadHandle, TargetHandle
from runner.readings import ClientReading, TargetReading, parse_client, parse_target


class HttpMetricsSource:
    """Scrapes ``TargetHandle.metrics_url`` and ``LoadHandle.metrics_url``."""

    def __init__(self) -> None:
        self.fetcher = PairFetcher()

    async def read(
        self, target: TargetHandle, load: LoadHandle, *, timeout_s: float
    ) -> tuple[TargetReading | None, ClientReading | None]:
        """Both parts, scraped concurrently."""
        return await self.fetcher.fetch((target.metrics_url, parse_target), (load.metrics_url, parse_client), timeout_s)

    async def close(self) -> None:
        """Close the HTTP session."""
        await self.fetcher.close()
