"""Two GETs at once within one deadline: how both backends take a reading.

A reading is two parts (the target's, the client's). Each is fetched on a fresh
connection within the reading's deadline; a part whose answer is late, not 200 or
unreadable is ``None``, so a paused target (which accepts the connection in the kernel
but never answers) costs the reading its target part, never the one-second cadence.
The local backend fetches the two ``/metrics`` endpoints (:mod:`retrystorm.runner.scrape`),
the compose backend two Prometheus queries (:mod:`retrystorm.runner.compose.prometheus`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TypeVar

import aiohttp

from retrystorm.loadgen.readings import ClientReading, TargetReading

log = logging.getLogger(__name__)

T = TypeVar("T")


class PairFetcher:
    """GETs a target URL and a client URL concurrently, each parsed by its own function."""

    def __init__(self) -> None:
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True))
        return self._session

    async def get(self, url: str, parse: Callable[[str], T], timeout_s: float) -> T | None:
        """One GET, parsed; ``None`` when late, not 200 or unreadable."""
        return await self._get(url, parse, timeout_s)

    async def _get(self, url: str, parse: Callable[[str], T], timeout_s: float) -> T | None:
        try:
            async with self._client().get(url, timeout=aiohttp.ClientTimeout(total=timeout_s)) as response:
                if response.status != 200:
                    return None
                return parse(await response.text())
        except (aiohttp.ClientError, TimeoutError, ValueError) as error:
            log.debug("no reading from %s: %r", url, error)
            return None

    async def fetch(
        self,
        target: tuple[str, Callable[[str], TargetReading | None]],
        client: tuple[str, Callable[[str], ClientReading | None]],
        timeout_s: float,
    ) -> tuple[TargetReading | None, ClientReading | None]:
        """GET both ``(url, parse)`` at once; a part whose answer is late, not 200 or unreadable is ``None``."""
        target_part, client_part = await asyncio.gather(
            self._get(target[0], target[1], timeout_s), self._get(client[0], client[1], timeout_s)
        )
        return target_part, client_part

    async def close(self) -> None:
        """Close the HTTP session."""
        if self._session is not None:
            await self._session.close()
            self._session = None
