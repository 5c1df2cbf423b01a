"""Readings by scraping the target's and the load generator's ``/metrics`` directly (local backend).

Both endpoints are fetched at once, each within the reading's deadline
(:class:`~retrystorm.runner.fetch.PairFetcher`). A compose stack reads the same series from
Prometheus' HTTP API instead: :mod:`retrystorm.runner.compose.prometheus`.
"""

from __future__ import annotations

from collections.abc import Callable

from retrystorm.loadgen.exposition import parse_client, parse_target
from retrystorm.loadgen.readings import ClientReading, TargetReading
from retrystorm.runner.fetch import PairFetcher
from retrystorm.runner.interfaces import LoadHandle, TargetHandle


class HttpMetricsSource:
    """Scrapes ``TargetHandle.metrics_url`` (read by ``parse_target_text``) and ``LoadHandle.metrics_url``.

    A target without a metrics URL (a service of one's own without ``metrics:``) has no
    target part: the client's part is read alone.
    """

    def __init__(self, parse_target_text: Callable[[str], TargetReading | None] = parse_target) -> None:
        self.fetcher = PairFetcher()
        self.parse_target_text = parse_target_text

    async def read(
        self, target: TargetHandle, load: LoadHandle, *, timeout_s: float
    ) -> tuple[TargetReading | None, ClientReading | None]:
        """Both parts, scraped concurrently."""
        if target.metrics_url is None:
            return None, await self.fetcher.get(load.metrics_url, parse_client, timeout_s)
        return await self.fetcher.fetch(
            (target.metrics_url, self.parse_target_text), (load.metrics_url, parse_client), timeout_s
        )

    async def close(self) -> None:
        """Close the HTTP session."""
        await self.fetcher.close()
