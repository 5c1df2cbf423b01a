"""Readings by scraping the target's and the load generator's ``/metrics`` directly.

Both endpoints are fetched at once, each on a fresh connection and within the
deadline: a paused target accepts the connection in the kernel but never answers,
so its part of the reading is ``None`` and the one-second cadence holds. (A compose
stack reads the same series from Prometheus' HTTP API instead:
:mod:`chaos.runner.prometheus`.)
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TypeVar

import aiohttp

from chaos.runner.interfaces import LoadHandle, TargetHandle
from chaos.runner.readings import ClientReading, TargetReading, parse_client, parse_target

log = logging.getLogger(__name__)

T = TypeVar("T")


class HttpMetricsSource:
    """Scrapes ``TargetHandle.metrics_url`` and ``LoadHandle.metrics_url``."""

    def __init__(self) -> None:
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True))
        return self._session

    async def _scrape(self, url: str, parse: Callable[[str], T], timeout_s: float) -> T | None:
        try:
            async with self._client().get(url, timeout=aiohttp.ClientTimeout(total=timeout_s)) as response:
                if response.status != 200:
                    return None
                return parse(await response.text())
        except (aiohttp.ClientError, TimeoutError, ValueError) as error:
            log.debug("no reading from %s: %r", url, error)
            return None

    async def read(
        self, target: TargetHandle, load: LoadHandle, *, timeout_s: float
    ) -> tuple[TargetReading | None, ClientReading | None]:
        """Both parts, scraped concurrently."""
        return await self.read_urls((target.metrics_url, parse_target), (load.metrics_url, parse_client), timeout_s)

    async def read_urls(
        self,
        target: tuple[str, Callable[[str], TargetReading | None]],
        client: tuple[str, Callable[[str], ClientReading | None]],
        timeout_s: float,
    ) -> tuple[TargetReading | None, ClientReading | None]:
        """GET both ``(url, parse)`` at once; a part whose answer is late, not 200 or unreadable is ``None``."""
        target_part, client_part = await asyncio.gather(
            self._scrape(target[0], target[1], timeout_s), self._scrape(client[0], client[1], timeout_s)
        )
        return target_part, client_part

    async def close(self) -> None:
        """Close the HTTP session."""
        if self._session is not None:
            await self._session.close()
            self._session = None
